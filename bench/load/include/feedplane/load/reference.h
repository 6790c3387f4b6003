// The load harness's reference matcher: decides whether an article matches a query from
// the truth log alone, written apart from matcher/ (neither its tokenizer, its parser nor
// its naive matcher), so that the delivery check does not share a bug with what it checks.
// It is simple on purpose: a query is evaluated against an article directly, by walking
// its tree. Only which articles are tried is narrowed (cover(): an article that has none
// of a query's cover words cannot match it), so a 10M-subscription run's check takes
// minutes instead of days; the decision itself stays the direct evaluation.
//
// The query language is the one the README documents: words (a space or AND means
// both), OR, NOT and a leading '-', parentheses, "phrases", and title: before a word,
// a phrase or a parenthesised group. Words are folded to lower case (ASCII) and split at
// every byte that is not a letter or a digit (bytes >= 0x80 count as letters), so `e-mail`
// is the phrase "e mail", as in article text.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace feedplane::load {

// Words of the truth log as small integers (queries resolve against the same table; a
// query word no article has is `absent`).
class ref_vocab {
 public:
  static constexpr uint32_t absent = 0xffffffffu;
  uint32_t add(std::string_view w);
  uint32_t find(std::string_view w) const;
  size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

// An article as the reference sees it: its title words and body words in order, and a
// bitmap of each for direct membership tests.
struct ref_doc {
  std::vector<uint32_t> title, body;
  std::vector<uint64_t> title_bits, all_bits;
  bool has(uint32_t w, bool title_only) const {
    const auto& b = title_only ? title_bits : all_bits;
    return w / 64 < b.size() && ((b[w / 64] >> (w % 64)) & 1) != 0;
  }
  static ref_doc make(ref_vocab& v, std::string_view title, std::string_view body);
};

// Splits text into folded words (the rule above).
std::vector<std::string> ref_words(std::string_view text);

class ref_query {
 public:
  // Parses q against v; on error returns null and sets *error.
  static std::unique_ptr<ref_query> parse(std::string_view q, const ref_vocab& v,
                                          std::string* error);
  bool matches(const ref_doc& d) const;
  // Sets *out to words of which every article this query matches has at least one (title
  // or body), and returns true; false when there is no such set (a query that is only a
  // negation). An empty set means it matches nothing. cost(w) ranks a word (its postings'
  // length), so a conjunction keeps its cheapest conjunct's words.
  bool cover(std::vector<uint32_t>* out, const std::function<size_t(uint32_t)>& cost) const;
  ref_query();
  ~ref_query();

  struct node;

 private:
  std::unique_ptr<node> root_;
};

}  // namespace feedplane::load
