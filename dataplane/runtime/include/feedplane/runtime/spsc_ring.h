// spsc_ring<T>: a bounded single-producer single-consumer ring between two threads.
//
// Layout. Power-of-two capacity. The published tail and the freed head each have a cache
// line of their own; each side's private fields (the producer's staged index and cached
// copy of head, the consumer's local head and cached copy of tail) have another, and the
// slots theirs. Each side reads the other's index only when its cached copy says the
// ring looks full (producer) or empty (consumer), so in steady state each side touches a
// shared line once per batch, not once per item.
//
// Staging. The producer constructs items straight into free slots (stage / try_stage)
// and makes them visible with publish(): one release store per batch, however many items
// it holds. The consumer takes a batch with consume(): it reads the published tail once,
// moves each item out, destroys it in place, and frees the slots with one release store.
//
// Ownership. An item belongs to the producer until publish(), to the ring until the
// consumer's callback takes it (the callback gets T& and may move from it), and the ring
// destroys the moved-from shell. ~spsc_ring destroys whatever is still inside, staged or
// published, so owning payloads (unique_ptr, article_ref) never leak on shutdown.
//
// Memory ordering (the whole argument):
//  (P) producer: construct slot[t] ... ; tail_.store(t+n, release)
//  (C) consumer: t = tail_.load(acquire)  -- pairs with (P): slots below t are constructed
//  (C') consumer: destroy slot[h] ... ; head_.store(h+n, release)
//  (P') producer: h = head_.load(acquire) -- pairs with (C'): slots below h are destroyed,
//       so constructing into them does not race with the consumer's reads.
// Nothing else is shared. Waking a sleeping consumer is not the ring's business: see
// sleeper.h (a seq_cst fence on each side, the Dekker pattern).
//
// T's move constructor and destructor must not throw, nor may consume()'s callback: an
// exception half way through a batch would leave destroyed items inside the ring.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace feedplane::runtime {

inline constexpr size_t cache_line = 64;

template <class T>
class spsc_ring {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>);

 public:
  // capacity is rounded up to a power of two (at least 2).
  explicit spsc_ring(uint32_t capacity) {
    uint32_t c = 2;
    while (c < capacity && c < (1u << 31)) c <<= 1;
    mask_ = c - 1;
    slots_ = static_cast<slot*>(::operator new (sizeof(slot) * c, std::align_val_t{cache_line}));
  }
  ~spsc_ring() {
    // Destroys published-but-unconsumed and staged-but-unpublished items alike.
    const uint64_t end = p_.staged;
    for (uint64_t i = head_.v.load(std::memory_order_relaxed); i < end; ++i) at(i)->~T();
    ::operator delete (slots_, std::align_val_t{cache_line});
  }
  spsc_ring(const spsc_ring&) = delete;
  spsc_ring& operator=(const spsc_ring&) = delete;

  uint32_t capacity() const { return mask_ + 1; }

  // ---- producer thread ----
  // Free slots the producer can stage into now, at least `want` if the consumer has freed
  // them (the cached head is refreshed when it shows fewer).
  uint32_t free_slots(uint32_t want = 1) {
    uint64_t used = p_.staged - p_.cached_head;
    if (capacity() - used < want) {
      // (P') acquire: pairs with the consumer's release of head in consume().
      p_.cached_head = head_.v.load(std::memory_order_acquire);
      used = p_.staged - p_.cached_head;
    }
    return uint32_t(capacity() - used);
  }
  // Constructs an item in the next free slot without publishing it. False when full.
  template <class... Args>
  bool try_stage(Args&&... args) {
    if (p_.staged - p_.cached_head > mask_) {
      // (P') acquire: pairs with the consumer's release of head in consume().
      p_.cached_head = head_.v.load(std::memory_order_acquire);
      if (p_.staged - p_.cached_head > mask_) return false;
    }
    ::new (static_cast<void*>(at(p_.staged))) T(std::forward<Args>(args)...);
    ++p_.staged;
    return true;
  }
  // The batch form: moves up to n items from first, ... into free slots with one capacity
  // check and one index update (the per-item form must re-read `staged` after each slot
  // store, which may alias it). Returns how many it staged; the rest stay with the caller.
  template <class It>
  uint32_t try_stage_n(It first, uint32_t n) {
    const uint32_t room = free_slots(n);
    if (n > room) n = room;
    const uint64_t s = p_.staged;
    // In at most two contiguous runs (before and after the wrap): plain pointer walks.
    uint32_t done = 0;
    while (done < n) {
      const uint32_t idx = uint32_t((s + done) & mask_);
      const uint32_t run = std::min(n - done, capacity() - idx);
      T* dst = at(idx);
      for (uint32_t i = 0; i < run; ++i, ++first)
        ::new (static_cast<void*>(dst + i)) T(std::move(*first));
      done += run;
    }
    p_.staged = s + n;
    return n;
  }
  // Items staged and not yet published.
  uint32_t unpublished() const { return uint32_t(p_.staged - p_.tail_local); }
  // Makes every staged item visible to the consumer: one release store per batch.
  // Returns how many items this published.
  uint32_t publish() {
    const uint32_t n = unpublished();
    if (n != 0) {
      p_.tail_local = p_.staged;
      // (P) release: the slot constructions above happen-before the consumer's acquire.
      tail_.v.store(p_.staged, std::memory_order_release);
    }
    return n;
  }
  // try_stage + publish.
  template <class... Args>
  bool try_push(Args&&... args) {
    if (!try_stage(std::forward<Args>(args)...)) return false;
    publish();
    return true;
  }

  // ---- consumer thread ----
  // Calls f(T&) for up to `max` published items in order, then frees their slots with one
  // release store. Returns how many it consumed.
  template <class F>
  size_t consume(F&& f, size_t max = SIZE_MAX) {
    uint64_t avail = c_.cached_tail - c_.head_local;
    if (avail == 0) {
      // (C) acquire: pairs with the producer's release of tail in publish().
      c_.cached_tail = tail_.v.load(std::memory_order_acquire);
      avail = c_.cached_tail - c_.head_local;
      if (avail == 0) return 0;
    }
    const uint64_t n = avail < max ? avail : max;
    const uint64_t h0 = c_.head_local;
    // In at most two contiguous runs (before and after the wrap): plain pointer walks.
    uint64_t done = 0;
    while (done < n) {
      const uint32_t idx = uint32_t((h0 + done) & mask_);
      const uint64_t run = std::min<uint64_t>(n - done, capacity() - idx);
      T* item = at(idx);
      for (uint64_t i = 0; i < run; ++i) {
        f(item[i]);
        item[i].~T();
      }
      done += run;
    }
    c_.head_local = h0 + n;
    // (C') release: the destructions above happen-before the producer reuses the slots.
    head_.v.store(c_.head_local, std::memory_order_release);
    return size_t(n);
  }
  // True when a published item is waiting. Consumer thread (or the seq_cst re-check of
  // the sleep protocol on the consumer's thread).
  bool has_published() {
    if (c_.cached_tail != c_.head_local) return true;
    // (C) acquire: pairs with the producer's release of tail in publish().
    c_.cached_tail = tail_.v.load(std::memory_order_acquire);
    return c_.cached_tail != c_.head_local;
  }

  // ---- any thread (metrics) ----
  // Approximate occupancy: published, not yet consumed.
  uint32_t occupancy() const {
    // Relaxed: a gauge, no data is read on the strength of it.
    const uint64_t t = tail_.v.load(std::memory_order_relaxed);
    const uint64_t h = head_.v.load(std::memory_order_relaxed);
    return t > h ? uint32_t(t - h) : 0;
  }

 private:
  struct slot {
    alignas(T) std::byte bytes[sizeof(T)];
  };
  static_assert(sizeof(slot) == sizeof(T), "slots form an array of T");
  T* at(uint64_t i) const { return std::launder(reinterpret_cast<T*>(slots_[i & mask_].bytes)); }

  // Four lines, so that nothing one side writes per item shares a line with what the
  // other side reads: the published tail (written once per batch by the producer, read by
  // the consumer), the freed head (the reverse), and each side's private indices, written
  // per item. (With `staged` beside `tail`, a consumer polling an empty ring pulled the
  // line away on every staged item: batching of 64 ran at half the speed of batch 1.)
  struct alignas(cache_line) shared_index {
    std::atomic<uint64_t> v{0};
  };
  struct alignas(cache_line) producer_side {
    uint64_t tail_local = 0;   // last published tail (producer's copy)
    uint64_t staged = 0;       // next slot to construct into
    uint64_t cached_head = 0;  // producer's view of head
  };
  struct alignas(cache_line) consumer_side {
    uint64_t head_local = 0;
    uint64_t cached_tail = 0;  // consumer's view of tail
  };
  shared_index tail_;  // written by publish(), read by the consumer
  shared_index head_;  // written by consume(), read by the producer
  producer_side p_;
  consumer_side c_;
  alignas(cache_line) slot* slots_ = nullptr;
  uint32_t mask_ = 0;
};

}  // namespace feedplane::runtime
