// Entity decoding, base64, trimming and HTML link resolution for feed text.
#include <algorithm>
#include <cstring>

#include "feedplane/base/ascii.h"
#include "feedplane/feed/model.h"
#include "feedplane/feed/text.h"
#include "internal.h"

namespace feedplane::feed {
namespace {

struct named_entity {
  std::string_view name;
  std::string_view value;
};
constexpr named_entity html_entities[] = {
#include "html_entities.inc"
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Windows-1252 meanings of C1 code points, as HTML maps &#128;..&#159;.
constexpr uint16_t c1_to_cp1252[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

void note(decode_stats& st, recovery r) {
  st.flags |= static_cast<uint32_t>(r);
  ++st.events;
}

}  // namespace

std::string_view recovery_name(int bit) {
  static constexpr std::string_view names[recovery_count] = {
      "control_chars_stripped", "bare_ampersand",         "html_entity",   "undefined_entity",
      "encoding_fallback",      "invalid_bytes_replaced", "malformed_xml", "truncated",
      "leading_garbage",        "unparsed_date",          "bad_base64",    "entries_dropped"};
  return bit >= 0 && bit < recovery_count ? names[bit] : std::string_view("unknown");
}

void entry::clear() {
  id.clear();
  title.clear();
  link.clear();
  summary.clear();
  content.clear();
  published = updated = 0;
  has_published = has_updated = false;
  id_is_permalink = false;
  authors.clear();
  categories.clear();
  enclosures.clear();
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void decode_entities(std::string_view in, std::string& out, decode_stats& st) {
  size_t i = 0;
  while (i < in.size()) {
    // Fast because runs without '&' are found by memchr and appended in one go.
    const void* amp = std::memchr(in.data() + i, '&', in.size() - i);
    if (amp == nullptr) {
      out.append(in.data() + i, in.size() - i);
      return;
    }
    const size_t a = static_cast<size_t>(static_cast<const char*>(amp) - in.data());
    out.append(in.data() + i, a - i);
    i = a + 1;
    // Find the end of a candidate reference: alnum (or '#', 'x') up to 32 chars then ';'.
    size_t j = i;
    const bool numeric = j < in.size() && in[j] == '#';
    if (numeric) ++j;
    const bool hex = numeric && j < in.size() && (in[j] == 'x' || in[j] == 'X');
    if (hex) ++j;
    const size_t name_start = j;
    while (j < in.size() && j - name_start < 32 && is_alnum(in[j])) ++j;
    if (j == name_start || j >= in.size() || in[j] != ';') {
      out.push_back('&');
      note(st, recovery::bare_ampersand);
      continue;
    }
    const std::string_view name = in.substr(name_start, j - name_start);
    if (numeric) {
      uint32_t cp = 0;
      bool ok = true;
      for (char c : name) {
        uint32_t d;
        if (c >= '0' && c <= '9') {
          d = static_cast<uint32_t>(c - '0');
        } else if (hex && c >= 'a' && c <= 'f') {
          d = static_cast<uint32_t>(c - 'a' + 10);
        } else if (hex && c >= 'A' && c <= 'F') {
          d = static_cast<uint32_t>(c - 'A' + 10);
        } else {
          ok = false;
          break;
        }
        cp = cp * (hex ? 16 : 10) + d;
        if (cp > 0x10FFFF) cp = 0x110000;  // saturate: becomes U+FFFD
      }
      if (!ok) {
        out.push_back('&');
        note(st, recovery::bare_ampersand);
        continue;
      }
      if (cp >= 0x80 && cp <= 0x9F) cp = c1_to_cp1252[cp - 0x80];
      append_utf8(cp, out);
      i = j + 1;
      continue;
    }
    if (name == "amp") {
      out.push_back('&');
    } else if (name == "lt") {
      out.push_back('<');
    } else if (name == "gt") {
      out.push_back('>');
    } else if (name == "quot") {
      out.push_back('"');
    } else if (name == "apos") {
      out.push_back('\'');
    } else {
      const auto* it =
          std::lower_bound(std::begin(html_entities), std::end(html_entities), name,
                           [](const named_entity& e, std::string_view n) { return e.name < n; });
      if (it != std::end(html_entities) && it->name == name) {
        out.append(it->value);
        note(st, recovery::html_entity);
      } else {
        out.append(in.data() + a, j + 1 - a);
        note(st, recovery::undefined_entity);
      }
    }
    i = j + 1;
  }
}

bool decode_base64(std::string_view in, std::string& out) {
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else if (c == '=') {
      ++pad;
      continue;
    } else if (is_space(c)) {
      continue;
    } else {
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

std::string_view trim_view(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

void trim(std::string& s) {
  size_t e = s.size();
  while (e > 0 && is_space(s[e - 1])) --e;
  s.resize(e);
  size_t b = 0;
  while (b < s.size() && is_space(s[b])) ++b;
  if (b != 0) s.erase(0, b);
}

}  // namespace feedplane::feed

namespace feedplane::feed {

bool resolve_html_urls(std::string_view html, std::string_view base, std::string& out) {
  out.clear();
  if (base.empty() || !has_scheme(base)) return false;
  bool changed = false;
  size_t copied = 0;  // html[0, copied) is already in out
  size_t i = 0;
  while (i < html.size()) {
    const size_t lt = html.find('<', i);
    if (lt == std::string_view::npos) break;
    const size_t gt = html.find('>', lt);
    if (gt == std::string_view::npos) break;
    // Attributes of this tag: name[=value] pairs after the tag name.
    size_t j = lt + 1;
    while (j < gt && !is_space(html[j])) ++j;
    while (j < gt) {
      while (j < gt && (is_space(html[j]) || html[j] == '/')) ++j;
      const size_t name0 = j;
      while (j < gt && !is_space(html[j]) && html[j] != '=' && html[j] != '/') ++j;
      const std::string_view name = html.substr(name0, j - name0);
      while (j < gt && is_space(html[j])) ++j;
      if (j >= gt || html[j] != '=') continue;
      ++j;
      while (j < gt && is_space(html[j])) ++j;
      size_t v0 = j, v1;
      if (j < gt && (html[j] == '"' || html[j] == '\'')) {
        const size_t q = html.find(html[j], j + 1);
        if (q == std::string_view::npos || q > gt) break;
        v0 = j + 1;
        v1 = q;
        j = q + 1;
      } else {
        while (j < gt && !is_space(html[j])) ++j;
        v1 = j;
      }
      const bool url_attr = base::ascii_iequals(name, "href") || base::ascii_iequals(name, "src");
      const std::string_view val = html.substr(v0, v1 - v0);
      if (url_attr && !val.empty() && !has_scheme(val) && val[0] != '#') {
        out.append(html.data() + copied, v0 - copied);
        resolve_url(base, val, out);
        copied = v1;
        changed = true;
      }
    }
    i = gt + 1;
  }
  if (changed) out.append(html.data() + copied, html.size() - copied);
  return changed;
}

}  // namespace feedplane::feed
