// When a feed is fetched next, for feeds without enough history for Sia and Cho's
// allocation: FeedEx's adaptive interval (seed 002, section 3.3). The freshness of a fetch
// is the fraction of the document's entries that were new; a document mostly new means we
// came late (halve the interval), one mostly old that we came early (double it), always
// between a floor and a ceiling. Pure functions: the crawler and the tests call the same.
#pragma once

#include <cstdint>

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

// The delay before retrying a feed after its n-th consecutive error (n >= 1): the floor
// doubled per error, at most the ceiling (and never shorter than the floor).
uint32_t error_backoff(uint32_t consecutive_errors, const interval_bounds& b);

}  // namespace feedplane::crawler
