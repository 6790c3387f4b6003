// One source as its owner shard keeps it resident: a million of these fit in about 1 KiB
// each (issue 10). The fixed-size crawl fields are held as is; the six strings share one
// heap block; the seen identities are feed::seen_set's compact records; everything a fetch
// needs only while it runs (parser, keys, verdicts) is the shard's scratch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "feedplane/crawler/records.h"
#include "feedplane/feed/dedup.h"

namespace feedplane::crawler {

// A source's strings in one heap block: a varint length per field, then the bytes, in field
// order; no block at all when every field is empty. One allocation instead of six strings
// (32 bytes each inline, plus a block each for anything over 15 bytes): a URL, a title and
// two validators cost ~120 bytes instead of ~300. Setting a field rebuilds the block (a
// fetch changes at most the validators and the last error).
class source_text {
 public:
  enum field : uint8_t { url, title, etag, last_modified, last_error, moved_to, k_fields };
  // Longer values are cut at this many bytes (on a UTF-8 boundary): far beyond any URL
  // (4 KiB at most), validator or title a source keeps.
  static constexpr size_t k_max = (size_t{1} << 21) - 1;

  source_text() = default;
  source_text(const source_text& o) { *this = o; }
  source_text& operator=(const source_text& o);
  source_text(source_text&&) noexcept = default;
  source_text& operator=(source_text&&) noexcept = default;

  std::string_view get(field f) const;
  // Every field in one decoding of the block (get() decodes it for each field).
  std::array<std::string_view, k_fields> all() const;
  void set(field f, std::string_view v);
  // Both fields in one rebuild (a fetch's two validators).
  void set(field f, std::string_view v, field g, std::string_view w);
  // Bytes requested from the heap (0 when every field is empty).
  size_t heap_bytes() const;
  // Starts loading the block's first line (its lengths, the URL and most of the rest).
  void prefetch() const { __builtin_prefetch(p_.get()); }

 private:
  // Builds a new block from fields (which may point into the old one).
  void rebuild(const std::array<std::string_view, k_fields>& fields);

  std::unique_ptr<char[]> p_;
};
static_assert(sizeof(source_text) == sizeof(void*));

// A source on its owner shard. The crawler keeps these in a std::map by id (node-stable:
// fetch callbacks and the schedule find them by id, listings walk them in id order).
struct source {
  uint64_t id = 0;
  uint64_t fetch_id = 0;   // the client's fetch in flight (0: none)
  source_text text;        // url, title, validators, last error, pending redirect target
  feed::feed_state state;  // document hash and seen records
  crawl_fields rec;        // schedule, status, posting history, publisher's hints
  // Bits, so that the map's node (links, key, source) stays in a 256-byte allocation.
  bool durable : 1 = false;  // its source record is durable: listed and fetched
  bool writing : 1 = false;  // a crawl write is in flight (no fetch starts meanwhile)
  bool fetched : 1 = false;  // it has a crawl record: not its first fetch
  bool moved : 1 = false;    // url changed (a permanent redirect adopted): rewrite its record
  bool wave : 1 = false;     // fetched overdue at a restart: spread its next fetch (schedule.h)
  // Matches arrived since its last crawl write: the next fetch writes, even a 304's, if
  // its last write for the weight alone was in another weight epoch (crawler.cc).
  bool weight_changed : 1 = false;
  uint8_t weight_epoch : 2 = 0;  // the weight epoch (mod 4) of that write

  // The allocation's weight: 1 + the subscriptions a recent article of it matched.
  float weight() const { return rec.matched.weight(); }

  std::string_view url() const { return text.get(source_text::url); }
  std::string_view title() const { return text.get(source_text::title); }

  // The durable form of what this source learnt (seen records included).
  void to_record(crawl_record& out) const;
  // Takes back a decoded record (after a restart): fields, strings, seen records; leaves
  // the record's strings and seen records moved from.
  void from_record(crawl_record& r);
  // Heap bytes this source holds beyond sizeof(source) (requested sizes).
  size_t heap_bytes() const { return text.heap_bytes() + state.heap_bytes(); }
};
// std::map's node is its links and colour (32 bytes), the key and the source: 256 bytes, one
// of the allocator's size classes (mimalloc: 256 then 320).
static_assert(32 + sizeof(uint64_t) + sizeof(source) <= 256);

}  // namespace feedplane::crawler
