// The crawler's durable records (kind::sources and kind::crawl, both keyed by
// placement.h's store_key). Little-endian fields behind a version byte; decode refuses
// anything short or of another version rather than guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/crawler/scheduler.h"
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

// kind::crawl: what fetching learnt, written with the articles it produced (one write).
struct crawl_record {
  std::string etag, last_modified;  // validators for the next conditional GET
  uint64_t document_hash = 0;       // feed_state::document_hash()
  uint32_t interval_s = 0;
  int64_t next_fetch_ms = 0;  // unix milliseconds
  uint8_t next_reason = 0;    // crawler.cc's reason table
  int64_t last_fetch_ms = 0;
  uint32_t last_status = 0;
  uint64_t last_bytes = 0;
  uint32_t last_new = 0;
  uint8_t last_outcome = 0;
  uint32_t consecutive_errors = 0;
  std::string last_error;
  uint64_t fetches = 0;
  uint64_t articles = 0;
  uint8_t flags = 0;     // crawl_flag bits
  std::string moved_to;  // a permanent redirect's target seen moved_count times in a row
  uint32_t moved_count = 0;
  posting_history history;  // what the feed's postings taught the scheduler (version 3)
  feed::fetch_hints hints;  // the publisher's, from its last parsed document (version 4)
  std::vector<std::pair<uint64_t, uint64_t>> seen;  // seen_set::snapshot(), oldest first
};

void encode(const source_record& r, std::string& out);
bool decode(std::string_view in, source_record& r);
void encode(const crawl_record& r, std::string& out);
bool decode(std::string_view in, crawl_record& r);

}  // namespace feedplane::crawler
