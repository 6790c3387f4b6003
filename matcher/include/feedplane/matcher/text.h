// Text normalisation shared by subscriptions and articles: visible text of HTML, Unicode
// case folding, and the split into words.
//
// The rules, so that a user can predict a match:
// - A word is a maximal run of letters and digits (Unicode categories L*, N*, plus the
//   combining marks M* and invisible formatting characters Cf such as the soft hyphen,
//   which stay inside a word and are then removed). Everything else separates words.
// - Words are case folded (Unicode full case folding, NFKC: "Straße" -> "strasse",
//   "ﬁ" -> "fi", full-width "Ａ" -> "a"). Accents are kept ("café" != "cafe"). No stemming.
// - Apostrophes, hyphens, underscores, dots and slashes separate words: "don't" is
//   "don t", "e-mail" is "e mail", "u.s." is "u s", "snake_case" is "snake case".
//   A subscription word that splits this way is matched as a phrase (see query.h), so
//   `don't` matches "don't", "don’t" and "DON'T", and `e-mail` matches "E-Mail" but not
//   "email".
// - A run of '+' right after a word belongs to the word unless a letter or digit follows
//   the run: "c++" and "g++" are words of their own ("c" does not match "c++");
//   "a+b" is "a b"; "c++11" is "c 11".
// - Scripts written without spaces (Chinese, Japanese) are not segmented: a run of such
//   letters is one word.
// - Markup never matches (html_to_text): tags and attributes are dropped, script and
//   style elements are dropped with their content, comments are dropped, entities are
//   decoded. A tag separates words, except inline formatting tags (b, i, em, strong, a,
//   span, ...), so "<b>Fire</b>fox" is one word, "firefox".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace feedplane::matcher {

// A growable array of trivially copyable T that never initialises what it grows into,
// so a reused buffer costs nothing per call in steady state.
template <class T>
class raw_buffer {
 public:
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  void resize(size_t n) {
    reserve(n);
    size_ = n;
  }
  // Makes room for n elements in total; keeps the first size() of them.
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = cap_ ? cap_ : 64;
    while (cap < n) cap += cap / 2 + 1;
    std::unique_ptr<T[]> p(new T[cap]);
    if (size_) std::copy(p_.get(), p_.get() + size_, p.get());
    p_ = std::move(p);
    cap_ = cap;
  }
  size_t capacity() const { return cap_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  std::unique_ptr<T[]> p_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

// Case-folded words of one or more texts. Word i is folded()[begin(i), end(i)). Reused
// across calls: tokenize appends, clear() empties without freeing.
class token_buffer {
 public:
  size_t size() const { return bounds_.size() / 2; }
  std::string_view word(size_t i) const {
    return {reinterpret_cast<const char*>(folded_.data()) + bounds_[2 * i],
            bounds_[2 * i + 1] - bounds_[2 * i]};
  }
  void clear() {
    folded_.clear();
    bounds_.clear();
  }

  // For the tokenizer implementations. folded_ holds a lower-cased copy of every input
  // text, then the folded form of words that needed the Unicode path. bounds_ holds
  // begin, end pairs into folded_.
  raw_buffer<uint8_t> folded_;
  raw_buffer<uint32_t> bounds_;
  raw_buffer<uint32_t> scratch_;  // the Unicode fix-up rebuilds bounds_ through this
};

// Appends the case-folded words of plain text to out. Highway kernel, dispatched at run
// time to the best target of this CPU (once per call).
void tokenize(std::string_view text, token_buffer& out);
// Same result from a branch-free table-driven scalar loop: the peer the SIMD kernel is
// measured against, and what tests compare it with.
void tokenize_scalar(std::string_view text, token_buffer& out);
// Same result, one code point at a time through utf8proc, written for clarity: the
// oracle for the two above.
void tokenize_reference(std::string_view text, token_buffer& out);
// Name of the Highway target tokenize() runs on this CPU ("AVX3", "AVX2", ...).
const char* tokenizer_target();

// Appends the visible text of an HTML fragment to out (rules at the top of this file).
// Plain text without '<' or '&' is copied unchanged.
void html_to_text(std::string_view html, std::string& out);

// What decode_char_ref found at a '&'.
enum class char_ref : uint8_t {
  none,     // no complete reference: '&' is text (no ';' within reach, or a bad number)
  numeric,  // "&#233;" or "&#xE9;"
  xml,      // one of the five XML entities: &amp; &lt; &gt; &quot; &apos;
  html,     // any other HTML5 named reference (all 2,125 that end in ';')
  unknown,  // "&name;" that HTML5 does not name: '&' is text
};
struct char_ref_result {
  size_t used;  // bytes of the reference, '&' and ';' included; 0 for none and unknown
  char_ref kind;
};

// Decodes the character reference at the start of s (s[0] == '&') and appends its UTF-8 to
// out; appends nothing for none and unknown. A reference needs its ';' (the legacy HTML
// forms without one are text, so URL queries like "?a=1&copy=2" survive); a name or number
// is at most 32 letters or digits. Numeric references to 0, surrogates and beyond U+10FFFF
// decode to U+FFFD, and 128..159 to their windows-1252 characters, as HTML5 does. The one
// entity decoder: html_to_text here and feed's decode_entities both call it.
char_ref_result decode_char_ref(std::string_view s, std::string& out);

// Appends the UTF-8 encoding of code point cp; 0, surrogates and cp > U+10FFFF become U+FFFD.
void append_utf8(uint32_t cp, std::string& out);

// windows-1252's characters for the bytes 0x80..0x9F (the five it leaves undefined map to
// themselves, as WHATWG's index does); 0xA0..0xFF are the same code points as bytes.
inline constexpr uint16_t k_windows1252_c1[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

namespace detail {
// The scan kernels, exposed for tests and benchmarks: lower-case ASCII letters of
// in[0, n) into lower[0, n) and write the positions where runs of word bytes
// ([0-9A-Za-z] or >= 0x80) begin and end, alternating, into bounds (a run reaching n ends
// at n). bounds needs room for n + 1 + k_bounds_slack entries. Returns the count written;
// *flags gets bit 0 if a byte >= 0x80 was seen and bit 1 if a '+' was seen.
inline constexpr size_t k_bounds_slack = 72;
size_t scan_words_simd(const uint8_t* in, size_t n, uint8_t* lower, uint32_t* bounds,
                       unsigned* flags);
size_t scan_words_scalar(const uint8_t* in, size_t n, uint8_t* lower, uint32_t* bounds,
                         unsigned* flags);
}  // namespace detail

}  // namespace feedplane::matcher
