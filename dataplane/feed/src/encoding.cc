// Bytes as servers send them -> UTF-8: BOM, HTTP charset, XML declaration, iconv.
#include <algorithm>
#include <cerrno>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <simdjson.h>

#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/matcher/text.h"
#include "internal.h"

namespace feedplane::feed::detail {
namespace {

// iconv_open's failure value, (iconv_t)-1, compared without casting an integer to a pointer.
bool iconv_failed(iconv_t cd) { return reinterpret_cast<intptr_t>(cd) == -1; }

bool simdjson_validate(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

using base::ascii_iequals;

// The charset parameter of a Content-Type ("text/xml; charset=ISO-8859-1").
std::string_view http_charset(std::string_view ct) {
  const size_t p = base::ascii_ifind(ct, "charset=");
  if (p == std::string_view::npos) return {};
  std::string_view v = ct.substr(p + 8);
  if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {
    const char q = v[0];
    v.remove_prefix(1);
    v = v.substr(0, v.find(q));
  }
  const size_t end = v.find_first_of("; \t");
  return base::ascii_trim(v.substr(0, end));
}

// The encoding pseudo-attribute of a leading XML declaration.
std::string_view xml_decl_encoding(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && i < 64 && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
    ++i;
  s.remove_prefix(i);
  if (!s.starts_with("<?xml")) return {};
  const size_t end = s.find("?>");
  if (end > 512) return {};  // also npos: no end of the declaration nearby
  s = s.substr(0, end);
  const size_t e = s.find("encoding");
  if (e == std::string_view::npos) return {};
  s.remove_prefix(e + 8);
  while (!s.empty() && (s[0] == ' ' || s[0] == '=')) s.remove_prefix(1);
  if (s.empty() || (s[0] != '"' && s[0] != '\'')) return {};
  const char q = s[0];
  s.remove_prefix(1);
  return s.substr(0, s.find(q));
}

bool is_utf8_name(std::string_view e) {
  return ascii_iequals(e, "utf-8") || ascii_iequals(e, "utf8") || ascii_iequals(e, "us-ascii") ||
         ascii_iequals(e, "ascii") || ascii_iequals(e, "unicode-1-1-utf-8");
}
bool is_latin1_name(std::string_view e) {
  return ascii_iequals(e, "iso-8859-1") || ascii_iequals(e, "iso8859-1") ||
         ascii_iequals(e, "latin1") || ascii_iequals(e, "latin-1") ||
         ascii_iequals(e, "windows-1252") || ascii_iequals(e, "cp1252") || ascii_iequals(e, "l1") ||
         ascii_iequals(e, "iso_8859-1") || ascii_iequals(e, "x-cp1252");
}

void cp1252_to_utf8(std::string_view in, std::string& out) {
  out.reserve(out.size() + in.size() + in.size() / 8);
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      matcher::append_utf8(c < 0xA0 ? matcher::k_windows1252_c1[c - 0x80] : c, out);
    }
  }
}

bool illegal_control(unsigned char c) { return c < 0x20 && c != '\t' && c != '\n' && c != '\r'; }

// Index of the first C0 control other than tab, LF and CR in s[0, n), or n: the portable
// version (generic vectors: SSE2/NEON code, no ISA flags).
size_t first_illegal_generic(const char* s, size_t n) {
  size_t i = 0;
  using v16 = uint8_t __attribute__((vector_size(16)));
  auto any = [](v16 m) {
    uint64_t halves[2];
    std::memcpy(halves, &m, 16);
    return (halves[0] | halves[1]) != 0;
  };
  // Fast because 16 bytes are classified at once; the exact test (excluding tab, LF, CR) only
  // for 64-byte steps that hold a byte below 0x20.
  for (; i + 64 <= n; i += 64) {
    v16 v[4];
    std::memcpy(v, s + i, 64);
    if (!any((v[0] < 0x20) | (v[1] < 0x20) | (v[2] < 0x20) | (v[3] < 0x20))) continue;
    v16 bad = {};
    for (const v16& x : v) bad |= (x < 0x20) & (x != '\t') & (x != '\n') & (x != '\r');
    if (any(bad)) break;
  }
  while (i < n && !illegal_control(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

#if defined(__x86_64__)
// The same with AVX2 (chosen at run time): each byte classified by two table lookups on its
// nibbles (vpshufb), so tab/LF/CR cost nothing extra; fast because a 64-byte step is ~16
// instructions with one branch, where pretty-printed feeds have a line break in every step.
__attribute__((target("avx2"), always_inline)) inline __m256i classify_avx2(__m256i x) {
  // Bit 1: low nibble illegal when the high nibble is 0 (all but 9, 10, 13); bit 2: any low
  // nibble is illegal when the high nibble is 1.
  const __m256i lo_tbl = _mm256_setr_epi8(3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 3,  //
                                          3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 3);
  const __m256i hi_tbl = _mm256_setr_epi8(1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                          1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_shuffle_epi8(lo_tbl, _mm256_and_si256(x, nib));
  const __m256i hi = _mm256_shuffle_epi8(hi_tbl, _mm256_and_si256(_mm256_srli_epi16(x, 4), nib));
  return _mm256_and_si256(lo, hi);
}

__attribute__((target("avx2"))) size_t first_illegal_avx2(const char* s, size_t n) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i bad = _mm256_or_si256(classify_avx2(a), classify_avx2(b));
    if (!_mm256_testz_si256(bad, bad)) break;
  }
  while (i < n && !illegal_control(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}
#endif

size_t first_illegal(const char* s, size_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return first_illegal_avx2(s, n);
#endif
  return first_illegal_generic(s, n);
}

// Removes C0 controls other than tab, LF and CR (illegal in XML 1.0) in place.
void strip_controls(std::string& s, decode_stats& st) {
  size_t i = first_illegal(s.data(), s.size());
  const bool found = i < s.size();
  if (!found) return;
  size_t w = i;
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      ++st.events;
      continue;
    }
    s[w++] = s[i];
  }
  st.flags |= static_cast<uint32_t>(recovery::control_chars_stripped);
  s.resize(w);
}

}  // namespace

transcoder::~transcoder() {
  if (cd_ != nullptr) iconv_close(cd_);
}

bool transcoder::iconv_to_utf8(std::string_view enc, std::string_view in, std::string& out,
                               decode_stats& st) {
  if (cd_ == nullptr || !ascii_iequals(cd_name_, enc)) {
    if (cd_ != nullptr) iconv_close(cd_);
    cd_name_.assign(enc);
    cd_ = iconv_open("UTF-8", cd_name_.c_str());
    if (iconv_failed(cd_)) {
      cd_ = nullptr;
      return false;
    }
  } else {
    iconv(cd_, nullptr, nullptr, nullptr, nullptr);  // reset shift state
  }
  const bool wide = base::ascii_ifind(enc, "16") != std::string_view::npos ||
                    base::ascii_ifind(enc, "32") != std::string_view::npos ||
                    base::ascii_ifind(enc, "ucs") != std::string_view::npos;
  const size_t unit = base::ascii_ifind(enc, "32") != std::string_view::npos ? 4 : (wide ? 2 : 1);
  char* src = const_cast<char*>(in.data());
  size_t src_left = in.size();
  size_t used = out.size();
  out.resize(used + in.size() * 2 + 16);
  while (src_left > 0) {
    char* dst = out.data() + used;
    size_t dst_left = out.size() - used;
    const size_t r = iconv(cd_, &src, &src_left, &dst, &dst_left);
    used = static_cast<size_t>(dst - out.data());
    if (r != static_cast<size_t>(-1)) break;
    if (errno == E2BIG) {
      out.resize(out.size() * 2);
      continue;
    }
    // EILSEQ (invalid sequence) or EINVAL (incomplete at the end): one unit -> U+FFFD.
    out.resize(used);
    matcher::append_utf8(0xFFFD, out);
    note(st, recovery::invalid_bytes_replaced);
    const size_t skip = src_left < unit ? src_left : unit;
    src += skip;
    src_left -= skip;
    used = out.size();
    out.resize(used + src_left * 2 + 16);
  }
  out.resize(used);
  return true;
}

parse_errc transcoder::to_utf8(std::string_view in, std::string_view content_type, std::string& out,
                               decode_stats& st) {
  out.clear();
  std::string_view enc;
  const auto* u = reinterpret_cast<const unsigned char*>(in.data());
  bool from_bom = false;
  if (in.size() >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) {
    in.remove_prefix(3);
    enc = "utf-8";
    from_bom = true;
  } else if (in.size() >= 4 && u[0] == 0xFF && u[1] == 0xFE && u[2] == 0 && u[3] == 0) {
    in.remove_prefix(4);
    enc = "UTF-32LE";
    from_bom = true;
  } else if (in.size() >= 4 && u[0] == 0 && u[1] == 0 && u[2] == 0xFE && u[3] == 0xFF) {
    in.remove_prefix(4);
    enc = "UTF-32BE";
    from_bom = true;
  } else if (in.size() >= 2 && u[0] == 0xFF && u[1] == 0xFE) {
    in.remove_prefix(2);
    enc = "UTF-16LE";
    from_bom = true;
  } else if (in.size() >= 2 && u[0] == 0xFE && u[1] == 0xFF) {
    in.remove_prefix(2);
    enc = "UTF-16BE";
    from_bom = true;
  } else if (in.size() >= 4 && u[0] != 0 && u[0] < 0x80 && u[1] == 0 && u[2] != 0 && u[3] == 0) {
    // No BOM, but two ASCII characters each followed by a NUL: UTF-16LE ("<\0?\0" of a
    // declaration, XML appendix F, or "<\0r\0" of a document without one).
    enc = "UTF-16LE";
    from_bom = true;
  } else if (in.size() >= 4 && u[0] == 0 && u[1] != 0 && u[1] < 0x80 && u[2] == 0 && u[3] != 0) {
    enc = "UTF-16BE";
    from_bom = true;
  }
  if (!from_bom) {
    const std::string_view http = http_charset(content_type);
    const std::string_view decl = xml_decl_encoding(in);
    enc = !http.empty() ? http : decl;
    // A server's charset that contradicts a document which declares and is valid UTF-8 is
    // the server's default, not the author's choice: trust the bytes.
    if (!http.empty() && !is_utf8_name(http) && (decl.empty() || is_utf8_name(decl)) &&
        simdjson_validate(in))
      enc = "utf-8";
    // A UTF-16 label on bytes without a BOM or NULs is a lie (the bytes are ASCII-based).
    if (base::ascii_ifind(enc, "utf-16") != std::string_view::npos ||
        base::ascii_ifind(enc, "utf-32") != std::string_view::npos ||
        base::ascii_ifind(enc, "ucs") != std::string_view::npos)
      enc = "utf-8";
  }
  if (enc.empty() || is_utf8_name(enc)) {
    if (simdjson_validate(in)) {
      out.assign(in);
    } else {
      // Invalid UTF-8: a document with no valid multi-byte sequence at all is a legacy
      // single-byte one mislabelled (windows-1252 is the web's reading of those); otherwise
      // keep the UTF-8 and replace the broken bytes.
      size_t valid_multi = 0, invalid = 0;
      for (size_t i = 0; i < in.size();) {
        const size_t len = base::utf8_sequence_length(in, i);
        if (len == 0) {
          ++invalid;
          ++i;
        } else {
          valid_multi += len > 1;
          i += len;
        }
      }
      if (valid_multi == 0) {
        cp1252_to_utf8(in, out);
        note(st, recovery::encoding_fallback);
      } else {
        out.reserve(in.size() + invalid * 2);
        for (size_t i = 0; i < in.size();) {
          const size_t len = base::utf8_sequence_length(in, i);
          if (len == 0) {
            matcher::append_utf8(0xFFFD, out);
            ++i;
            continue;
          }
          out.append(in.data() + i, len);
          i += len;
        }
        st.flags |= static_cast<uint32_t>(recovery::invalid_bytes_replaced);
        st.events += static_cast<uint32_t>(invalid);
      }
    }
  } else if (is_latin1_name(enc)) {
    // Labelled Latin-1 but valid UTF-8 with multi-byte sequences: the label is wrong (Latin-1
    // text almost never forms valid UTF-8 sequences; "caf\xc3\xa9" is "café", not "cafÃ©").
    const bool non_ascii = std::any_of(in.begin(), in.end(), [](char c) { return c < 0; });
    if (non_ascii && simdjson_validate(in)) {
      out.assign(in);
      note(st, recovery::encoding_fallback);
    } else {
      cp1252_to_utf8(in, out);
    }
  } else if (!iconv_to_utf8(enc, in, out, st)) {
    if (from_bom) return parse_errc::unsupported_encoding;
    // Unknown label: read it as UTF-8 if it is, else as windows-1252.
    note(st, recovery::encoding_fallback);
    if (simdjson_validate(in)) {
      out.assign(in);
    } else {
      cp1252_to_utf8(in, out);
    }
  }
  strip_controls(out, st);
  return parse_errc::ok;
}

}  // namespace feedplane::feed::detail
