// The shard's cache of rendered feeds: each feed is rendered once per change and kept
// between polls, within a byte budget. Owner-shard only (no locking). An entry is current
// while its version is the subscription's (the caller bumps versions from one counter, so a
// later subscription in a reused slot never sees an older one's feed).
//
// Eviction is CLOCK: a hit marks the entry used; the hand clears a mark once before it
// evicts, so feeds that readers poll stay, while one pass over ten million feeds (a load
// test's final read, a crawler of feeds) cycles through the budget instead of keeping
// every render. Evicting never drops the entry just put.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace feedplane::reflector {

template <class T>
class render_cache {
 public:
  using ptr = std::shared_ptr<const T>;
  explicit render_cache(size_t budget_bytes) : budget_(budget_bytes) {}

  // The feed under key if it is at `version` (marked used), else null.
  ptr get(uint64_t key, uint64_t version) {
    auto it = map_.find(key);
    if (it == map_.end() || it->second.version != version) return nullptr;
    it->second.used = true;
    return it->second.feed;
  }

  // Keeps feed (of `bytes`) under key at version, replacing what was there, then evicts
  // others until within the budget.
  void put(uint64_t key, uint64_t version, ptr feed, size_t bytes) {
    auto [it, added] = map_.try_emplace(key);
    entry& e = it->second;
    bytes_ -= e.bytes;
    e.feed = std::move(feed);
    e.version = version;
    e.bytes = bytes;
    e.used = false;
    bytes_ += bytes;
    if (added) ring_.push_back(key);
    evict(key);
  }

  // Drops every feed (memory pressure): each renders again at its next poll.
  void clear() {
    evictions_ += map_.size();
    map_.clear();
    ring_.clear();
    hand_ = bytes_ = 0;
  }

  size_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }
  uint64_t evictions() const { return evictions_; }

 private:
  struct entry {
    ptr feed;
    uint64_t version = 0;
    size_t bytes = 0;
    bool used = false;
  };

  void evict(uint64_t keep) {
    while (bytes_ > budget_ && ring_.size() > 1) {
      if (hand_ >= ring_.size()) hand_ = 0;
      const uint64_t key = ring_[hand_];
      auto it = map_.find(key);  // every key of the ring is in the map
      if (key == keep || it->second.used) {
        it->second.used = false;
        ++hand_;
        continue;
      }
      bytes_ -= it->second.bytes;
      map_.erase(it);
      ++evictions_;
      ring_[hand_] = ring_.back();
      ring_.pop_back();
    }
  }

  absl::flat_hash_map<uint64_t, entry> map_;
  std::vector<uint64_t> ring_;  // map_'s keys in CLOCK order
  size_t hand_ = 0, bytes_ = 0, budget_;
  uint64_t evictions_ = 0;
};

}  // namespace feedplane::reflector
