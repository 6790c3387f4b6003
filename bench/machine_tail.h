// The machine's own tail, the limit a tail ratio (p99 / median) is read against: a fixed
// quantum of register-only arithmetic, timed in the thread's CPU time exactly as a match
// is. It makes no loads or stores, so it neither evicts nor waits on anything; whatever
// stretches it (an interrupt, or time a hypervisor takes that the guest is never told of,
// both charged to the running thread) stretches any code of the same length as often.
// Used beside matcher_bench's tail rows and the load harness's tail on the shards.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace feedplane::bench {

// This thread's CPU time in ns (a system call or vDSO read, ~0.1 us, in every sample).
inline double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// n steps of a 64-bit LCG from x; the empty asm keeps the compiler from folding the loop.
inline uint64_t spin(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// Steps of spin() that take about target_ns of this thread's CPU time (the median of 64
// timed tries, so a stretched try does not skew it).
inline uint64_t spin_steps_for(double target_ns) {
  constexpr uint64_t k_probe = 100000;
  std::vector<double> t;
  uint64_t x = 1;
  for (int i = 0; i < 64; ++i) {
    const double t0 = thread_cpu_ns();
    x = spin(k_probe, x);
    t.push_back(thread_cpu_ns() - t0);
  }
  asm volatile("" : : "r"(x));
  std::sort(t.begin(), t.end());
  const double per_step = std::max(t[t.size() / 2], 1.0) / static_cast<double>(k_probe);
  return std::max<uint64_t>(1, static_cast<uint64_t>(target_ns / per_step));
}

}  // namespace feedplane::bench
