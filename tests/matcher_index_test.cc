// The index against the naive oracle: hand-picked cases, then randomised differential
// runs (>= 100,000 subscription/article pairs; FEEDPLANE_LONG_TESTS=1 for 20x more) with
// every operator, ASCII and non-ASCII text, markup, and adds, replaces and removes
// between articles. The plain-counting peer is checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "feedplane/matcher/index.h"
#include "feedplane/matcher/naive.h"
#include "feedplane/workload/workload.h"

namespace fm = feedplane::matcher;

namespace {

std::vector<uint32_t> sorted_ids(const fm::match_result& r) {
  std::vector<uint32_t> v(r.ids().begin(), r.ids().end());
  std::sort(v.begin(), v.end());
  return v;
}

struct fixture {
  fm::index idx;
  fm::naive_matcher naive;
  fm::match_result result;
  fm::article art;

  void add(uint32_t id, const std::string& q) {
    ASSERT_EQ(idx.add(id, q).message, "") << q;
    ASSERT_EQ(naive.add(id, q).message, "") << q;
  }
  std::vector<uint32_t> match(std::string_view title, std::string_view content) {
    art.assign_html(title, content);
    idx.match(art, result);
    std::vector<uint32_t> expect;
    naive.match(art, expect);
    auto got = sorted_ids(result);
    EXPECT_EQ(got, expect) << "title: " << title << "\ncontent: " << content;
    return got;
  }
};

using ids = std::vector<uint32_t>;

TEST(MatcherIndex, Basics) {
  fixture f;
  f.add(0, "rust");
  f.add(1, "rust tokio");
  f.add(2, "\"new york\" times");
  f.add(3, "title:rust");
  f.add(4, "rust -java");
  f.add(5, "(law internet) OR (privacy internet)");
  f.add(6, "c++");
  f.add(7, "e-mail");
  f.add(8, "center");
  EXPECT_EQ(f.match("Rust news", "tokio 1.0 released"), (ids{0, 1, 3, 4}));
  EXPECT_EQ(f.match("", "Java and rust"), (ids{0}));
  EXPECT_EQ(f.match("The New York Times", "privacy and the internet"), (ids{2, 5}));
  EXPECT_EQ(f.match("New", "York times"), (ids{}));  // phrases do not span title and content
  EXPECT_EQ(f.match("", "C++ and E-Mail"), (ids{6, 7}));
  EXPECT_EQ(f.match("", "C and email"), (ids{}));
  EXPECT_EQ(f.match("", "<div class=\"center-wrap\">nothing here</div>"), (ids{}));
  EXPECT_EQ(f.match("", "<script>center()</script><style>.center{}</style>"), (ids{}));
}

TEST(MatcherIndex, PlainTextFastPathAgreesWithTheParser) {
  fixture f;
  f.add(1, "Rust TOKIO rust");
  f.add(2, "rust  tokio");                 // double space: the parser's path
  f.add(3, "a1 a2 a3 a4 a5 a6 a7 a8 a9");  // nine words: a general clause
  EXPECT_EQ(f.idx.add(4, "the").message,
            "only very frequent words: the would match nearly every article; add a rarer word");
  EXPECT_EQ(f.idx.add(4, "a b c d e f g h i j k l m n o p q").message,
            "too many words: 17 (the limit is 16)");
  EXPECT_EQ(f.idx.add(4, "x OR").message, "OR at column 3 has nothing after it");
  // too long a word, fast path or not
  EXPECT_EQ(f.idx.add(4, std::string(200, 'y')).code, fm::errc::word_too_long);
  EXPECT_EQ(f.match("", "tokio and RUST"), (ids{1, 2}));
  EXPECT_EQ(f.match("a9 a8 a7 a6 a5", "a4 a3 a2 a1"), (ids{3}));
}

TEST(MatcherIndex, MatchedWords) {
  fixture f;
  f.add(1, "rust tokio async");
  f.add(2, "rust");
  f.add(3, "\"new york\" OR boston");
  f.match("Rust", "async tokio in new york");
  std::set<std::string> seen;
  std::vector<std::string_view> words;
  for (size_t k = 0; k < f.result.ids().size(); ++k) {
    f.idx.matched_words(f.result, k, words);
    std::string s;
    std::vector<std::string> sorted(words.begin(), words.end());
    std::sort(sorted.begin(), sorted.end());
    for (auto& w : sorted) s += w + " ";
    seen.insert(std::to_string(f.result.ids()[k]) + ": " + s);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"1: async rust tokio ", "2: rust ", "3: new york "}));
}

TEST(MatcherIndex, ReplaceRemoveAndVocabulary) {
  fixture f;
  f.add(1, "alpha beta");
  f.add(2, "alpha");
  EXPECT_EQ(f.idx.vocabulary_size(), 2u);
  EXPECT_EQ(f.match("", "alpha beta"), (ids{1, 2}));
  f.add(1, "gamma");  // replace
  EXPECT_EQ(f.idx.size(), 2u);
  EXPECT_EQ(f.match("", "alpha beta"), (ids{2}));
  EXPECT_EQ(f.idx.vocabulary_size(), 2u);  // beta left the vocabulary
  EXPECT_TRUE(f.idx.remove(2));
  EXPECT_TRUE(f.naive.remove(2));
  EXPECT_FALSE(f.idx.remove(2));
  EXPECT_EQ(f.match("", "alpha gamma"), (ids{1}));
  EXPECT_EQ(f.idx.vocabulary_size(), 1u);
  // A failed replace keeps the old query.
  EXPECT_EQ(f.idx.add(1, "(broken").code, fm::errc::unbalanced_parentheses);
  EXPECT_EQ(f.match("", "gamma"), (ids{1}));
}

TEST(MatcherIndex, FilesUnderTheRarestWordAndRefilesOnDrift) {
  fm::index idx;
  fm::article a;
  // "common" occurs in every article, "rare" in none: the clause goes under "rare".
  for (int i = 0; i < 50; ++i) {
    a.assign_text("", "common words everywhere");
    idx.observe(a);
  }
  EXPECT_GT(idx.frequency("common"), idx.frequency("rare"));
  ASSERT_TRUE(idx.add(1, "common rare").ok());
  fm::match_result r;
  a.assign_text("", "common");
  idx.match(a, r);
  EXPECT_EQ(r.stats().postings, 0u);  // filed under "rare": "common" alone reads nothing
  // Now "rare" becomes very frequent and "common" disappears: maintain() re-files.
  for (int i = 0; i < 400; ++i) {
    a.assign_text("", "rare rare rare");
    idx.observe(a);
  }
  EXPECT_GE(idx.maintain(1000).moved, 1u);
  a.assign_text("", "rare");
  idx.match(a, r);
  EXPECT_EQ(r.stats().postings, 0u);
  a.assign_text("", "common rare");
  idx.match(a, r);
  EXPECT_EQ(sorted_ids(r), (ids{1}));
}

// Subscriptions added before the index saw any article are filed with every word count at
// zero (under their longest word). maintain(), in slices, refreshes the counts and re-files
// them: afterwards the index reads about what an index built after the same articles reads,
// a second pass moves nothing (no churn), and every match still agrees with the oracle.
TEST(MatcherIndex, UpkeepInSlicesFilesAsIfTheCountsHadBeenThereAtAdd) {
  const auto& vocab = feedplane::workload::vocabulary::english();
  feedplane::workload::generator gen(vocab);
  fm::index late, early;
  fm::naive_matcher naive;
  fm::query_parser parser;
  fm::article a;
  std::vector<fm::parsed_query> queries(5000);
  feedplane::workload::rng rq(2);
  for (fm::parsed_query& q : queries) ASSERT_TRUE(parser.parse(gen.subscription(rq), q).ok());
  const auto observe_all = [&](fm::index& idx) {
    feedplane::workload::rng ra(1);
    for (int i = 0; i < 2000; ++i) {
      a.assign_text(gen.title(ra), gen.text(ra, gen.article_length(ra)));
      idx.observe(a);
    }
  };
  for (uint32_t id = 0; id < queries.size(); ++id) {
    late.add(id, queries[id]);
    naive.add(id, queries[id]);
  }
  observe_all(late);
  observe_all(early);
  for (uint32_t id = 0; id < queries.size(); ++id) early.add(id, queries[id]);
  ASSERT_TRUE(early.maintain(SIZE_MAX).pass_done);
  // The same 40 articles each time: the index's work over them, checked against the oracle.
  fm::match_result result;
  std::vector<uint32_t> expect;
  const auto postings = [&](fm::index& idx) {
    feedplane::workload::rng rt(3);
    size_t sum = 0;
    for (int i = 0; i < 40; ++i) {
      a.assign_text(gen.title(rt), gen.text(rt, 61));
      idx.match(a, result);
      naive.match(a, expect);
      EXPECT_EQ(sorted_ids(result), expect);
      sum += result.stats().postings;
    }
    return sum;
  };
  const size_t cold = postings(late), warm = postings(early);
  size_t slices = 0;
  fm::index::maintenance m;
  size_t moved = 0;
  do {
    m = late.maintain(256);
    moved += m.moved;
    ++slices;
    ASSERT_LE(m.examined, 256u + 64u) << "a slice stays near its budget";
  } while (!m.pass_done && slices < 1'000'000);
  EXPECT_GT(slices, 10u);
  EXPECT_GT(moved, 0u);
  const size_t after = postings(late);
  EXPECT_GT(double(cold), 1.2 * double(after)) << "cold " << cold << ", after " << after;
  EXPECT_LE(double(after), 1.1 * double(warm)) << "after " << after << ", warm " << warm;
  // The matches above counted words too (one article in eight): a guard between two words
  // of near-equal counts may change, nothing else.
  m = late.maintain(SIZE_MAX);
  EXPECT_TRUE(m.pass_done);
  EXPECT_EQ(m.moved, 0u);
  EXPECT_LE(m.reguarded, queries.size() / 100);
}

// A restart: the frequencies saved from an index that saw the articles, restored into a
// new one before its adds, file every clause as the old index had them (the same postings
// per article, no upkeep needed); sizes other than the sketch's are refused.
TEST(MatcherIndex, RestoredFrequenciesFileAddsAsTheSavingIndexDid) {
  const auto& vocab = feedplane::workload::vocabulary::english();
  feedplane::workload::generator gen(vocab);
  fm::index before, restored, blank;
  fm::query_parser parser;
  fm::article a;
  std::vector<fm::parsed_query> queries(3000);
  feedplane::workload::rng rq(5);
  for (fm::parsed_query& q : queries) ASSERT_TRUE(parser.parse(gen.subscription(rq), q).ok());
  feedplane::workload::rng ra(6);
  for (int i = 0; i < 1500; ++i) {
    a.assign_text(gen.title(ra), gen.text(ra, gen.article_length(ra)));
    before.observe(a);
  }
  for (uint32_t id = 0; id < queries.size(); ++id) before.add(id, queries[id]);
  const fm::index::frequency_state saved = before.frequencies();
  EXPECT_EQ(saved.counted, 1500u);
  // Another size, or a cursor past the counters: refused, nothing changed.
  const std::vector<uint16_t> short_counters(saved.counters.begin(), saved.counters.end() - 1);
  EXPECT_FALSE(restored.restore_frequencies({short_counters, 0, 1}));
  EXPECT_FALSE(restored.restore_frequencies(
      {saved.counters, static_cast<uint32_t>(saved.counters.size()), 1}));
  EXPECT_EQ(restored.frequencies().counted, 0u);
  // Saved to bytes and back, as the reflector's file does.
  const std::vector<uint16_t> copy(saved.counters.begin(), saved.counters.end());
  ASSERT_TRUE(restored.restore_frequencies({copy, saved.decay_cursor, saved.counted}));
  EXPECT_EQ(restored.frequency("the"), before.frequency("the"));
  for (uint32_t id = 0; id < queries.size(); ++id) {
    restored.add(id, queries[id]);
    blank.add(id, queries[id]);
  }
  fm::match_result result, expect;
  size_t p_before = 0, p_restored = 0, p_blank = 0;
  feedplane::workload::rng rt(7);
  for (int i = 0; i < 40; ++i) {
    a.assign_text(gen.title(rt), gen.text(rt, 61));
    before.match(a, expect);
    restored.match(a, result);
    EXPECT_EQ(sorted_ids(result), sorted_ids(expect));
    p_before += expect.stats().postings;
    p_restored += result.stats().postings;
    blank.match(a, result);
    p_blank += result.stats().postings;
  }
  EXPECT_EQ(p_restored, p_before);
  EXPECT_GT(double(p_blank), 1.2 * double(p_restored)) << "blank " << p_blank;
  // Nothing for the upkeep to do.
  const fm::index::maintenance m = restored.maintain(SIZE_MAX);
  EXPECT_TRUE(m.pass_done);
  EXPECT_LE(m.moved, queries.size() / 100);
}

// The posting block of one word holding hundreds of entries in every class (all filed
// under "pivot", which the index has never seen in an article), grown through many
// reallocations, then thinned by removals and trimmed by maintain(): every entry keeps its
// guard (rarest other word) and rest together, and matched_words() names the right words.
TEST(MatcherIndex, GuardColumnsSurviveGrowthRemovalAndTrim) {
  fm::index idx;
  fm::naive_matcher naive;
  fm::article a;
  for (int i = 0; i < 50; ++i) {
    a.assign_text("", "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9");
    idx.observe(a);  // w0..w9 are frequent: "pivot" is every clause's rarest word
  }
  uint32_t id = 0;
  std::vector<std::string> queries;
  for (int round = 0; round < 60; ++round) {
    for (int k = 0; k < 8; ++k) {  // k other words: class k
      std::string q = "pivot";
      for (int j = 0; j < k; ++j) q += " w" + std::to_string((round + j * 3) % 10);
      queries.push_back(q);
      ASSERT_EQ(idx.add(id, q).message, "") << q;
      ASSERT_EQ(naive.add(id, q).message, "") << q;
      ++id;
    }
  }
  fm::match_result r;
  std::vector<uint32_t> expect;
  std::vector<std::string_view> words;
  auto check = [&](const std::string& text) {
    a.assign_text("", text);
    idx.match(a, r);
    naive.match(a, expect);
    ASSERT_EQ(sorted_ids(r), expect) << text;
    for (size_t k = 0; k < r.ids().size(); ++k) {
      idx.matched_words(r, k, words);
      std::vector<std::string> got(words.begin(), words.end()), want;
      fm::article q;
      q.assign_text("", queries[r.ids()[k]]);
      for (size_t i = 0; i < q.size(); ++i) want.emplace_back(q.word(i));
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      ASSERT_EQ(got, want) << queries[r.ids()[k]];
    }
  };
  check("pivot w0 w3 w6 w9");
  check("pivot w1 w2 w4 w5 w7 w8");
  check("pivot w0 w1 w2 w3 w4 w5 w6 w7 w8 w9");
  check("w0 w1 w2 w3 w4 w5 w6 w7 w8 w9");  // no pivot: nothing
  for (uint32_t i = 0; i < id; i += 3) {
    ASSERT_TRUE(idx.remove(i));
    ASSERT_TRUE(naive.remove(i));
  }
  idx.maintain(size_t{1} << 20);  // trims the thinned block (moves every column)
  check("pivot w0 w3 w6 w9");
  check("pivot w0 w1 w2 w3 w4 w5 w6 w7 w8 w9");
  for (uint32_t i = 0; i < id; i += 3) {  // re-add into the trimmed block
    ASSERT_EQ(idx.add(i, queries[i]).message, "");
    ASSERT_EQ(naive.add(i, queries[i]).message, "");
  }
  check("pivot w2 w5 w8 w1");
  check("pivot w0 w1 w2 w3 w4 w5 w6 w7 w8 w9");
}

// ---- randomised differential test ----

const std::vector<std::string> k_words = {
    "rust",   "go",       "java",    "tokio", "new",          "york",        "times",
    "law",    "internet", "privacy", "c++",   "caf\u00e9",    "stra\u00dfe", "\u4e2d\u6587",
    "e-mail", "u.s.",     "don't",   "the",   "of",           "alpha",       "beta",
    "gamma",  "delta",    "x1",      "42",    "\u00e9t\u00e9"};

std::string pick(std::mt19937_64& r, const std::vector<std::string>& v) {
  return v[r() % v.size()];
}

std::string random_term(std::mt19937_64& r) {
  std::string t;
  const int kind = static_cast<int>(r() % 10);
  if (kind == 0) {
    t = "\"" + pick(r, k_words) + " " + pick(r, k_words) + "\"";
  } else if (kind == 1) {
    t = "\"" + pick(r, k_words) + " " + pick(r, k_words) + " " + pick(r, k_words) + "\"";
  } else {
    t = pick(r, k_words);
    if (r() % 4 == 0) {
      for (auto& c : t) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    }
  }
  if (r() % 7 == 0) t = "title:" + t;
  return t;
}

std::string random_query(std::mt19937_64& r, int depth = 0) {
  const int items = 1 + static_cast<int>(r() % 3);
  std::string q;
  for (int i = 0; i < items; ++i) {
    if (i) {
      const int op = static_cast<int>(r() % 6);
      q += op == 0 ? " OR " : op == 1 ? " AND " : " ";
    }
    const int neg = static_cast<int>(r() % 8);
    if (neg == 0) q += "-";
    if (neg == 1) q += "NOT ";
    if (depth < 2 && r() % 4 == 0) {
      q += "(" + random_query(r, depth + 1) + ")";
    } else {
      q += random_term(r);
    }
  }
  return q;
}

std::string random_text(std::mt19937_64& r, size_t words) {
  static const std::vector<std::string> seps = {" ",   " ",      " ",       ", ",    ". ",
                                                " - ", "'",      " <b>",    "</b> ", " &amp; ",
                                                "<p>", "\u2019", " \u2014 "};
  std::string s;
  for (size_t i = 0; i < words; ++i) {
    if (i) s += pick(r, seps);
    std::string w = pick(r, k_words);
    if (r() % 5 == 0) {
      for (auto& c : w) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    }
    s += w;
  }
  return s;
}

size_t rounds() { return std::getenv("FEEDPLANE_LONG_TESTS") ? 20 : 1; }

TEST(MatcherIndex, RandomisedAgainstNaive) {
  std::mt19937_64 r(20240601);
  size_t pairs = 0, matches = 0, rejected = 0;
  std::vector<std::string_view> words;
  for (size_t round = 0; round < 40 * rounds(); ++round) {
    fm::index idx;
    fm::naive_matcher naive;
    std::vector<uint32_t> live;
    constexpr uint32_t k_subs = 400;
    // Half the rounds hint each batch of adds first (prefetch_adds, as a restart and a bulk
    // creation do), with every kind of query: it must change no result. The adds take the
    // hint's split when they come in its order (a restart, a bulk group): here every other
    // batch, one query in three replaced by another; the other batches come in reverse.
    // The hint's bytes are gone by then (the batch's strings are moved or reversed).
    std::vector<std::string> batch;
    std::vector<std::string_view> views;
    size_t batch_no = 0;
    for (uint32_t id = 0; id < k_subs; ++id) {
      if (batch.empty()) {
        for (int k = 0; k < 16; ++k) batch.push_back(random_query(r));
        ++batch_no;
        if (round % 2 == 0) {
          views.assign(batch.begin(), batch.end());
          idx.prefetch_adds(views.data(), views.size());
          if (batch_no % 2 == 0) {  // in order: popped from the back
            std::reverse(batch.begin(), batch.end());
            for (size_t j = 2; j < batch.size(); j += 3) batch[j] = random_query(r);
          }
        }
      }
      const std::string q = std::move(batch.back());
      batch.pop_back();
      const std::string err = idx.add(id, q).message;
      ASSERT_EQ(err, naive.add(id, q).message) << q;
      rejected += !err.empty();
      if (err.empty()) live.push_back(id);
    }
    fm::article a;
    fm::match_result result;
    std::vector<uint32_t> expect;
    for (int art = 0; art < 12; ++art) {
      // Mutations between articles: replace, remove, re-add.
      for (int m = 0; m < 20 && !live.empty(); ++m) {
        const uint32_t id = live[r() % live.size()];
        if (r() % 2) {
          const std::string q = random_query(r);
          if (idx.add(id, q).ok()) {
            ASSERT_TRUE(naive.add(id, q).ok());
          }
        } else {
          ASSERT_EQ(idx.remove(id), naive.remove(id));
        }
      }
      if (art == 5) idx.maintain(1u << 30);
      a.assign_html(random_text(r, r() % 6), random_text(r, r() % 40));
      idx.match(a, result);
      naive.match(a, expect);
      ASSERT_EQ(sorted_ids(result), expect) << "round " << round << " article " << art;
      pairs += naive.size();
      matches += expect.size();
      for (size_t k = 0; k < result.ids().size(); ++k) {
        idx.matched_words(result, k, words);
        ASSERT_FALSE(words.empty());
        for (auto w : words) {
          bool found = false;
          for (size_t i = 0; i < a.size() && !found; ++i) found = a.word(i) == w;
          ASSERT_TRUE(found) << w;
        }
      }
    }
  }
  EXPECT_GE(pairs, 100000u * rounds());
  EXPECT_GT(matches, pairs / 50);  // the text is dense in query words: many matches
  EXPECT_GT(rejected, 0u);
  std::printf("pairs %zu, matches %zu, rejected queries %zu\n", pairs, matches, rejected);
}

TEST(MatcherIndex, CobraWorkloadAgainstNaiveAndCounting) {
  const auto& vocab = feedplane::workload::vocabulary::english();
  ASSERT_GT(vocab.words.size(), 40000u);
  feedplane::workload::generator gen(vocab);
  feedplane::workload::rng r(5);
  fm::index idx;
  fm::naive_matcher naive;
  fm::counting_matcher counting;
  fm::query_parser parser;
  fm::article a;
  for (int i = 0; i < 2000; ++i) {
    a.assign_text(gen.title(r), gen.text(r, gen.article_length(r)));
    idx.observe(a);
  }
  const uint32_t n = 5000;
  for (uint32_t id = 0; id < n; ++id) {
    fm::parsed_query q;
    ASSERT_TRUE(parser.parse(gen.subscription(r), q).ok());
    idx.add(id, q);
    naive.add(id, q);
    ASSERT_TRUE(counting.add(id, q));
  }
  fm::match_result result;
  std::vector<uint32_t> expect, got;
  size_t matches = 0;
  for (size_t art = 0; art < 40 * rounds(); ++art) {
    a.assign_text(gen.title(r), gen.text(r, art % 2 ? 61 : 637));
    idx.match(a, result);
    naive.match(a, expect);
    counting.match(a, got);
    std::sort(got.begin(), got.end());
    ASSERT_EQ(sorted_ids(result), expect);
    ASSERT_EQ(got, expect);
    matches += expect.size();
  }
  EXPECT_GT(matches, 0u);
}

}  // namespace
