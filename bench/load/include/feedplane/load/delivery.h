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
#include <string_view>
#include <unordered_map>
#include <vector>

#include "feedplane/load/reference.h"

namespace feedplane::load {

struct truth_entry {
  std::string feed, guid, link, title, text;
  double published = 0;  // unix seconds
  bool initial = false;  // in the feed before publishing started: never expected
  // When the entry left its feed's document (the feed's keep-th later entry was
  // published); infinity while it is still there.
  double evicted = 1e300;
};

// The truth log's entries, found by the identity the reflector serves (guid, else link).
class truth_index {
 public:
  static constexpr uint32_t unknown = 0xffffffffu;
  explicit truth_index(std::vector<truth_entry> entries);
  truth_index(const truth_index&) = delete;
  truth_index& operator=(const truth_index&) = delete;
  // The entry served as `id`, or unknown.
  uint32_t find(std::string_view id) const;
  const std::vector<truth_entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<truth_entry> entries_;
  std::unordered_map<std::string_view, uint32_t> by_id_;  // views into entries_
};

// A served item as the check keeps it: 16 bytes, so a 10M-subscription run's hundred
// million items fit in memory.
struct served_item {
  uint32_t entry = truth_index::unknown;  // in the truth index
  uint64_t seq = 0;                       // _feedplane.seq as served
};

struct checked_subscription {
  std::string id;
  std::string query;
  uint32_t k = 10;
  std::vector<served_item> served;   // as served, newest first; ids in the truth log
  std::vector<std::string> unknown;  // served ids that are in no truth entry (false items)
};

struct delivery_result {
  uint64_t expected = 0, delivered = 0, pushed_out = 0, unexplained = 0, duplicates = 0;
  uint64_t false_items = 0;           // served items that are no true match (also in unexplained)
  uint64_t bad_queries = 0;           // queries the reference could not parse
  uint64_t missed_at_source = 0;      // entries that left their feed before a crawl could see them
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
// keep_initial false leaves the backlog out (a million-feed farm's is ~14M entries; a
// served backlog item is then an unknown id, a false item either way).
bool read_truth(const std::string& path, std::vector<truth_entry>& out, std::string* error,
                bool keep_initial = true);

// seq[i] is feedplane's sequence of truth entry i (from its article log), 0 when it never
// sequenced it. Entries that feedplane never sequenced and that left their feed within
// `grace` seconds of being published (a crawler fetching at its ceiling interval could
// miss them: Cobra's "missed entries") are not expected; they are counted in
// missed_at_source. Any other entry that was never sequenced is unexplained.
delivery_result check_delivery(const truth_index& truth,
                               const std::vector<checked_subscription>& subs,
                               const std::vector<uint64_t>& seq, double grace = 0);

}  // namespace feedplane::load
