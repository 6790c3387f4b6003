// A frozen article: built once by the shard that crawled it, frozen into one allocation,
// and shared by pointer with the store and every shard. Immutable once frozen, except
// for its sequence number, which the store thread writes while it is the only holder
// (before it broadcasts the article; the ring's release/acquire publishes the write).
//
// Layout: a fixed header, then every variable part at an offset inside the same block
// (strings, the folded words and their begin/end pairs, word hashes, the distinct-word
// arrays). Offsets, not pointers. The durable record (record()) is the block's prefix
// after the reference count: the header and the strings, which the store writes as is.
// The words are not in it: decode() tokenizes the strings again, as freeze() did. They
// were ~70% of a record's bytes (~3.3 KB per article of the farm's feeds, ~1 KB without),
// which every article paid in the WAL's checksum, the memtable, the flush, compaction and
// the disk, against a few microseconds of tokenizing per article read back (a restart's
// replay, a list's article past the cache). decode() also reads the records of the first
// format ("FRA1", before 2026-12-01), which held the whole block, words included.
//
// Lifetime: article_ref is an intrusive reference. The crawling shard's reference moves
// to the store; the store copies one reference per shard into the article rings and drops
// its own; each shard drops its reference once it has matched the article (and copied
// what it renders into its own cache). The last drop frees the block. Nothing holds one
// reference per list entry.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "feedplane/matcher/article.h"

namespace feedplane::runtime {

class article;

// Intrusive shared reference to a frozen article.
//
// Memory ordering: a copy increments with relaxed order (the copier already holds a
// reference, so the count cannot reach zero meanwhile). A drop decrements with acq_rel:
// release so this holder's reads of the article happen-before the free, acquire so the
// holder that brings the count to zero sees every other holder's reads as finished
// before it frees. This is the shared_ptr argument.
class article_ref {
 public:
  article_ref() = default;
  article_ref(const article_ref& o);
  article_ref(article_ref&& o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
  article_ref& operator=(const article_ref& o);
  article_ref& operator=(article_ref&& o) noexcept;
  ~article_ref() { reset(); }

  void reset();
  const article* get() const { return a_; }
  const article* operator->() const { return a_; }
  const article& operator*() const { return *a_; }
  explicit operator bool() const { return a_ != nullptr; }
  // For the store thread only, while it holds the only reference: sets the sequence.
  article* mutable_get() { return a_; }

 private:
  friend class article;
  friend class article_builder;
  explicit article_ref(article* a) : a_(a) {}  // adopts a reference
  article* a_ = nullptr;
};

// Fields of an article that are not text to tokenize.
struct article_meta {
  uint64_t source_id = 0;
  uint64_t identity_hash = 0;  // the entry's identity (feed/dedup.h)
  uint64_t content_hash = 0;   // its content, to tell an update from a repeat
  int64_t published = 0;       // unix seconds (first-seen time when the feed gives none)
  int64_t fetched_ms = 0;      // unix milliseconds: when the crawler's fetch completed
  uint64_t replaces = 0;       // sequence of the earlier version of this entry, 0 = new
};

class article {
 public:
  // ---- identity and times ----
  uint64_t seq() const { return h_.seq; }
  // Store thread, while it is the sole holder (debug builds check it; the acquire orders
  // a holder's last reads before this write).
  // `sequenced_ms` (unix milliseconds) is when the store took it into a group commit: with
  // meta().fetched_ms, the fetch-to-sequencer part of the intra-network latency.
  void set_seq(uint64_t s, int64_t sequenced_ms = 0) {
    // acquire: pairs with the acq_rel decrement of the last other holder's drop, so that
    // holder's reads are done before these writes.
    assert(refs_.load(std::memory_order_acquire) == 1);
    h_.seq = s;
    h_.sequenced_ms = sequenced_ms;
  }
  int64_t sequenced_ms() const { return h_.sequenced_ms; }
  const article_meta& meta() const { return h_.meta; }

  // ---- what readers render ----
  std::string_view source_url() const { return str(f_source_url); }
  std::string_view guid() const { return str(f_guid); }
  std::string_view title() const { return str(f_title); }
  std::string_view link() const { return str(f_link); }
  std::string_view author() const { return str(f_author); }
  std::string_view summary() const { return str(f_summary); }  // HTML, already sanitized
  std::string_view content() const { return str(f_content); }  // HTML, already sanitized

  // ---- what matching reads ----
  matcher::article_view words() const;

  // ---- size and durable form ----
  static constexpr uint32_t max_bytes = 64u << 20;
  size_t bytes() const { return h_.total; }  // the whole allocation
  // The durable record: the header and the strings (the block's prefix after the
  // reference count), to store as is.
  std::string_view record() const;
  // The whole block after the reference count, words included: what the first format
  // ("FRA1") stored. For tests of decode()'s reading of it.
  std::string_view block() const;
  // Checks a record read back from the store and rebuilds the article (its words
  // tokenized again from its strings). Returns an empty reference and sets *error when
  // the record is malformed. Reads both formats.
  static article_ref decode(std::string_view record, std::string* error);
  // A record's sequencing time (sequenced_ms) read from its header alone; false when the
  // record is too short or not an article record.
  static bool record_sequenced_ms(std::string_view record, int64_t* ms);

  // Live articles and their bytes in this process (every thread): for /metrics.
  static int64_t alive();
  static int64_t alive_bytes();

 private:
  friend class article_ref;
  friend class article_builder;
  enum field : uint32_t {
    f_source_url,
    f_guid,
    f_title,
    f_link,
    f_author,
    f_summary,
    f_content,
    f_strings,  // count of string fields
  };
  struct span32 {
    uint32_t off = 0;
    uint32_t len = 0;
  };
  // The header; record() starts at `total`.
  struct header {
    uint32_t magic = 0;
    uint32_t total = 0;  // bytes of the whole block, header included
    uint64_t seq = 0;
    int64_t sequenced_ms = 0;
    article_meta meta;
    span32 strings[f_strings];
    span32 folded;  // bytes
    uint32_t words = 0, distinct = 0, title_words = 0;
    uint32_t bounds_off = 0, hashes_off = 0, of_off = 0, first_off = 0, count_off = 0;
  };
  article() = default;
  std::string_view str(field f) const { return {base() + h_.strings[f].off, h_.strings[f].len}; }
  const char* base() const { return reinterpret_cast<const char*>(this); }
  static article* allocate(size_t bytes);
  static void destroy(article* a);

  std::atomic<uint32_t> refs_{1};
  header h_;
  // variable parts follow
};

// Builds articles: owns the tokenizer's scratch and the strings of the article being
// built, reused from one article to the next. One per crawling shard.
class article_builder {
 public:
  article_meta meta;
  std::string source_url, guid, title, link, author, summary, content;

  // Tokenizes title and summary/content (HTML: markup stripped, entities decoded) and
  // freezes everything into one allocation with one reference, owned by the caller.
  // Empty when the article would exceed article::max_bytes (decode() refuses larger
  // records, so a larger one could never be read back): the caller counts and drops it.
  article_ref freeze();
  void clear();

 private:
  matcher::article words_;
  std::string text_;
};

}  // namespace feedplane::runtime
