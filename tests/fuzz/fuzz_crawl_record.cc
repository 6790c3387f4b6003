// Crawl and source records on arbitrary bytes (what the store streams back at start-up):
// decode never crashes; an accepted crawl record re-encodes (as version 6) and decodes to the
// same fields, and a source restored from it classifies a document without harm.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/crawler/records.h"
#include "feedplane/crawler/source.h"
#include "feedplane/feed/dedup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fc = feedplane::crawler;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  fc::source_record sr;
  (void)fc::decode(in, sr);
  fc::crawl_record r;
  if (fc::decode(in, r) != fc::record_errc::ok) return 0;
  std::string out;
  fc::encode(r, out);
  fc::crawl_record back;
  if (fc::decode(out, back) != fc::record_errc::ok) std::abort();
  if (back.etag != r.etag || back.seen != r.seen || back.document_hash != r.document_hash ||
      back.fetches != r.fetches || back.last_error != r.last_error || back.matched != r.matched)
    std::abort();
  // A weight read back is a number the allocation can use.
  if (!(r.matched.weight() >= 1) || r.matched.weight() > fc::match_weight::k_max) std::abort();
  fc::source s;
  s.from_record(r);
  feedplane::feed::feed f;
  f.entries.resize(3);
  f.entries[0].id = "a";
  f.entries[1].link = "http://x/b";
  f.entries[2].title = "c";
  std::vector<feedplane::feed::verdict> v;
  s.state.classify(f, v);
  if (v.size() != 3 || s.state.seen().size() > s.state.seen().capacity()) std::abort();
  return 0;
}
