// sleeper: waking a consumer thread that may be asleep, without a wake-up per message.
//
// A consumer (a shard's loop, or the store thread) drains its rings, and when they are all
// empty it goes to sleep (io_uring_enter, or a futex). A producer publishes, then wakes
// the consumer only if it may be asleep. Both sides are a store followed by a load:
//
//   consumer: sleeping = 1;  fence(seq_cst);  re-check every inbound ring (tail loads)
//   producer: publish (tail store); fence(seq_cst);  if sleeping: wake
//
// Release/acquire does not order a store before a later load, so without the fences the
// producer could read sleeping == 0 (stale) while the consumer reads the ring as empty
// (stale), and both would move on: a lost wake-up, a stall until some other event. With a
// seq_cst fence on each side (the Dekker pattern), at least one of the two loads sees the
// other's store: either the consumer sees the message and does not sleep, or the producer
// sees the flag and wakes it. The producer takes the flag with an exchange so that of
// several producers only one pays for the wake-up.
//
// A lost wake-up shows as a stall, never as a TSan report: tests/runtime_ring_test.cc has a
// consumer that sleeps between every batch.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "feedplane/runtime/spsc_ring.h"

namespace feedplane::runtime {

class alignas(cache_line) sleeper {
 public:
  // ---- consumer thread ----
  // Step one of going to sleep; then re-check every inbound ring and call cancel() if
  // any holds a message.
  void prepare() {
    // Relaxed store, ordered before the ring re-check by the seq_cst fence below.
    sleeping_.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // Dekker: pairs with may_sleep()
  }
  // The consumer is awake again (it woke, or it found work after prepare()).
  void cancel() { sleeping_.store(0, std::memory_order_relaxed); }
  // For a futex sleep: the word to wait on (value 1 while asleep).
  std::atomic<uint32_t>& word() { return sleeping_; }
  // A sleep with a time limit, after prepare() and the re-check: returns once a producer
  // took the flag and called wake(), or after `limit`, or spuriously (the caller re-checks
  // its rings either way). A raw futex: a sleeper that uses these never uses word().wait().
  void wait_for(std::chrono::nanoseconds limit) {
    if (limit.count() <= 0) return;
    timespec ts{time_t(limit.count() / 1'000'000'000), long(limit.count() % 1'000'000'000)};
    ::syscall(SYS_futex, futex_word(), FUTEX_WAIT_PRIVATE, 1u, &ts, nullptr, 0);
  }
  // The producer's wake-up for wait_for(), after must_wake() returned true.
  void wake() { ::syscall(SYS_futex, futex_word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }

  // ---- producer thread, after publishing ----
  // True when the caller must wake the consumer (at most one caller per sleep).
  bool must_wake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // Dekker: pairs with prepare()
    // Relaxed load first: the common case (consumer awake) costs no read-modify-write.
    if (sleeping_.load(std::memory_order_relaxed) == 0) return false;
    // acq_rel exchange: of several producers that saw the flag, exactly one gets 1.
    return sleeping_.exchange(0, std::memory_order_acq_rel) == 1;
  }

 private:
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                std::atomic<uint32_t>::is_always_lock_free);
  uint32_t* futex_word() { return reinterpret_cast<uint32_t*>(&sleeping_); }
  std::atomic<uint32_t> sleeping_{0};
};

}  // namespace feedplane::runtime
