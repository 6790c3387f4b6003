// Query parser on arbitrary bytes: never crashes; the direct path for plain words gives what
// the general parser gives; an accepted query matches the same articles in the index as in
// the naive matcher (articles made from the input itself, from no source, from the input's
// own bytes as a host, and, for each `source:` term, from its host, a host under it, a
// lookalike, or its id).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/matcher/index.h"
#include "feedplane/matcher/naive.h"
#include "feedplane/matcher/source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fm = feedplane::matcher;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fm::query_parser parser;
  fm::parsed_query q;
  // The direct path for plain words and the general parser agree, error or result.
  fm::query_parser general;
  general.set_plain_fast_path(false);
  fm::parsed_query g;
  const fm::query_error err = parser.parse(text, q);
  const fm::query_error general_err = general.parse(text, g);
  if (err.code != general_err.code || err.column != general_err.column ||
      err.message != general_err.message)
    std::abort();
  // A text the split for plain words takes is valid, and parses to its words.
  char folded[fm::query_parser::split_plain_max_bytes];
  std::string_view words[8];
  const size_t n = parser.split_plain(text, folded, words, 8);
  if (n != 0) {
    if (!err.ok() || q.clauses.size() != 1 || !q.clauses[0].must_not.empty() ||
        q.clauses[0].must.size() != n)
      std::abort();
    for (const fm::query_term& t : q.clauses[0].must) {
      if (t.words.size() != 1 || t.title ||
          std::find(words, words + n, std::string_view(t.words[0])) == words + n)
        std::abort();
    }
  }
  if (!err.ok()) return 0;
  if (!(q == g)) std::abort();
  fm::index idx;
  fm::naive_matcher naive;
  idx.add(7, q);
  naive.add(7, q);
  std::vector<std::pair<std::string, uint64_t>> sources = {{std::string(text.substr(0, 300)), 1}};
  for (const auto& c : q.clauses) {
    for (const auto* terms : {&c.must, &c.must_not}) {
      for (const fm::query_term& t : *terms) {
        if (t.kind == fm::term_kind::words || sources.size() > 8) continue;
        const std::string value = t.words[0].substr(2);  // after the token's mark and kind
        if (t.kind == fm::term_kind::source_host) {
          sources.push_back({value, 0});
          sources.push_back({"www." + value, 0});
          sources.push_back({"x" + value, 0});
        } else {
          sources.push_back({"example.org", std::strtoull(value.c_str(), nullptr, 16)});
        }
      }
    }
  }
  fm::article a;
  fm::source_scope scope;
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
    for (const auto& [host, id] : sources) {
      scope.assign(host, id);
      idx.match(a.view(scope), r);
      naive.match(a.view(scope), expect);
      if (r.ids().size() != expect.size()) std::abort();
    }
  }
  return 0;
}
