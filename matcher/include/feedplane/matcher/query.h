// The subscription language.
//
//   rust tokio               both words must appear (space means AND; `AND` also works)
//   (law internet) OR (privacy internet)
//                            either group; `OR` is upper case, lower-case "or" is a word
//   rust -java   rust NOT java
//                            java must not appear
//   "new york"               the words must appear consecutively, in this order
//   title:rust  title:"new york"  title:(rust OR go)
//                            only words of the article's title count
//   source:apple.com         only articles from apple.com or a host under it (source.h),
//   source:0123456789abcdef  or from the source with that id (16 hex digits); combines
//                            like a word: `source:developer.apple.com ios -ipados`,
//                            `rust -source:example.com`, `source:a.org OR source:b.org`
//
// Words are normalised exactly like article text (text.h): case folded, split at
// punctuation. A word that splits (`e-mail`, `u.s.`, `don't`) is matched as a phrase.
// A query compiles to at most max_clauses conjunctive clauses (its disjunctive normal
// form); each clause is indexed once. Rejected with a matcher::errc (errc.h) and a message
// naming the problem: an
// empty query; an alternative with only exclusions; an alternative whose required words
// are all among the most frequent words (they would match nearly every article); unbalanced
// quotes or parentheses; an operator with nothing to apply to; more than max_words words
// or max_clauses clauses; a word longer than max_word_bytes; nesting deeper than max_depth;
// a malformed `source:` (nothing after it, a byte no host name has, over 253 bytes or a
// label over 63, a bare top-level domain such as `source:com`, a numeric top-level label
// that is not a whole IPv4 address), with its column. A `source:` term counts as one word
// toward max_words and is not subject to max_word_bytes; it is case-insensitive, ignores
// one trailing dot, and title: does not apply to it (`title:(source:a.org rust)` is
// `source:a.org title:rust`). A non-ASCII host is written in its xn-- form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feedplane/matcher/errc.h"
#include "feedplane/matcher/text.h"

namespace feedplane::matcher {

struct query_limits {
  size_t max_words = 16;        // word occurrences in the whole query
  size_t max_clauses = 8;       // conjunctive clauses after expanding OR and NOT
  size_t max_word_bytes = 128;  // one word, case folded
  size_t max_depth = 32;        // nesting of parentheses, NOT, '-' and title: (bounds the parser's
                                // recursion, so a hostile query cannot overflow the stack)
};

// What a term tests: words of the article's text, or its source (source.h).
enum class term_kind : uint8_t { words, source_host, source_id };

// One word (words.size() == 1) or a phrase of consecutive words, each case folded; or, for a
// source term, words[0] is its token (source.h: source_host_token, source_id_token).
struct query_term {
  std::vector<std::string> words;
  bool title = false;  // only the article title counts (never set on a source term)
  term_kind kind = term_kind::words;
  bool operator==(const query_term&) const = default;
};

// The parse tree, kept so that the naive matcher can evaluate the query as written.
struct query_node {
  enum class kind : uint8_t { term, all, any, negate };
  kind type = kind::term;
  query_term term;                   // kind::term
  std::vector<query_node> children;  // all, any: the operands; negate: one child
  bool operator==(const query_node&) const = default;
};

// A conjunction: every `must` term appears and no `must_not` term does.
struct query_clause {
  std::vector<query_term> must;
  std::vector<query_term> must_not;
  bool operator==(const query_clause&) const = default;
};

struct parsed_query {
  query_node tree;
  std::vector<query_clause> clauses;  // the query is the OR of these
  bool operator==(const parsed_query&) const = default;
};

// The words too frequent to subscribe to on their own: by default the 29 most frequent
// words of the workload's English vocabulary, which Cobra also excluded.
const std::vector<std::string>& default_frequent_words();

// Parses queries; holds scratch buffers, so reuse one per thread.
class query_parser {
 public:
  explicit query_parser(query_limits limits = {},
                        const std::vector<std::string>& frequent = default_frequent_words());
  // Parses text into *out. Returns ok(), or the code, the 1-based column where there is
  // one, and a message naming the problem (and the limit, for a limit).
  query_error parse(std::string_view text, parsed_query& out);

  const query_limits& limits() const { return limits_; }
  bool is_frequent(std::string_view word) const;

  // The common query without parsing it: ASCII letters and digits separated by single
  // spaces, no operator, at most max_distinct distinct words, within the limits, not all
  // frequent. Such a text is a valid query whose parse is the conjunction of its words
  // lower-cased. Fills words with its distinct words (views into folded, which holds at
  // least text.size() bytes) and returns how many; returns 0 for any other text, which
  // parse() then accepts or rejects. At most 256 bytes of text are taken.
  size_t split_plain(std::string_view text, char* folded, std::string_view* words,
                     size_t max_distinct) const;
  static constexpr size_t split_plain_max_bytes = 256;

  // Queries of plain words (no operator, quote, parenthesis or scope) take a direct path
  // with the same result. Off: every query takes the general parser (for the tests that
  // compare the two, and the benchmark's peer).
  void set_plain_fast_path(bool on) { plain_fast_path_ = on; }
  // How many parses took it (tests and benchmarks check that it is taken).
  uint64_t plain_parses() const { return plain_parses_; }

 private:
  bool parse_plain(std::string_view text, parsed_query& out);

  query_limits limits_;
  std::vector<std::string> frequent_;  // sorted
  // Byte lengths (< 64) and first bytes of the frequent words: most words are neither, and
  // is_frequent answers them without a search.
  uint64_t frequent_lengths_ = 0;
  uint64_t frequent_firsts_[4] = {};
  token_buffer scratch_;
  std::vector<std::pair<uint32_t, uint32_t>> plain_terms_;  // parse_plain: word ranges
  bool plain_fast_path_ = true;
  uint64_t plain_parses_ = 0;
};

// Renders a parsed query back into the language (terms quoted where needed); for messages
// and tests.
std::string to_string(const query_node& node);

}  // namespace feedplane::matcher
