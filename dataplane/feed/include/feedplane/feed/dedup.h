// Entry identity and de-duplication, in Cobra's order (seed 000, section 3.1): a whole-
// document hash first, then per-entry identities against a bounded per-feed set of seen
// identities. Identity follows FeedEx (seed 002, section 2): the entry's id/guid unless it
// repeats within the document, then its link, then title plus published date. A content hash
// rides beside the identity: changed content under a known identity is an update, not a new
// article. One feed_state per feed, owned by the shard that crawls the feed (not shared).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/feed/model.h"

namespace feedplane::feed {

enum class identity_kind : uint8_t { id, link, title_published, content };

struct entry_key {
  uint64_t identity = 0;  // never 0 (0 marks an empty slot)
  uint64_t content = 0;   // hash of title, link, summary and content
  identity_kind kind = identity_kind::id;
  // The entry's other identities unique in the document (id, link, title plus published; 0
  // when none): the
  // kind chosen can change between fetches (a guid that starts or stops repeating), so a
  // miss on `identity` is checked against these before the entry counts as new.
  uint64_t aliases[3] = {0, 0, 0};
  // The entry's link identity when its link is unique in the document and is not already
  // `identity`, else 0: recorded beside the identity, so an entry first known by its guid is
  // still known when the guids later start repeating (then the link identifies it).
  uint64_t link_alias = 0;
};

// Computes one key per entry of f, in order, into keys (cleared first).
void compute_keys(const feed& f, std::vector<entry_key>& keys);

enum class verdict : uint8_t {
  fresh,      // identity never seen: a new article, goes to matching
  updated,    // identity seen with different content: flagged update, goes to matching
  seen,       // identity and content both seen before: dropped
  duplicate,  // same identity earlier in this same document: dropped
};

std::string_view verdict_name(verdict v);

// A bounded set of seen identities with their content hashes, evicting the least recently
// seen. Capacity is a power of two; lookups are open addressing with linear probing.
class seen_set {
 public:
  explicit seen_set(size_t capacity = 64);

  // Content hash last recorded for identity, or false when it is not in the set.
  bool find(uint64_t identity, uint64_t* content) const;
  // Records identity (new or refreshed) with its content hash; may evict the least recently
  // seen identity when full.
  void put(uint64_t identity, uint64_t content);
  // Grows to at least n identities (never shrinks: forgetting would re-deliver).
  void reserve(size_t n);

  size_t size() const { return live_; }
  size_t capacity() const { return ring_.size(); }
  // (identity, content) pairs, least recently seen first: what a store persists.
  std::vector<std::pair<uint64_t, uint64_t>> snapshot() const;
  // Puts a snapshot back (after a restart), oldest first, so nothing is re-delivered.
  void restore(const std::vector<std::pair<uint64_t, uint64_t>>& snap);

 private:
  struct slot {
    uint64_t identity = 0;
    uint64_t content = 0;
    uint64_t seq = 0;  // ring sequence of the identity's latest put
  };
  size_t probe(uint64_t identity) const;  // slot holding identity, or the empty slot to use
  void erase_slot(size_t i);
  void rebuild(size_t ring_capacity);

  std::vector<slot> table_;       // 2x ring capacity: load <= 0.5
  std::vector<uint64_t> ring_;    // identities in put order; stale when table seq differs
  uint64_t head_ = 0, tail_ = 0;  // ring sequence numbers: [head_, tail_) are in the ring
  size_t live_ = 0;
};

// Everything ingestion remembers about one feed between fetches.
class feed_state {
 public:
  // Cobra's first test: true when bytes are identical to the previous document, which can
  // then be dropped without parsing. Records the new hash either way.
  bool same_document(std::string_view bytes);

  // Classifies every entry of f (one verdict each, in order) and remembers them (identity and
  // link alias: at most 2 records per entry). The seen set is sized from the feed's own entry
  // count: 8x the largest document seen (4 fetches' worth of records), at least 64, so
  // entries that stay in the feed are never forgotten while it rotates.
  void classify(const feed& f, std::vector<verdict>& verdicts);

  const seen_set& seen() const { return seen_; }

  // Persistence: the last document's hash (0 when none) and the seen set, restored together.
  uint64_t document_hash() const { return has_doc_ ? doc_hash_ : 0; }
  void restore(uint64_t document_hash, const std::vector<std::pair<uint64_t, uint64_t>>& seen);

 private:
  uint64_t doc_hash_ = 0;
  bool has_doc_ = false;
  seen_set seen_;
  std::vector<entry_key> keys_;                     // reused per document
  std::vector<std::pair<uint64_t, bool>> repeats_;  // content-only identities: first seen?
};

}  // namespace feedplane::feed
