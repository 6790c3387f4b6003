// When a feed is fetched next, for feeds without enough history for Sia and Cho's
// allocation: FeedEx's adaptive interval (seed 002, section 3.3). The freshness of a fetch
// is the fraction of the document's entries that were new; a document mostly new means we
// came late (halve the interval), one mostly old that we came early (double it), always
// between a floor and a ceiling. Pure functions: the crawler and the tests call the same.
#pragma once

#include <cstdint>
#include <string_view>

#include "feedplane/feed/model.h"

namespace feedplane::crawler {

struct interval_bounds {
  uint32_t floor_s = 300;
  uint32_t ceiling_s = 86'400;
};

// A new feed's interval: one hour, within the bounds.
uint32_t initial_interval(const interval_bounds& b);

// The interval after a successful fetch that found `fresh` new entries among `total`
// (304 and an unchanged document are fresh = total = 0: nothing new, so mostly old).
// Halves when fresh * 2 >= total > 0 (mostly new), doubles when fresh * 4 < total or the
// document was unchanged (mostly old), keeps it in between; then clamps to the bounds.
uint32_t adapt_interval(uint32_t current_s, uint32_t fresh, uint32_t total,
                        const interval_bounds& b);

// The adaptive interval as scheduled, by a hash of the source and its fetch count. Sources
// fetched together (an import, a restart after downtime: `wave`) would come due together
// at every interval for ever: waves of thousands of fetches, then none. So after such a
// fetch the next comes anywhere in 10-100% of the interval (the phases spread at once, for
// one earlier fetch), and otherwise within 10% either way (phases keep drifting apart, at
// no cost on average); always within the bounds.
int64_t spread_interval_ms(uint32_t interval_s, uint64_t source_id, uint64_t fetches, bool wave,
                           const interval_bounds& b);

// The delay before retrying a feed after its n-th consecutive error (n >= 1): the floor
// doubled per error, at most the ceiling (and never shorter than the floor).
uint32_t error_backoff(uint32_t consecutive_errors, const interval_bounds& b);

// ---- publishers' hints ----

// The wait a Retry-After value asks for, in seconds from now_s (delta-seconds or an HTTP
// date; a date in the past is 0), or -1 when absent or unreadable.
int64_t retry_after_s(std::string_view value, int64_t now_s);

// How long a response stays fresh, in seconds: Cache-Control max-age, else Expires minus
// now_s (an unreadable or past Expires is 0); no-cache, no-store and must-revalidate with
// max-age=0 are 0; -1 when the response gives neither.
int64_t freshness_s(std::string_view cache_control, std::string_view expires, int64_t now_s);

// Which of a feed's own hints (feed::fetch_hints) placed a fetch; none: it stood where it was.
enum class feed_hint_rule : uint8_t { none, ttl, update_period, skip };

// The first time at or after at_ms that the feed's hints allow, for a fetch made at
// fetched_ms: not sooner than fetched_ms plus the longer of its ttl and its update period
// (sy:updatePeriod / sy:updateFrequency), then outside its skipped UTC hours and days (moved
// to the start of the first allowed hour). Never later than max(at_ms, fetched_ms +
// ceiling_s): the operator's ceiling bounds what the publisher asks, as it bounds
// Cache-Control. *rule names the hint that set the result (the last that moved it).
int64_t bound_by_feed_hints(const feed::fetch_hints& h, int64_t fetched_ms, int64_t at_ms,
                            uint32_t ceiling_s, feed_hint_rule* rule);

// When to retry a feed after its n-th consecutive error at now_ms: the error back-off, then
// bounded by the feed's own hints as a success is (an error never brings a fetch sooner
// than the publisher allows); *rule as bound_by_feed_hints.
int64_t error_retry_ms(const feed::fetch_hints& h, uint32_t consecutive_errors, int64_t now_ms,
                       const interval_bounds& b, feed_hint_rule* rule);

}  // namespace feedplane::crawler
