// The crawler's durable records (kind::sources and kind::crawl, both keyed by
// placement.h's store_key). Little-endian fields behind a version byte; decode refuses
// anything short, long, of an unknown version or out of range with a named reason rather
// than guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/crawler/scheduler.h"
#include "feedplane/feed/dedup.h"
#include "feedplane/feed/model.h"

namespace feedplane::crawler {

// kind::sources: what the user gave.
struct source_record {
  std::string url;
  std::string title;
};

enum crawl_flag : uint8_t {
  crawl_gone = 1,  // answered 410 Gone: never fetched again
};

// feed::fetch_hints in 12 bytes instead of 16: the skipped days ride in the top byte of
// the skipped hours' word.
struct packed_hints {
  uint32_t ttl_s = 0;
  uint32_t update_s = 0;
  uint32_t skip = 0;  // bits 0-23: skip_hours; bits 24-30: skip_days

  packed_hints() = default;
  packed_hints(const feed::fetch_hints& h)  // NOLINT(google-explicit-constructor): a copy
      : ttl_s(h.ttl_s),
        update_s(h.update_s),
        skip((h.skip_hours & 0xffffffu) | uint32_t(h.skip_days & 0x7fu) << 24) {}
  feed::fetch_hints get() const {
    return {ttl_s, update_s, skip & 0xffffffu, uint8_t(skip >> 24 & 0x7fu)};
  }
  friend bool operator==(const packed_hints&, const packed_hints&) = default;
};

// The fixed-size part of a crawl record: what a source keeps resident as is (its strings
// and seen records are kept elsewhere, compactly). 152 bytes: ordered without padding, and
// narrower than the record's fields where the value is bounded (an HTTP status, a write's
// credit of new entries, three redirect observations, a body under the client's cap, and
// the two counters, which saturate: 2^32 fetches at the 1 s floor take 136 years).
struct crawl_fields {
  posting_history history;    // what the feed's postings taught the scheduler (version 3)
  int64_t next_fetch_ms = 0;  // unix milliseconds
  int64_t last_fetch_ms = 0;
  uint32_t fetches = 0;   // saturates
  uint32_t articles = 0;  // saturates
  uint32_t interval_s = 0;
  uint32_t last_bytes = 0;  // saturates (bodies are capped far below 4 GiB)
  uint32_t consecutive_errors = 0;
  packed_hints hints;  // the publisher's, from its last parsed document (version 4)
  // The subscriptions its articles reached: the allocation's weight (version 6). As of
  // last_fetch_ms: aged at each fetch, so the record's pair stays consistent.
  match_weight matched;
  uint16_t last_status = 0;
  uint16_t last_new = 0;
  uint8_t moved_count = 0;
  uint8_t next_reason = 0;  // crawler.cc's reason table
  uint8_t last_outcome = 0;
  uint8_t flags = 0;  // crawl_flag bits
};
static_assert(sizeof(crawl_fields) <= 152, "a source's node must stay in 256 bytes");

// kind::crawl: what fetching learnt, written with the articles it produced (one write).
struct crawl_record : crawl_fields {
  std::string etag, last_modified;  // validators for the next conditional GET
  std::string last_error;
  std::string moved_to;        // a permanent redirect's target seen moved_count times in a row
  uint64_t document_hash = 0;  // feed_state::document_hash()
  std::vector<feed::seen_record> seen;  // seen_set::records(), oldest first (version 5)
  uint32_t seen_limit = 0;              // seen_set::capacity() (version 5)
  // Decoded from a version before 5: `seen` was converted from 64-bit (identity, content)
  // pairs (feed_state::restore_converted() re-bounds it at the next fetch).
  bool seen_converted = false;
};

// Why a stored record was refused.
enum class record_errc : uint8_t {
  ok,
  empty,
  unknown_version,
  truncated,       // a field runs past the end
  trailing_bytes,  // bytes left after the last field
  bad_field,       // a field out of range (an empty URL, a zero fingerprint, a bad history)
};
std::string_view record_errc_name(record_errc e);

void encode(const source_record& r, std::string& out);
record_errc decode(std::string_view in, source_record& r);
// Writes version 6.
void encode(const crawl_record& r, std::string& out);
// Reads versions 2 to 6.
record_errc decode(std::string_view in, crawl_record& r);

// Version 4 (the last with 64-bit seen pairs, written by feedplane before the compact
// seen set): kept to test the conversion. pairs: (identity, content), oldest first.
void encode_v4(const crawl_record& r, const std::vector<std::pair<uint64_t, uint64_t>>& pairs,
               std::string& out);

}  // namespace feedplane::crawler
