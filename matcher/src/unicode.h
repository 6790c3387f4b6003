// The Unicode side of the text rules (text.h): which code points are word characters,
// UTF-8 decoding that never fails, and folding. Shared by the fast tokenizers' slow path
// and by the reference tokenizer, so the rules live in one place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "feedplane/matcher/text.h"

namespace feedplane::matcher::unicode {

// Letters, marks, numbers, and invisible formatting characters (Cf) except the
// zero-width space, which separates words like a space does.
bool is_word_code_point(int32_t cp);

// Decodes the code point at s[0, n), n >= 1. Returns the bytes consumed (>= 1); *cp is
// -1 for an invalid or truncated sequence, which then consumes one byte.
size_t decode(const uint8_t* s, size_t n, int32_t* cp);

inline bool is_ascii_word_byte(uint8_t c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

// True if a word character starts at s[i] (i < n).
inline bool word_starts_at(const uint8_t* s, size_t n, size_t i) {
  if (s[i] < 0x80) return is_ascii_word_byte(s[i]);
  int32_t cp;
  decode(s + i, n - i, &cp);
  return is_word_code_point(cp);
}

// Appends the NFKC case fold of s[0, len) (word characters only) to out, without default
// ignorables. Returns the number of bytes appended (0 if nothing was left).
size_t fold_append(const uint8_t* s, size_t len, raw_buffer<uint8_t>& out);

}  // namespace feedplane::matcher::unicode
