// tokenize(): Highway scan (tokenize-inl.h) for every target, dispatched at run time,
// then a fix-up pass that only runs when the text has '+' or non-ASCII bytes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tokenize.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "tokenize-inl.h"

#if HWY_ONCE
#include <array>
#include <cstring>

#include "feedplane/matcher/text.h"
#include "unicode.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace feedplane::matcher::HWY_NAMESPACE {

size_t scan_words_target(const uint8_t* in, size_t n, uint8_t* lower, uint32_t* bounds,
                         unsigned* flags) {
  return scan_words(in, n, lower, bounds, flags);
}

const char* target_name() { return hwy::TargetName(HWY_TARGET); }

}  // namespace feedplane::matcher::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace feedplane::matcher {

HWY_EXPORT(scan_words_target);
HWY_EXPORT(target_name);

const char* tokenizer_target() { return HWY_DYNAMIC_DISPATCH(target_name)(); }

namespace detail {

size_t scan_words_simd(const uint8_t* in, size_t n, uint8_t* lower, uint32_t* bounds,
                       unsigned* flags) {
  return HWY_DYNAMIC_DISPATCH(scan_words_target)(in, n, lower, bounds, flags);
}

namespace {
struct byte_tables {
  std::array<uint8_t, 256> word{};
  std::array<uint8_t, 256> lower{};
  constexpr byte_tables() {
    for (int c = 0; c < 256; ++c) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      word[c] = (alpha || (c >= '0' && c <= '9') || c >= 0x80) ? 1 : 0;
      lower[c] = static_cast<uint8_t>((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
  }
};
constexpr byte_tables k_tables;
}  // namespace

size_t scan_words_scalar(const uint8_t* in, size_t n, uint8_t* lower, uint32_t* bounds,
                         unsigned* flags) {
  // Branch-free: every position is written, and the count only advances on a
  // transition, so there is no data-dependent branch in the loop.
  size_t count = 0;
  uint32_t prev = 0;
  unsigned high = 0, plus = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = in[i];
    const uint32_t w = k_tables.word[c];
    lower[i] = k_tables.lower[c];
    bounds[count] = static_cast<uint32_t>(i);
    count += w ^ prev;
    prev = w;
    high |= c;
    plus |= (c == '+');
  }
  if (prev) bounds[count++] = static_cast<uint32_t>(n);
  *flags = (high >> 7) | (plus << 1);
  return count;
}

}  // namespace detail

namespace {

using scan_fn = size_t (*)(const uint8_t*, size_t, uint8_t*, uint32_t*, unsigned*);

// Extends a word ending at text position end over a following run of '+' unless a word
// character follows the run. Returns the new end.
size_t plus_rule(const uint8_t* in, size_t n, size_t end) {
  size_t j = end;
  while (j < n && in[j] == '+') ++j;
  if (j == end || (j < n && unicode::word_starts_at(in, n, j))) return end;
  return j;
}

// Rebuilds bounds_[first, ...) for a text whose scan saw '+' or non-ASCII bytes: splits
// runs with non-ASCII bytes into Unicode words (folded and appended to folded_) and
// applies the '+' rule. base is where the text's lower-cased copy starts in folded_.
void fix_up(const uint8_t* in, size_t n, size_t base, size_t first, unsigned flags,
            token_buffer& out) {
  auto& b = out.bounds_;
  auto& s = out.scratch_;
  s.clear();
  s.reserve(b.size() - first + 16);
  auto push = [&](size_t begin, size_t end) {
    if (s.size() + 2 > s.capacity()) s.reserve(s.size() + 2);
    s.resize(s.size() + 2);
    s[s.size() - 2] = static_cast<uint32_t>(begin);
    s[s.size() - 1] = static_cast<uint32_t>(end);
  };
  for (size_t k = first; k < b.size(); k += 2) {
    const size_t begin = b[k] - base, end = b[k + 1] - base;
    bool ascii = true;
    if (flags & 1) {
      for (size_t i = begin; i < end; ++i) ascii &= in[i] < 0x80;
    }
    if (ascii) {
      push(base + begin, base + ((flags & 2) ? plus_rule(in, n, end) : end));
      continue;
    }
    // Unicode words inside the run; only the last can end at the run's end.
    size_t i = begin;
    while (i < end) {
      int32_t cp;
      size_t len = unicode::decode(in + i, end - i, &cp);
      if (!unicode::is_word_code_point(cp)) {
        i += len;
        continue;
      }
      const size_t word_begin = i;
      while (i < end) {
        len = unicode::decode(in + i, end - i, &cp);
        if (!unicode::is_word_code_point(cp)) break;
        i += len;
      }
      const size_t at = out.folded_.size();
      if (unicode::fold_append(in + word_begin, i - word_begin, out.folded_) == 0) continue;
      size_t word_end = out.folded_.size();
      if (i == end && (flags & 2)) {
        const size_t plus_end = plus_rule(in, n, end);
        if (plus_end > end) {
          out.folded_.resize(word_end + (plus_end - end));
          std::memset(out.folded_.data() + word_end, '+', plus_end - end);
          word_end = out.folded_.size();
        }
      }
      push(at, word_end);
    }
  }
  b.resize(first + s.size());
  std::memcpy(b.data() + first, s.data(), s.size() * sizeof(uint32_t));
}

void tokenize_with(scan_fn scan, std::string_view text, token_buffer& out) {
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  const size_t base = out.folded_.size();
  const size_t first = out.bounds_.size();
  out.folded_.resize(base + n);
  out.bounds_.reserve(first + n + 1 + detail::k_bounds_slack);
  unsigned flags = 0;
  const size_t count = scan(in, n, out.folded_.data() + base, out.bounds_.data() + first, &flags);
  out.bounds_.resize(first + count);
  if (base != 0) {
    for (size_t k = first; k < first + count; ++k) out.bounds_[k] += static_cast<uint32_t>(base);
  }
  if (flags) fix_up(in, n, base, first, flags, out);
}

}  // namespace

void tokenize(std::string_view text, token_buffer& out) {
  tokenize_with(&detail::scan_words_simd, text, out);
}

void tokenize_scalar(std::string_view text, token_buffer& out) {
  tokenize_with(&detail::scan_words_scalar, text, out);
}

void tokenize_reference(std::string_view text, token_buffer& out) {
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    int32_t cp;
    size_t len = unicode::decode(in + i, n - i, &cp);
    if (!unicode::is_word_code_point(cp)) {
      i += len;
      continue;
    }
    const size_t begin = i;
    while (i < n) {
      len = unicode::decode(in + i, n - i, &cp);
      if (!unicode::is_word_code_point(cp)) break;
      i += len;
    }
    const size_t at = out.folded_.size();
    if (unicode::fold_append(in + begin, i - begin, out.folded_) == 0) continue;
    size_t j = i;
    while (j < n && in[j] == '+') ++j;
    if (j > i && (j == n || !unicode::word_starts_at(in, n, j))) {
      for (; i < j; ++i) {
        out.folded_.resize(out.folded_.size() + 1);
        out.folded_[out.folded_.size() - 1] = '+';
      }
    }
    out.bounds_.resize(out.bounds_.size() + 2);
    out.bounds_[out.bounds_.size() - 2] = static_cast<uint32_t>(at);
    out.bounds_[out.bounds_.size() - 1] = static_cast<uint32_t>(out.folded_.size());
  }
}

}  // namespace feedplane::matcher
#endif  // HWY_ONCE
