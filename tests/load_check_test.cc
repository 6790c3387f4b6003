// The load harness's reference matcher and delivery check (bench/load): the reference
// against hand-decided cases of the documented query language, and the delivery rules
// (exact when at most k, pushed out only before the oldest served, false items,
// duplicates, an empty run fails).
#include <gtest/gtest.h>

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

checked_subscription sub(std::string query, uint32_t k, std::vector<served_item> served) {
  checked_subscription s;
  s.id = "s";
  s.query = std::move(query);
  s.k = k;
  s.served = std::move(served);
  return s;
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
