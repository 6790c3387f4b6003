// ASCII whitespace, hex digits, and ASCII-only case folding for protocol and markup names: HTTP
// field names and tokens, URL schemes and hosts, charset names, tag names, date words. Locale-free
// (unlike <cctype>), and inline so the parsing loops that call them keep them in registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::base {

// True for ASCII whitespace as HTML and URLs define it: space, tab, LF, FF, CR.
constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

// s without leading and trailing ASCII whitespace (is_ascii_space).
constexpr std::string_view ascii_trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

// c with 'A'..'Z' mapped to 'a'..'z'; every other byte (bytes >= 0x80 included) unchanged.
constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}

// True when a and b are equal but for the case of ASCII letters. Always inlined: header and
// date-word tables call it in chains where the size test rejects at once.
[[gnu::always_inline]] constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // Equal bytes, the common case, skip the folding.
    if (a[i] != b[i] && ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// True when s starts with prefix but for the case of ASCII letters.
constexpr bool ascii_istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && ascii_iequals(s.substr(0, prefix.size()), prefix);
}

// Index of the first occurrence of needle in hay ignoring ASCII case, or npos.
constexpr size_t ascii_ifind(std::string_view hay, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (ascii_istarts_with(hay.substr(i), needle)) return i;
  }
  return std::string_view::npos;
}

namespace detail {
struct hex_table {
  signed char v[256];
};
inline constexpr hex_table k_hex = [] {
  hex_table r{};
  for (int i = 0; i < 256; ++i) r.v[i] = -1;
  for (int i = 0; i < 10; ++i) r.v['0' + i] = static_cast<signed char>(i);
  for (int i = 0; i < 6; ++i) {
    r.v['a' + i] = static_cast<signed char>(10 + i);
    r.v['A' + i] = static_cast<signed char>(10 + i);
  }
  return r;
}();
}  // namespace detail

// The value of a hexadecimal digit (either case), or -1. One load from a static table: the
// decoders of chunk sizes, percent escapes and stored hashes call it per byte.
constexpr int hex_digit(char c) { return detail::k_hex.v[static_cast<unsigned char>(c)]; }

// v as 16 lower-case hex digits into out[0, 16) (source ids, crawl ids).
constexpr void hex16(uint64_t v, char* out) {
  constexpr char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = digits[v & 15];
}

// The n bytes at p as lower-case hex (2n characters), appended to out.
inline void append_hex(const uint8_t* p, size_t n, std::string& out) {
  constexpr char digits[] = "0123456789abcdef";
  const size_t at = out.size();
  out.resize(at + n * 2);
  for (size_t i = 0; i < n; ++i) {
    out[at + 2 * i] = digits[p[i] >> 4];
    out[at + 2 * i + 1] = digits[p[i] & 15];
  }
}

}  // namespace feedplane::base
