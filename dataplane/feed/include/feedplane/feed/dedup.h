// Entry identity and de-duplication, in Cobra's order (seed 000, section 3.1): a whole-
// document hash first, then per-entry identities against a bounded per-feed set of seen
// identities. Identity follows FeedEx (seed 002, section 2): the entry's id/guid unless it
// repeats within the document, then its link, then title plus published date. A content hash
// rides beside the identity: changed content under a known identity is an update, not a new
// article. One feed_state per feed, owned by the shard that crawls the feed (not shared);
// the scratch a classification needs lives in a dedup_scratch per shard (or per caller), so
// a feed at rest holds only its document hash and its seen records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/feed/model.h"

namespace feedplane::feed {

enum class identity_kind : uint8_t { id, link, title_published, content };

struct entry_key {
  uint64_t identity = 0;  // never 0
  uint64_t content = 0;   // hash of title, link, summary and content
  identity_kind kind = identity_kind::id;
  // The entry's other identities unique in the document (id, link, title plus published; 0
  // when none): the kind chosen can change between fetches (a guid that starts or stops
  // repeating), so a miss on `identity` is checked against these before the entry counts as
  // new.
  uint64_t aliases[3] = {0, 0, 0};
  // The entry's link identity when its link is unique in the document and is not already
  // `identity`, else 0: recorded beside the identity, so an entry first known by its guid is
  // still known when the guids later start repeating (then the link identifies it).
  uint64_t link_alias = 0;
};

struct dedup_scratch;

// Computes one key per entry of f, in order, into keys (cleared first).
void compute_keys(const feed& f, std::vector<entry_key>& keys);
// The same into scratch.keys, reusing the scratch's buffers (no allocation once warm).
void compute_keys(const feed& f, dedup_scratch& scratch);

enum class verdict : uint8_t {
  fresh,      // identity never seen: a new article, goes to matching
  updated,    // identity seen with different content: flagged update, goes to matching
  seen,       // identity and content both seen before: dropped
  duplicate,  // same identity earlier in this same document: dropped
};

std::string_view verdict_name(verdict v);

// One remembered entry in 16 bytes: 48-bit fingerprints of its identity and of its link
// alias, and a 32-bit fingerprint of its content, split over the two words' top bits.
//
// Why these widths (a fingerprint collision is a wrong answer, never a crash):
// - A new article is dropped only if one of its keys (its identity and up to three aliases)
//   equals the identity or link fingerprint of one of the feed's records. With 48 bits and at
//   most 2 x 2n records (n the feed's largest document; 80 for n = 20) that is at most
//   4 x 80 / 2^48 ~ 1e-12 per new article: one lost article in about 10^12, i.e. never at
//   10M new articles a day. 32-bit fingerprints (12-byte records) would give ~7e-8 per new
//   article, about one lost article a day at that rate: not worth the 4 bytes saved.
// - The content fingerprint only decides "updated" against "seen" for a known identity: a
//   collision (2^-32 per edited entry) misses one edit, it never drops or re-delivers an
//   article.
// Persisted as is (records v5); older records' 64-bit pairs convert with from_hashes().
struct seen_record {
  static constexpr uint64_t k_mask = (uint64_t{1} << 48) - 1;
  uint64_t w0 = 0;  // identity fingerprint (bits 0-47, never 0) | content bits 0-15 << 48
  uint64_t w1 = 0;  // link fingerprint (bits 0-47; 0: none) | content bits 16-31 << 48

  // The 48-bit fingerprint of a 64-bit identity hash (never 0; 0 stays 0 for "none").
  static uint64_t fingerprint(uint64_t h) {
    if (h == 0) return 0;
    const uint64_t f = h & k_mask;
    return f == 0 ? 1 : f;
  }
  static uint32_t content_fingerprint(uint64_t h) { return uint32_t(h ^ (h >> 32)); }
  // The record of an identity, its link alias (0: none) and its content, all 64-bit hashes.
  static seen_record from_hashes(uint64_t identity, uint64_t link, uint64_t content) {
    const uint64_t c = content_fingerprint(content);
    return {fingerprint(identity) | (c & 0xffff) << 48, fingerprint(link) | (c >> 16) << 48};
  }
  uint64_t identity() const { return w0 & k_mask; }
  uint64_t link() const { return w1 & k_mask; }
  uint32_t content() const { return uint32_t(w0 >> 48) | uint32_t(w1 >> 48) << 16; }
  friend bool operator==(const seen_record&, const seen_record&) = default;
};
static_assert(sizeof(seen_record) == 16);

// A bounded set of seen records in one exact-size heap array, least recently seen first.
// Bounded by `limit` records (2x the feed's largest document, at least k_min_limit): the
// current document's entries are always kept (they are the newest), and so are the
// entries that left it most recently, up to one more document's worth (an entry that comes
// back, or a stale copy of the document from a cache, is not new again).
class seen_set {
 public:
  static constexpr uint32_t k_min_limit = 16;

  seen_set() = default;
  seen_set(const seen_set& o) { *this = o; }
  seen_set& operator=(const seen_set& o);
  seen_set(seen_set&&) noexcept = default;
  seen_set& operator=(seen_set&&) noexcept = default;

  // Index of the most recent record whose identity fingerprint is fp, or whose link
  // fingerprint is fp when also_link; -1 when none.
  ptrdiff_t find(uint64_t fp, bool also_link) const;
  const seen_record& operator[](size_t i) const { return recs_[i]; }
  size_t size() const { return size_; }
  // Most records kept before the least recently seen go.
  size_t capacity() const { return limit_; }
  // Raises the bound to at least n records (never lowers it: forgetting would re-deliver).
  void reserve(size_t n);
  // Bounds the set for a document of n entries before classifying it: 2n, at least
  // k_min_limit; raised only, except right after restore_converted(), when it is set.
  void prepare(size_t n);
  // Records, least recently seen first: what a store persists.
  std::span<const seen_record> records() const { return {recs_.get(), size_}; }
  // Records this fetch's entries: drops the old records marked in replaced (size() flags),
  // appends added (most recent last), then keeps the newest capacity() records. merged is
  // scratch.
  void update(std::span<const uint8_t> replaced, std::span<const seen_record> added,
              std::vector<seen_record>& merged);
  // Puts persisted records back (after a restart), oldest first, with the bound they had.
  void restore(std::span<const seen_record> recs, size_t limit);
  // Records converted from an older format (a record per identity or link alias, up to 8x
  // the largest document): all kept until the next prepare(), which then bounds the set as
  // if it had always been this format.
  void restore_converted(std::span<const seen_record> recs);
  // Heap bytes requested for the records (the allocator adds its header and rounding).
  size_t heap_bytes() const { return alloc_ * sizeof(seen_record); }

 private:
  void assign(std::span<const seen_record> recs);

  std::unique_ptr<seen_record[]> recs_;  // alloc_ slots, [0, size_) used, oldest first
  uint32_t size_ = 0;
  uint32_t alloc_ = 0;
  uint32_t limit_ = k_min_limit;
  bool converted_ = false;  // restore_converted(): the next prepare() sets the bound
};

// Per-shard (or per-caller) scratch of feed_state::classify: reused from one document to
// the next, never per feed. After classify, keys holds the document's entry keys.
struct dedup_scratch {
  std::vector<entry_key> keys;
  std::vector<uint64_t> ids, links, tps;           // compute_keys: per-kind, sorted
  std::vector<std::pair<uint64_t, bool>> repeats;  // content-only identities: first seen?
  std::vector<uint8_t> replaced;                   // per old record: refreshed this fetch
  std::vector<seen_record> added, merged;          // this fetch's records; the new set
};

// Everything ingestion remembers about one feed between fetches: 32 bytes plus the seen
// records' array.
class feed_state {
 public:
  // Cobra's first test: true when bytes are identical to the previous document, which can
  // then be dropped without parsing. Records the new hash either way.
  bool same_document(std::string_view bytes);
  // Puts back the hash a failed or partial document replaced (0: none).
  void set_document_hash(uint64_t h) { doc_hash_ = h; }

  // Classifies every entry of f (one verdict each, in order) and remembers them: one record
  // per entry (identity, link alias, content), the set bounded by 2x the largest document
  // seen (at least 16), so entries that stay in the feed are never forgotten while it
  // rotates. The document's keys are left in scratch.keys.
  void classify(const feed& f, dedup_scratch& scratch, std::vector<verdict>& verdicts);
  // The same with a scratch of its own (tests, fuzzers: allocates).
  void classify(const feed& f, std::vector<verdict>& verdicts);

  const seen_set& seen() const { return seen_; }

  // Persistence: the last document's hash (0 when none) and the seen records with their
  // bound, restored together.
  uint64_t document_hash() const { return doc_hash_; }
  void restore(uint64_t document_hash, std::span<const seen_record> seen, size_t limit);
  // Records converted from an older format: see seen_set::restore_converted().
  void restore_converted(uint64_t document_hash, std::span<const seen_record> seen);

  // Heap bytes this state holds (requested sizes).
  size_t heap_bytes() const { return seen_.heap_bytes(); }

 private:
  uint64_t doc_hash_ = 0;  // XXH3 of the last document (a hash of 0 is stored as 1); 0: none
  seen_set seen_;
};

}  // namespace feedplane::feed
