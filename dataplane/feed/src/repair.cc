// The cold path for documents that are not well-formed, and small shared helpers.
#include <cstring>

#include "feedplane/base/ascii.h"
#include "internal.h"

namespace feedplane::feed::detail {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
  return !(is_ws(c) || c == '/' || c == '>' || c == '<' || c == '=' || c == '"' || c == '\'');
}

// Appends v as a double-quoted attribute value's contents.
void append_attr_value(std::string_view v, std::string& out) {
  for (char c : v) {
    if (c == '"') {
      out.append("&quot;");
    } else if (c == '<') {
      out.append("&lt;");
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

void repair_xml(std::string_view s, std::string& out, decode_stats& st) {
  out.clear();
  out.reserve(s.size() + 64);
  std::vector<std::string_view> open;  // names of open elements, innermost last
  std::vector<std::string_view> attrs;
  bool fixed = false, truncated = false;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (s[i] != '<') {
      const void* lt = std::memchr(s.data() + i, '<', n - i);
      const size_t e = lt ? static_cast<size_t>(static_cast<const char*>(lt) - s.data()) : n;
      out.append(s.data() + i, e - i);
      i = e;
      continue;
    }
    const std::string_view rest = s.substr(i);
    if (rest.starts_with("<!--")) {
      const size_t e = s.find("-->", i + 4);
      if (e == std::string_view::npos) {
        truncated = true;
        break;
      }
      i = e + 3;
    } else if (rest.starts_with("<![CDATA[")) {
      const size_t e = s.find("]]>", i + 9);
      if (e == std::string_view::npos) {
        out.append(s.data() + i, n - i);
        out.append("]]>");
        truncated = true;
        break;
      }
      out.append(s.data() + i, e + 3 - i);
      i = e + 3;
    } else if (rest.starts_with("<?")) {
      const size_t e = s.find("?>", i + 2);
      if (e == std::string_view::npos) {
        truncated = true;
        break;
      }
      i = e + 2;
    } else if (rest.starts_with("<!")) {
      // DOCTYPE (with an optional [internal subset]) or another declaration: skipped.
      size_t j = i + 2;
      int depth = 0;
      while (j < n && !(s[j] == '>' && depth == 0)) {
        if (s[j] == '[') ++depth;
        if (s[j] == ']' && depth > 0) --depth;
        ++j;
      }
      if (j >= n) {
        truncated = true;
        break;
      }
      i = j + 1;
    } else if (rest.starts_with("</")) {
      size_t j = i + 2;
      while (j < n && is_name_char(s[j])) ++j;
      const std::string_view name = s.substr(i + 2, j - i - 2);
      const size_t gt = s.find('>', j);
      if (gt == std::string_view::npos) {
        truncated = true;
        break;
      }
      i = gt + 1;
      // An end tag closes the nearest open element of its name within 64 levels; further up
      // it is stray. The bound keeps a flood of stray end tags linear, not quadratic.
      size_t k = open.size();
      const size_t floor = open.size() > 64 ? open.size() - 64 : 0;
      while (k > floor && open[k - 1] != name) --k;
      if (k == floor) k = 0;
      if (k == 0) {
        fixed = true;  // stray end tag: dropped
        continue;
      }
      if (k != open.size()) fixed = true;  // elements left open inside: closed here
      while (open.size() >= k) {
        out.append("</");
        out.append(open.back());
        out.push_back('>');
        open.pop_back();
      }
    } else if (i + 1 < n && is_name_start(s[i + 1])) {
      size_t j = i + 1;
      while (j < n && is_name_char(s[j])) ++j;
      const std::string_view name = s.substr(i + 1, j - i - 1);
      const size_t tag_start = out.size();
      out.push_back('<');
      out.append(name);
      attrs.clear();
      bool self_close = false, closed = false;
      while (j < n) {
        while (j < n && is_ws(s[j])) ++j;
        if (j >= n) break;
        if (s[j] == '>') {
          closed = true;
          ++j;
          break;
        }
        if (s[j] == '/' && j + 1 < n && s[j + 1] == '>') {
          self_close = closed = true;
          j += 2;
          break;
        }
        if (s[j] == '<') {  // a tag that never ended: end it here
          closed = true;
          fixed = true;
          break;
        }
        size_t a = j;
        while (j < n && is_name_char(s[j])) ++j;
        if (j == a) {  // junk such as a stray quote or '/': skip it
          ++j;
          fixed = true;
          continue;
        }
        const std::string_view an = s.substr(a, j - a);
        while (j < n && is_ws(s[j])) ++j;
        std::string_view val = an;
        if (j < n && s[j] == '=') {
          ++j;
          while (j < n && is_ws(s[j])) ++j;
          if (j < n && (s[j] == '"' || s[j] == '\'')) {
            const char q = s[j];
            const size_t e = s.find(q, j + 1);
            if (e == std::string_view::npos) {
              j = n;
              break;
            }
            val = s.substr(j + 1, e - j - 1);
            j = e + 1;
          } else {
            const size_t v0 = j;
            while (j < n && !is_ws(s[j]) && s[j] != '>') ++j;
            val = s.substr(v0, j - v0);
            fixed = true;
          }
        } else {
          fixed = true;  // attribute without a value (HTML style)
        }
        bool dup = attrs.size() >= 64;  // beyond 64 attributes: dropped (keeps this linear)
        for (auto seen : attrs) dup = dup || seen == an;
        if (dup) {
          fixed = true;
          continue;
        }
        attrs.push_back(an);
        out.push_back(' ');
        out.append(an);
        out.append("=\"");
        append_attr_value(val, out);
        out.push_back('"');
      }
      if (!closed) {
        out.resize(tag_start);  // the document ended inside this tag
        truncated = true;
        break;
      }
      if (self_close) {
        out.append("/>");
      } else {
        out.push_back('>');
        open.push_back(name);
      }
      i = j;
    } else {
      out.append("&lt;");  // '<' that starts no tag: text
      fixed = true;
      ++i;
    }
  }
  if (!open.empty()) truncated = true;
  while (!open.empty()) {
    out.append("</");
    out.append(open.back());
    out.push_back('>');
    open.pop_back();
  }
  if (fixed) note(st, recovery::malformed_xml);
  if (truncated) note(st, recovery::truncated);
  if (!fixed && !truncated) note(st, recovery::malformed_xml);  // the parser saw something
}

entry& entry_pool::add(feed& f) {
  if (used_ < f.entries.size()) {
    entry& e = f.entries[used_++];
    e.clear();
    return e;
  }
  if (spare_.empty()) {
    f.entries.emplace_back();
  } else {
    f.entries.push_back(std::move(spare_.back()));
    spare_.pop_back();
    f.entries.back().clear();
  }
  ++used_;
  return f.entries.back();
}

void entry_pool::finish(feed& f) {
  // Moving an entry moves its strings' buffers: their capacity is reused next document.
  while (f.entries.size() > used_) {
    spare_.push_back(std::move(f.entries.back()));
    f.entries.pop_back();
  }
}

void parse_person(std::string_view text, person& p) {
  text = base::ascii_trim(text);
  std::string_view a = text, b;
  const size_t open_paren = text.find('(');
  const size_t open_angle = text.find('<');
  if (open_paren != std::string_view::npos && text.back() == ')') {
    a = base::ascii_trim(text.substr(0, open_paren));
    b = base::ascii_trim(text.substr(open_paren + 1, text.size() - open_paren - 2));
  } else if (open_angle != std::string_view::npos && text.back() == '>') {
    a = base::ascii_trim(text.substr(0, open_angle));
    b = base::ascii_trim(text.substr(open_angle + 1, text.size() - open_angle - 2));
  }
  auto is_email = [](std::string_view v) {
    return v.find('@') != std::string_view::npos && v.find(' ') == std::string_view::npos;
  };
  if (!b.empty()) {
    if (is_email(b) && !is_email(a)) {
      p.name.assign(a);
      p.email.assign(b);
    } else if (is_email(a)) {
      p.email.assign(a);
      p.name.assign(b);
    } else {
      p.name.assign(text);
    }
  } else if (is_email(a)) {
    p.email.assign(a);
  } else {
    p.name.assign(a);
  }
}

}  // namespace feedplane::feed::detail
