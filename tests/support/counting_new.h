// The operator new counting hook of tests/support/counting_new.cc, linked only into the
// tests that check a window makes no operator new call (each its own binary, since it
// replaces the global operator new and delete).
#pragma once

#include <atomic>
#include <cstdint>

namespace feedplane::test {
// While set, every operator new call adds one to new_calls. Relaxed loads and adds: the
// tests set, count and read on the test thread, after the counted window; other threads
// (a fixture's, gtest's) only need their calls to be atomic.
extern std::atomic<bool> new_counting;
extern std::atomic<uint64_t> new_calls;
}  // namespace feedplane::test
