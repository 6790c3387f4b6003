// The delivery check (issue 12, DESIGN.md 9 "The load harness"): what every subscription's
// served feed must hold, given the truth log of what the farm published.
//
// For each checked subscription with k and its true matches E (entries published after
// the subscriptions were loaded that the reference matcher says match):
//   - |E| <= k: the served feed holds exactly E;
//   - |E| > k: it holds k true matches, and no true match is missing that feedplane
//     sequenced after the oldest one served (those before it were pushed out of the last k);
//   - every served item is a true match, and no item appears twice;
// and a run with nothing expected fails.
//
// Sequence numbers of entries that are not served come from feedplane's article log
// (GET /api/articles: an article has one global sequence). A missing entry that was never
// sequenced is unexplained: the crawler lost it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "feedplane/load/reference.h"

namespace feedplane::load {

struct truth_entry {
  std::string feed, guid, link, title, text;
  double published = 0;  // unix seconds
  bool initial = false;  // in the feed before publishing started: never expected
};

struct served_item {
  std::string id;  // the entry's guid (else its link), as the reflector serves it
  uint64_t seq = 0;
};

struct checked_subscription {
  std::string id;
  std::string query;
  uint32_t k = 10;
  std::vector<served_item> served;  // as served, newest first
};

struct delivery_result {
  uint64_t expected = 0, delivered = 0, pushed_out = 0, unexplained = 0, duplicates = 0;
  uint64_t false_items = 0;           // served items that are no true match (also in unexplained)
  uint64_t bad_queries = 0;           // queries the reference could not parse
  uint64_t subscriptions = 0;         // checked
  std::vector<std::string> examples;  // a few explained failures, for the report
  bool ok() const {
    return expected > 0 && unexplained == 0 && duplicates == 0 && bad_queries == 0;
  }
  // "delivery: E expected, D delivered, P pushed out, U unexplained, X duplicates"
  std::string line() const;
};

// Reads the farm's truth log (JSON Lines; the "kind": "entry" lines, with url, guid, link,
// published, title, text, initial). Returns false and sets *error on an unreadable file or
// line.
bool read_truth(const std::string& path, std::vector<truth_entry>& out, std::string* error);

delivery_result check_delivery(const std::vector<truth_entry>& truth,
                               const std::vector<checked_subscription>& subs,
                               const std::unordered_map<std::string, uint64_t>& known_seq);

}  // namespace feedplane::load
