// JSON string escaping and the UTF-8 validity it rests on: the one copy, for net's error
// bodies, feed's `parse` output, `feedplane fetch` and `match`, and feed's transcoder.
// Header-only and in base because net and feed both need it and feed may not link net.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::base {

// Length of the valid UTF-8 sequence at s[i] (1-4), or 0 if the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF are not).
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Appends s to out as a quoted JSON string: '"', '\\' and control characters escaped, valid
// UTF-8 copied as is, every byte of invalid UTF-8 replaced by U+FFFD, so the output is
// always valid JSON whatever the input (error messages quote request bytes).
inline void append_json_string(std::string_view s, std::string& out) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied unchanged
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (size_t n = utf8_sequence_length(s, i); n != 0) {
        i += n;
        continue;
      }
    }
    out.append(s.data() + run, i - run);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20) {
          const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
          out.append(u, sizeof(u));
        } else {
          out.append("\\ufffd");  // a byte of invalid UTF-8
        }
    }
    run = ++i;
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

}  // namespace feedplane::base
