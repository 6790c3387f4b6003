// The reference matchers.
//
// naive_matcher evaluates every subscription's parse tree, as written, against the
// article's word list: linear in subscriptions and article length, obviously right, and
// the oracle the index is tested against. It tests a `source:` term against the article's
// source host and id by their rule (source.h), not through the tokens the index uses.
//
// counting_matcher is Fabret et al.'s basic counting algorithm, the peer the index is
// measured against: every word of every plain conjunction is posted, and an article
// increments a counter per posting; a clause matches when its counter reaches its
// length. It takes plain conjunctions only (the Cobra workload); a `source:` term is one
// more posted token (source.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/matcher/article.h"
#include "feedplane/matcher/query.h"

namespace feedplane::matcher {

class naive_matcher {
 public:
  explicit naive_matcher(query_limits limits = {},
                         const std::vector<std::string>& frequent = default_frequent_words())
      : parser_(limits, frequent) {}

  // Adds or replaces subscription id; returns ok() or the parse error.
  query_error add(uint32_t id, std::string_view query);
  void add(uint32_t id, const parsed_query& q) { subs_[id] = q.tree; }
  bool remove(uint32_t id) { return subs_.erase(id) != 0; }
  size_t size() const { return subs_.size(); }

  // Ids of the matching subscriptions, ascending.
  void match(const article_view& a, std::vector<uint32_t>& out) const;
  // Whether one parse tree matches the article.
  static bool matches(const query_node& node, const article_view& a);

 private:
  query_parser parser_;
  std::map<uint32_t, query_node> subs_;
};

class counting_matcher {
 public:
  // Adds subscription id; false (and nothing added) unless q is one conjunction of
  // single words with no title: or exclusions. Ids must be added once each.
  bool add(uint32_t id, const parsed_query& q);
  // Ids of the matching subscriptions, in no particular order.
  void match(const article_view& a, std::vector<uint32_t>& out);
  size_t memory_bytes() const;
  size_t last_postings() const { return last_postings_; }

 private:
  uint32_t find(uint64_t h) const;
  uint32_t intern(uint64_t h);

  std::vector<uint64_t> slots_ = std::vector<uint64_t>(1024, 0);  // hash, 0 empty
  std::vector<uint32_t> slot_word_ = std::vector<uint32_t>(1024, 0);
  size_t words_ = 0;
  std::vector<std::vector<uint32_t>> postings_;  // word -> clause numbers
  std::vector<uint32_t> clause_id_;
  std::vector<uint8_t> clause_need_;
  std::vector<uint8_t> counter_;   // per clause, zero between articles
  std::vector<uint32_t> touched_;  // clauses whose counter is non-zero
  std::vector<uint64_t> seen_;     // bit per word: already counted for this article
  std::vector<uint32_t> distinct_;
  size_t last_postings_ = 0;
};

}  // namespace feedplane::matcher
