// One parser for every feed format: RSS 0.90-2.0 (and RDF 1.0), Atom 0.3/1.0, JSON Feed
// 1.0/1.1, detected from the bytes. One parser per thread: it owns and reuses its buffers
// (transcoding, XML tree, JSON tape), so steady-state parsing allocates only for the output
// strings that grow past their previous capacity. Never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "feedplane/feed/model.h"

namespace feedplane::feed {

enum class parse_errc : uint8_t {
  ok = 0,
  empty_document,        // nothing but whitespace
  too_large,             // over parse_options::max_bytes
  unknown_format,        // well-formed XML/JSON, but not RSS, Atom or JSON Feed
  html_not_feed,         // an HTML page (often a login wall or an error page)
  xml_unreadable,        // not XML even after recovery
  json_invalid,          // starts like JSON but is not valid JSON
  unsupported_encoding,  // UTF-32/EBCDIC or another encoding iconv does not know (with a BOM)
  out_of_memory,
  too_complex,  // markup so dense that its XML tree would outgrow 2x the document + 2 MiB
};

// Stable name of an error ("xml_unreadable"), as printed by `feedplane parse`.
std::string_view errc_name(parse_errc e);

struct parse_options {
  std::string_view base_url;      // the URL the document was fetched from (resolves links)
  std::string_view content_type;  // HTTP Content-Type, for its charset parameter
  size_t max_bytes = 32u << 20;   // larger documents are refused before any work
  size_t max_entries = 10000;     // entries beyond this are dropped (bounds output memory)
  // Memory the XML tree may take (pugixml: 64 bytes a node, 40 an attribute); a document
  // whose tree needs more is too_complex. 0: twice the document (in UTF-8) plus 2 MiB,
  // which bounds a parse's peak heap near 4x the document (tests/feed_memory_test.cc).
  size_t max_tree_bytes = 0;
};

class parser {
 public:
  parser();
  ~parser();
  parser(const parser&) = delete;
  parser& operator=(const parser&) = delete;

  // Parses bytes into out (whose previous contents are replaced, their capacity reused).
  // On error, out holds whatever could be read (possibly nothing) and the code names why.
  parse_errc parse(std::string_view bytes, const parse_options& opts, feed& out) noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace feedplane::feed
