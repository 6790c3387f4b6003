// A word's postings in a shard's recent-article index (backfill and preview): ascending
// article sequences, appended at the back and dropped from the front as they leave the
// window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace feedplane::reflector {

// A vector with a head index: 32 bytes per word and 8 per posting. A std::deque took ~600
// bytes for a word's first posting (its 512-byte block and its map), and most words of a
// day's articles have few postings.
struct seq_list {
  std::vector<uint64_t> v;
  size_t head = 0;  // v[0, head) have left the window

  bool empty() const { return head == v.size(); }
  size_t size() const { return v.size() - head; }
  void push_back(uint64_t seq) { v.push_back(seq); }
  // Starts loading the place the next push_back writes (none when it must grow).
  void prefetch_back() const {
    if (v.size() < v.capacity()) __builtin_prefetch(v.data() + v.size(), 1);
  }
  // Drops the postings below first from the front; returns how many left.
  size_t trim_below(uint64_t first) {
    const size_t from = head;
    while (head < v.size() && v[head] < first) ++head;
    const size_t dropped = head - from;
    if (head == v.size()) {
      v.clear();
      head = 0;
    } else if (head >= 16 && head * 2 >= v.size()) {
      // The left half goes when it is half the vector: amortised O(1) per posting.
      v.erase(v.begin(), v.begin() + ptrdiff_t(head));
      head = 0;
    }
    return dropped;
  }
  // Newest first.
  auto rbegin() const { return v.rbegin(); }
  auto rend() const { return v.rend() - ptrdiff_t(head); }
};

}  // namespace feedplane::reflector
