// Served feeds: a subscription's matches as RSS 2.0, Atom 1.0 or JSON Feed 1.1, and the
// entity tag that names their content.
//
// Summaries are served as HTML that passed the allowlist sanitizer (sanitize.h) with the
// matched words in <mark>; without one, as escaped plain text, marked the same way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/matcher/query.h"

namespace feedplane::reflector {

enum class feed_format : uint8_t { rss = 0, atom = 1, json = 2 };
inline constexpr size_t feed_formats = 3;
std::string_view format_name(feed_format f);   // "rss", "atom", "json"
std::string_view content_type(feed_format f);  // with charset
std::string_view path_suffix(feed_format f);   // "", ".atom", ".json"

// One served entry. Views live while the feed is rendered.
struct feed_item {
  uint64_t seq = 0;
  std::string_view title, link, guid, source_url;
  std::string_view summary;          // plain text (markup already stripped)
  std::string summary_html;          // sanitized HTML, matched words marked; "" = none
  int64_t published = 0;             // unix seconds
  std::vector<std::string> matched;  // folded words of the query found in the entry
};

struct feed_info {
  std::string_view title;      // the feed's title
  std::string_view id;         // the subscription id
  std::string_view self_path;  // "/f/TOKEN" (without the format's suffix)
  std::string_view query;
  int64_t updated = 0;  // unix seconds of the last change
};

// Appends the whole document to out; items newest first.
void render_feed(feed_format f, const feed_info& info, std::span<const feed_item> items,
                 std::string& out);

// The entity tag of a feed's content, quoted ("\"...\""): the same list, query generation,
// title, k and format always give the same tag (a restart causes no false 304 and no
// re-render storm), and any change gives another.
std::string feed_etag(std::span<const uint64_t> seqs, uint64_t generation, std::string_view title,
                      uint32_t k, feed_format f);

// The folded words a query requires or allows (every term not under NOT), once each, in
// query order: what a served entry can have matched (a source: term is no word: left out).
std::vector<std::string> positive_words(const matcher::query_node& tree);
// Of `words` (folded), those that occur among the words of the texts, in `words` order.
std::vector<std::string> words_in(const std::vector<std::string>& words,
                                  std::initializer_list<std::string_view> texts);

// Appends text escaped for HTML and XML (& < > " '), invalid UTF-8 replaced by U+FFFD and
// characters XML 1.0 forbids dropped.
void append_escaped(std::string_view text, std::string& out);
// Appends text as escaped HTML with every word whose folded form is in `words` inside
// <mark>...</mark>.
void append_marked(std::string_view text, const std::vector<std::string>& words, std::string& out);
// The same for text already escaped as HTML (append_escaped's output: every entity ends in
// ';'): entities are copied whole, never read as words.
void mark_escaped(std::string_view html_text, const std::vector<std::string>& words,
                  std::string& out);

}  // namespace feedplane::reflector
