#include "feedplane/matcher/index.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "feedplane/matcher/source.h"

namespace feedplane::matcher {
namespace {
constexpr uint32_t k_none = 0xFFFFFFFFu;
constexpr int k_general = 8;  // posting class of general clauses
constexpr int k_classes = 9;  // 0..7: plain conjunctions of 1..8 words; 8: general
constexpr size_t k_max_plain_words = 8;

size_t stride_of(int cls) { return cls == k_general ? 1 : static_cast<size_t>(cls) + 1; }

// A word's postings: one allocation holding a header, then the nine classes' entries
// back to back, so matching a word reads one header line and then streams forward.
// An entry of class K of 1..7 (K other words) is split in two: its guard, the entry's
// rarest other word, and its rest, K uint32s: the subscription id and the other K-1
// words. Layout in uint32s, each array at its capacity:
//   header | class 0 ids | guards of classes 1..7 | class 8 clause slots |
//   rests of classes 1..7
// Matching streams the hot part, everything before the rests, in one run, one uint32 per
// candidate instead of K+1, and reads the rest of only the entries whose guard word is
// in the article (about 7% of candidates with Cobra's workload): the candidate scan is
// bound by cache misses on postings, and this cuts the bytes it reads by about 2.5x at
// the same memory. An entry in canonical form, as the mutation code handles it, is
// {id, guard, other words...}.
//
// The header lists only the classes the block has room for: a mask of them, then a
// (size, capacity) pair for each, in class order. Most words' blocks use two or three
// classes, so the header is 12-28 bytes instead of 72: a rare word's block often fits in
// one cache line with its entries, and the vocabulary's fixed cost per word falls.
struct postings {
  // Bits set in a 9-bit mask, from a table: without -mpopcnt (this library has no -m
  // flags) std::popcount is a call into libgcc, and it measured a third of insert time.
  static constexpr auto k_bits = [] {
    std::array<uint8_t, size_t{1} << k_classes> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(std::popcount(i));
    return t;
  }();
  static bool has(const uint32_t* b, int c) { return (b[0] >> c) & 1; }
  // Index of class c's (size, capacity) pair; c must be in the mask.
  static size_t pair(const uint32_t* b, int c) {
    return 1 + size_t{2} * k_bits[b[0] & ((1u << c) - 1)];
  }
  static size_t header(uint32_t mask) { return 1 + size_t{2} * k_bits[mask]; }
  static size_t header(const uint32_t* b) { return header(b[0]); }
  static bool guarded(int c) { return c >= 1 && c < k_general; }
  static uint32_t size(const uint32_t* b, int c) { return has(b, c) ? b[pair(b, c)] : 0; }
  static uint32_t capacity(const uint32_t* b, int c) { return has(b, c) ? b[pair(b, c) + 1] : 0; }
  static void set_size(uint32_t* b, int c, uint32_t n) { b[pair(b, c)] = n; }
  // All classes' sizes and capacities (zero for classes not in the mask).
  static void decode(const uint32_t* b, uint32_t* sizes, uint32_t* caps) {
    const uint32_t m = b[0];
    const uint32_t* p = b + 1;
    for (int c = 0; c < k_classes; ++c) {
      const bool in = (m >> c) & 1;
      sizes[c] = in ? p[0] : 0;
      caps[c] = in ? p[1] : 0;
      p += in ? 2 : 0;
    }
  }
  // Offsets of class c's ids, guards or clause slots (in the hot part) and, for a guarded
  // class, of its rests, in one pass over the header.
  static void locate(const uint32_t* b, int c, size_t& hot_at, size_t& rest_at) {
    const uint32_t m = b[0];
    size_t o = header(m), before = 0, r = 0;
    const uint32_t* p = b + 1;
    for (int j = 0; j < k_classes; ++j) {
      if (!((m >> j) & 1)) continue;
      if (j < c) before += p[1];
      if (j >= 1 && j < c && j < k_general) r += size_t{p[1]} * static_cast<size_t>(j);
      o += p[1];
      p += 2;
    }
    hot_at = header(m) + before;
    rest_at = o + r;
  }
  // The block's length in uint32s: where class 8's rests would start.
  static size_t words(const uint32_t* b) {
    if (!b) return 0;
    size_t h, r;
    locate(b, k_general, h, r);
    return r;
  }
  static bool empty(const uint32_t* b) {
    for (int c = 0; c < k_classes; ++c) {
      if (size(b, c)) return false;
    }
    return true;
  }
  // Entry i of class c in canonical form (stride_of(c) uint32s) into out.
  static void read(const uint32_t* b, int c, uint32_t i, uint32_t* out) {
    size_t h, r;
    locate(b, c, h, r);
    if (!guarded(c)) {
      out[0] = b[h + i];
      return;
    }
    const size_t k = static_cast<size_t>(c);
    const uint32_t* rest = b + r + size_t{i} * k;
    out[0] = rest[0];
    out[1] = b[h + i];
    for (size_t j = 1; j < k; ++j) out[j + 1] = rest[j];
  }
  static void write(uint32_t* b, int c, uint32_t i, const uint32_t* entry) {
    size_t h, r;
    locate(b, c, h, r);
    if (!guarded(c)) {
      b[h + i] = entry[0];
      return;
    }
    const size_t k = static_cast<size_t>(c);
    uint32_t* rest = b + r + size_t{i} * k;
    b[h + i] = entry[1];
    rest[0] = entry[0];
    for (size_t j = 1; j < k; ++j) rest[j] = entry[j + 1];
  }
  // caps[c] must hold size(b, c); a class with capacity 0 leaves the header. One pass
  // over both layouts, hot and rest offsets advancing together.
  static uint32_t* reallocate(uint32_t* b, const uint32_t* caps) {
    uint32_t sizes[k_classes] = {}, old_caps[k_classes] = {};
    if (b) decode(b, sizes, old_caps);
    uint32_t m = 0;
    size_t hot_total = 0, old_hot_total = 0, total = 0;
    for (int c = 0; c < k_classes; ++c) {
      if (caps[c]) m |= 1u << c;
      hot_total += caps[c];
      old_hot_total += old_caps[c];
      total += caps[c] * stride_of(c);
    }
    total += header(m);
    auto* q = static_cast<uint32_t*>(std::malloc(total * sizeof(uint32_t)));
    if (!q) std::abort();
    q[0] = m;
    for (int c = 0, i = 1; c < k_classes; ++c) {
      if (!caps[c]) continue;
      q[i++] = sizes[c];
      q[i++] = caps[c];
    }
    if (b) {
      size_t to_hot = header(m), from_hot = header(b);
      size_t to_rest = to_hot + hot_total, from_rest = from_hot + old_hot_total;
      for (int c = 0; c < k_classes; ++c) {
        const size_t n = sizes[c], k = static_cast<size_t>(c);
        if (n) std::memcpy(q + to_hot, b + from_hot, n * sizeof(uint32_t));
        to_hot += caps[c];
        from_hot += old_caps[c];
        if (!guarded(c)) continue;
        if (n) std::memcpy(q + to_rest, b + from_rest, n * k * sizeof(uint32_t));
        to_rest += caps[c] * k;
        from_rest += old_caps[c] * k;
      }
    }
    std::free(b);
    return q;
  }
  // Appends one entry (canonical form) to class c; a full class grows by 1.5x (the whole
  // block moves).
  static uint32_t* append(uint32_t* b, int c, const uint32_t* entry) {
    if (!b || !has(b, c) || b[pair(b, c)] == b[pair(b, c) + 1]) {
      uint32_t caps[k_classes] = {};
      for (int j = 0; j < k_classes && b; ++j) caps[j] = capacity(b, j);
      caps[c] += caps[c] / 2 + 1;
      b = reallocate(b, caps);
    }
    const size_t at = pair(b, c);
    const uint32_t n = b[at];
    write(b, c, n, entry);
    b[at] = n + 1;
    return b;
  }
  // Moves class c's last entry into slot i and shrinks the class by one.
  static void erase(uint32_t* b, int c, uint32_t i) {
    const uint32_t last = size(b, c) - 1;
    if (i != last) {
      uint32_t entry[k_max_plain_words + 1];
      read(b, c, last, entry);
      write(b, c, i, entry);
    }
    set_size(b, c, last);
  }
  // Index of class c's entry for id (subscription id, or clause slot in class 8), or its
  // size.
  static uint32_t find(const uint32_t* b, int c, uint32_t id) {
    const uint32_t n = size(b, c);
    size_t h, r;
    locate(b, c, h, r);
    const uint32_t* e = b + (guarded(c) ? r : h);
    const size_t stride = guarded(c) ? static_cast<size_t>(c) : 1;
    for (uint32_t i = 0; i < n; ++i) {
      if (e[size_t{i} * stride] == id) return i;
    }
    return n;
  }
  // Trims unused capacity when it is over a quarter of the used part and 16 uint32s (so
  // that a block growing by appends is not trimmed again and again); frees an empty block.
  // Returns the uint32s copied.
  static size_t trim(uint32_t*& b) {
    if (empty(b)) {
      std::free(b);
      b = nullptr;
      return 0;
    }
    uint32_t caps[k_classes];
    size_t used = 0, unused = 0;
    for (int c = 0; c < k_classes; ++c) {
      caps[c] = size(b, c);
      used += caps[c] * stride_of(c);
      unused += (capacity(b, c) - caps[c]) * stride_of(c);
    }
    if (unused <= 16 || unused * 4 <= used) return 0;
    b = reallocate(b, caps);
    return used;
  }
};

// 32 bytes, aligned, so that looking a word up touches one cache line of entries: a word
// of up to 16 bytes is compared without leaving the entry. Its hash is recomputed where
// needed (rehashing, deletion, filing), never on the matching path.
struct alignas(32) word_entry {
  static constexpr size_t k_inline = 16;
  uint32_t* block = nullptr;  // postings (see struct postings), null when none
  uint32_t refs = 0;          // subscription clauses using the word
  uint16_t length = 0;        // 0: the id is free (query words are at most 128 bytes)
  uint16_t frequency = 0;     // the sketch's count when last refreshed (filing decisions)
  union {
    char small[k_inline];  // length <= k_inline: the word itself
    uint32_t text;         // longer: offset of the word in the text arena
  };
};

struct phrase {
  std::vector<uint32_t> words;
  bool title = false;
};

// A clause that is not a plain conjunction of at most 8 words.
struct general_clause {
  uint32_t owner = k_none;           // index in generals_, k_none when the slot is free
  uint32_t filed = k_none;           // the word whose class-8 array holds this clause
  std::vector<uint32_t> must;        // every positive word, wherever it must appear
  std::vector<uint32_t> must_title;  // single words that must appear in the title
  std::vector<phrase> phrases;       // positive phrases (and multi-word title terms)
  std::vector<uint32_t> not_words, not_title_words;
  std::vector<phrase> not_phrases;
};

struct general_sub {
  uint32_t id = k_none;
  uint32_t stamp = 0;  // article stamp of the last match, so OR-ed clauses emit once
  std::vector<uint32_t> clauses;
};

// Subscription table entry: class << 28 | filing word (plain), 8 << 28 | general index.
constexpr uint32_t k_absent = 0xFFFFFFFFu;
constexpr uint32_t k_word_mask = (1u << 28) - 1;

// The per-id table, in chunks of 4096 entries so that growing it never copies (or stalls
// on) what is already there.
class id_table {
 public:
  static constexpr uint32_t k_bits = 12;
  size_t size() const { return chunks_.size() << k_bits; }
  uint32_t get(uint32_t id) const { return id < size() ? (*this)[id] : k_absent; }
  uint32_t& operator[](uint32_t id) { return chunks_[id >> k_bits][id & k_mask]; }
  const uint32_t& operator[](uint32_t id) const { return chunks_[id >> k_bits][id & k_mask]; }
  // Makes ids [0, id] addressable (new entries k_absent).
  void ensure(uint32_t id) {
    while (id >= size()) {
      chunks_.emplace_back(new uint32_t[size_t{1} << k_bits]);
      std::fill_n(chunks_.back().get(), size_t{1} << k_bits, k_absent);
    }
  }
  size_t bytes() const {
    return size() * sizeof(uint32_t) + chunks_.capacity() * sizeof(chunks_[0]);
  }

 private:
  static constexpr uint32_t k_mask = (1u << k_bits) - 1;
  std::vector<std::unique_ptr<uint32_t[]>> chunks_;
};

}  // namespace

struct index::impl {
  explicit impl(const index_options& o) : parser(o.limits, o.frequent_words) {
    slots.assign(1024, 0);
    sketch.assign(2 * k_sketch_width, 0);
  }

  query_parser parser;
  parsed_query parsed;  // add(id, text)'s parse when the plain-word path declines, reused
  std::vector<uint64_t> prefetch_hashes;  // prefetch_adds' scratch: word hashes, word ids
  std::vector<uint32_t> prefetch_words;
  // prefetch_adds' split of each query of its batch, which add(id, text) takes in the same
  // order instead of splitting and hashing the text again. Each entry: a copy of the
  // query's bytes in staged_text (to recognise it: the caller's may be gone by then; a
  // split depends only on the bytes, so any equal text may take it), its words' start in
  // prefetch_hashes and staged_ends, and their count (0: not plain words).
  struct staged_query {
    uint32_t text_begin = 0, text_size = 0;
    uint32_t first = 0, n = 0;
  };
  std::vector<staged_query> staged;
  size_t staged_next = 0;             // the next add's expected entry
  std::string staged_text;            // the queries' bytes, one after another
  std::string staged_folded;          // the words, folded, one after another
  std::vector<uint32_t> staged_ends;  // each word's end in staged_folded

  // ---- vocabulary: open addressing over (hash tag << 32 | word id + 1); 0 is empty.
  std::vector<uint64_t> slots;
  size_t used_slots = 0;
  std::vector<word_entry> words;
  std::vector<uint32_t> free_words;
  std::string text;  // word text arena
  size_t text_garbage = 0;

  // ---- subscriptions
  id_table subs;  // by id: class << 28 | filing word, or 8 << 28 | general index
  std::vector<general_sub> generals;
  std::vector<uint32_t> free_generals;
  std::vector<general_clause> clauses;
  std::vector<uint32_t> free_clauses;
  size_t general_count = 0;

  // ---- per-article state, owned by match(); all clear between articles
  // Byte per word id, 1 when in the article: the candidate scan tests one byte with one
  // load (a bitmap costs a shift, a load, a variable shift and a mask).
  std::vector<uint8_t> present;
  std::vector<uint64_t> in_title;      // bit per word id: in the title
  std::vector<uint32_t> distinct;      // word ids marked in present and in_title
  std::vector<uint32_t> distinct_ids;  // per distinct article word: its word id or k_none
  struct hit {
    uint32_t word;
    const uint32_t* block;
  };
  std::vector<hit> hits;           // article words with postings, in article order
  std::vector<uint32_t> sequence;  // word id per article word, k_none between title and content
  size_t sequence_title = 0;
  uint32_t stamp = 0;

  // ---- frequencies: two rows of 16-bit counters
  static constexpr size_t k_sketch_width = size_t{1} << 17;
  std::vector<uint16_t> sketch;
  size_t decay_cursor = 0;
  uint64_t articles_counted = 0;  // articles counted into the sketch

  // ===== vocabulary =====
  std::string_view word_text(uint32_t w) const {
    const word_entry& e = words[w];
    return {e.length <= word_entry::k_inline ? e.small : text.data() + e.text, e.length};
  }

  uint64_t hash_of(uint32_t w) const { return word_hash(word_text(w)); }

  // word_text(w) == s without a call to memcmp for the common short word: after the
  // lengths, two loads from each side's ends (overlapping when shorter than twice the
  // load), 8 bytes for words of 8..16 bytes (inline in the entry), 4 for 4..7.
  bool same_word(uint32_t w, std::string_view s) const {
    const word_entry& e = words[w];
    const size_t n = s.size();
    if (e.length != n) return false;
    if (n > word_entry::k_inline) return word_text(w) == s;
    if (n >= 8) return ends_equal<uint64_t>(e.small, s.data(), n);
    if (n >= 4) return ends_equal<uint32_t>(e.small, s.data(), n);
    for (size_t i = 0; i < n; ++i) {
      if (e.small[i] != s[i]) return false;
    }
    return true;
  }
  template <class T>
  static bool ends_equal(const char* a, const char* b, size_t n) {
    T a0, a1, b0, b1;
    std::memcpy(&a0, a, sizeof(T));
    std::memcpy(&a1, a + n - sizeof(T), sizeof(T));
    std::memcpy(&b0, b, sizeof(T));
    std::memcpy(&b1, b + n - sizeof(T), sizeof(T));
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }

  uint32_t find_word(uint64_t h, std::string_view s) const {
    const size_t mask = slots.size() - 1;
    const uint64_t tag = h >> 32;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t v = slots[i];
      if (v == 0) return k_none;
      if ((v >> 32) == tag) {
        const uint32_t w = static_cast<uint32_t>(v) - 1;
        if (same_word(w, s)) return w;
      }
    }
  }

  void insert_slot(uint64_t h, uint32_t w) {
    const size_t mask = slots.size() - 1;
    size_t i = h & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = ((h >> 32) << 32) | (uint64_t{w} + 1);
  }

  void grow_slots() {
    std::vector<uint64_t> old = std::move(slots);
    slots.assign(old.size() * 2, 0);
    for (uint64_t v : old) {
      if (v) insert_slot(hash_of(static_cast<uint32_t>(v) - 1), static_cast<uint32_t>(v) - 1);
    }
  }

  // Removes word w's slot; backward-shift deletion keeps linear probing exact.
  void erase_slot(uint32_t w) {
    const size_t mask = slots.size() - 1;
    size_t i = hash_of(w) & mask;
    while (static_cast<uint32_t>(slots[i]) != w + 1) i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; slots[j] != 0; j = (j + 1) & mask) {
      const size_t home = hash_of(static_cast<uint32_t>(slots[j]) - 1) & mask;
      // Move slots[j] into the hole at i if its home is not in (i, j] cyclically.
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = 0;
    --used_slots;
  }

  // Returns the id of word s, adding it with no references if new.
  uint32_t intern(std::string_view s) { return intern(word_hash(s), s); }
  // A new word gets its frequency snapshot here; maintain() refreshes existing ones.
  uint32_t intern(uint64_t h, std::string_view s) {
    if (uint32_t w = find_word(h, s); w != k_none) return w;
    const auto f = static_cast<uint16_t>(frequency_of_hash(h));
    if ((used_slots + 1) * 2 > slots.size()) grow_slots();
    uint32_t w;
    if (!free_words.empty()) {
      w = free_words.back();
      free_words.pop_back();
    } else {
      w = static_cast<uint32_t>(words.size());
      words.emplace_back();
      if (words.size() > in_title.size() * 64) {
        present.resize(present.size() + size_t{64} * 64, 0);
        in_title.resize(in_title.size() + 64, 0);
      }
    }
    words[w].length = static_cast<uint16_t>(s.size());
    words[w].refs = 0;
    if (s.size() <= word_entry::k_inline) {
      std::memcpy(words[w].small, s.data(), s.size());
    } else {
      words[w].text = static_cast<uint32_t>(text.size());
      text.append(s);
    }
    insert_slot(h, w);
    ++used_slots;
    words[w].frequency = f;
    return w;
  }

  void release(uint32_t w) {
    if (--words[w].refs != 0) return;
    erase_slot(w);
    std::free(words[w].block);
    if (words[w].length > word_entry::k_inline) text_garbage += words[w].length;
    words[w] = word_entry{};
    free_words.push_back(w);
    if (text_garbage > 4096 && text_garbage * 2 > text.size()) compact_text();
  }

  void compact_text() {
    std::string fresh;
    fresh.reserve(text.size() - text_garbage);
    for (auto& e : words) {
      if (e.length <= word_entry::k_inline) continue;
      const uint32_t at = static_cast<uint32_t>(fresh.size());
      fresh.append(text, e.text, e.length);
      e.text = at;
    }
    text = std::move(fresh);
    text_garbage = 0;
  }

  void append(uint32_t w, int cls, const uint32_t* entry) {
    words[w].block = postings::append(words[w].block, cls, entry);
  }

  // ===== frequencies =====
  uint32_t frequency_of_hash(uint64_t h) const {
    const uint16_t a = sketch[h & (k_sketch_width - 1)];
    const uint16_t b = sketch[k_sketch_width + ((h >> 40) & (k_sketch_width - 1))];
    return std::min(a, b);
  }

  uint32_t frequency_of(uint32_t w) const { return frequency_of_hash(hash_of(w)); }

  void count(uint64_t h, uint32_t times) {
    uint16_t& a = sketch[h & (k_sketch_width - 1)];
    uint16_t& b = sketch[k_sketch_width + ((h >> 40) & (k_sketch_width - 1))];
    a = static_cast<uint16_t>(std::min<uint32_t>(0xFFFF, a + times));
    b = static_cast<uint16_t>(std::min<uint32_t>(0xFFFF, b + times));
  }

  // Halves 8 counters per article: every counter once per 32768 articles, no pause.
  void decay() {
    for (int k = 0; k < 8; ++k) {
      sketch[decay_cursor] >>= 1;
      decay_cursor = (decay_cursor + 1) & (sketch.size() - 1);
    }
  }

  // Rarer first (by frequency snapshot); ties to the longer word (longer words are
  // rarer), then the lower id.
  bool rarer(uint32_t a, uint32_t b) const {
    const uint32_t fa = words[a].frequency, fb = words[b].frequency;
    if (fa != fb) return fa < fb;
    if (words[a].length != words[b].length) return words[a].length > words[b].length;
    return a < b;
  }

  uint32_t rarest(const uint32_t* w, size_t n) const {
    uint32_t best = w[0];
    for (size_t i = 1; i < n; ++i) {
      if (rarer(w[i], best)) best = w[i];
    }
    return best;
  }

  // Moves the rarest of a canonical entry's k other words into the guard place (entry[1]),
  // so that the guard column rules out as many candidates as possible.
  void put_guard_first(uint32_t* entry, int k) const {
    for (int j = 2; j <= k; ++j) {
      if (rarer(entry[j], entry[1])) std::swap(entry[j], entry[1]);
    }
  }

  // ===== subscriptions =====
  static bool plain(const parsed_query& q) {
    if (q.clauses.size() != 1 || !q.clauses[0].must_not.empty()) return false;
    const auto& must = q.clauses[0].must;
    if (must.empty() || must.size() > k_max_plain_words) return false;
    for (const auto& t : must) {
      if (t.title || t.words.size() != 1) return false;
    }
    return true;
  }

  void ensure_sub(uint32_t id) { subs.ensure(id); }

  // Words of a plain conjunction, distinct, at most k_max_plain_words.
  void add_plain(uint32_t id, const std::string_view* word_texts, size_t n) {
    uint64_t hs[k_max_plain_words] = {};
    // Hash all words first and prefetch their slots, so their cache misses overlap.
    for (size_t i = 0; i < n; ++i) {
      hs[i] = word_hash(word_texts[i]);
      __builtin_prefetch(&slots[hs[i] & (slots.size() - 1)]);
    }
    add_plain(id, word_texts, hs, n);
  }
  // With the words' hashes (word_hash) known.
  void add_plain(uint32_t id, const std::string_view* word_texts, const uint64_t* hs, size_t n) {
    uint32_t ws[k_max_plain_words] = {};
    uint32_t filed = k_none, filed_frequency = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t w = intern(hs[i], word_texts[i]);
      ++words[w].refs;
      ws[i] = w;
      const uint32_t f = words[w].frequency;
      if (filed == k_none || f < filed_frequency ||
          (f == filed_frequency && (words[w].length > words[filed].length ||
                                    (words[w].length == words[filed].length && w < filed)))) {
        filed = w;
        filed_frequency = f;
      }
    }
    uint32_t entry[k_max_plain_words + 1];
    entry[0] = id;
    size_t k = 1;
    for (size_t i = 0; i < n; ++i) {
      if (ws[i] != filed) entry[k++] = ws[i];
    }
    const int cls = static_cast<int>(n) - 1;
    put_guard_first(entry, cls);
    append(filed, cls, entry);
    subs[id] = (static_cast<uint32_t>(cls) << 28) | filed;
  }

  std::vector<uint32_t> intern_all(const std::vector<std::string>& ws) {
    std::vector<uint32_t> ids;
    ids.reserve(ws.size());
    for (const auto& s : ws) {
      const uint32_t w = intern(s);
      ++words[w].refs;
      ids.push_back(w);
    }
    return ids;
  }

  void add_general(uint32_t id, const parsed_query& q) {
    uint32_t g;
    if (!free_generals.empty()) {
      g = free_generals.back();
      free_generals.pop_back();
    } else {
      g = static_cast<uint32_t>(generals.size());
      generals.emplace_back();
    }
    generals[g] = general_sub{id, stamp, {}};
    for (const auto& qc : q.clauses) {
      general_clause gc;
      gc.owner = g;
      for (const auto& t : qc.must) {
        auto ids = intern_all(t.words);
        gc.must.insert(gc.must.end(), ids.begin(), ids.end());
        if (ids.size() == 1 && t.title) {
          gc.must_title.push_back(ids[0]);
        } else if (ids.size() > 1) {
          gc.phrases.push_back({std::move(ids), t.title});
        }
      }
      for (const auto& t : qc.must_not) {
        auto ids = intern_all(t.words);
        if (ids.size() == 1) {
          (t.title ? gc.not_title_words : gc.not_words).push_back(ids[0]);
        } else {
          gc.not_phrases.push_back({std::move(ids), t.title});
        }
      }
      gc.filed = rarest(gc.must.data(), gc.must.size());
      uint32_t slot;
      if (!free_clauses.empty()) {
        slot = free_clauses.back();
        free_clauses.pop_back();
      } else {
        slot = static_cast<uint32_t>(clauses.size());
        clauses.emplace_back();
      }
      append(gc.filed, k_general, &slot);
      clauses[slot] = std::move(gc);
      generals[g].clauses.push_back(slot);
    }
    subs[id] = (uint32_t{k_general} << 28) | g;
    ++general_count;
  }

  void release_clause_words(const general_clause& gc) {
    // must holds the positive words (phrase words included) once per occurrence.
    for (uint32_t w : gc.must) release(w);
    for (uint32_t w : gc.not_words) release(w);
    for (uint32_t w : gc.not_title_words) release(w);
    for (const auto& p : gc.not_phrases) {
      for (uint32_t w : p.words) release(w);
    }
  }

  void remove_sub(uint32_t id) {
    const uint32_t rec = subs[id];
    const int cls = static_cast<int>(rec >> 28);
    const uint32_t ref = rec & k_word_mask;
    subs[id] = k_absent;
    if (cls != k_general) {
      const size_t stride = stride_of(cls);
      uint32_t* b = words[ref].block;
      const uint32_t i = postings::find(b, cls, id);
      uint32_t entry[k_max_plain_words + 1];
      postings::read(b, cls, i, entry);
      postings::erase(b, cls, i);
      for (size_t k = 1; k < stride; ++k) release(entry[k]);
      release(ref);
      return;
    }
    general_sub& gs = generals[ref];
    for (uint32_t slot : gs.clauses) {
      general_clause& gc = clauses[slot];
      uint32_t* b = words[gc.filed].block;
      postings::erase(b, k_general, postings::find(b, k_general, slot));
      release_clause_words(gc);
      gc = general_clause{};
      free_clauses.push_back(slot);
    }
    gs = general_sub{};
    free_generals.push_back(ref);
    --general_count;
  }

  // ===== matching =====
  bool bit(const std::vector<uint64_t>& b, uint32_t w) const { return (b[w >> 6] >> (w & 63)) & 1; }

  bool has_phrase(const phrase& p) const {
    const size_t n = p.words.size();
    const size_t end = p.title ? sequence_title : sequence.size();
    for (size_t i = 0; i + n <= end; ++i) {
      if (sequence[i] != p.words[0]) continue;
      size_t k = 1;
      while (k < n && sequence[i + k] == p.words[k]) ++k;
      if (k == n) return true;
    }
    return false;
  }

  bool verify(const general_clause& gc) const {
    for (uint32_t w : gc.must) {
      if (!present[w]) return false;
    }
    for (uint32_t w : gc.must_title) {
      if (!bit(in_title, w)) return false;
    }
    for (uint32_t w : gc.not_words) {
      if (present[w]) return false;
    }
    for (uint32_t w : gc.not_title_words) {
      if (bit(in_title, w)) return false;
    }
    for (const auto& p : gc.phrases) {
      if (!has_phrase(p)) return false;
    }
    for (const auto& p : gc.not_phrases) {
      if (has_phrase(p)) return false;
    }
    return true;
  }

  // Entries of class K (K other words, guard column then rest; see struct postings):
  // ids[n] = id when the guard and the K-1 other words are all in the article. Two
  // branch-free passes per chunk: the guard column yields the survivors' indices (every
  // index is written, the count advances only on a hit), then only the survivors' rest
  // is read (ids[n] is written for each, n advances only on a match).
  template <int K>
  size_t scan(const uint32_t* guard, const uint32_t* rest, uint32_t count, uint32_t* ids,
              uint32_t* where, size_t n) const {
    const uint8_t* in = present.data();
    constexpr uint32_t k_chunk = 256;
    uint32_t survivors[k_chunk];
    for (uint32_t base = 0; base < count; base += k_chunk) {
      const uint32_t end = std::min(count, base + k_chunk);
      uint32_t m = 0;
      for (uint32_t i = base; i < end; ++i) {
        survivors[m] = i;
        m += in[guard[i]];
      }
      for (uint32_t j = 0; j < m; ++j) {
        const uint32_t i = survivors[j];
        const uint32_t* r = rest + size_t{i} * K;
        uint32_t ok = 1;
        for (int k = 1; k < K; ++k) ok &= in[r[k]];
        ids[n] = r[0];
        where[n] = (uint32_t{K} << 28) | i;
        n += ok;
      }
    }
    return n;
  }

  // match() counts the words of one article in k_sample (the counts only need to rank
  // words; the sketch's cache misses are a third of the per-word cost); observe() counts
  // every article it is given.
  static constexpr uint32_t k_sample = index::count_one_in;

  // Class K (count entries, room for capacity), whose guards start at e and rests at r:
  // scans it and moves e and r past the class.
  template <int K>
  void scan_class(uint32_t count, uint32_t capacity, const uint32_t*& e, const uint32_t*& r,
                  uint32_t* ids, uint32_t* where, size_t& n) const {
    if (count) n = scan<K>(e, r, count, ids, where, n);
    e += capacity;
    r += size_t{capacity} * K;
  }

  void prepare(const article_view& a, bool want_sequence, bool counted) {
    ++stamp;
    distinct.clear();
    hits.clear();
    sequence.clear();
    const size_t title = a.title_words();
    const size_t nd = a.distinct();
    // One lookup per distinct word (the article found them once for every shard), in
    // three passes so that the cache misses of different words overlap instead of queuing:
    // prefetch every word's slot; read the slots and prefetch the word entries they name;
    // then compare the text, set the bits and prefetch the first postings.
    distinct_ids.resize(nd);
    const size_t mask = slots.size() - 1;
    for (size_t d = 0; d < nd; ++d) __builtin_prefetch(&slots[a.hash(a.first(d)) & mask]);
    for (size_t d = 0; d < nd; ++d) {
      const uint64_t h = a.hash(a.first(d));
      uint32_t guess = k_none;
      for (size_t i = h & mask;; i = (i + 1) & mask) {
        const uint64_t v = slots[i];
        if (v == 0) break;
        if ((v >> 32) == (h >> 32)) {
          guess = static_cast<uint32_t>(v) - 1;
          __builtin_prefetch(&words[guess]);
          break;
        }
      }
      distinct_ids[d] = guess;
    }
    for (size_t d = 0; d < nd; ++d) {
      const uint32_t i = a.first(d);
      const uint64_t h = a.hash(i);
      if (counted) count(h, a.count(d));
      uint32_t w = distinct_ids[d];
      if (w == k_none) continue;
      if (!same_word(w, a.word(i))) {
        w = find_word(h, a.word(i));  // a 32-bit tag collision: probe properly
        distinct_ids[d] = w;
        if (w == k_none) continue;
      }
      const uint64_t m = uint64_t{1} << (w & 63);
      present[w] = 1;
      if (i < title) in_title[w >> 6] |= m;
      distinct.push_back(w);
      if (const uint32_t* b = words[w].block) {
        // The first words' postings are read right after the lookups: start those misses
        // now; match() prefetches the rest a few words ahead.
        if (hits.size() < k_header_ahead) prefetch_header(b);
        hits.push_back({w, b});
      }
    }
    // The source's tokens (source.h) are distinct words that occur once, in no title and in
    // no sequence (a phrase is of words, and no word spells a token); a clause that names
    // a source sits in its token's postings, which articles from other sources never read.
    if (const source_scope* scope = a.scope()) {
      for (size_t t = 0; t < scope->size(); ++t) {
        const uint64_t h = scope->hash(t);
        if (counted) count(h, 1);
        const uint32_t w = find_word(h, scope->token(t));
        if (w == k_none || present[w]) continue;
        present[w] = 1;
        distinct.push_back(w);
        if (const uint32_t* b = words[w].block) hits.push_back({w, b});
      }
    }
    if (want_sequence) {
      const size_t n = a.size();
      sequence.resize(n + 1);
      for (size_t i = 0; i < title && i < n; ++i) sequence[i] = distinct_ids[a.of(i)];
      sequence_title = std::min(title, n);
      sequence[sequence_title] = k_none;  // phrases never span title and content
      for (size_t i = sequence_title; i < n; ++i) sequence[i + 1] = distinct_ids[a.of(i)];
    }
    if (counted) {
      decay();
      ++articles_counted;
    }
  }

  // The first words' headers are prefetched by prepare(), the rest k_header_ahead words
  // ahead. Nothing more: the hot part of a block is one sequential run, and prefetching
  // it in software (up to 64 lines a block) measured no faster or up to twice as slow,
  // its requests queuing ahead of the lines the scan was waiting for. Nor does it help
  // when the postings come from memory (the slow articles, bench/matcher_bench.cc,
  // match/index_cold): prefetching the next 2..40 blocks' hot parts, or each survivor's
  // rest 8 ahead, left the cold time unchanged; the scan's misses already overlap.
  static constexpr size_t k_header_ahead = 8;
  // The header and the start of the hot part: with malloc's 16-byte alignment the header
  // can end in the second line. always_inline: a prefetch-only helper left to GCC 12's IPA
  // pure-const pass can be found `const` and its calls deleted.
  [[gnu::always_inline]] static void prefetch_header(const uint32_t* b) {
    __builtin_prefetch(b);
    __builtin_prefetch(b + 16);
  }

  void finish_article() {
    for (uint32_t w : distinct) {
      present[w] = 0;
      in_title[w >> 6] = 0;
    }
  }

  void match(const article_view& a, match_result& out) {
    out.ids_.clear();
    out.where_.clear();
    out.segments_.clear();
    out.stats_ = {};
    prepare(a, general_count != 0, stamp % k_sample == 0);
    out.stats_.article_words = a.size();
    out.stats_.vocabulary_hits = distinct.size();
    size_t n = 0;
    for (size_t h = 0; h < hits.size(); ++h) {
      if (h + k_header_ahead < hits.size()) prefetch_header(hits[h + k_header_ahead].block);
      const uint32_t w = hits[h].word;
      const uint32_t* b = hits[h].block;
      uint32_t sizes[k_classes], caps[k_classes];
      postings::decode(b, sizes, caps);
      size_t need = 0, hot = 0;
      for (int c = 0; c < k_classes; ++c) {
        need += sizes[c];
        hot += caps[c];
      }
      if (need == 0) continue;
      // resize(n) first: reserve() keeps only size() elements when it reallocates.
      out.ids_.resize(n);
      out.ids_.reserve(n + need);
      out.where_.resize(n);
      out.where_.reserve(n + need);
      out.segments_.push_back({static_cast<uint32_t>(n), w, sizes[0]});
      uint32_t* ids = out.ids_.data();
      uint32_t* where = out.where_.data();
      out.stats_.postings += need;
      out.stats_.candidates += need - sizes[0];
      const uint32_t* e = b + postings::header(b);  // the hot part, class 0's ids first
      const uint32_t* r = e + hot;                  // the rests
      if (const uint32_t count = sizes[0]) {
        // Single-word clauses match outright: one bulk copy.
        // where[] stays unwritten for them: entry i is match segment.first + i.
        std::memcpy(ids + n, e, count * sizeof(uint32_t));
        n += count;
      }
      e += caps[0];
      scan_class<1>(sizes[1], caps[1], e, r, ids, where, n);
      scan_class<2>(sizes[2], caps[2], e, r, ids, where, n);
      scan_class<3>(sizes[3], caps[3], e, r, ids, where, n);
      scan_class<4>(sizes[4], caps[4], e, r, ids, where, n);
      scan_class<5>(sizes[5], caps[5], e, r, ids, where, n);
      scan_class<6>(sizes[6], caps[6], e, r, ids, where, n);
      scan_class<7>(sizes[7], caps[7], e, r, ids, where, n);
      if (const uint32_t count = sizes[k_general]) {
        for (uint32_t i = 0; i < count; ++i) {
          const general_clause& gc = clauses[e[i]];
          general_sub& gs = generals[gc.owner];
          if (gs.stamp == stamp || !verify(gc)) continue;
          gs.stamp = stamp;
          ids[n] = gs.id;
          where[n] = (uint32_t{k_general} << 28) | i;
          ++n;
        }
      }
    }
    out.ids_.resize(n);
    out.where_.resize(n);
    finish_article();
  }

  // ===== maintenance =====
  // Where maintain() resumes. A pass first refreshes every word's frequency snapshot
  // (refresh_cursor), then walks the words' postings: a word, a class of its postings, an
  // entry of that class.
  uint32_t refresh_cursor = 0;
  uint32_t cursor_word = 0;
  int cursor_class = 0;
  uint32_t cursor_entry = 0;

  // Examines up to budget entries from the cursor on, and at most to the end of the current
  // pass. A pass first takes a fresh snapshot of every word's frequency (a snapshot is
  // otherwise as old as the word's entry into the vocabulary: a clause added before the
  // index saw articles was filed with every count at zero), one look each; then an entry
  // whose rarest word is now at most half as frequent as its filing word moves to that
  // word, an entry that stays takes as its guard another of its words at most half as
  // frequent as its guard, and a word's block is trimmed when the cursor leaves it.
  void maintain(size_t budget, index::maintenance& out) {
    if (words.empty()) return;
    size_t& examined = out.examined;
    while (examined < budget) {
      if (cursor_word >= words.size()) {  // the pass is over
        cursor_word = 0;
        cursor_class = 0;
        cursor_entry = 0;
        refresh_cursor = 0;
        out.pass_done = true;
        break;
      }
      if (refresh_cursor < words.size()) {
        const uint32_t w = refresh_cursor++;
        if (words[w].length != 0) words[w].frequency = static_cast<uint16_t>(frequency_of(w));
        ++examined;
        continue;
      }
      const uint32_t w = cursor_word;
      if (!words[w].block || words[w].length == 0 || cursor_class == k_classes) {
        // A trim copies the block: its size counts against the budget.
        if (words[w].block) examined += postings::trim(words[w].block);
        ++cursor_word;
        cursor_class = 0;
        cursor_entry = 0;
        ++examined;  // an empty word still costs a look
        continue;
      }
      const int cls = cursor_class;
      if (cls == 0) {  // a single word: nothing to re-file, no guard
        ++cursor_class;
        ++examined;
        continue;
      }
      const size_t stride = stride_of(cls);
      const uint32_t fw = words[w].frequency;
      while (examined < budget && cursor_entry < postings::size(words[w].block, cls)) {
        ++examined;
        const uint32_t i = cursor_entry;
        uint32_t e[k_max_plain_words + 1];
        postings::read(words[w].block, cls, i, e);
        uint32_t best = w;
        if (cls == k_general) {
          const general_clause& gc = clauses[e[0]];
          best = rarest(gc.must.data(), gc.must.size());
        } else {
          for (size_t k = 1; k < stride; ++k) {
            if (rarer(e[k], best)) best = e[k];
          }
        }
        if (best == w || uint32_t{words[best].frequency} * 2 >= fw) {
          if (postings::guarded(cls)) {
            // The same margin as for filing: a guard changes only for a word at most half
            // as frequent, so counts that move a little do not flip guards every pass.
            size_t g = 1;
            for (size_t j = 2; j < stride; ++j) {
              if (rarer(e[j], e[g])) g = j;
            }
            if (g != 1 && uint32_t{words[e[g]].frequency} * 2 < words[e[1]].frequency) {
              std::swap(e[1], e[g]);
              postings::write(words[w].block, cls, i, e);
              ++out.reguarded;
            }
          }
          ++cursor_entry;
          continue;
        }
        uint32_t* entry = e;
        if (cls == k_general) {
          clauses[entry[0]].filed = best;
        } else {
          for (size_t k = 1; k < stride; ++k) {
            if (entry[k] == best) entry[k] = w;
          }
          put_guard_first(entry, cls);
          subs[entry[0]] = (static_cast<uint32_t>(cls) << 28) | best;
        }
        append(best, cls, entry);
        postings::erase(words[w].block, cls, i);  // the last entry moves into i: look again
        ++out.moved;
      }
      if (cursor_entry >= postings::size(words[w].block, cls)) {
        ++cursor_class;
        cursor_entry = 0;
      }
    }
  }
};

index::index(const index_options& options) : impl_(std::make_unique<impl>(options)) {}
index::~index() {
  for (auto& e : impl_->words) std::free(e.block);
}

const query_parser& index::parser() const { return impl_->parser; }

// The common case without the parser: ASCII letters and digits separated by single
// spaces, no operator, at most 8 distinct words, not all frequent. Same result as
// parsing. Returns false to let the parser handle (or reject) everything else.
bool index::add_plain_text(uint32_t id, std::string_view query) {
  auto& m = *impl_;
  std::string_view ws[k_max_plain_words];
  // The split prefetch_adds made of this query, if it is the next (or the one after: an
  // add the caller skipped) of its batch, recognised by its bytes.
  const impl::staged_query* st = nullptr;
  for (size_t j = m.staged_next; j < m.staged.size() && j < m.staged_next + 2; ++j) {
    const impl::staged_query& e = m.staged[j];
    if (std::string_view(m.staged_text).substr(e.text_begin, e.text_size) == query) {
      st = &m.staged[j];
      m.staged_next = j + 1;
      break;
    }
  }
  if (st != nullptr) {
    if (st->n == 0) return false;  // not plain: the parser's
    for (uint32_t i = 0; i < st->n; ++i) {
      const uint32_t w = st->first + i;
      const uint32_t begin = w == 0 ? 0 : m.staged_ends[w - 1];
      ws[i] = std::string_view(m.staged_folded).substr(begin, m.staged_ends[w] - begin);
    }
  }
  char folded[query_parser::split_plain_max_bytes];
  const size_t n =
      st != nullptr ? st->n : m.parser.split_plain(query, folded, ws, k_max_plain_words);
  if (n == 0) return false;
  m.ensure_sub(id);
  if (m.subs[id] != k_absent) {
    m.remove_sub(id);
  } else {
    ++subscriptions_;
  }
  if (st != nullptr) {
    m.add_plain(id, ws, m.prefetch_hashes.data() + st->first, n);
  } else {
    m.add_plain(id, ws, n);
  }
  return true;
}

void index::prefetch_adds(const std::string_view* queries, size_t n) {
  auto& m = *impl_;
  std::vector<uint64_t>& hashes = m.prefetch_hashes;
  hashes.clear();
  m.staged.clear();
  m.staged_next = 0;
  m.staged_text.clear();
  m.staged_folded.clear();
  m.staged_ends.clear();
  const size_t mask = m.slots.size() - 1;
  // Stage 1: each word's home slot. The split and the hashes are kept for the adds.
  for (size_t q = 0; q < n; ++q) {
    char folded[query_parser::split_plain_max_bytes];
    std::string_view ws[k_max_plain_words];
    const size_t k = m.parser.split_plain(queries[q], folded, ws, k_max_plain_words);
    m.staged.push_back({static_cast<uint32_t>(m.staged_text.size()),
                        static_cast<uint32_t>(queries[q].size()),
                        static_cast<uint32_t>(hashes.size()), static_cast<uint32_t>(k)});
    m.staged_text.append(queries[q]);
    for (size_t i = 0; i < k; ++i) {
      const uint64_t h = word_hash(ws[i]);
      __builtin_prefetch(&m.slots[h & mask]);
      hashes.push_back(h);
      m.staged_folded.append(ws[i]);
      m.staged_ends.push_back(static_cast<uint32_t>(m.staged_folded.size()));
    }
  }
  // Stage 2: the entry of the first slot from home whose tag matches (a hint: a tag
  // collision fetches a wrong entry, a missing word nothing).
  std::vector<uint32_t>& found = m.prefetch_words;
  found.clear();
  for (const uint64_t h : hashes) {
    const uint64_t tag = h >> 32;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t v = m.slots[i];
      if (v == 0) break;
      if ((v >> 32) == tag) {
        const uint32_t w = static_cast<uint32_t>(v) - 1;
        __builtin_prefetch(&m.words[w]);
        found.push_back(w);
        break;
      }
    }
  }
  // Stage 3: their posting blocks' headers (the one append writes is among them).
  for (const uint32_t w : found) {
    if (const uint32_t* b = m.words[w].block) __builtin_prefetch(b);
  }
}

query_error index::add(uint32_t id, std::string_view query) {
  if (add_plain_text(id, query)) return {};
  parsed_query& q = impl_->parsed;
  if (auto err = impl_->parser.parse(query, q); !err.ok()) return err;
  add(id, q);
  return {};
}

void index::add(uint32_t id, const parsed_query& q) {
  auto& m = *impl_;
  m.ensure_sub(id);
  if (m.subs[id] != k_absent) {
    m.remove_sub(id);
  } else {
    ++subscriptions_;
  }
  if (impl::plain(q)) {
    std::string_view ws[k_max_plain_words];
    const auto& must = q.clauses[0].must;
    for (size_t i = 0; i < must.size(); ++i) ws[i] = must[i].words[0];
    m.add_plain(id, ws, must.size());
  } else {
    m.add_general(id, q);
  }
}

bool index::remove(uint32_t id) {
  auto& m = *impl_;
  if (m.subs.get(id) == k_absent) return false;
  m.remove_sub(id);
  --subscriptions_;
  return true;
}

void index::reserve(uint32_t ids) {
  if (ids) impl_->subs.ensure(ids - 1);
}

bool index::contains(uint32_t id) const { return impl_->subs.get(id) != k_absent; }

void index::match(const article_view& a, match_result& out) { impl_->match(a, out); }

void index::observe(const article_view& a) {
  impl_->prepare(a, false, true);
  impl_->finish_article();
}

void index::matched_words(const match_result& r, size_t k,
                          std::vector<std::string_view>& out) const {
  const auto& m = *impl_;
  out.clear();
  auto seg =
      std::prev(std::upper_bound(r.segments_.begin(), r.segments_.end(), static_cast<uint32_t>(k),
                                 [](uint32_t v, const auto& s) { return v < s.first; }));
  const uint32_t w = seg->word;
  const bool single = k - seg->first < seg->class0;
  const int cls = single ? 0 : static_cast<int>(r.where_[k] >> 28);
  const uint32_t i = single ? static_cast<uint32_t>(k - seg->first) : r.where_[k] & k_word_mask;
  uint32_t e[k_max_plain_words + 1];
  postings::read(m.words[w].block, cls, i, e);
  // Source tokens are no words of the article: left out.
  if (cls == k_general) {
    const general_clause& gc = m.clauses[e[0]];
    for (uint32_t x : gc.must) {
      const auto s = m.word_text(x);
      if (!is_source_token(s) && std::find(out.begin(), out.end(), s) == out.end())
        out.push_back(s);
    }
    return;
  }
  if (!is_source_token(m.word_text(w))) out.push_back(m.word_text(w));
  const size_t stride = stride_of(cls);
  for (size_t j = 1; j < stride; ++j) {
    if (!is_source_token(m.word_text(e[j]))) out.push_back(m.word_text(e[j]));
  }
}

index::maintenance index::maintain(size_t budget) {
  maintenance out;
  impl_->maintain(budget, out);
  return out;
}

uint32_t index::frequency(std::string_view word) const {
  return impl_->frequency_of_hash(word_hash(word));
}

index::frequency_state index::frequencies() const {
  const auto& m = *impl_;
  return {{m.sketch.data(), m.sketch.size()},
          static_cast<uint32_t>(m.decay_cursor),
          m.articles_counted};
}

bool index::restore_frequencies(const frequency_state& saved) {
  auto& m = *impl_;
  if (saved.counters.size() != m.sketch.size() || saved.decay_cursor >= m.sketch.size())
    return false;
  std::copy(saved.counters.begin(), saved.counters.end(), m.sketch.begin());
  m.decay_cursor = saved.decay_cursor;
  m.articles_counted = saved.counted;
  for (uint32_t w = 0; w < m.words.size(); ++w) {
    if (m.words[w].length != 0) m.words[w].frequency = static_cast<uint16_t>(m.frequency_of(w));
  }
  return true;
}

size_t index::vocabulary_size() const { return impl_->words.size() - impl_->free_words.size(); }

index::memory index::memory_usage() const {
  const auto& m = *impl_;
  memory r;
  for (const auto& e : m.words) r.postings += postings::words(e.block) * sizeof(uint32_t);
  r.vocabulary = m.slots.capacity() * sizeof(uint64_t) + m.words.capacity() * sizeof(word_entry) +
                 m.text.capacity() + m.free_words.capacity() * sizeof(uint32_t) +
                 m.present.capacity() + m.in_title.capacity() * sizeof(uint64_t);
  r.subscriptions = m.subs.bytes() + m.generals.capacity() * sizeof(general_sub) +
                    m.clauses.capacity() * sizeof(general_clause);
  for (const auto& g : m.generals) r.subscriptions += g.clauses.capacity() * sizeof(uint32_t);
  for (const auto& c : m.clauses) {
    r.subscriptions += (c.must.capacity() + c.must_title.capacity() + c.not_words.capacity() +
                        c.not_title_words.capacity()) *
                       sizeof(uint32_t);
    for (const auto& p : c.phrases)
      r.subscriptions += sizeof(phrase) + p.words.capacity() * sizeof(uint32_t);
    for (const auto& p : c.not_phrases)
      r.subscriptions += sizeof(phrase) + p.words.capacity() * sizeof(uint32_t);
  }
  r.frequency_sketch = m.sketch.capacity() * sizeof(uint16_t);
  return r;
}

}  // namespace feedplane::matcher
