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

struct entity {
  std::string_view name;
  uint32_t code_point;
};

// HTML 4's Latin-1 entities are the code points 160..255 in order.
constexpr std::string_view k_latin1[96] = {
    "nbsp",   "iexcl",  "cent",   "pound",  "curren", "yen",    "brvbar", "sect",   "uml",
    "copy",   "ordf",   "laquo",  "not",    "shy",    "reg",    "macr",   "deg",    "plusmn",
    "sup2",   "sup3",   "acute",  "micro",  "para",   "middot", "cedil",  "sup1",   "ordm",
    "raquo",  "frac14", "frac12", "frac34", "iquest", "Agrave", "Aacute", "Acirc",  "Atilde",
    "Auml",   "Aring",  "AElig",  "Ccedil", "Egrave", "Eacute", "Ecirc",  "Euml",   "Igrave",
    "Iacute", "Icirc",  "Iuml",   "ETH",    "Ntilde", "Ograve", "Oacute", "Ocirc",  "Otilde",
    "Ouml",   "times",  "Oslash", "Ugrave", "Uacute", "Ucirc",  "Uuml",   "Yacute", "THORN",
    "szlig",  "agrave", "aacute", "acirc",  "atilde", "auml",   "aring",  "aelig",  "ccedil",
    "egrave", "eacute", "ecirc",  "euml",   "igrave", "iacute", "icirc",  "iuml",   "eth",
    "ntilde", "ograve", "oacute", "ocirc",  "otilde", "ouml",   "divide", "oslash", "ugrave",
    "uacute", "ucirc",  "uuml",   "yacute", "thorn",  "yuml"};

constexpr entity k_entities[] = {
    {"amp", '&'},       {"lt", '<'},        {"gt", '>'},       {"quot", '"'},
    {"apos", '\''},     {"OElig", 0x152},   {"oelig", 0x153},  {"Scaron", 0x160},
    {"scaron", 0x161},  {"Yuml", 0x178},    {"fnof", 0x192},   {"circ", 0x2C6},
    {"tilde", 0x2DC},   {"ensp", 0x2002},   {"emsp", 0x2003},  {"thinsp", 0x2009},
    {"zwnj", 0x200C},   {"zwj", 0x200D},    {"lrm", 0x200E},   {"rlm", 0x200F},
    {"ndash", 0x2013},  {"mdash", 0x2014},  {"lsquo", 0x2018}, {"rsquo", 0x2019},
    {"sbquo", 0x201A},  {"ldquo", 0x201C},  {"rdquo", 0x201D}, {"bdquo", 0x201E},
    {"dagger", 0x2020}, {"Dagger", 0x2021}, {"bull", 0x2022},  {"hellip", 0x2026},
    {"permil", 0x2030}, {"prime", 0x2032},  {"Prime", 0x2033}, {"lsaquo", 0x2039},
    {"rsaquo", 0x203A}, {"oline", 0x203E},  {"frasl", 0x2044}, {"euro", 0x20AC},
    {"trade", 0x2122},  {"larr", 0x2190},   {"rarr", 0x2192},  {"uarr", 0x2191},
    {"darr", 0x2193},   {"harr", 0x2194},   {"minus", 0x2212}, {"lowast", 0x2217},
    {"le", 0x2264},     {"ge", 0x2265},     {"ne", 0x2260},    {"asymp", 0x2248},
    {"infin", 0x221E},  {"hearts", 0x2665}, {"alpha", 0x3B1},  {"beta", 0x3B2},
    {"gamma", 0x3B3},   {"delta", 0x3B4},   {"pi", 0x3C0},     {"sigma", 0x3C3},
    {"omega", 0x3C9},   {"mu", 0x3BC},      {"lambda", 0x3BB}, {"theta", 0x3B8},
};

void append_utf8(uint32_t cp, std::string& out) {
  if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// Decodes the entity at s[0] == '&'. Returns the bytes consumed, or 0 if it is not a
// known entity (then '&' is literal text).
size_t decode_entity(std::string_view s, std::string& out) {
  if (s.size() < 3) return 0;
  if (s[1] == '#') {
    size_t i = 2;
    const bool hex = i < s.size() && (s[i] == 'x' || s[i] == 'X');
    if (hex) ++i;
    uint32_t cp = 0;
    size_t digits = 0;
    for (; i < s.size() && digits < 8; ++i, ++digits) {
      const char c = s[i];
      uint32_t v;
      if (c >= '0' && c <= '9') {
        v = static_cast<uint32_t>(c - '0');
      } else if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
        v = static_cast<uint32_t>((c | 0x20) - 'a' + 10);
      } else {
        break;
      }
      cp = cp * (hex ? 16 : 10) + v;
    }
    if (digits == 0) return 0;
    if (i < s.size() && s[i] == ';') ++i;
    append_utf8(cp, out);
    return i;
  }
  size_t i = 1;
  while (i < s.size() && i < 10 && ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')) ++i;
  if (i >= s.size() || s[i] != ';') return 0;
  const std::string_view name = s.substr(1, i - 1);
  for (size_t k = 0; k < 96; ++k) {
    if (k_latin1[k] == name) {
      append_utf8(static_cast<uint32_t>(160 + k), out);
      return i + 1;
    }
  }
  for (const auto& e : k_entities) {
    if (e.name == name) {
      append_utf8(e.code_point, out);
      return i + 1;
    }
  }
  return 0;
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
      const size_t used = decode_entity(s.substr(i), out);
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

}  // namespace feedplane::matcher
