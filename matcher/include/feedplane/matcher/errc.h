// Every way the matcher refuses a query, each a stable name the caller can count and show
// (the pattern of net's fetch_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::matcher {

enum class errc : uint8_t {
  ok = 0,
  empty_query,             // no words at all
  unbalanced_quotes,       // a '"' never closed
  empty_phrase,            // ""
  unbalanced_parentheses,  // a '(' never closed or a ')' never opened
  empty_parentheses,       // ()
  dangling_operator,       // OR, AND, NOT, '-' or title: with nothing to apply to
  too_deep,                // nesting deeper than query_limits::max_depth
  word_too_long,           // a word longer than query_limits::max_word_bytes
  too_many_words,          // more than query_limits::max_words words
  too_many_clauses,        // more than query_limits::max_clauses clauses once expanded
  never_matches,           // every alternative excludes a word it requires
  only_exclusions,         // an alternative requires no word
  only_frequent_words,     // an alternative requires only very frequent words
  bad_source,              // a malformed source: term (empty, bad character, too long, a TLD)
};

// "too_deep" etc.: stable names for JSON output, metrics and logs.
std::string_view errc_name(errc e);
// One sentence on the kind of problem; query_error::message says what exactly.
std::string_view errc_message(errc e);

// Why a query was refused: the code, where, and a message naming the problem and the limit.
struct query_error {
  errc code = errc::ok;
  size_t column = 0;    // 1-based column the problem is at; 0 when it is the whole query
  std::string message;  // e.g. "too many words: 17 (the limit is 16)"; empty when ok

  bool ok() const { return code == errc::ok; }
};

}  // namespace feedplane::matcher
