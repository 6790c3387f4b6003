// Output buffers lent to connections only while they have something to hold (per-shard
// pool, no allocation in steady state, no buffer kept by an idle connection). Used by the
// server for responses and by the client for requests and TLS output. One per owner
// (server, client), on its thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace feedplane::net {

class string_pool {
 public:
  // Gives s (empty, holding no buffer worth keeping) a pooled buffer, if there is one.
  void take(std::string& s) {
    if (pool_.empty()) return;
    s.swap(pool_.back());
    pool_.pop_back();
    bytes_ -= s.capacity();
  }
  // Takes s's buffer back (s is left empty, without a heap buffer). Keeps a bounded number
  // of moderately sized buffers; the rest go back to the allocator.
  void give(std::string& s) {
    s.clear();
    if (s.capacity() >= k_min && s.capacity() <= k_max && pool_.size() < k_count) {
      bytes_ += s.capacity();
      pool_.emplace_back();
      pool_.back().swap(s);
    } else {
      std::string().swap(s);
    }
  }
  // Returns every pooled buffer to the allocator.
  void clear() {
    std::vector<std::string>().swap(pool_);
    bytes_ = 0;
  }
  // Heap bytes held for reuse.
  size_t bytes() const { return bytes_; }
  size_t size() const { return pool_.size(); }

  static constexpr size_t k_min = 64;  // smaller lives inside the string (SSO) or is cheap
  static constexpr size_t k_max = size_t{256} * 1024;
  static constexpr size_t k_count = 4096;

 private:
  std::vector<std::string> pool_;
  size_t bytes_ = 0;
};

}  // namespace feedplane::net
