// What the machine itself costs, the limits other figures are read against: a system call
// (the floor under every syscall-bound peer, such as libcurl's poll/recvfrom/sendto), and
// the machine's own tail (bench/machine_tail.h): a register-only loop of 8, 25 and 50 us,
// the lengths of a 1M match warm, a 1M match on the shards and a 10M match, timed in the
// thread's CPU time as the tail figures are. On a VM whose host takes time from the vCPU
// without telling the guest, that loop's p99 / median is the best any code of that length
// can show there (bench/RESULTS.md, "matcher: the matching tail", 2026-12-01).
//
//   build/bench/machine_bench
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "machine_tail.h"

namespace fb = feedplane::bench;

namespace {

// One getppid system call per iteration: the kernel entry and exit and nothing else.
void BM_syscall(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getppid));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The loop of state.range(0) us, timed per sample: median, p99, p99.9, and the share of
// samples stretched by more than 10 us (with the sample's length, how often per second
// the machine takes such time: share / length).
void BM_tail(benchmark::State& state) {
  const double target_ns = static_cast<double>(state.range(0)) * 1e3;
  const uint64_t steps = fb::spin_steps_for(target_ns);
  std::vector<double> ns;
  ns.reserve(200000);
  uint64_t x = 1;
  for (auto _ : state) {
    const double t0 = fb::thread_cpu_ns();
    x = fb::spin(steps, x);
    ns.push_back(fb::thread_cpu_ns() - t0);
  }
  benchmark::DoNotOptimize(x);
  std::sort(ns.begin(), ns.end());
  const auto at = [&](double q) {
    return ns[std::min(ns.size() - 1, static_cast<size_t>(q * static_cast<double>(ns.size())))];
  };
  const double median = at(0.5);
  const size_t stretched =
      static_cast<size_t>(ns.end() - std::upper_bound(ns.begin(), ns.end(), median + 10e3));
  const double share = static_cast<double>(stretched) / static_cast<double>(ns.size());
  state.counters["median_us"] = median / 1e3;
  state.counters["p99_us"] = at(0.99) / 1e3;
  state.counters["p999_us"] = at(0.999) / 1e3;
  state.counters["p99_per_median"] = at(0.99) / median;
  state.counters["stretched_share"] = share;
  state.counters["stretches_per_s"] = share / (median / 1e9);
}

}  // namespace

BENCHMARK(BM_syscall);
BENCHMARK(BM_tail)->Arg(8)->Arg(25)->Arg(50)->Iterations(100000)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
