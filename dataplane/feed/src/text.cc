// Entity decoding (with the matcher's decoder), trimming and HTML link resolution for feed
// text.
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

namespace {

enum class url_attr : uint8_t { none, single, candidates };

// Attributes that hold a URL in markup a reader shows: href (a, area), src (img, source,
// audio, video), cite (blockquote, q, del, ins: the reflector's sanitizer keeps it), poster
// (video); srcset (img, source) holds a list of candidates.
url_attr url_attribute(std::string_view name) {
  switch (name.size()) {
    case 3:
      return base::ascii_iequals(name, "src") ? url_attr::single : url_attr::none;
    case 4:
      return base::ascii_iequals(name, "href") || base::ascii_iequals(name, "cite")
                 ? url_attr::single
                 : url_attr::none;
    case 6:
      if (base::ascii_iequals(name, "srcset")) return url_attr::candidates;
      return base::ascii_iequals(name, "poster") ? url_attr::single : url_attr::none;
    default:
      return url_attr::none;
  }
}

// True when resolving v against a base changes it: not empty, not a fragment alone, no scheme.
bool is_relative(std::string_view v) {
  v = base::ascii_trim(v);
  return !v.empty() && v[0] != '#' && !has_scheme(v);
}

constexpr bool is_ascii_alpha(char c) { return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

// Appends ref resolved against base. The base's bytes come from outside this attribute
// (xml:base, the document URL): whatever would end the value there (its quote; for an
// unquoted value, whitespace, quotes, '<', '>', '=', '`'), or end a srcset candidate
// (whitespace), is percent-encoded. The ref's own bytes cannot be among them: they would
// have ended the value or the candidate already.
void append_resolved(std::string_view base_url, std::string_view ref, char quote, bool candidate,
                     std::string& out) {
  const size_t at = out.size();
  resolve_url(base_url, ref, out);
  auto ends_value = [quote, candidate](char c) {
    if (is_ascii_space(c)) return candidate || quote == 0;
    if (quote != 0) return c == quote;
    return c == '"' || c == '\'' || c == '<' || c == '>' || c == '=' || c == '`';
  };
  size_t k = at;
  while (k < out.size() && !ends_value(out[k])) ++k;
  if (k == out.size()) return;  // the usual case: nothing to encode
  std::string tail(out, k);     // cold: a base holding such bytes
  out.resize(k);
  for (char c : tail) {
    if (ends_value(c)) {
      static constexpr char hex[] = "0123456789ABCDEF";
      out.push_back('%');
      out.push_back(hex[static_cast<unsigned char>(c) >> 4]);
      out.push_back(hex[static_cast<unsigned char>(c) & 15]);
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

// Why it is cheap: text between tags is skipped with memchr for '<', and nothing is written
// until the first relative reference: markup whose URLs are all absolute (nearly all of it)
// costs one pass over its tags and no allocation.
bool resolve_html_urls(std::string_view html, std::string_view base_url, std::string& out) {
  out.clear();
  if (base_url.empty() || !has_scheme(base_url)) return false;
  const size_t n = html.size();
  bool changed = false;
  size_t copied = 0;  // html[0, copied) is already in out (once changed)
  // Replaces html[v0, v1), a relative reference, by its resolution.
  auto replace = [&](size_t v0, size_t v1, char quote, bool candidate) {
    out.append(html.data() + copied, v0 - copied);
    append_resolved(base_url, html.substr(v0, v1 - v0), quote, candidate, out);
    copied = v1;
    changed = true;
  };
  size_t i = 0;
  while (i < n) {
    const void* lt = std::memchr(html.data() + i, '<', n - i);
    if (lt == nullptr) break;
    size_t j = static_cast<size_t>(static_cast<const char*>(lt) - html.data()) + 1;
    if (html.substr(j).starts_with("!--")) {  // a comment: its markup is no markup
      const size_t end = html.find("-->", j + 3);
      if (end == std::string_view::npos) break;
      i = end + 3;
      continue;
    }
    // Only a start tag ('<' and a letter) has attributes; "</a>", "<!x", "a < b" have none.
    if (j >= n || !is_ascii_alpha(html[j])) {
      i = j;
      continue;
    }
    while (j < n && !is_ascii_space(html[j]) && html[j] != '>' && html[j] != '/') ++j;
    // Attributes, as an HTML tokenizer reads them, up to the '>' outside quotes.
    bool broken = false;
    while (j < n) {
      while (j < n && (is_ascii_space(html[j]) || html[j] == '/')) ++j;
      if (j >= n || html[j] == '>') break;
      const size_t name0 = j++;  // a name may start with '=' (HTML): take one byte at least
      while (j < n && !is_ascii_space(html[j]) && html[j] != '=' && html[j] != '>' &&
             html[j] != '/')
        ++j;
      const std::string_view name = html.substr(name0, j - name0);
      while (j < n && is_ascii_space(html[j])) ++j;
      if (j >= n || html[j] != '=') continue;  // no value
      ++j;
      while (j < n && is_ascii_space(html[j])) ++j;
      if (j >= n) break;
      size_t v0 = j, v1;
      char quote = 0;
      if (html[j] == '"' || html[j] == '\'') {
        quote = html[j];
        const size_t q = html.find(quote, j + 1);
        if (q == std::string_view::npos) {  // unterminated: the markup is broken, stop
          broken = true;
          break;
        }
        v0 = j + 1;
        v1 = q;
        j = q + 1;
      } else {
        while (j < n && !is_ascii_space(html[j]) && html[j] != '>') ++j;
        v1 = j;
      }
      const url_attr kind = url_attribute(name);
      if (kind == url_attr::single) {
        if (is_relative(html.substr(v0, v1 - v0))) replace(v0, v1, quote, false);
      } else if (kind == url_attr::candidates) {
        // srcset: "url [descriptor], url [descriptor]...": each URL runs to whitespace (a
        // URL ending in commas ends its candidate); descriptors run to the next comma.
        size_t p = v0;
        while (p < v1) {
          while (p < v1 && (is_ascii_space(html[p]) || html[p] == ',')) ++p;
          const size_t u0 = p;
          while (p < v1 && !is_ascii_space(html[p])) ++p;
          size_t u1 = p;
          while (u1 > u0 && html[u1 - 1] == ',') --u1;
          if (u1 == p) {
            int depth = 0;  // descriptors: to the next comma outside parentheses
            while (p < v1 && (html[p] != ',' || depth > 0)) {
              if (html[p] == '(') {
                ++depth;
              } else if (html[p] == ')' && depth > 0) {
                --depth;
              }
              ++p;
            }
          }
          if (u1 > u0 && is_relative(html.substr(u0, u1 - u0))) replace(u0, u1, quote, true);
        }
      }
    }
    if (broken) break;
    i = j;
  }
  if (changed) out.append(html.data() + copied, n - copied);
  return changed;
}

}  // namespace feedplane::feed
