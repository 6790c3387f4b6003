// Feed-to-crawler mapping (issue 14, seed 000 3.7): min-cost against brute force per feed
// and against LEMON's NetworkSimplex on the dense graph, never worse than Cobra's first-fit,
// capacities respected, at most C - 1 groups split; the CSV reader's errors; the latency
// generator's shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "feedplane/provisioner/map.h"
#include "lemon_oracle.h"

namespace fp = feedplane::provisioner;

namespace {

std::string joined(const std::vector<fp::input_error>& errors) {
  std::string s;
  for (const auto& e : errors) s += e.to_string() + "\n";
  return s;
}

// The dense optimum by a textbook solver (LEMON), asserting that it found one.
int64_t dense_optimum(const fp::latency_matrix& m, uint64_t capacity) {
  const int64_t v = feedplane::test::lemon_dense_optimum(m, capacity);
  EXPECT_GE(v, 0) << "LEMON found no optimum";
  return v;
}

void expect_valid(const fp::latency_matrix& m, const fp::mapping& r, uint64_t capacity) {
  ASSERT_TRUE(r.feasible) << r.reason;
  uint64_t total = 0;
  for (size_t c = 0; c < m.crawlers; ++c) {
    EXPECT_LE(r.per_crawler[c], capacity);
    total += r.per_crawler[c];
  }
  EXPECT_EQ(total, m.total_feeds);
  for (size_t g = 0; g < m.groups.size(); ++g) {
    uint64_t n = 0;
    for (const auto& [c, k] : r.placed[g]) n += k;
    EXPECT_EQ(n, m.feeds[g]) << "group " << g;
  }
}

TEST(provisioner_map, min_cost_equals_brute_force_per_feed) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    fp::latency_matrix m;
    m.crawlers = 1 + static_cast<uint32_t>(rng() % 3);
    const size_t groups = 1 + rng() % 4;
    uint64_t budget = 7;
    for (size_t g = 0; g < groups && budget > 0; ++g) {
      const uint64_t n = 1 + rng() % std::min<uint64_t>(budget, 3);
      budget -= n;
      m.groups.push_back("g" + std::to_string(g));
      m.feeds.push_back(n);
      m.total_feeds += n;
      for (uint32_t c = 0; c < m.crawlers; ++c) m.rtt.push_back(static_cast<int32_t>(rng() % 2000));
    }
    const uint64_t capacity = (m.total_feeds + m.crawlers - 1) / m.crawlers + rng() % 2;
    const auto bf = fp::map_brute_force(m, capacity);
    const auto mc = fp::map_min_cost(m, capacity);
    expect_valid(m, mc, capacity);
    EXPECT_EQ(mc.total_cost, bf.total_cost) << i;
    EXPECT_LE(mc.total_cost, fp::map_first_fit(m, capacity).total_cost) << i;
  }
}

TEST(provisioner_map, min_cost_equals_the_dense_optimum_and_beats_first_fit) {
  uint64_t paths = 0, cycles = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    fp::latency_matrix m;
    const uint32_t crawlers = 4 + static_cast<uint32_t>(seed % 5) * 9;  // 4 to 40
    const std::string csv = fp::generate_latency_csv(300, crawlers, 5000, seed);
    auto e = fp::read_latency_csv(csv, "gen.csv", m);
    ASSERT_TRUE(e.empty()) << joined(e);
    // Tight (every crawler full) on even seeds, some room on odd ones.
    const uint64_t capacity = (m.total_feeds + m.crawlers - 1) / m.crawlers + (seed % 2) * seed * 7;
    const auto ff = fp::map_first_fit(m, capacity);
    const auto mc = fp::map_min_cost(m, capacity);
    expect_valid(m, ff, capacity);
    expect_valid(m, mc, capacity);
    EXPECT_EQ(mc.total_cost, dense_optimum(m, capacity)) << seed;
    EXPECT_LE(mc.total_cost, ff.total_cost) << seed;
    EXPECT_LE(mc.split_groups, m.crawlers - 1) << seed;
    paths += mc.paths;
    cycles += mc.cycles;
  }
  // Both stages ran somewhere: the capacities bound, and split groups had cycles to turn.
  EXPECT_GT(paths, 0U);
  EXPECT_GT(cycles, 0U);
}

TEST(provisioner_map, skewed_groups_split_over_many_crawlers) {
  // One group larger than four crawlers' capacity, nearest to crawler 1 for everybody:
  // it must spread, and nothing else may split beyond the C - 1 a basic optimum allows.
  fp::latency_matrix m;
  m.crawlers = 6;
  std::mt19937_64 rng(9);
  for (size_t g = 0; g < 40; ++g) {
    m.groups.push_back("g" + std::to_string(g));
    const uint64_t n = g == 0 ? 450 : 1 + rng() % 9;
    m.feeds.push_back(n);
    m.total_feeds += n;
    for (uint32_t c = 0; c < m.crawlers; ++c)
      m.rtt.push_back(c == 0 ? 5 : static_cast<int32_t>(50 + rng() % 3000));
  }
  const uint64_t capacity = (m.total_feeds + m.crawlers - 1) / m.crawlers;
  const auto mc = fp::map_min_cost(m, capacity);
  expect_valid(m, mc, capacity);
  EXPECT_EQ(mc.total_cost, dense_optimum(m, capacity));
  EXPECT_GE(mc.placed[0].size(), 5U);
  EXPECT_LE(mc.split_groups, m.crawlers - 1);
}

TEST(provisioner_map, too_little_capacity_is_refused) {
  fp::latency_matrix m;
  ASSERT_TRUE(fp::read_latency_csv("group,feeds,rtt_ms_1,rtt_ms_2\na,5,1,2\nb,4,3,1\n", "m.csv", m)
                  .empty());
  EXPECT_FALSE(fp::map_min_cost(m, 4).feasible);
  EXPECT_FALSE(fp::map_first_fit(m, 4).feasible);
  EXPECT_NE(fp::map_min_cost(m, 4).reason.find("fewer than the 9 feeds"), std::string::npos);
  const auto r = fp::map_min_cost(m, 5);
  expect_valid(m, r, 5);
  EXPECT_EQ(r.total_cost, 5 * 10 + 4 * 10);  // a on crawler 1, b on crawler 2, 1 ms each
}

TEST(provisioner_map, csv_errors_name_line_and_column) {
  fp::latency_matrix m;
  auto e = fp::read_latency_csv("group,feeds,rtt_ms_1,rtt_ms_3\n", "m.csv", m);
  ASSERT_EQ(e.size(), 1U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "m.csv:1: 'rtt_ms_3': expected rtt_ms_2");
  e = fp::read_latency_csv("group,feeds,rtt_ms_1,rtt_ms_2\na,5,1,2\nb,x,3,1\nc,1,3\nd,1,3,-2\n",
                           "m.csv", m);
  ASSERT_EQ(e.size(), 3U) << joined(e);
  EXPECT_EQ(e[0].to_string(), "m.csv:3: 'feeds': expected a positive integer, not 'x'");
  EXPECT_EQ(e[1].to_string(), "m.csv:4: 'rtt_ms_2': missing");
  EXPECT_EQ(e[2].to_string(), "m.csv:5: 'rtt_ms_2': expected milliseconds, not '-2'");
  e = fp::read_latency_csv("feeds,group\n", "m.csv", m);
  ASSERT_EQ(e.size(), 1U);
  EXPECT_EQ(e[0].line, 1U);
}

TEST(provisioner_map, generator_shape) {
  const std::string a = fp::generate_latency_csv(591, 11, 102446, 5);
  EXPECT_EQ(a, fp::generate_latency_csv(591, 11, 102446, 5)) << "deterministic in the seed";
  EXPECT_NE(a, fp::generate_latency_csv(591, 11, 102446, 6));
  fp::latency_matrix m;
  auto e = fp::read_latency_csv(a, "gen.csv", m);
  ASSERT_TRUE(e.empty()) << joined(e);
  EXPECT_EQ(m.total_feeds, 102446U);
  EXPECT_EQ(m.groups.size(), 591U);
  // Cobra's 102,446 feeds on 591 addresses: 35% on one host, half on two.
  EXPECT_NEAR(static_cast<double>(m.feeds[0]) / 102446, 0.35, 0.01);
  EXPECT_NEAR(static_cast<double>(m.feeds[0] + m.feeds[1]) / 102446, 0.50, 0.01);
  const auto [lo, hi] = std::minmax_element(m.rtt.begin(), m.rtt.end());
  EXPECT_GE(*lo, 3);     // 0.3 ms
  EXPECT_LE(*hi, 8000);  // 800 ms
  EXPECT_GE(*hi / std::max(*lo, 1), 100) << "RTTs span at least two orders of magnitude";
  // Detours break the triangle inequality somewhere: rtt(g,a) > rtt(g,b) + rtt(h,b) + rtt(h,a).
  bool violated = false;
  for (size_t g = 0; g < 50 && !violated; ++g)
    for (size_t h = 0; h < 50 && !violated; ++h)
      for (uint32_t x = 0; x < m.crawlers && !violated; ++x)
        for (uint32_t y = 0; y < m.crawlers && !violated; ++y)
          violated = m.at(g, x) > m.at(g, y) + m.at(h, y) + m.at(h, x);
  EXPECT_TRUE(violated);
}

}  // namespace
