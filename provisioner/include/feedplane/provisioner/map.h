// Feed-to-crawler mapping (seed 000, section 3.7; issue 14): groups of feeds that should
// stay on one crawler (an address or a registrable domain), their RTT to every crawler, and
// a capacity in feeds per crawler. Cobra's first-fit is the baseline; min-cost is the exact
// optimum of the splittable problem, solved as a min-cost flow by successive shortest paths
// on the crawlers and proved optimal by reduced costs over every arc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/provisioner/inputs.h"

namespace feedplane::provisioner {

struct latency_matrix {
  uint32_t crawlers = 0;
  std::vector<std::string> groups;
  std::vector<uint64_t> feeds;  // per group
  std::vector<int32_t> rtt;     // tenths of a millisecond, groups x crawlers, row-major
  uint64_t total_feeds = 0;
  [[nodiscard]] int32_t at(size_t group, uint32_t crawler) const {
    return rtt[group * crawlers + crawler];
  }
};

// Reads `group,feeds,rtt_ms_1,...,rtt_ms_C`, every cell present; errors name file, line and
// column (as the key).
std::vector<input_error> read_latency_csv(std::string_view text, std::string_view file,
                                          latency_matrix& out);
std::vector<input_error> load_latency_csv(const std::string& path, latency_matrix& out);

struct mapping {
  bool feasible = false;
  std::string reason;
  // Per group, the crawlers it went to and how many of its feeds each took.
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> placed;
  std::vector<uint64_t> per_crawler;
  uint64_t split_groups = 0;
  int64_t total_cost = 0;  // sum over feeds of RTT, tenths of a millisecond
  double mean_ms = 0, median_ms = 0, p90_ms = 0;
  uint64_t paths = 0;   // min-cost: augmenting paths
  uint64_t cycles = 0;  // min-cost: cycles of split groups turned to leave at most C - 1
};

// Cobra's first-fit: each crawler in turn takes one feed from its nearest group that has
// feeds left, until every crawler holds `capacity` feeds or no feed is left.
mapping map_first_fit(const latency_matrix& m, uint64_t capacity);
// The least total RTT with at most `capacity` feeds per crawler (the splittable problem):
// successive shortest paths over the crawlers from every group on its nearest one, checked
// by complementary slackness over every group-to-crawler arc, then split groups reduced to
// a forest (at most C - 1).
mapping map_min_cost(const latency_matrix& m, uint64_t capacity);
// Every assignment of every feed (tiny matrices only: the tests' oracle).
mapping map_brute_force(const latency_matrix& m, uint64_t capacity);

// A latency matrix shaped like the measured Internet, as CSV: sites in a handful of regions
// on a plane (RTT = distance + each end's access delay, Vivaldi's height model), detours
// that break the triangle inequality, RTTs from about 0.5 ms to 800 ms, and feeds per group
// skewed as Cobra saw them (35% on one host, half on two, the rest Zipf). Deterministic in
// the seed.
std::string generate_latency_csv(uint64_t groups, uint32_t crawlers, uint64_t feeds, uint64_t seed);

}  // namespace feedplane::provisioner
