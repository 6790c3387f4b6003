// The subscription index: every query's clauses filed under their rarest word, matched
// against one article at a time.
//
// Layout. The vocabulary holds only words some subscription uses; an article word outside
// it is dropped after one hash probe. Each vocabulary word owns one contiguous posting
// block: a header, then nine classes of entries. A plain conjunction of k <= 8 words
// (most subscriptions) is one entry of k uint32s in class k-1 of its rarest word: the
// subscription id and its other k-1 words, the rarest of which (the guard) is stored apart
// from the rest, so that the ids of single-word clauses and the guards of every class
// form the block's hot part, one sequential run. Matching marks each distinct article
// word in a byte array over word ids, then walks the blocks of those words: class 0
// entries match outright and are appended with one memcpy; in class c >= 1 only the
// guard column is streamed (one uint32 per candidate), and only the entries whose guard
// word is in the article (about 7% with Cobra's workload) have the rest read and
// checked, without branches. Anything else (OR, NOT, phrases, title:, more than 8 words)
// is a general clause in class 8, verified against the article in full. Per-article work
// is proportional to the postings of the article's words, never to the number of
// subscriptions, and the byte array is cleared by the same word list that set it. A
// `source:` term is a word here: its token (source.h) is in the vocabulary, and an article's
// source tokens (article_view::scope) are looked up like its distinct words. The
// lookups of an article's words are prefetched a pass ahead, so that their cache misses
// overlap.
//
// Rarest word. The index counts how often words occur in the articles it sees (a
// two-row count-min sketch of 16-bit counters, halved slice by slice so it follows drift;
// match() samples one article in eight, observe() counts every one) and files each clause
// under the word with the lowest count (a per-word snapshot of it, taken when the word
// enters the vocabulary and refreshed by maintain()). maintain() re-files clauses whose
// counts have drifted and trims slack, a bounded number of entries per call.
//
// Mutation while matching. One thread owns an index (the shard that owns the
// subscriptions) and interleaves match() with add(), remove() and maintain(); nothing is
// locked. Each mutation touches one word's block (or one per clause of a general query):
// append, or swap-remove after a scan of that block; a block that grows is reallocated and
// copied; the per-id table grows in chunks and never copies. The longest stall a mutation
// can cause is therefore one copy or scan of the largest block; bench/RESULTS.md has the
// measured figure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/matcher/article.h"
#include "feedplane/matcher/query.h"
#include "feedplane/matcher/text.h"

namespace feedplane::matcher {

// One article's matches. Reused across calls: no allocation in steady state.
class match_result {
 public:
  // Ids of the subscriptions that matched, each once, in no particular order.
  std::span<const uint32_t> ids() const { return {ids_.data(), ids_.size()}; }

  // What the article touched: postings read, candidates checked, matches.
  struct counters {
    size_t article_words = 0;    // words in the article
    size_t vocabulary_hits = 0;  // distinct article words some subscription uses
    size_t postings = 0;         // posting entries read
    size_t candidates = 0;       // entries that needed a check beyond the filing word
  };
  const counters& stats() const { return stats_; }

 private:
  friend class index;
  raw_buffer<uint32_t> ids_;
  raw_buffer<uint32_t> where_;  // per match of class >= 1: class << 28 | entry index
  // Per filing word read: its first match and how many of its class-0 entries (all of
  // which match) come first, in entry order; later matches have where_.
  struct segment {
    uint32_t first;
    uint32_t word;
    uint32_t class0;
  };
  std::vector<segment> segments_;
  counters stats_;
};

struct index_options {
  query_limits limits;
  std::vector<std::string> frequent_words = default_frequent_words();
};

class index {
 public:
  explicit index(const index_options& options = {});
  ~index();
  index(const index&) = delete;
  index& operator=(const index&) = delete;

  // Adds subscription id (a small integer: tables are indexed by id) with a query, or
  // replaces the query of an existing id. Returns ok() or the parse error; on error an
  // existing subscription stays as it was.
  query_error add(uint32_t id, std::string_view query);
  void add(uint32_t id, const parsed_query& query);
  // Hides the cache misses of adding a batch: fetches what adding each of queries[0, n)
  // will touch (its words' vocabulary slots, then their entries, then their posting
  // blocks' headers), a stage per pass over the batch so that one stage's loads arrive
  // while the others are issued. Then add() each as usual: this changes nothing but the
  // caches. Queries of plain words only; any other costs one scan of its bytes.
  void prefetch_adds(const std::string_view* queries, size_t n);
  // Removes subscription id; false if there was none.
  bool remove(uint32_t id);
  bool contains(uint32_t id) const;
  // Makes room for ids [0, ids) in the per-id table (saves its growth slack on bulk loads).
  void reserve(uint32_t ids);
  size_t size() const { return subscriptions_; }

  // match() counts the words of one article in count_one_in toward the frequencies (the
  // counts only rank words); a caller that counts without matching does the same.
  static constexpr uint32_t count_one_in = 8;

  // Matches one article; results replace what *out held. Also counts the article's words
  // toward the frequencies that choose filing words.
  void match(const article_view& a, match_result& out);
  // Counts the article's words without matching (to warm the frequencies).
  void observe(const article_view& a);

  // The words of the subscription behind match k of result that occur in the article
  // (for highlighting; never a source token, so empty for a scope alone). Valid until the
  // index is next modified.
  void matched_words(const match_result& result, size_t k,
                     std::vector<std::string_view>& words) const;

  // Upkeep in slices: examines up to `budget` entries (and words), continuing where the
  // last call stopped and stopping at the end of a pass. A pass refreshes every word's
  // frequency snapshot, then re-files each entry whose rarest word is now at most half as
  // frequent as its filing word, gives an entry that stays another of its words as its guard
  // if that one is at most half as frequent, and trims posting arrays. Without it
  // clauses stay filed by the counts of the moment their words entered the vocabulary
  // (all zero before the index has seen articles). The longest slice is one budget of
  // entries or one trim of the largest block.
  struct maintenance {
    size_t examined = 0;     // entries and words looked at (what the budget counts)
    size_t moved = 0;        // entries re-filed under another word
    size_t reguarded = 0;    // entries that stayed and took another guard
    bool pass_done = false;  // this call ended a pass over the whole index
  };
  maintenance maintain(size_t budget);

  // Estimated occurrences of a folded word in the articles seen (decayed).
  uint32_t frequency(std::string_view word) const;

  // The word frequencies as they stand (the sketch's counters, where its decay is, and
  // how many articles it counted), to be kept across a restart: an index given them back
  // before its adds files every clause by these counts, not at zero. Valid until the index
  // is next used.
  struct frequency_state {
    std::span<const uint16_t> counters;
    uint32_t decay_cursor = 0;
    uint64_t counted = 0;  // articles counted (observe(), and match()'s one in k_sample)
  };
  frequency_state frequencies() const;
  // Replaces the frequencies with saved ones and refreshes every word's snapshot (the
  // filing of clauses already added changes only at maintain()). False, changing nothing,
  // if the counters are not this build's sketch size or the cursor is out of range.
  bool restore_frequencies(const frequency_state& saved);

  struct memory {
    size_t postings = 0;          // posting arrays, including unused capacity
    size_t vocabulary = 0;        // hash table, word entries, word text
    size_t subscriptions = 0;     // per-id table and general clauses
    size_t frequency_sketch = 0;  // fixed size, independent of the subscriptions
    size_t total() const { return postings + vocabulary + subscriptions + frequency_sketch; }
  };
  memory memory_usage() const;
  size_t vocabulary_size() const;
  const query_parser& parser() const;

 private:
  bool add_plain_text(uint32_t id, std::string_view query);

  struct impl;
  std::unique_ptr<impl> impl_;
  size_t subscriptions_ = 0;
};

}  // namespace feedplane::matcher
