// feedplane's own topology (issue 14): exact against brute force, greedy and the bound;
// whole partitions; the article stream as a per-host floor.
#include <gtest/gtest.h>

#include <algorithm>
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

// measured.toml is rewritten per machine (scripts/cost-model): only wide margins here.
// Figure 11's 1M x 10M (plain HTTP) needs CPU 0.17 of a project machine's 0.70.
TEST(provisioner_feedplane, a_workload_that_fits_one_host_gets_one_host_and_no_nats) {
  loaded l;
  load(l, "fig11-1m-10m", "project-machine");
  fp::fp_model m;
  ASSERT_TRUE(fp::fp_model::make(l.w, l.costs, l.nodes, m).empty());
  const auto x = fp::fp_exact(m);
  ASSERT_TRUE(x.feasible) << x.reason;
  EXPECT_EQ(x.shape.layout, fp_layout::single);
  EXPECT_EQ(x.shape.total(), 1U);
  EXPECT_EQ(fp::fp_greedy(m).shape, x.shape);
}

TEST(provisioner_feedplane, full_tls_handshakes_are_charged_to_crawling) {
  // The crawl host's CPU grows by fetches/s x HTTPS share x handshake share x the
  // handshake's cost, and by nothing else.
  loaded l;
  load(l, "moonshot-1m-10m", "project-machine");
  fp::fp_shape s;
  s.layout = fp_layout::split;
  s.hosts[size_t(fp_role::crawl)] = 1;
  s.hosts[size_t(fp_role::match)] = 1;
  s.hosts[size_t(fp_role::nats)] = 3;
  const auto crawl_cpu = [&](double handshakes) {
    fp::workload w = l.w;
    w.tls_handshake_share = handshakes;
    fp::fp_model m;
    EXPECT_TRUE(fp::fp_model::make(w, l.costs, l.nodes, m).empty());
    return m.utilisation(s, fp_role::crawl, fp::resource::cpu);
  };
  const double none = crawl_cpu(0), all = crawl_cpu(1), half = crawl_cpu(0.5);
  EXPECT_GT(all, none);
  EXPECT_NEAR(half - none, (all - none) / 2, 1e-9);
  const double per_fetch = l.costs.find("cpu_per_tls_handshake")->value;
  const double fetches = l.w.feeds / l.w.crawl_interval_s;
  const fp::node_class& n = l.nodes.front();
  EXPECT_NEAR((all - none) * n.cores * n.cpu_speed / n.headroom,
              fetches * l.w.https_share * per_fetch, 1e-6 * fetches * per_fetch);
}

TEST(provisioner_feedplane, resumed_handshakes_cost_what_the_client_measured) {
  // Moving a share of the handshakes from full to resumed takes exactly that share of the
  // difference between the two coefficients off the crawl host's CPU.
  loaded l;
  load(l, "moonshot-1m-10m", "project-machine");
  fp::fp_shape s;
  s.layout = fp_layout::split;
  s.hosts[size_t(fp_role::crawl)] = 1;
  s.hosts[size_t(fp_role::match)] = 1;
  s.hosts[size_t(fp_role::nats)] = 3;
  const auto crawl_cpu = [&](double resumed) {
    fp::workload w = l.w;
    w.tls_handshake_share = 1;
    w.tls_resumed_share = resumed;
    fp::fp_model m;
    EXPECT_TRUE(fp::fp_model::make(w, l.costs, l.nodes, m).empty());
    return m.utilisation(s, fp_role::crawl, fp::resource::cpu);
  };
  const double full = crawl_cpu(0), resumed = crawl_cpu(1), half = crawl_cpu(0.5);
  EXPECT_LT(resumed, full);
  EXPECT_NEAR(full - half, (full - resumed) / 2, 1e-9);
  const double saved = l.costs.find("cpu_per_tls_handshake")->value -
                       l.costs.find("cpu_per_tls_resumed_handshake")->value;
  EXPECT_GT(saved, 0);
  const double fetches = l.w.feeds / l.w.crawl_interval_s;
  const fp::node_class& n = l.nodes.front();
  EXPECT_NEAR((full - resumed) * n.cores * n.cpu_speed / n.headroom,
              fetches * l.w.https_share * saved, 1e-6 * fetches * saved);
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

TEST(provisioner_feedplane, partition_assignment_moves_the_fewest) {
  // Fresh: contiguous, balanced, every partition once.
  const auto fresh = fp::assign_partitions(10, 3, nullptr);
  ASSERT_EQ(fresh.size(), 3U);
  EXPECT_EQ(fp::partition_ranges(fresh[0]), "0-3");
  EXPECT_EQ(fp::partition_ranges(fresh[1]), "4-6");
  EXPECT_EQ(fp::partition_ranges(fresh[2]), "7-9");
  std::vector<uint32_t> back;
  ASSERT_TRUE(fp::parse_partition_ranges("0-3,7,9-10", 11, back));
  EXPECT_EQ(back, (std::vector<uint32_t>{0, 1, 2, 3, 7, 9, 10}));
  EXPECT_FALSE(fp::parse_partition_ranges("0-3,7,9-11", 11, back));
  EXPECT_FALSE(fp::parse_partition_ranges("3-1", 11, back));
  EXPECT_FALSE(fp::parse_partition_ranges("x", 11, back));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) {
    const auto parts = static_cast<uint32_t>(1 + rng() % 300);
    const uint64_t before_hosts = 1 + rng() % 20, after_hosts = 1 + rng() % 20;
    const auto before = fp::assign_partitions(parts, before_hosts, nullptr);
    const auto after = fp::assign_partitions(parts, after_hosts, &before);
    ASSERT_EQ(after.size(), after_hosts);
    std::vector<int> owner(parts, -1), seen(parts, 0);
    for (size_t h = 0; h < before.size(); ++h)
      for (const uint32_t p : before[h]) owner[p] = static_cast<int>(h);
    uint64_t moved = 0, lo = parts, hi = 0;
    for (size_t h = 0; h < after.size(); ++h) {
      lo = std::min<uint64_t>(lo, after[h].size());
      hi = std::max<uint64_t>(hi, after[h].size());
      for (const uint32_t p : after[h]) {
        ++seen[p];
        moved += owner[p] != static_cast<int>(h);
      }
    }
    for (const int n : seen) EXPECT_EQ(n, 1);
    EXPECT_LE(hi - lo, 1U) << "balanced";
    // The fewest moves any balanced assignment can make: a kept host keeps at most its
    // quota, and which hosts get the larger quota is free, so the best is the sum over kept
    // hosts of min(held, quota) with the larger quotas on the larger holdings.
    std::vector<uint64_t> held;
    for (uint64_t h = 0; h < std::min(before_hosts, after_hosts); ++h)
      held.push_back(before[h].size());
    std::sort(held.rbegin(), held.rend());
    uint64_t keep = 0;
    const uint64_t base = parts / after_hosts, extra = parts % after_hosts;
    for (size_t k = 0; k < held.size(); ++k) keep += std::min(held[k], base + (k < extra ? 1 : 0));
    EXPECT_EQ(moved, parts - keep) << i;
    if (before_hosts == after_hosts) {
      EXPECT_EQ(moved, 0U);
    }
  }
}

TEST(provisioner_feedplane, planning_again_from_its_own_output_moves_nothing) {
  loaded l;
  load(l, "large-100m-1b", "feedplane");
  fp::report first;
  ASSERT_TRUE(fp::fp_report(l.w, l.nodes, l.costs, first).empty());
  ASSERT_TRUE(first.exact.feasible);
  fp::fp_previous prev;
  auto e = fp::read_previous_plan(fp::render_json(first), "p.json", l.nodes, l.w.partitions, prev);
  ASSERT_TRUE(e.empty()) << joined(e);
  fp::report again;
  ASSERT_TRUE(fp::fp_report(l.w, l.nodes, l.costs, again, &prev).empty());
  EXPECT_TRUE(again.kept_previous);
  for (const auto& mv : again.moves) {
    EXPECT_EQ(mv.added + mv.removed + mv.partitions_moved, 0U) << mv.role;
  }
  EXPECT_EQ(fp::render_text(again).find("partitions move"), std::string::npos);
  // More subscriptions: hosts are added, and only the partitions the new hosts take move.
  l.w.subscriptions *= 1.1;
  fp::report grown;
  ASSERT_TRUE(fp::fp_report(l.w, l.nodes, l.costs, grown, &prev).empty());
  ASSERT_TRUE(grown.exact.feasible);
  EXPECT_FALSE(grown.kept_previous);
  ASSERT_FALSE(grown.moves.empty());
  const auto& mv = *std::find_if(grown.moves.begin(), grown.moves.end(), [](const auto& m) {
    return m.role == "match" || m.role == "crawl+match";
  });
  ASSERT_GT(mv.hosts_after, mv.hosts_before);
  EXPECT_EQ(mv.added, mv.hosts_after - mv.hosts_before);
  // Every kept host held more than its new quota (P / before >= P / after), keeps its whole
  // quota and the larger quotas go to kept hosts first; the new hosts take the rest.
  const uint64_t base = l.w.partitions / mv.hosts_after, extra = l.w.partitions % mv.hosts_after;
  uint64_t kept = 0;
  for (uint64_t i = 0; i < mv.hosts_before; ++i) kept += base + (i < extra ? 1 : 0);
  EXPECT_EQ(mv.partitions_moved, l.w.partitions - kept);
  // A plan for another P cannot be the starting point.
  e = fp::read_previous_plan(fp::render_json(first), "p.json", l.nodes, 1024, prev);
  ASSERT_EQ(e.size(), 1U);
  EXPECT_NE(e[0].message.find("another P"), std::string::npos);
}

}  // namespace
