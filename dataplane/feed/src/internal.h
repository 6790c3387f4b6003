// Private pieces shared by the parser's translation units.
#pragma once

#include <iconv.h>

#include <string>
#include <string_view>
#include <vector>

#include "feedplane/feed/model.h"
#include "feedplane/feed/parser.h"
#include "feedplane/feed/text.h"
#include "feedplane/net/url.h"

namespace feedplane::feed {
// Links resolve with net's URL code (the feedplane::net_url target: no I/O).
using net::has_scheme;
using net::resolve_url;
}  // namespace feedplane::feed

namespace feedplane::feed::detail {

inline void note(decode_stats& st, recovery r) {
  st.flags |= static_cast<uint32_t>(r);
  ++st.events;
}

// Converts a document's bytes to UTF-8 in out, choosing the encoding by the byte order mark,
// then the HTTP charset, then the XML declaration, then UTF-8 (RFC 7303 section 3). Bytes
// invalid in that encoding become U+FFFD; a document declared UTF-8 that is plainly not is
// read as windows-1252. Illegal XML control characters are removed.
class transcoder {
 public:
  transcoder() = default;
  ~transcoder();
  transcoder(const transcoder&) = delete;
  transcoder& operator=(const transcoder&) = delete;
  parse_errc to_utf8(std::string_view in, std::string_view content_type, std::string& out,
                     decode_stats& st);

 private:
  bool iconv_to_utf8(std::string_view enc, std::string_view in, std::string& out, decode_stats& st);
  std::string cd_name_;
  iconv_t cd_ = nullptr;  // open converter for cd_name_, or nullptr
};

// Rewrites a document that is not well-formed XML into one that is, the way forgiving
// readers do: stray end tags dropped, unclosed elements closed by an ancestor's end tag or at
// the end, '<' that starts no tag escaped, attribute values quoted. Comments, processing
// instructions and the DOCTYPE are dropped.
void repair_xml(std::string_view in, std::string& out, decode_stats& st);

// Hands out entries for `out`, reusing the entries (and their strings' capacity) of previous
// documents in place: no entry is moved while a document of steady size is parsed.
class entry_pool {
 public:
  void recycle(feed& f) { (void)f, used_ = 0; }  // start of a document: nothing handed out
  entry& add(feed& f);
  size_t used() const { return used_; }
  // End of a document: f.entries is exactly the entries handed out; the rest wait in spare_.
  void finish(feed& f);

 private:
  size_t used_ = 0;
  std::vector<entry> spare_;
};

// Parses a JSON Feed held in buf[0, len) (buf padded for simdjson beyond len).
class json_feed_parser;

// Splits "Name (email)", "email (Name)", "Name <email>" or a bare email/name into p.
void parse_person(std::string_view text, person& p);

}  // namespace feedplane::feed::detail
