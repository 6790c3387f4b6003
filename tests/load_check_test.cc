// The load harness's reference matcher and delivery check (bench/load): the reference
// against hand-decided cases of the documented query language, and the delivery rules
// (exact when at most k, pushed out only before the oldest served, false items,
// duplicates, an empty run fails).
#include <gtest/gtest.h>

#include <functional>

#include "feedplane/load/delivery.h"
#include "feedplane/load/reference.h"

namespace feedplane::load {
namespace {

bool match(std::string_view q, std::string_view title, std::string_view body) {
  ref_vocab v;
  const ref_doc d = ref_doc::make(v, title, body);
  std::string err;
  auto rq = ref_query::parse(q, v, &err);
  EXPECT_NE(rq, nullptr) << q << ": " << err;
  return rq != nullptr && rq->matches(d);
}

TEST(LoadReference, WordsAndOperators) {
  EXPECT_TRUE(match("rust tokio", "Rust news", "tokio 1.0 is out"));
  EXPECT_FALSE(match("rust tokio", "Rust news", "async is out"));
  EXPECT_TRUE(match("rust AND tokio", "", "RUST, Tokio!"));
  EXPECT_TRUE(match("copyright OR patent", "", "a patent troll"));
  EXPECT_FALSE(match("copyright OR patent", "", "a trademark"));
  EXPECT_TRUE(match("rust -java", "", "rust only"));
  EXPECT_FALSE(match("rust -java", "", "rust and java"));
  EXPECT_FALSE(match("rust NOT java", "", "rust and java"));
  EXPECT_FALSE(match("rust -(java OR kotlin)", "", "rust kotlin"));
  EXPECT_TRUE(match("(law internet) OR (privacy internet)", "", "internet privacy"));
  EXPECT_FALSE(match("(law internet) OR (privacy internet)", "", "internet"));
}

TEST(LoadReference, PhrasesTitleAndSplitting) {
  EXPECT_TRUE(match("\"new york\"", "", "in New York today"));
  EXPECT_FALSE(match("\"new york\"", "", "york is new"));
  EXPECT_TRUE(match("e-mail", "", "send an e mail"));
  EXPECT_FALSE(match("e-mail", "", "mail e"));
  EXPECT_TRUE(match("title:rust", "Rust 2.0", "nothing"));
  EXPECT_FALSE(match("title:rust", "News", "rust in the body"));
  EXPECT_TRUE(match("title:(rust OR go)", "Go 2", "x"));
  EXPECT_FALSE(match("title:\"new york\"", "York", "new york"));
  EXPECT_FALSE(match("absentword", "title", "body"));
}

TEST(LoadReference, RefusesMalformed) {
  ref_vocab v;
  std::string err;
  EXPECT_EQ(ref_query::parse("(rust", v, &err), nullptr);
  EXPECT_EQ(ref_query::parse("\"open", v, &err), nullptr);
  EXPECT_EQ(ref_query::parse("", v, &err), nullptr);
}

// cover(): every article a query matches holds one of its cover words, over random
// articles and random queries of every operator (the check only tries those articles).
TEST(LoadReference, CoverHoldsEveryMatch) {
  const std::vector<std::string> words = {"alpha", "beta", "gamma", "delta", "eps", "zeta"};
  uint64_t x = 12345;
  const auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % n;
  };
  ref_vocab v;
  std::vector<ref_doc> docs;
  for (int i = 0; i < 60; ++i) {
    std::string title, body;
    for (uint64_t j = next(3); j > 0; --j) title += words[next(words.size())] + " ";
    for (uint64_t j = next(6); j > 0; --j) body += words[next(words.size())] + " ";
    docs.push_back(ref_doc::make(v, title, body));
  }
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    const uint64_t kind = depth > 2 ? next(3) : next(8);
    switch (kind) {
      case 0:
      case 1:
        return words[next(words.size())];
      case 2:
        return next(4) == 0
                   ? "absentword"
                   : "\"" + words[next(words.size())] + " " + words[next(words.size())] + "\"";
      case 3:
        return gen(depth + 1) + " " + gen(depth + 1);
      case 4:
        return "(" + gen(depth + 1) + " OR " + gen(depth + 1) + ")";
      case 5:
        return gen(depth + 1) + " -" + words[next(words.size())];
      case 6:
        return "title:(" + gen(depth + 1) + ")";
      default:
        return "NOT " + gen(depth + 1);
    }
  };
  const auto cost = [](uint32_t w) { return size_t(w % 3); };
  int with_cover = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string q = gen(0);
    std::string err;
    auto rq = ref_query::parse(q, v, &err);
    ASSERT_NE(rq, nullptr) << q << ": " << err;
    std::vector<uint32_t> cover;
    if (!rq->cover(&cover, cost)) continue;
    ++with_cover;
    for (const ref_doc& d : docs) {
      if (!rq->matches(d)) continue;
      bool held = false;
      for (uint32_t w : cover) held = held || d.has(w, false);
      EXPECT_TRUE(held) << q;
    }
  }
  EXPECT_GT(with_cover, 1000);  // most generated queries have a positive term
}

truth_entry entry(std::string guid, double published, std::string text, bool initial = false) {
  truth_entry e;
  e.feed = "http://a.example/feed";
  e.guid = std::move(guid);
  e.link = "http://a.example/" + e.guid;
  e.published = published;
  e.text = std::move(text);
  e.initial = initial;
  return e;
}

struct served {
  std::string id;
  uint64_t seq;
};

struct sub_spec {
  std::string query;
  uint32_t k;
  std::vector<served> items;
};

sub_spec sub(std::string query, uint32_t k, std::vector<served> items) {
  return {std::move(query), k, std::move(items)};
}

// The check as the driver runs it: served ids resolved in the truth index (unknown ones
// kept by name) and sequences given per truth entry.
delivery_result check_delivery(const std::vector<truth_entry>& t,
                               const std::vector<sub_spec>& specs,
                               const std::vector<served>& known) {
  const truth_index idx(t);
  std::vector<uint64_t> seq(idx.size(), 0);
  std::vector<checked_subscription> subs;
  for (const sub_spec& sp : specs) {
    checked_subscription s;
    s.id = "s";
    s.query = sp.query;
    s.k = sp.k;
    for (const served& it : sp.items) {
      const uint32_t e = idx.find(it.id);
      if (e == truth_index::unknown) {
        s.unknown.push_back(it.id);
        continue;
      }
      s.served.push_back({e, it.seq});
      seq[e] = it.seq;
    }
    subs.push_back(std::move(s));
  }
  for (const served& it : known) {
    const uint32_t e = idx.find(it.id);
    if (e != truth_index::unknown) seq[e] = it.seq;
  }
  return feedplane::load::check_delivery(idx, subs, seq);
}

TEST(LoadDelivery, ExactWhenAtMostK) {
  const std::vector<truth_entry> t = {entry("g0", 1, "apple", true), entry("g1", 10, "apple pie"),
                                      entry("g2", 20, "pear"), entry("g3", 30, "apple tart")};
  auto r = check_delivery(t, {sub("apple", 10, {{"g3", 3}, {"g1", 1}})}, {});
  EXPECT_EQ(r.expected, 2u);
  EXPECT_EQ(r.delivered, 2u);
  EXPECT_TRUE(r.ok()) << r.line();
  EXPECT_EQ(r.line(),
            "delivery: 2 expected, 2 delivered, 0 pushed out, 0 unexplained, 0 duplicates");

  r = check_delivery(t, {sub("apple", 10, {{"g3", 3}})}, {});
  EXPECT_EQ(r.unexplained, 1u);
  EXPECT_FALSE(r.ok());
}

TEST(LoadDelivery, PushedOutOnlyBeforeTheOldestServed) {
  const std::vector<truth_entry> t = {entry("g1", 10, "apple"), entry("g2", 20, "apple"),
                                      entry("g3", 30, "apple")};
  // k = 2: g1 (seq 1) is older than the oldest served (seq 2): pushed out.
  auto r = check_delivery(t, {sub("apple", 2, {{"g3", 3}, {"g2", 2}})}, {{"g1", 1}});
  EXPECT_EQ(r.pushed_out, 1u);
  EXPECT_TRUE(r.ok()) << r.line();
  // Missing g2 (seq 2) while g1 (seq 1) is served: unexplained.
  r = check_delivery(t, {sub("apple", 2, {{"g3", 3}, {"g1", 1}})}, {{"g2", 2}});
  EXPECT_EQ(r.unexplained, 1u);
  EXPECT_FALSE(r.ok());
}

TEST(LoadDelivery, FalseItemsDuplicatesAndEmptyRuns) {
  const std::vector<truth_entry> t = {entry("g1", 10, "apple"), entry("g2", 20, "pear")};
  auto r = check_delivery(t, {sub("apple", 10, {{"g1", 1}, {"g2", 2}})}, {});
  EXPECT_EQ(r.false_items, 1u);
  EXPECT_FALSE(r.ok());
  r = check_delivery(t, {sub("apple", 10, {{"g1", 1}, {"g1", 1}})}, {});
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_FALSE(r.ok());
  r = check_delivery(t, {sub("banana", 10, {})}, {});
  EXPECT_EQ(r.expected, 0u);
  EXPECT_FALSE(r.ok());  // nothing expected: the run proves nothing
}

}  // namespace
}  // namespace feedplane::load
