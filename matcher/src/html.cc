// html_to_text: the visible text of an HTML fragment (rules in text.h). One forward pass;
// plain runs between '<' and '&' are copied in bulk.
#include <utf8proc.h>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "feedplane/base/ascii.h"
#include "feedplane/matcher/text.h"

namespace feedplane::matcher {
namespace {

struct named_entity {
  std::string_view name;
  std::string_view value;  // UTF-8
};
constexpr named_entity k_html_entities[] = {
#include "html_entities.inc"
};

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Tags that format a run of text without breaking it into separate words.
bool is_inline_tag(std::string_view name) {
  static constexpr std::string_view k_inline[] = {
      "a",      "abbr",   "b",   "bdi", "bdo",  "big",  "cite", "code", "data", "del",   "dfn",
      "em",     "font",   "i",   "ins", "kbd",  "mark", "q",    "s",    "samp", "small", "span",
      "strike", "strong", "sub", "sup", "time", "tt",   "u",    "var",  "wbr"};
  for (auto t : k_inline) {
    if (base::ascii_iequals(name, t)) return true;
  }
  return false;
}

// Finds the end of an element whose content is dropped (script, style): the matching
// close tag, case-insensitively. Returns the position after it, or s.size().
size_t skip_raw_text(std::string_view s, size_t from, std::string_view name) {
  for (size_t i = from; (i = s.find("</", i)) != std::string_view::npos; i += 2) {
    if (base::ascii_istarts_with(s.substr(i + 2), name)) {
      const size_t gt = s.find('>', i);
      return gt == std::string_view::npos ? s.size() : gt + 1;
    }
  }
  return s.size();
}

}  // namespace

void html_to_text(std::string_view s, std::string& out) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const size_t next = s.find_first_of("<&", i);
    if (next == std::string_view::npos) {
      out.append(s.substr(i));
      return;
    }
    out.append(s.substr(i, next - i));
    i = next;
    if (s[i] == '&') {
      const size_t used = decode_char_ref(s.substr(i), out).used;
      if (used == 0) {
        out.push_back('&');
        ++i;
      } else {
        i += used;
      }
      continue;
    }
    // s[i] == '<'
    if (s.substr(i, 4) == "<!--") {
      const size_t end = s.find("-->", i + 4);
      i = end == std::string_view::npos ? n : end + 3;
      out.push_back(' ');
      continue;
    }
    if (s.substr(i, 9) == "<![CDATA[") {
      const size_t end = s.find("]]>", i + 9);
      const size_t stop = end == std::string_view::npos ? n : end;
      out.append(s.substr(i + 9, stop - (i + 9)));
      i = end == std::string_view::npos ? n : end + 3;
      continue;
    }
    size_t j = i + 1;
    const bool closing = j < n && s[j] == '/';
    if (closing) ++j;
    const size_t name_begin = j;
    while (j < n &&
           (((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'z') || (s[j] >= '0' && s[j] <= '9')))
      ++j;
    const std::string_view name = s.substr(name_begin, j - name_begin);
    const bool markup = !name.empty() || (j < n && (s[j] == '!' || s[j] == '?'));
    if (!markup) {
      // "a < b" is text, not a tag.
      out.push_back('<');
      ++i;
      continue;
    }
    // Skip to the closing '>' outside quoted attribute values.
    char quote = 0;
    for (; j < n; ++j) {
      const char c = s[j];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      }
    }
    i = j < n ? j + 1 : n;
    if (!closing && (base::ascii_iequals(name, "script") || base::ascii_iequals(name, "style"))) {
      i = skip_raw_text(s, i, name);
    }
    if (!is_inline_tag(name)) out.push_back(' ');
  }
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

char_ref_result decode_char_ref(std::string_view s, std::string& out) {
  // The candidate: '#' and 'x' for a number, then up to 32 letters or digits, then ';'.
  size_t j = 1;
  const bool numeric = j < s.size() && s[j] == '#';
  if (numeric) ++j;
  const bool hex = numeric && j < s.size() && (s[j] == 'x' || s[j] == 'X');
  if (hex) ++j;
  const size_t name_start = j;
  while (j < s.size() && j - name_start < 32 && is_alnum(s[j])) ++j;
  if (j == name_start || j >= s.size() || s[j] != ';') return {0, char_ref::none};
  const std::string_view name = s.substr(name_start, j - name_start);
  const size_t used = j + 1;
  if (numeric) {
    uint32_t cp = 0;
    for (char c : name) {
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (hex && base::ascii_lower(c) >= 'a' && base::ascii_lower(c) <= 'f') {
        d = static_cast<uint32_t>(base::ascii_lower(c) - 'a' + 10);
      } else {
        return {0, char_ref::none};
      }
      cp = cp * (hex ? 16 : 10) + d;
      if (cp > 0x10FFFF) cp = 0x110000;  // saturate: becomes U+FFFD
    }
    if (cp >= 0x80 && cp <= 0x9F) cp = k_windows1252_c1[cp - 0x80];
    append_utf8(cp, out);
    return {used, char_ref::numeric};
  }
  // The five XML entities first: they are most of the references in feeds.
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
        std::lower_bound(std::begin(k_html_entities), std::end(k_html_entities), name,
                         [](const named_entity& e, std::string_view n) { return e.name < n; });
    if (it == std::end(k_html_entities) || it->name != name) return {0, char_ref::unknown};
    out.append(it->value);
    return {used, char_ref::html};
  }
  return {used, char_ref::xml};
}

}  // namespace feedplane::matcher
