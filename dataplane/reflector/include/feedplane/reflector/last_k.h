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
  bool insert(uint64_t seq, uint64_t replaces, uint32_t k) {
    if (std::find(seqs_.begin(), seqs_.end(), seq) != seqs_.end()) return false;
    if (replaces != 0) {
      if (auto it = std::find(seqs_.begin(), seqs_.end(), replaces); it != seqs_.end()) {
        *it = seq;
        return true;
      }
    }
    if (seqs_.capacity() < k) seqs_.reserve(k);  // one allocation of k, not doubling
    seqs_.push_back(seq);
    trim(k);
    return true;
  }
  // Keeps the newest k entries; true when some went.
  bool trim(uint32_t k) {
    if (seqs_.size() <= k) return false;
    seqs_.erase(seqs_.begin(), seqs_.end() - k);
    return true;
  }
  void clear() { seqs_.clear(); }
  // Oldest first (the newest entry is last).
  std::span<const uint64_t> items() const { return seqs_; }
  size_t size() const { return seqs_.size(); }
  bool empty() const { return seqs_.empty(); }

 private:
  std::vector<uint64_t> seqs_;  // size <= k
};

}  // namespace feedplane::reflector
