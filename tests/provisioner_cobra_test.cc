// Cobra's topology (issue 14): the Figure 3 table row by row, the greedy loop against
// Figure 11 and Figure 2, and the exact plan against brute force and the lower bound.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "feedplane/provisioner/cobra.h"

namespace fp = feedplane::provisioner;
using fp::cobra_role;
using fp::decomposition;
using fp::resource;

namespace {

std::string models() {
  const char* d = std::getenv("FEEDPLANE_SOURCE_DIR");
  return std::string(d != nullptr ? d : ".") + "/provisioner/models/";
}

std::string joined(const std::vector<fp::input_error>& errors) {
  std::string s;
  for (const auto& e : errors) s += e.to_string() + "\n";
  return s;
}

// Every row of seed 000's Figure 3.
struct figure3_row {
  cobra_role role;
  resource violation;
  decomposition expected;
};
constexpr figure3_row figure3_rows[] = {
    {cobra_role::crawler, resource::in_bw, decomposition::in},
    {cobra_role::crawler, resource::out_bw, decomposition::in},
    {cobra_role::crawler, resource::cpu, decomposition::not_modeled},
    {cobra_role::crawler, resource::memory, decomposition::not_modeled},
    {cobra_role::filter, resource::in_bw, decomposition::in},
    {cobra_role::filter, resource::out_bw, decomposition::in},
    {cobra_role::filter, resource::cpu, decomposition::out},
    {cobra_role::filter, resource::memory, decomposition::out},
    {cobra_role::reflector, resource::in_bw, decomposition::unresolvable},
    {cobra_role::reflector, resource::out_bw, decomposition::out},
    {cobra_role::reflector, resource::cpu, decomposition::out},
    {cobra_role::reflector, resource::memory, decomposition::out},
};

class figure3_test : public testing::TestWithParam<figure3_row> {};

TEST_P(figure3_test, row) {
  const auto& r = GetParam();
  EXPECT_EQ(fp::figure3(r.role, r.violation), r.expected)
      << fp::cobra_role_name(r.role) << " " << fp::resource_name(r.violation);
}

INSTANTIATE_TEST_SUITE_P(provisioner_cobra, figure3_test, testing::ValuesIn(figure3_rows),
                         [](const testing::TestParamInfo<figure3_row>& i) {
                           std::string n = std::string(fp::cobra_role_name(i.param.role)) + "_" +
                                           std::string(fp::resource_name(i.param.violation));
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(provisioner_cobra, greedy_order_names_every_violation_once) {
  bool seen[fp::cobra_role_count][fp::resource_count] = {};
  for (const auto& v : fp::greedy_order) {
    EXPECT_FALSE(seen[size_t(v.role)][size_t(v.what)]);
    seen[size_t(v.role)][size_t(v.what)] = true;
  }
  for (const auto& row : seen)
    for (size_t r = 0; r < fp::resource_count; ++r)
      EXPECT_EQ(row[r], static_cast<resource>(r) != resource::disk);
}

struct loaded {
  fp::workload w;
  std::vector<fp::node_class> nodes;
  fp::cost_model costs;
  fp::cobra_model model;
};

// Loads a shipped workload and node file under cobra.toml (kept alive by the caller).
void load(loaded& l, const std::string& workload, const std::string& nodes) {
  auto e = fp::load_workload(models() + "workloads/" + workload + ".toml", l.w);
  ASSERT_TRUE(e.empty()) << joined(e);
  e = fp::load_node_classes(models() + "nodes/" + nodes + ".toml", l.nodes);
  ASSERT_TRUE(e.empty()) << joined(e);
  e = fp::load_cost_model(models() + "cobra.toml", l.costs);
  ASSERT_TRUE(e.empty()) << joined(e);
  e = fp::cobra_model::make(l.w, l.costs, l.nodes[0], l.model);
  ASSERT_TRUE(e.empty()) << joined(e);
}

struct figure11_row {
  const char* workload;
  uint64_t crawlers, filters, reflectors;  // what the greedy loop gives under cobra.toml
  uint64_t paper_filters;                  // Figure 11, where it differs (see README)
};

TEST(provisioner_cobra, figure11) {
  const figure11_row rows[] = {
      {"fig11-1m-10m", 1, 28, 28, 28},
      // 500k x 20M: the paper says 1/25/25. Rows 1-3 all carry feeds x subscriptions = 1e13,
      // and every filter and reflector cost here is articles/s (proportional to feeds) times
      // a cost proportional to subscriptions held, so all three rows need the same 28.
      {"fig11-500k-20m", 1, 28, 28, 25},
      {"fig11-250k-40m", 1, 28, 28, 28},
      {"fig11-100k-1m", 1, 1, 1, 1},
  };
  for (const auto& row : rows) {
    loaded l;
    load(l, row.workload, "emulab-1x-100mbps-1024mb");
    const auto g = fp::cobra_greedy(l.model);
    ASSERT_TRUE(g.feasible) << row.workload << ": " << g.reason;
    EXPECT_EQ(g.shape.crawlers, row.crawlers) << row.workload;
    EXPECT_EQ(g.shape.filters(), row.filters) << row.workload;
    EXPECT_EQ(g.shape.reflectors, row.reflectors) << row.workload;
    const auto x = fp::cobra_exact(l.model);
    EXPECT_EQ(x.shape.hosts(), g.shape.hosts()) << row.workload;
    EXPECT_LE(fp::cobra_lower_bound(l.model).hosts(), x.shape.hosts()) << row.workload;
  }
}

// Figure 2: 800,000 feeds, 8M subscriptions, 1024 MB. (b) at 1x CPU and 100 Mbps has half the
// crawlers of (a) at 4x CPU and 25 Mbps, 50% more reflectors, and (the paper) three times
// the filters; here 3.6 times: with filters bound by CPU in both, 4x CPU cuts them about 4x.
TEST(provisioner_cobra, figure2_relations) {
  loaded a, b;
  load(a, "fig2-800k-8m", "cobra-4x-25mbps-1024mb");
  load(b, "fig2-800k-8m", "emulab-1x-100mbps-1024mb");
  const auto ga = fp::cobra_greedy(a.model), gb = fp::cobra_greedy(b.model);
  ASSERT_TRUE(ga.feasible && gb.feasible);
  EXPECT_EQ(gb.shape.crawlers * 2, ga.shape.crawlers);
  EXPECT_EQ(gb.shape.reflectors * 2, ga.shape.reflectors * 3);
  EXPECT_EQ(ga.shape.filters(), 5U);
  EXPECT_EQ(gb.shape.filters(), 18U);
  // What binds: (a)'s crawler and reflectors on bandwidth, (b)'s filters on CPU.
  const auto pa = fp::cobra_plan(a.model, ga, "greedy"), pb = fp::cobra_plan(b.model, gb, "greedy");
  EXPECT_EQ(pa.roles[0].binding(), resource::in_bw);
  EXPECT_EQ(pa.roles[2].binding(), resource::out_bw);
  EXPECT_EQ(pb.roles[1].binding(), resource::cpu);
  EXPECT_EQ(pb.roles[2].binding(), resource::cpu);
}

// Seed 003's Figure 2(a) (1M feeds, 10M users, 100 Mbps, 256 MB: 5/3/25) does not follow from
// the stated constants: 10M x 160 B of filter memory is 1526 MiB, more than 3 x 256 MiB.
TEST(provisioner_cobra, seed003_figure2_is_not_reachable) {
  loaded l;
  load(l, "seed003-fig2-1m-10m", "cobra-1x-100mbps-256mb");
  EXPECT_GT(10e6 * l.costs.find("filter_bytes_per_subscription")->value, 3 * 256.0 * 1048576);
  const auto x = fp::cobra_exact(l.model);
  ASSERT_TRUE(x.feasible);
  EXPECT_GT(x.shape.filters(), 3U);
}

TEST(provisioner_cobra, unresolvable_violation_names_the_node_size) {
  loaded l;
  load(l, "fig11-1m-10m", "emulab-1x-100mbps-1024mb");
  fp::node_class tiny = l.nodes[0];
  tiny.in_bps = 0.2e6;  // a reflector must hear every article: 0.33 Mbps
  ASSERT_TRUE(fp::cobra_model::make(l.w, l.costs, tiny, l.model).empty());
  const auto g = fp::cobra_greedy(l.model);
  EXPECT_FALSE(g.feasible);
  EXPECT_NE(g.reason.find("reflector in-bw"), std::string::npos) << g.reason;
  EXPECT_NE(g.reason.find("in_mbps >= 0.3"), std::string::npos) << g.reason;
  EXPECT_FALSE(fp::cobra_exact(l.model).feasible);
}

// Small random workloads and nodes: exact equals brute force, is never worse than greedy,
// and the bound is never above exact, and strictly below it somewhere.
TEST(provisioner_cobra, exact_against_brute_force_greedy_and_bound) {
  loaded base;
  load(base, "fig11-100k-1m", "emulab-1x-100mbps-1024mb");
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> u(0, 1);
  int compared = 0, bound_below = 0, greedy_worse = 0;
  for (int i = 0; i < 400; ++i) {
    fp::workload w = base.w;
    w.feeds = std::floor(20 + u(rng) * 200);
    w.subscriptions = std::floor(50 + u(rng) * 5000);
    w.articles_per_s_per_million_feeds = 2e5 + u(rng) * 2e6;
    fp::node_class n = base.nodes[0];
    n.in_bps = 0.3e6 + u(rng) * 30e6;
    n.out_bps = 0.3e6 + u(rng) * 30e6;
    n.memory_bytes = 1e5 + u(rng) * 5e5;
    n.cpu_speed = 0.5 + u(rng) * 50;
    fp::cost_model costs = base.costs;
    costs.coefficients["reflector_bytes_base"].value = u(rng) * 5e4;
    costs.coefficients["reflector_bytes_per_subscription"].value = 50 + u(rng) * 200;
    costs.coefficients["filter_bytes_base"].value = u(rng) * 5e4;
    fp::cobra_model m;
    ASSERT_TRUE(fp::cobra_model::make(w, costs, n, m).empty());
    const auto x = fp::cobra_exact(m);
    if (!x.feasible || x.shape.hosts() > 11) continue;
    ++compared;
    const auto bf = fp::cobra_brute_force(m, 11);
    ASSERT_TRUE(bf.feasible) << i;
    EXPECT_EQ(x.shape.hosts(), bf.shape.hosts()) << i;
    EXPECT_DOUBLE_EQ(m.worst(x.shape), m.worst(bf.shape)) << i;
    EXPECT_TRUE(m.feasible(x.shape)) << i;
    const auto g = fp::cobra_greedy(m);
    if (g.feasible) {
      EXPECT_GE(g.shape.hosts(), x.shape.hosts()) << i;
      greedy_worse += g.shape.hosts() > x.shape.hosts();
    }
    const auto b = fp::cobra_lower_bound(m);
    EXPECT_LE(b.hosts(), x.shape.hosts()) << i;
    bound_below += b.hosts() < x.shape.hosts();
  }
  EXPECT_GE(compared, 100);
  EXPECT_GT(bound_below, 0) << "exact never above the bound: one of them is not what it claims";
  RecordProperty("greedy_worse", greedy_worse);
}

}  // namespace
