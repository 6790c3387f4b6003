#include "feedplane/reflector/render.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "feedplane/base/json.h"
#include "feedplane/feed/text.h"
#include "feedplane/matcher/text.h"
#include "feedplane/net/http_request.h"

namespace feedplane::reflector {

namespace {

bool is_word_byte(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

bool contains(const std::vector<std::string>& words, std::string_view w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

void collect(const matcher::query_node& n, std::vector<std::string>& out) {
  switch (n.type) {
    case matcher::query_node::kind::term:
      if (n.term.kind != matcher::term_kind::words) break;  // a source: scope is no word
      for (const std::string& w : n.term.words) {
        if (!contains(out, w)) out.push_back(w);
      }
      break;
    case matcher::query_node::kind::all:
    case matcher::query_node::kind::any:
      for (const auto& c : n.children) collect(c, out);
      break;
    case matcher::query_node::kind::negate:
      break;  // words that must not appear were never matched
  }
}

std::string rfc3339(int64_t t) {
  char buf[32];
  return std::string(buf, size_t(feed::format_rfc3339(t, buf)));
}

std::string http_date(int64_t t) {
  char buf[32];
  return std::string(net::format_http_date(t, buf));
}

// The entry's summary as HTML: the plain text escaped, matched words marked.
std::string summary_html(const feed_item& it) {
  if (!it.summary_html.empty()) return it.summary_html;
  std::string h = "<p>";
  append_marked(it.summary, it.matched, h);
  h += "</p>";
  return h;
}

// The entry's id as its source gave it: the guid, else the link, else our sequence.
std::string original_id(const feed_item& it) {
  if (!it.guid.empty()) return std::string(it.guid);
  if (!it.link.empty()) return std::string(it.link);
  return fmt::format("urn:feedplane:article:{}", it.seq);
}

// Atom ids must be IRIs: the guid when it looks like one, else the link, else a URN.
std::string atom_id(const feed_item& it) {
  const std::string_view g = it.guid;
  const size_t colon = g.find(':');
  if (colon != std::string_view::npos && colon > 0 && g.find(' ') == std::string_view::npos)
    return std::string(g);
  if (!it.link.empty()) return std::string(it.link);
  return fmt::format("urn:feedplane:article:{}", it.seq);
}

void tag(std::string& out, std::string_view name, std::string_view text) {
  out += '<';
  out += name;
  out += '>';
  append_escaped(text, out);
  out += "</";
  out += name;
  out += ">\n";
}

void render_rss(const feed_info& info, std::span<const feed_item> items, std::string& out) {
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n<channel>\n";
  tag(out, "title", info.title);
  tag(out, "link", info.self_path);
  tag(out, "description", fmt::format("feedplane subscription: {}", info.query));
  tag(out, "lastBuildDate", http_date(info.updated));
  tag(out, "generator", "feedplane");
  for (const feed_item& it : items) {
    out += "<item>\n";
    tag(out, "title", it.title);
    if (!it.link.empty()) tag(out, "link", it.link);
    out += it.guid.empty() && !it.link.empty() ? "<guid isPermaLink=\"true\">"
                                               : "<guid isPermaLink=\"false\">";
    append_escaped(original_id(it), out);
    out += "</guid>\n";
    tag(out, "pubDate", http_date(it.published));
    if (!it.source_url.empty()) {
      out += "<source url=\"";
      append_escaped(it.source_url, out);
      out += "\">";
      append_escaped(it.source_url, out);
      out += "</source>\n";
    }
    tag(out, "description", summary_html(it));
    out += "</item>\n";
  }
  out += "</channel>\n</rss>\n";
}

void render_atom(const feed_info& info, std::span<const feed_item> items, std::string& out) {
  out +=
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n";
  tag(out, "id", fmt::format("urn:feedplane:subscription:{}", info.id));
  tag(out, "title", info.title);
  tag(out, "subtitle", fmt::format("feedplane subscription: {}", info.query));
  tag(out, "updated", rfc3339(info.updated));
  out += "<link rel=\"self\" href=\"";
  append_escaped(info.self_path, out);
  out += ".atom\"/>\n<author><name>feedplane</name></author>\n<generator>feedplane</generator>\n";
  for (const feed_item& it : items) {
    out += "<entry>\n";
    tag(out, "id", atom_id(it));
    out += "<title type=\"text\">";
    append_escaped(it.title, out);
    out += "</title>\n";
    if (!it.link.empty()) {
      out += "<link rel=\"alternate\" href=\"";
      append_escaped(it.link, out);
      out += "\"/>\n";
    }
    const std::string when = rfc3339(it.published);
    tag(out, "published", when);
    tag(out, "updated", when);
    if (!it.source_url.empty()) {
      out += "<source>\n";
      tag(out, "id", it.source_url);
      tag(out, "title", it.source_url);
      out += "<link rel=\"self\" href=\"";
      append_escaped(it.source_url, out);
      out += "\"/>\n";
      tag(out, "updated", when);
      out += "</source>\n";
    }
    out += "<summary type=\"html\">";
    append_escaped(summary_html(it), out);
    out += "</summary>\n</entry>\n";
  }
  out += "</feed>\n";
}

void json_field(std::string& out, std::string_view key, std::string_view value, bool comma = true) {
  if (comma) out += ", ";
  base::append_json_string(key, out);
  out += ": ";
  base::append_json_string(value, out);
}

void render_json_feed(const feed_info& info, std::span<const feed_item> items, std::string& out) {
  out += "{";
  json_field(out, "version", "https://jsonfeed.org/version/1.1", false);
  json_field(out, "title", info.title);
  json_field(out, "description", fmt::format("feedplane subscription: {}", info.query));
  out += ", \"items\": [";
  bool first = true;
  for (const feed_item& it : items) {
    out += first ? "\n  {" : ",\n  {";
    first = false;
    json_field(out, "id", original_id(it), false);
    if (!it.link.empty()) json_field(out, "url", it.link);
    json_field(out, "title", it.title);
    json_field(out, "content_html", summary_html(it));
    json_field(out, "summary", it.summary);
    json_field(out, "date_published", rfc3339(it.published));
    out += fmt::format(", \"_feedplane\": {{\"seq\": {}", it.seq);
    json_field(out, "source", it.source_url);
    out += ", \"matched\": [";
    for (size_t i = 0; i < it.matched.size(); ++i) {
      if (i != 0) out += ", ";
      base::append_json_string(it.matched[i], out);
    }
    out += "]}}";
  }
  out += "]}\n";
}

}  // namespace

std::string_view format_name(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "rss";
    case feed_format::atom:
      return "atom";
    case feed_format::json:
      return "json";
  }
  return "rss";
}

std::string_view content_type(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "application/rss+xml; charset=utf-8";
    case feed_format::atom:
      return "application/atom+xml; charset=utf-8";
    case feed_format::json:
      return "application/feed+json; charset=utf-8";
  }
  return "application/octet-stream";
}

std::string_view path_suffix(feed_format f) {
  switch (f) {
    case feed_format::rss:
      return "";
    case feed_format::atom:
      return ".atom";
    case feed_format::json:
      return ".json";
  }
  return "";
}

void render_feed(feed_format f, const feed_info& info, std::span<const feed_item> items,
                 std::string& out) {
  switch (f) {
    case feed_format::rss:
      render_rss(info, items, out);
      break;
    case feed_format::atom:
      render_atom(info, items, out);
      break;
    case feed_format::json:
      render_json_feed(info, items, out);
      break;
  }
}

std::string feed_etag(std::span<const uint64_t> seqs, uint64_t generation, std::string_view title,
                      uint32_t k, feed_format f) {
  std::string in;  // one buffer, hashed once (k <= 100 entries: a few hundred bytes)
  in.append(reinterpret_cast<const char*>(seqs.data()), seqs.size_bytes());
  const uint64_t fixed[3] = {generation, k, uint64_t(f)};
  in.append(reinterpret_cast<const char*>(fixed), sizeof(fixed));
  in.append(title);
  const uint64_t h = XXH3_64bits(in.data(), in.size());
  return fmt::format("\"{:016x}-{}\"", h, seqs.size());
}

std::vector<std::string> positive_words(const matcher::query_node& tree) {
  std::vector<std::string> out;
  collect(tree, out);
  return out;
}

std::vector<std::string> words_in(const std::vector<std::string>& words,
                                  std::initializer_list<std::string_view> texts) {
  std::vector<uint8_t> found(words.size(), 0);
  matcher::token_buffer tb;
  for (std::string_view t : texts) {
    tb.clear();
    matcher::tokenize(t, tb);
    for (size_t i = 0; i < tb.size(); ++i) {
      for (size_t w = 0; w < words.size(); ++w) {
        if (words[w] == tb.word(i)) found[w] = 1;
      }
    }
  }
  std::vector<std::string> out;
  for (size_t w = 0; w < words.size(); ++w) {
    if (found[w] != 0) out.push_back(words[w]);
  }
  return out;
}

void append_escaped(std::string_view s, std::string& out) {
  size_t run = 0;  // start of the bytes pending an unchanged copy
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const char* rep = nullptr;
    size_t len = 1;
    if (c < 0x80) {
      switch (c) {
        case '&':
          rep = "&amp;";
          break;
        case '<':
          rep = "&lt;";
          break;
        case '>':
          rep = "&gt;";
          break;
        case '"':
          rep = "&quot;";
          break;
        case '\'':
          rep = "&#39;";
          break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') rep = "";  // not XML 1.0
      }
    } else {
      len = base::utf8_sequence_length(s, i);
      if (len == 0) {
        rep = "\xEF\xBF\xBD";  // U+FFFD for a byte of invalid UTF-8
        len = 1;
      } else if (len == 3 && c == 0xEF && uint8_t(s[i + 1]) == 0xBF && uint8_t(s[i + 2]) >= 0xBE) {
        rep = "";  // U+FFFE, U+FFFF: not XML 1.0 characters
      }
    }
    if (rep != nullptr) {
      out.append(s.data() + run, i - run);
      out.append(rep);
      i += len;
      run = i;
    } else {
      i += len;
    }
  }
  out.append(s.data() + run, s.size() - run);
}

namespace {
// Marks the word runs of text; `escaped`: text is already escaped HTML (its entities are
// copied whole and never read as words), else it is plain text and is escaped here.
template <bool escaped>
void mark_words(std::string_view text, const std::vector<std::string>& words, std::string& out) {
  matcher::token_buffer tb;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && !is_word_byte(uint8_t(text[j]))) {
      if (escaped && text[j] == '&') {
        const size_t semi = text.find(';', j);
        j = semi == std::string_view::npos ? text.size() : semi + 1;
      } else {
        ++j;
      }
    }
    if (escaped) {
      out += text.substr(i, j - i);
    } else {
      append_escaped(text.substr(i, j - i), out);
    }
    i = j;
    while (j < text.size() && is_word_byte(uint8_t(text[j]))) ++j;
    if (j == i) break;
    const std::string_view run = text.substr(i, j - i);
    bool hit = false;
    if (!words.empty()) {
      tb.clear();
      matcher::tokenize(run, tb);
      for (size_t w = 0; w < tb.size() && !hit; ++w) hit = contains(words, tb.word(w));
    }
    if (hit) out += "<mark>";
    if (escaped) {
      out += run;  // word bytes need no escaping
    } else {
      append_escaped(run, out);
    }
    if (hit) out += "</mark>";
    i = j;
  }
}
}  // namespace

void append_marked(std::string_view text, const std::vector<std::string>& words, std::string& out) {
  mark_words<false>(text, words, out);
}

void mark_escaped(std::string_view html_text, const std::vector<std::string>& words,
                  std::string& out) {
  mark_words<true>(html_text, words, out);
}

}  // namespace feedplane::reflector
