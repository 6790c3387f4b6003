// Entity decoding (with the matcher's decoder), base64, trimming and HTML link resolution
// for feed text.
#include <algorithm>
#include <cstring>

#include "feedplane/base/ascii.h"
#include "feedplane/feed/model.h"
#include "feedplane/feed/text.h"
#include "feedplane/matcher/text.h"
#include "internal.h"

namespace feedplane::feed {
namespace {

using base::is_ascii_space;

}  // namespace

std::string_view recovery_name(int bit) {
  static constexpr std::string_view names[recovery_count] = {
      "control_chars_stripped", "bare_ampersand",         "html_entity",   "undefined_entity",
      "encoding_fallback",      "invalid_bytes_replaced", "malformed_xml", "truncated",
      "leading_garbage",        "unparsed_date",          "bad_base64",    "entries_dropped"};
  return bit >= 0 && bit < recovery_count ? names[bit] : std::string_view("unknown");
}

using detail::note;

void entry::clear() {
  id.clear();
  title.clear();
  link.clear();
  summary.clear();
  content.clear();
  published = updated = 0;
  has_published = has_updated = false;
  id_is_permalink = false;
  link_from_guid = false;
  authors.clear();
  categories.clear();
  enclosures.clear();
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
    const matcher::char_ref_result r = matcher::decode_char_ref(in.substr(a), out);
    switch (r.kind) {
      case matcher::char_ref::none:
        note(st, recovery::bare_ampersand);
        break;
      case matcher::char_ref::unknown:
        note(st, recovery::undefined_entity);
        break;
      case matcher::char_ref::html:
        note(st, recovery::html_entity);
        break;
      case matcher::char_ref::numeric:
      case matcher::char_ref::xml:
        break;
    }
    if (r.used == 0) {
      out.push_back('&');  // the rest of an unknown "&name;" follows as text
      i = a + 1;
    } else {
      i = a + r.used;
    }
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
    } else if (is_ascii_space(c)) {
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

void trim(std::string& s) {
  size_t e = s.size();
  while (e > 0 && is_ascii_space(s[e - 1])) --e;
  s.resize(e);
  size_t b = 0;
  while (b < s.size() && is_ascii_space(s[b])) ++b;
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
    while (j < gt && !is_ascii_space(html[j])) ++j;
    while (j < gt) {
      while (j < gt && (is_ascii_space(html[j]) || html[j] == '/')) ++j;
      const size_t name0 = j;
      while (j < gt && !is_ascii_space(html[j]) && html[j] != '=' && html[j] != '/') ++j;
      const std::string_view name = html.substr(name0, j - name0);
      while (j < gt && is_ascii_space(html[j])) ++j;
      if (j >= gt || html[j] != '=') continue;
      ++j;
      while (j < gt && is_ascii_space(html[j])) ++j;
      size_t v0 = j, v1;
      if (j < gt && (html[j] == '"' || html[j] == '\'')) {
        const size_t q = html.find(html[j], j + 1);
        if (q == std::string_view::npos || q > gt) break;
        v0 = j + 1;
        v1 = q;
        j = q + 1;
      } else {
        while (j < gt && !is_ascii_space(html[j])) ++j;
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
