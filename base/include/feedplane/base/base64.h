// Base64 (RFC 4648): the one table of both alphabets, the URL-safe encoder the reflector's
// ids, secrets and feed tokens use, and the lenient decoder feed ingestion uses for Atom's
// base64 content. Header-only and inline, like the rest of base/.
#pragma once

#include "feedplane/base/ascii.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::base {

namespace detail {
// Per byte: the digit's value in bits 0-5, bit 6 set when the byte is a digit of the standard
// alphabet (section 4: "+/"), bit 7 when it is one of the URL-safe alphabet (section 5:
// "-_"); letters and decimal digits are in both. 0 is "in neither" ('A', value 0, has both
// bits). One load per character: a feed token's decode reads 30 random characters per
// poll, where a chain of range compares mispredicted (4.3% of a 304 poll's CPU, 1.0% with
// a table).
inline constexpr uint8_t b64_standard = 0x40;
inline constexpr uint8_t b64_url = 0x80;
struct base64_table {
  uint8_t v[256];
};
inline constexpr base64_table k_base64 = [] {
  base64_table t{};
  constexpr uint8_t both = b64_standard | b64_url;
  for (int i = 0; i < 26; ++i) {
    t.v['A' + i] = static_cast<uint8_t>(both | i);
    t.v['a' + i] = static_cast<uint8_t>(both | (26 + i));
  }
  for (int i = 0; i < 10; ++i) t.v['0' + i] = static_cast<uint8_t>(both | (52 + i));
  t.v[static_cast<unsigned char>('+')] = b64_standard | 62;
  t.v[static_cast<unsigned char>('/')] = b64_standard | 63;
  t.v[static_cast<unsigned char>('-')] = b64_url | 62;
  t.v[static_cast<unsigned char>('_')] = b64_url | 63;
  return t;
}();
inline constexpr char k_base64url_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
}  // namespace detail

// The value of c as a URL-safe base64 digit ("A-Za-z0-9-_"), or -1.
constexpr int base64url_value(char c) {
  const uint8_t e = detail::k_base64.v[static_cast<unsigned char>(c)];
  return (e & detail::b64_url) ? (e & 63) : -1;
}

// The value of c as a digit of either alphabet ("+" and "-" are 62, "/" and "_" 63), or -1.
constexpr int base64_value(char c) {
  const uint8_t e = detail::k_base64.v[static_cast<unsigned char>(c)];
  return e != 0 ? (e & 63) : -1;
}

// The n bytes at p in URL-safe base64 without padding (ceil(4n / 3) characters), appended to
// out. Fast: the output is sized once and written through a pointer (a bulk creation
// encodes an id and a feed token per subscription).
inline void append_base64url(const uint8_t* p, size_t n, std::string& out) {
  constexpr const char* d = detail::k_base64url_digits;
  const size_t at = out.size();
  out.resize(at + (n * 4 + 2) / 3);
  char* o = out.data() + at;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    *o++ = d[v >> 18];
    *o++ = d[(v >> 12) & 63];
    *o++ = d[(v >> 6) & 63];
    *o++ = d[v & 63];
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t(p[i]) << 16;
    *o++ = d[v >> 18];
    *o++ = d[(v >> 12) & 63];
  } else if (n - i == 2) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    *o++ = d[v >> 18];
    *o++ = d[(v >> 12) & 63];
    *o++ = d[(v >> 6) & 63];
  }
}

inline std::string base64url(const uint8_t* p, size_t n) {
  std::string s;
  append_base64url(p, n, s);
  return s;
}

// Decodes base64 as publishers write it, appending the bytes to out: either alphabet (even
// mixed), ASCII whitespace anywhere, "=" padding optional but at most two and only at the
// end. False on any other byte or on a digit after padding; out then holds what decoded so
// far (callers keep the text as sent).
inline bool decode_base64_lenient(std::string_view in, std::string& out) {
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  for (char c : in) {
    const int v = base64_value(c);
    if (v < 0) {
      if (c == '=') {
        ++pad;
        continue;
      }
      if (is_ascii_space(c)) continue;
      return false;
    }
    if (pad != 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return pad <= 2;
}

}  // namespace feedplane::base
