// Fuzz target: arbitrary bytes through the XML feed path (encoding detection, repair, RSS and
// Atom walks), then dedup and JSON rendering of whatever came out. The first byte picks the
// HTTP charset the document claims to have come with, and whether a 64 KiB size cap applies
// (so that the too_large path is within reach of the fuzzer's input length).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"
#include "feedplane/feed/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static feedplane::feed::parser parser;  // reused, as in production
  static feedplane::feed::feed f;
  static constexpr const char* charsets[] = {"",
                                             "text/xml; charset=utf-8",
                                             "application/rss+xml; charset=iso-8859-1",
                                             "text/xml; charset=utf-16",
                                             "text/xml; charset=koi8-r",
                                             "text/xml; charset=shift_jis"};
  if (size == 0) return 0;
  feedplane::feed::parse_options o;
  o.content_type = charsets[data[0] % 6];
  o.base_url = "http://fuzz.example/feed/";
  o.max_entries = 1000;
  if ((data[0] / 6) % 2 == 1) o.max_bytes = 64 << 10;
  const std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
  if (!doc.empty() && doc[0] == '{') return 0;  // the JSON path has its own target
  parser.parse(doc, o, f);
  feedplane::feed::feed_state st;
  std::vector<feedplane::feed::verdict> v;
  st.classify(f, v);
  std::string out;
  feedplane::feed::render_json(f, out);
  return 0;
}
