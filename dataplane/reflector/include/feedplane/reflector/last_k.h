// A subscription's last k matches: article sequence numbers (8 bytes each), oldest first.
// Nothing else is kept per entry: what a feed renders comes from the shard's article cache
// or the store, by sequence.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace feedplane::reflector {

inline constexpr uint32_t max_k = 100;

class last_k {
 public:
  // Adds the match of article `seq`, which replaces article `replaces` (0: a new entry).
  // An updated entry takes the place of the version the list holds, so the list never
  // holds one entry twice; a sequence already present changes nothing (replaying the
  // article log after a snapshot is idempotent). Beyond k entries the oldest goes.
  // Returns true when the list changed.
  // Fast: a ring of k slots, so a full list drops its oldest by overwriting one slot
  // rather than shifting k - 1; a sequence above every one inserted so far (every live
  // match) skips the duplicate scan. One cache line of the list is touched, not k / 8.
  //
  // Out of order (a sequence below one inserted before: a backfill behind live matches, or
  // the replay of articles a restored snapshot already holds), a full list keeps its newest
  // k by sequence: a sequence below all it holds changes nothing (it would have been pushed
  // out), else it takes the slot of the lowest. So replaying from any point before a
  // snapshot's gives the snapshot's list again.
  bool insert(uint64_t seq, uint64_t replaces, uint32_t k) {
    const bool in_order = seq > max_;
    if (!in_order && find(seq) != npos) return false;
    if (replaces != 0 && replaces <= max_) {
      if (const uint32_t at = find(replaces); at != npos) {
        slots_[at] = seq;
        max_ = std::max(max_, seq);
        return true;
      }
    }
    if (slots_.size() != k) resize(k);
    if (!in_order && count_ == k) {
      uint32_t low = head_;
      for (uint32_t i = 1; i < count_; ++i) {
        if (slots_[wrap(head_ + i)] < slots_[low]) low = wrap(head_ + i);
      }
      if (seq < slots_[low]) return false;
      slots_[low] = seq;
      return true;
    }
    max_ = std::max(max_, seq);
    if (count_ < k) {
      slots_[wrap(head_ + count_)] = seq;
      ++count_;
    } else {
      slots_[head_] = seq;  // the oldest goes
      head_ = wrap(head_ + 1);
    }
    return true;
  }
  // Keeps the newest k entries; true when some went.
  bool trim(uint32_t k) {
    const bool dropped = count_ > k;
    resize(k);
    return dropped;
  }
  void clear() {
    slots_.clear();
    head_ = count_ = 0;
    max_ = 0;
  }
  // Oldest first (the newest entry is last): a copy, made per render, not per match.
  std::vector<uint64_t> items() const {
    std::vector<uint64_t> v;
    v.reserve(count_);
    for (uint32_t i = 0; i < count_; ++i) v.push_back(slots_[wrap(head_ + i)]);
    return v;
  }
  // The same into a reused vector (snapshots copy every list).
  void copy_to(std::vector<uint64_t>& v) const {
    v.clear();
    for (uint32_t i = 0; i < count_; ++i) v.push_back(slots_[wrap(head_ + i)]);
  }
  // f(seq) for each entry, oldest first, without a copy (the article log's collection).
  template <class F>
  void for_each(F&& f) const {
    for (uint32_t i = 0; i < count_; ++i) f(slots_[wrap(head_ + i)]);
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Starts loading the slot an in-order insert writes (the match loop calls it a few
  // subscriptions ahead, so the miss overlaps other work); reads only this object.
  // always_inline: a prefetch-only helper left to GCC 12's IPA pure-const pass can be found
  // `const` and its calls deleted (snapshot.h, restored_lists::prefetch).
  [[gnu::always_inline]] void prefetch_slot() const {
    if (!slots_.empty())
      __builtin_prefetch(&slots_[wrap(head_ + (count_ < slots_.size() ? count_ : 0))], 1);
  }
  // The same ahead of copy_to or for_each: the lines of the ring's oldest entry and of its
  // start (where a wrapped list goes on).
  [[gnu::always_inline]] void prefetch_items() const {
    if (count_ == 0) return;
    __builtin_prefetch(&slots_[head_]);
    __builtin_prefetch(slots_.data());
  }

 private:
  static constexpr uint32_t npos = UINT32_MAX;
  uint32_t wrap(uint32_t i) const { return i >= slots_.size() ? i - uint32_t(slots_.size()) : i; }
  uint32_t find(uint64_t seq) const {
    for (uint32_t i = 0; i < count_; ++i)
      if (slots_[wrap(head_ + i)] == seq) return wrap(head_ + i);
    return npos;
  }
  // k slots holding the newest min(count, k) entries from the oldest at slot 0.
  void resize(uint32_t k) {
    std::vector<uint64_t> v = items();
    if (v.size() > k) v.erase(v.begin(), v.end() - k);
    count_ = uint32_t(v.size());
    v.resize(k);
    v.shrink_to_fit();
    slots_ = std::move(v);
    head_ = 0;
  }

  std::vector<uint64_t> slots_;  // k of them once anything was inserted
  uint32_t head_ = 0;            // the oldest entry's slot
  uint32_t count_ = 0;
  uint64_t max_ = 0;  // the highest sequence ever inserted: above it, nothing is present
};

}  // namespace feedplane::reflector
