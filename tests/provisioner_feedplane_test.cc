// feedplane's own topology (issue 14): exact against brute force, greedy and the bound;
// whole partitions; the article stream as a per-host floor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "feedplane/provisioner/feedplane_topology.h"

namespace fp = feedplane::provisioner;
using fp::fp_layout;
using fp::fp_role;
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

struct loaded {
  fp::workload w;
  std::vector<fp::node_class> nodes;
  fp::cost_model costs;
};

void load(loaded& l, const std::string& workload, const std::string& nodes) {
  auto e = fp::load_workload(models() + "workloads/" + workload + ".toml", l.w);
  ASSERT_TRUE(e.empty()) << joined(e);
  e = fp::load_node_classes(models() + "nodes/" + nodes + ".toml", l.nodes);
  ASSERT_TRUE(e.empty()) << joined(e);
  e = fp::load_cost_model(models() + "measured.toml", l.costs);
  ASSERT_TRUE(e.empty()) << joined(e);
}

TEST(provisioner_feedplane, moonshot_fits_one_project_machine) {
  loaded l;
  load(l, "moonshot-1m-10m", "project-machine");
  fp::fp_model m;
  ASSERT_TRUE(fp::fp_model::make(l.w, l.costs, l.nodes, m).empty());
  const auto x = fp::fp_exact(m);
  ASSERT_TRUE(x.feasible) << x.reason;
  EXPECT_EQ(x.shape.layout, fp_layout::single);
  EXPECT_EQ(x.shape.total(), 1U);
  EXPECT_EQ(fp::fp_greedy(m).shape, x.shape);
}

TEST(provisioner_feedplane, large_plan_counts_nats_and_matches_partitions) {
  loaded l;
  load(l, "large-100m-1b", "c64");
  fp::fp_model m;
  ASSERT_TRUE(fp::fp_model::make(l.w, l.costs, l.nodes, m).empty());
  const auto x = fp::fp_exact(m);
  ASSERT_TRUE(x.feasible) << x.reason;
  EXPECT_NE(x.shape.layout, fp_layout::single);
  EXPECT_GE(x.shape.hosts[size_t(fp_role::nats)], 3U);
  EXPECT_LE(x.shape.hosts[size_t(fp_role::match)], l.w.partitions);
  const auto g = fp::fp_greedy(m);
  ASSERT_TRUE(g.feasible);
  EXPECT_LE(m.price(x.shape), m.price(g.shape));
  const auto b = fp::fp_lower_bound(m);
  EXPECT_LE(m.price(b.shape), m.price(x.shape));
}

TEST(provisioner_feedplane, the_stream_is_a_floor_on_every_matching_host) {
  loaded l;
  load(l, "large-100m-1b", "c64");
  // A thin inbound link: every matching host reads the whole stream (9700 articles/s x
  // 868 B x 8 = 67 Mbps at peak), so no count of hosts fits under 60 Mbps.
  l.nodes[0].in_bps = 60e6;
  fp::fp_model m;
  ASSERT_TRUE(fp::fp_model::make(l.w, l.costs, l.nodes, m).empty());
  const auto x = fp::fp_exact(m);
  EXPECT_FALSE(x.feasible);
  EXPECT_NE(x.reason.find("in-bw"), std::string::npos) << x.reason;
  EXPECT_NE(x.reason.find("the article stream alone is"), std::string::npos) << x.reason;
  EXPECT_NE(x.reason.find("in_mbps >= "), std::string::npos) << x.reason;
  fp::fp_shape s;
  s.layout = fp_layout::split;
  s.hosts[0] = s.hosts[1] = s.hosts[2] = 3;
  EXPECT_GT(m.stream_floor(s, resource::in_bw), 1.0);
}

TEST(provisioner_feedplane, a_host_owns_whole_partitions) {
  loaded l;
  load(l, "moonshot-1m-10m", "project-machine");
  l.w.subscriptions = 60e6;  // several hosts' worth of matching
  l.w.partitions = 4;        // but only four partitions to share out
  fp::fp_model m;
  ASSERT_TRUE(fp::fp_model::make(l.w, l.costs, l.nodes, m).empty());
  const auto x = fp::fp_exact(m);
  if (x.feasible) {
    EXPECT_LE(x.shape.hosts[size_t(fp_role::match)], 4U);
  } else {
    EXPECT_NE(x.reason.find("one of the 4 partitions each"), std::string::npos) << x.reason;
  }
}

// Small random workloads and classes: exact equals brute force, is never dearer than greedy,
// and the bound is never above exact and strictly below it somewhere (whole partitions).
TEST(provisioner_feedplane, exact_against_brute_force_greedy_and_bound) {
  loaded base;
  load(base, "moonshot-1m-10m", "feedplane");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  int compared = 0, bound_below = 0, greedy_dearer = 0;
  for (int i = 0; i < 300; ++i) {
    fp::workload w = base.w;
    w.feeds = std::floor(1e5 + u(rng) * 4e6);
    w.subscriptions = std::floor(1e6 + u(rng) * 4e7);
    w.partitions = 1 + static_cast<uint32_t>(u(rng) * 12);
    std::vector<fp::node_class> classes = base.nodes;
    for (auto& c : classes) {
      c.cores = std::floor(1 + u(rng) * 8);
      c.memory_bytes = (2 + u(rng) * 16) * 1073741824.0;
      c.in_bps = 50e6 + u(rng) * 1e9;
      c.out_bps = 50e6 + u(rng) * 1e9;
      c.price = 0.5 + u(rng) * 2;
    }
    fp::fp_model m;
    ASSERT_TRUE(fp::fp_model::make(w, base.costs, classes, m).empty());
    const auto x = fp::fp_exact(m);
    if (!x.feasible) continue;
    bool small = true;
    for (const uint64_t h : x.shape.hosts) small = small && h <= 6;
    if (!small) continue;
    ++compared;
    const auto bf = fp::fp_brute_force(m, 6);
    ASSERT_TRUE(bf.feasible) << i;
    EXPECT_NEAR(m.price(x.shape), m.price(bf.shape), 1e-9) << i;
    EXPECT_EQ(x.shape.total(), bf.shape.total()) << i;
    EXPECT_TRUE(m.feasible(x.shape)) << i;
    const auto g = fp::fp_greedy(m);
    if (g.feasible) {
      EXPECT_GE(m.price(g.shape), m.price(x.shape) - 1e-9) << i;
      greedy_dearer += m.price(g.shape) > m.price(x.shape) + 1e-9;
    }
    const auto b = fp::fp_lower_bound(m);
    ASSERT_TRUE(b.feasible) << i;
    EXPECT_LE(m.price(b.shape), m.price(x.shape) + 1e-9) << i;
    bound_below += m.price(b.shape) < m.price(x.shape) - 1e-9;
  }
  EXPECT_GE(compared, 50);
  EXPECT_GT(bound_below, 0) << "exact never above the bound: one of them is not what it claims";
  EXPECT_GT(greedy_dearer, 0) << "greedy (one class, roles apart) never dearer than exact";
}

}  // namespace
