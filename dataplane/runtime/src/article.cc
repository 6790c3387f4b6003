#include "feedplane/runtime/article.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace feedplane::runtime {

namespace {

// Formats of the durable record. "FRA2": the header and the strings (record()); every
// frozen block carries it. "FRA1" (before 2026-12-01): the whole block, words included;
// decode() still reads it, and the block it makes carries "FRA2".
constexpr uint32_t k_magic = 0x32415246;        // "FRA2"
constexpr uint32_t k_magic_whole = 0x31415246;  // "FRA1"
constexpr uint32_t k_max_bytes = article::max_bytes;

// Live articles in the process. Relaxed: gauges for /metrics, nothing is read on the
// strength of them.
std::atomic<int64_t> g_alive{0};
std::atomic<int64_t> g_alive_bytes{0};

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

// ---- article_ref ----

article_ref::article_ref(const article_ref& o) : a_(o.a_) {
  // Relaxed: the copier holds a reference, the count cannot reach zero meanwhile.
  if (a_ != nullptr) a_->refs_.fetch_add(1, std::memory_order_relaxed);
}

article_ref& article_ref::operator=(const article_ref& o) {
  if (this != &o) {
    article_ref tmp(o);
    *this = std::move(tmp);
  }
  return *this;
}

article_ref& article_ref::operator=(article_ref&& o) noexcept {
  if (this != &o) {
    reset();
    a_ = std::exchange(o.a_, nullptr);
  }
  return *this;
}

void article_ref::reset() {
  article* a = std::exchange(a_, nullptr);
  if (a == nullptr) return;
  // acq_rel: the release half orders this holder's reads of the article before the
  // decrement; the acquire half lets the holder that reaches zero see every other
  // holder's reads as finished before it frees. (The same as release + an acquire fence
  // on the last drop, which ThreadSanitizer cannot see; on x86 both are one lock xadd.)
  if (a->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    article::destroy(a);
  }
}

// ---- article ----

article* article::allocate(size_t bytes) {
  void* p = ::operator new(bytes);
  article* a = ::new (p) article();
  g_alive.fetch_add(1, std::memory_order_relaxed);
  g_alive_bytes.fetch_add(int64_t(bytes), std::memory_order_relaxed);
  return a;
}

void article::destroy(article* a) {
  g_alive.fetch_sub(1, std::memory_order_relaxed);
  g_alive_bytes.fetch_sub(int64_t(a->h_.total), std::memory_order_relaxed);
  a->~article();
  ::operator delete(static_cast<void*>(a));
}

int64_t article::alive() { return g_alive.load(std::memory_order_relaxed); }
int64_t article::alive_bytes() { return g_alive_bytes.load(std::memory_order_relaxed); }

matcher::article_view article::words() const {
  matcher::article_view::parts p;
  p.folded = reinterpret_cast<const uint8_t*>(base() + h_.folded.off);
  p.bounds = reinterpret_cast<const uint32_t*>(base() + h_.bounds_off);
  p.hashes = reinterpret_cast<const uint64_t*>(base() + h_.hashes_off);
  p.of = reinterpret_cast<const uint32_t*>(base() + h_.of_off);
  p.first = reinterpret_cast<const uint32_t*>(base() + h_.first_off);
  p.count = reinterpret_cast<const uint32_t*>(base() + h_.count_off);
  p.words = h_.words;
  p.distinct = h_.distinct;
  p.title_words = h_.title_words;
  return matcher::article_view(p);
}

std::string_view article::record() const {
  constexpr size_t skip = offsetof(article, h_);
  // The strings end where the folded words begin (freeze() lays them out so).
  return {base() + skip, h_.folded.off - skip};
}

std::string_view article::block() const {
  constexpr size_t skip = offsetof(article, h_);
  return {base() + skip, h_.total - skip};
}

bool article::record_sequenced_ms(std::string_view rec, int64_t* ms) {
  if (rec.size() < sizeof(header)) return false;
  header h;
  std::memcpy(&h, rec.data(), sizeof(header));
  if (h.magic != k_magic && h.magic != k_magic_whole) return false;
  *ms = h.sequenced_ms;
  return true;
}

article_ref article::decode(std::string_view rec, std::string* error) {
  constexpr size_t skip = offsetof(article, h_);
  auto fail = [&](const char* why) {
    *error = why;
    return article_ref();
  };
  if (rec.size() < sizeof(header)) return fail("article record shorter than its header");
  header h;
  std::memcpy(&h, rec.data(), sizeof(header));
  if (h.magic == k_magic) {
    // The header and the strings: the strings checked in bounds, then frozen again by
    // the thread's builder, which tokenizes them as the crawling shard's did.
    const size_t end = rec.size() + skip;
    if (end > k_max_bytes || h.folded.off != end) {
      return fail("article record length does not match its header");
    }
    for (const span32& s : h.strings) {
      if (s.off < sizeof(article) || uint64_t{s.off} + s.len > end) {
        return fail("article record has a string out of bounds");
      }
    }
    thread_local article_builder b;
    std::string* strs[f_strings] = {&b.source_url, &b.guid,    &b.title,  &b.link,
                                    &b.author,     &b.summary, &b.content};
    for (uint32_t f = 0; f < f_strings; ++f) {
      strs[f]->assign(rec.data() + (h.strings[f].off - skip), h.strings[f].len);
    }
    b.meta = h.meta;
    article_ref a = b.freeze();
    if (!a) return fail("article record's words would exceed the size limit");
    a.a_->h_.seq = h.seq;
    a.a_->h_.sequenced_ms = h.sequenced_ms;
    return a;
  }
  if (h.magic != k_magic_whole) return fail("article record has an unknown format");
  if (h.total != rec.size() + skip || h.total > k_max_bytes) {
    return fail("article record length does not match its header");
  }
  const size_t total = h.total;
  auto in = [&](uint64_t off, uint64_t len) {
    return off >= sizeof(article) && off + len <= total;
  };
  for (const span32& s : h.strings) {
    if (!in(s.off, s.len)) return fail("article record has a string out of bounds");
  }
  if (!in(h.folded.off, h.folded.len)) return fail("article record words out of bounds");
  const uint64_t w = h.words, d = h.distinct;
  if (h.title_words > w || d > w || !in(h.bounds_off, 8 * w) || !in(h.hashes_off, 8 * w) ||
      !in(h.of_off, 4 * w) || !in(h.first_off, 4 * d) || !in(h.count_off, 4 * d) ||
      h.bounds_off % 4 != 0 || h.hashes_off % 8 != 0 || h.of_off % 4 != 0 || h.first_off % 4 != 0 ||
      h.count_off % 4 != 0) {
    return fail("article record has word arrays out of bounds");
  }
  article* a = allocate(total);
  std::memcpy(reinterpret_cast<char*>(a) + skip, rec.data(), rec.size());
  a->h_.magic = k_magic;  // its record() is the new format's
  article_ref ref(a);
  // The arrays are in bounds; their contents must be too before matching trusts them.
  const uint32_t* bounds = reinterpret_cast<const uint32_t*>(a->base() + h.bounds_off);
  const uint32_t* of = reinterpret_cast<const uint32_t*>(a->base() + h.of_off);
  const uint32_t* first = reinterpret_cast<const uint32_t*>(a->base() + h.first_off);
  for (uint64_t i = 0; i < w; ++i) {
    if (bounds[2 * i] > bounds[2 * i + 1] || bounds[2 * i + 1] > h.folded.len || of[i] >= d) {
      return fail("article record has a word out of bounds");
    }
  }
  // Distinct words must be distinct (matching files each once): first occurrences strictly
  // increasing, each naming itself, counts adding up to the words.
  const uint32_t* count = reinterpret_cast<const uint32_t*>(a->base() + h.count_off);
  uint64_t counted = 0;
  for (uint64_t i = 0; i < d; ++i) {
    if (first[i] >= w || (i > 0 && first[i] <= first[i - 1]) || of[first[i]] != i ||
        count[i] == 0) {
      return fail("article record has inconsistent distinct words");
    }
    counted += count[i];
  }
  if (counted != w) return fail("article record has inconsistent word counts");
  return ref;
}

// ---- article_builder ----

void article_builder::clear() {
  meta = {};
  source_url.clear();
  guid.clear();
  title.clear();
  link.clear();
  author.clear();
  summary.clear();
  content.clear();
}

article_ref article_builder::freeze() {
  // The body text is the summary and the content (either may be empty; a word in both
  // counts twice, which only weighs the frequency sketch).
  text_.assign(summary);
  if (!content.empty()) {
    text_.append("\n");
    text_.append(content);
  }
  words_.assign_html(title, text_);

  const std::string* strs[article::f_strings] = {&source_url, &guid,    &title,  &link,
                                                 &author,     &summary, &content};
  const auto folded = words_.folded_bytes();
  const auto bounds = words_.bounds();
  const size_t w = words_.size(), d = words_.distinct();
  // Sizes: header, strings, folded bytes, then 8-aligned arrays. Strings alone past the
  // limit are refused before any offset is narrowed to 32 bits.
  size_t strings_total = 0;
  for (const std::string* str : strs) strings_total += str->size();
  if (strings_total > k_max_bytes) return article_ref();
  size_t off = sizeof(article);
  article::header h;
  h.magic = k_magic;
  for (uint32_t f = 0; f < article::f_strings; ++f) {
    h.strings[f] = {uint32_t(off), uint32_t(strs[f]->size())};
    off += strs[f]->size();
  }
  // Only the used prefix of the folded buffer: the word bounds end at most at the last
  // word's end.
  size_t folded_len = 0;
  for (size_t i = 0; i < w; ++i) folded_len = std::max<size_t>(folded_len, bounds[2 * i + 1]);

  h.folded = {uint32_t(off), uint32_t(folded_len)};
  off = align8(off + folded_len);
  h.hashes_off = uint32_t(off);
  off += 8 * w;
  h.bounds_off = uint32_t(off);
  off += 8 * w;
  h.of_off = uint32_t(off);
  off += 4 * w;
  h.first_off = uint32_t(off);
  off += 4 * d;
  h.count_off = uint32_t(off);
  off += 4 * d;
  off = align8(off);
  if (off > k_max_bytes) return article_ref();  // decode() could never read it back
  h.words = uint32_t(w);
  h.distinct = uint32_t(d);
  h.title_words = uint32_t(words_.title_words());
  h.total = uint32_t(off);
  h.meta = meta;

  article* a = article::allocate(off);
  a->h_ = h;
  char* b = reinterpret_cast<char*>(a);
  for (uint32_t f = 0; f < article::f_strings; ++f) {
    strs[f]->copy(b + h.strings[f].off, strs[f]->size());
  }
  if (folded_len != 0) std::memcpy(b + h.folded.off, folded.data(), folded_len);
  uint64_t* hashes = reinterpret_cast<uint64_t*>(b + h.hashes_off);
  uint32_t* of = reinterpret_cast<uint32_t*>(b + h.of_off);
  for (size_t i = 0; i < w; ++i) {
    hashes[i] = words_.hash(i);
    of[i] = words_.of(i);
  }
  if (w != 0) std::memcpy(b + h.bounds_off, bounds.data(), 8 * w);
  uint32_t* first = reinterpret_cast<uint32_t*>(b + h.first_off);
  uint32_t* count = reinterpret_cast<uint32_t*>(b + h.count_off);
  for (size_t i = 0; i < d; ++i) {
    first[i] = words_.first(i);
    count[i] = words_.count(i);
  }
  // Padding bytes are part of the durable record: zero them so records are deterministic.
  const size_t pad_from = h.count_off + 4 * d;
  if (pad_from < off) std::memset(b + pad_from, 0, off - pad_from);
  const size_t pad2 = h.folded.off + folded_len;
  if (pad2 < h.hashes_off) std::memset(b + pad2, 0, h.hashes_off - pad2);
  return article_ref(a);
}

}  // namespace feedplane::runtime
