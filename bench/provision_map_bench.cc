// provision_map_bench: the feed-to-crawler mapping's min-cost solver (successive shortest
// paths over the crawlers, provisioner/src/map.cc) against LEMON's NetworkSimplex on the
// dense transportation graph (every group-to-crawler arc), on the same generated matrix,
// interleaved: ours, LEMON, ours, LEMON, ... Both answers must have the same total RTT.
// Also times Cobra's first-fit and the CSV parse, for the command's whole run time.
//
//   provision_map_bench [GROUPS CRAWLERS FEEDS RUNS]   (default 100000 100 1000000 5)
#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "../tests/lemon_oracle.h"
#include "feedplane/provisioner/map.h"

namespace fp = feedplane::provisioner;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t groups = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
  const auto crawlers = uint32_t(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 100);
  const uint64_t feeds = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1'000'000;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 5;
  const std::string csv = fp::generate_latency_csv(groups, crawlers, feeds, 1);
  std::vector<double> parse_s, first_s, ours_s, lemon_s;
  fp::latency_matrix m;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    m = {};
    if (!fp::read_latency_csv(csv, "generated", m).empty()) {
      fmt::print(stderr, "provision_map_bench: the generated matrix does not parse\n");
      return 1;
    }
    parse_s.push_back(seconds_since(t0));
    const uint64_t capacity = (m.total_feeds + crawlers - 1) / crawlers;
    t0 = std::chrono::steady_clock::now();
    const fp::mapping ff = fp::map_first_fit(m, capacity);
    first_s.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    const fp::mapping ours = fp::map_min_cost(m, capacity);
    ours_s.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    const int64_t peer = feedplane::test::lemon_dense_optimum(m, capacity);
    lemon_s.push_back(seconds_since(t0));
    if (!ours.feasible || ours.total_cost != peer || ours.total_cost > ff.total_cost) {
      fmt::print(stderr, "provision_map_bench: totals differ: ours {} ({}), LEMON {}\n",
                 ours.total_cost, ours.reason, peer);
      return 1;
    }
    fmt::print(
        "run {}: parse {:.2f} s, first-fit {:.2f} s, min-cost {:.2f} s ({} paths, {} cycles, {} "
        "split), LEMON dense {:.2f} s, ratio {:.1f}x\n",
        r + 1, parse_s.back(), first_s.back(), ours_s.back(), ours.paths, ours.cycles,
        ours.split_groups, lemon_s.back(), lemon_s.back() / ours_s.back());
  }
  std::vector<double> ratio;
  for (int r = 0; r < runs; ++r) ratio.push_back(lemon_s[size_t(r)] / ours_s[size_t(r)]);
  fmt::print(
      "{} groups, {} feeds, {} crawlers: median min-cost {:.2f} s [{:.2f}-{:.2f}], LEMON dense "
      "{:.2f} s [{:.2f}-{:.2f}], LEMON / ours {:.1f}x [{:.1f}-{:.1f}]; parse {:.2f} s, first-fit "
      "{:.2f} s\n",
      groups, feeds, crawlers, median(ours_s), *std::min_element(ours_s.begin(), ours_s.end()),
      *std::max_element(ours_s.begin(), ours_s.end()), median(lemon_s),
      *std::min_element(lemon_s.begin(), lemon_s.end()),
      *std::max_element(lemon_s.begin(), lemon_s.end()), median(ratio),
      *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
      median(parse_s), median(first_s));
  return 0;
}
