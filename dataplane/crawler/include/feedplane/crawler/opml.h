// OPML 1.0/2.0 subscription lists (pugixml): import reads every <outline> with an xmlUrl,
// at any depth (folders are nested outlines), and export writes one flat list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::crawler {

struct opml_feed {
  std::string url;    // canonical (net::url::str()), http or https
  std::string title;  // the outline's title, else its text ("" when neither)
};

struct opml_import {
  std::vector<opml_feed> feeds;      // in document order, each URL once
  std::vector<std::string> invalid;  // xmlUrl values that are no http(s) URL, as written
  uint32_t duplicates = 0;           // outlines repeating an earlier URL of the document
};

// Parses an OPML document into out. False, with *error saying why, when it is not XML or
// its root is not <opml>.
bool parse_opml(std::string_view text, opml_import& out, std::string* error);

// An OPML 2.0 document listing feeds (type="rss" outlines under <body>).
std::string render_opml(const std::vector<opml_feed>& feeds, std::string_view title);

}  // namespace feedplane::crawler
