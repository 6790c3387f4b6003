// Source scopes (matcher/source.h): the tokens of a source, their namespace apart from
// words, and `source:` terms matched by the index exactly as by the naive oracle (which
// applies the host rule directly, without the tokens): hand-picked cases, then randomised
// hosts, ids and queries mixing scopes with every other operator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "feedplane/matcher/index.h"
#include "feedplane/matcher/naive.h"
#include "feedplane/matcher/source.h"

namespace fm = feedplane::matcher;

namespace {

using ids = std::vector<uint32_t>;

std::vector<std::string> tokens(std::string_view host, uint64_t id = 0) {
  fm::source_scope s;
  s.assign(host, id);
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s.hash(i), fm::word_hash(s.token(i)));
    EXPECT_TRUE(fm::is_source_token(s.token(i)));
    out.emplace_back(s.token(i).substr(1));  // without the mark, for readable expectations
  }
  return out;
}

using strings = std::vector<std::string>;

TEST(MatcherSource, TokensPerSuffixWithoutTheBareTopLevelDomain) {
  EXPECT_EQ(tokens("developer.apple.com"), (strings{"hdeveloper.apple.com", "happle.com"}));
  EXPECT_EQ(tokens("Developer.Apple.COM."), (strings{"hdeveloper.apple.com", "happle.com"}));
  EXPECT_EQ(tokens("news.bbc.co.uk"), (strings{"hnews.bbc.co.uk", "hbbc.co.uk", "hco.uk"}));
  EXPECT_EQ(tokens("apple.com", 0x1234), (strings{"happle.com", "i0000000000001234"}));
  EXPECT_EQ(tokens("127.0.0.1"), (strings{"h127.0.0.1"}));  // an address, whole
  EXPECT_EQ(tokens("localhost", 1), (strings{"i0000000000000001"}));
  EXPECT_EQ(tokens("[::1]", 1), (strings{"i0000000000000001"}));
  EXPECT_EQ(tokens("a..b.com"), strings{});
  EXPECT_EQ(tokens(""), strings{});
  EXPECT_EQ(tokens(std::string(254, 'a') + ".com"), strings{});
  EXPECT_EQ(fm::source_host_token("apple.com"), "\x01happle.com");
  EXPECT_EQ(fm::source_id_token(0xfeedfacecafebeefull), "\x01ifeedfacecafebeef");
}

TEST(MatcherSource, UrlHost) {
  EXPECT_EQ(fm::url_host("https://developer.apple.com/news/rss/news.rss"), "developer.apple.com");
  EXPECT_EQ(fm::url_host("http://Feeds.Example.com:8443/x?y#z"), "Feeds.Example.com");
  EXPECT_EQ(fm::url_host("https://user:pw@example.org/"), "example.org");
  EXPECT_EQ(fm::url_host("https://example.org"), "example.org");
  EXPECT_EQ(fm::url_host("https://example.org?q"), "example.org");
  EXPECT_EQ(fm::url_host("http://[::1]:8080/feed"), "[::1]");
  EXPECT_EQ(fm::url_host("example.org/feed"), "");
  EXPECT_EQ(fm::url_host(""), "");
}

struct fixture {
  fm::index idx;
  fm::naive_matcher naive;
  fm::match_result result;
  fm::article art;
  fm::source_scope scope;

  void add(uint32_t id, const std::string& q) {
    ASSERT_EQ(idx.add(id, q).message, "") << q;
    ASSERT_EQ(naive.add(id, q).message, "") << q;
  }
  // Matches an article from host (with source id) in the index and the oracle.
  ids match(std::string_view host, uint64_t id, std::string_view title, std::string_view content) {
    art.assign_html(title, content);
    scope.assign(host, id);
    const fm::article_view v = art.view(scope);
    idx.match(v, result);
    ids expect;
    naive.match(v, expect);
    ids got(result.ids().begin(), result.ids().end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expect) << host << " | " << title << " | " << content;
    return got;
  }
};

TEST(MatcherSource, SubdomainsButNotLookalikes) {
  fixture f;
  f.add(0, "source:apple.com");
  f.add(1, "source:developer.apple.com");
  f.add(2, "source:apple.com ios");
  EXPECT_EQ(f.match("apple.com", 0, "", "ios"), (ids{0, 2}));
  EXPECT_EQ(f.match("developer.apple.com", 0, "", "ios"), (ids{0, 1, 2}));
  EXPECT_EQ(f.match("a.b.developer.apple.com", 0, "", "macos"), (ids{0, 1}));
  EXPECT_EQ(f.match("notapple.com", 0, "", "ios"), (ids{}));
  EXPECT_EQ(f.match("apple.com.evil.example", 0, "", "ios"), (ids{}));
  EXPECT_EQ(f.match("apple.co", 0, "", "ios"), (ids{}));
  EXPECT_EQ(f.match("APPLE.COM.", 0, "", "ios"), (ids{0, 2}));
  // No source known: a scope never matches.
  f.art.assign_text("", "ios apple com");
  f.idx.match(f.art, f.result);
  EXPECT_TRUE(f.result.ids().empty());
}

TEST(MatcherSource, WordsNeverMeetSourceTokens) {
  fixture f;
  f.add(0, "source:apple.com");
  f.add(1, "com");
  f.add(2, "apple.com");  // the phrase "apple com"
  f.add(3, "happle");     // the token's text after its mark, as a word
  f.add(4, "\"apple com\" OR source:example.org");
  // Words that spell the host do not make the article from it...
  EXPECT_EQ(f.match("example.net", 0, "apple.com", "com happle hApple.com"), (ids{1, 2, 3, 4}));
  // ...and an article from it has none of the host's words.
  EXPECT_EQ(f.match("www.apple.com", 0, "Keynote", "nothing else"), (ids{0}));
  EXPECT_EQ(f.match("example.org", 0, "Keynote", "nothing else"), (ids{4}));
  // Control bytes never reach a word: the tokenizer separates at them.
  EXPECT_EQ(f.match("example.net", 0, "\x01happle.com",
                    "\x01"
                    "happle"),
            (ids{1, 3}));
  // A source id is no word either.
  f.add(5, "source:00000000000000ab");
  f.add(6, "00000000000000ab");
  EXPECT_EQ(f.match("example.net", 0xab, "", "x"), (ids{5}));
  EXPECT_EQ(f.match("example.net", 0xac, "", "00000000000000ab"), (ids{6}));
}

TEST(MatcherSource, NegationAndCombination) {
  fixture f;
  f.add(0, "source:developer.apple.com ios -ipados");
  f.add(1, "rust -source:example.com");
  f.add(2, "(source:a.org OR source:b.org) rust");
  f.add(3, "rust NOT (source:a.org OR source:b.org)");
  f.add(4, "title:(source:a.org rust)");
  f.add(5, "source:a.org \"new york\" OR source:0000000000000007");
  f.add(6, "source:127.0.0.1 rust");
  EXPECT_EQ(f.match("developer.apple.com", 0, "iOS 18", "released"), (ids{0}));
  EXPECT_EQ(f.match("developer.apple.com", 0, "iOS 18", "and iPadOS"), (ids{}));
  EXPECT_EQ(f.match("apple.com", 0, "iOS 18", "released"), (ids{}));
  EXPECT_EQ(f.match("blog.example.com", 0, "", "rust"), (ids{3}));
  EXPECT_EQ(f.match("example.net", 0, "", "rust"), (ids{1, 3}));
  EXPECT_EQ(f.match("www.a.org", 0, "rust", ""), (ids{1, 2, 4}));
  EXPECT_EQ(f.match("b.org", 0, "", "rust"), (ids{1, 2}));
  EXPECT_EQ(f.match("a.org", 0, "New York", "rust"), (ids{1, 2, 5}));
  EXPECT_EQ(f.match("c.org", 7, "", "anything"), (ids{5}));
  EXPECT_EQ(f.match("127.0.0.1", 0, "", "rust"), (ids{1, 3, 6}));
  EXPECT_EQ(f.match("10.127.0.0.1", 0, "", "rust"), (ids{1, 3}));
}

TEST(MatcherSource, ScopeCostsNothingToOtherSources) {
  fixture f;
  for (uint32_t id = 0; id < 1000; ++id) f.add(id, "source:s" + std::to_string(id) + ".org rust");
  EXPECT_EQ(f.match("s7.org", 0, "", "rust"), (ids{7}));
  EXPECT_EQ(f.result.stats().postings, 1u);
  f.match("other.org", 0, "", "rust go");
  EXPECT_EQ(f.result.stats().postings, 0u) << "filed under its source, not under rust";
}

TEST(MatcherSource, MatchedWordsLeaveTokensOut) {
  fixture f;
  f.add(0, "source:apple.com ios");
  f.add(1, "source:apple.com");
  f.add(2, "source:apple.com (ios OR macos) -android");
  ASSERT_EQ(f.match("apple.com", 0, "iOS", ""), (ids{0, 1, 2}));
  std::vector<std::string_view> words;
  for (size_t k = 0; k < f.result.ids().size(); ++k) {
    f.idx.matched_words(f.result, k, words);
    const uint32_t id = f.result.ids()[k];
    EXPECT_EQ(words,
              id == 1 ? std::vector<std::string_view>{} : std::vector<std::string_view>{"ios"})
        << id;
  }
}

TEST(MatcherSource, CountingPeerPostsScopes) {
  fm::counting_matcher counting;
  fm::query_parser parser;
  fm::parsed_query q;
  ASSERT_TRUE(parser.parse("source:apple.com ios", q).ok());
  ASSERT_TRUE(counting.add(1, q));
  ASSERT_TRUE(parser.parse("com ios", q).ok());
  ASSERT_TRUE(counting.add(2, q));
  fm::article a;
  fm::source_scope s;
  std::vector<uint32_t> got;
  a.assign_text("", "ios");
  s.assign("developer.apple.com", 0);
  counting.match(a.view(s), got);
  EXPECT_EQ(got, ids{1});
  a.assign_text("", "ios com");
  s.assign("apple.org", 0);
  counting.match(a.view(s), got);
  EXPECT_EQ(got, ids{2});
}

// ---- randomised: index against the oracle ----

const std::vector<std::string> k_hosts = {
    "apple.com", "developer.apple.com", "www.apple.com", "notapple.com",
    "apple.co",  "com.apple.io",        "a.org",         "b.a.org",
    "xa.org",    "127.0.0.1",           "0.0.1",         "1.2",
    "x.1.2",     "localhost",           "[::1]",         "co.uk",
    "bbc.co.uk", "news.bbc.co.uk"};
const std::vector<std::string> k_scopes = {"apple.com",     "developer.apple.com",
                                           "www.apple.com", "notapple.com",
                                           "apple.co",      "a.org",
                                           "b.a.org",       "xa.org",
                                           "127.0.0.1",     "0.0.1",
                                           "1.2",           "co.uk",
                                           "bbc.co.uk",     "Apple.Com."};
const std::vector<std::string> k_words = {"rust", "go", "apple", "com", "org", "ios", "new",
                                          "york", "co", "uk",    "bbc", "0",   "1",   "happle"};
const uint64_t k_ids[] = {0, 1, 2, 0xab, 0x7fffffffffffffffull};

std::string pick(std::mt19937_64& r, const std::vector<std::string>& v) {
  return v[r() % v.size()];
}

std::string hex16(uint64_t id) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, id >>= 4) s[size_t(i)] = k_hex[id & 15];
  return s;
}

std::string random_term(std::mt19937_64& r) {
  switch (r() % 6) {
    case 0:
    case 1:
      return "source:" + pick(r, k_scopes);
    case 2:
      return "source:" + hex16(k_ids[1 + r() % 4]);
    case 3:
      return "\"" + pick(r, k_words) + " " + pick(r, k_words) + "\"";
    default:
      return (r() % 6 == 0 ? "title:" : "") + pick(r, k_words);
  }
}

std::string random_query(std::mt19937_64& r, int depth = 0) {
  const int items = 1 + static_cast<int>(r() % 3);
  std::string q;
  for (int i = 0; i < items; ++i) {
    if (i) q += r() % 4 == 0 ? " OR " : " ";
    if (r() % 6 == 0) q += "-";
    if (depth < 2 && r() % 4 == 0) {
      q += "(" + random_query(r, depth + 1) + ")";
    } else {
      q += random_term(r);
    }
  }
  return q;
}

std::string random_text(std::mt19937_64& r, size_t words) {
  std::string s;
  for (size_t i = 0; i < words; ++i) s += (i ? (r() % 3 ? " " : ".") : "") + pick(r, k_words);
  return s;
}

TEST(MatcherSource, RandomisedAgainstNaive) {
  std::mt19937_64 r(20250311);
  const size_t rounds = std::getenv("FEEDPLANE_LONG_TESTS") ? 400 : 20;
  size_t pairs = 0, matches = 0, scoped = 0;
  for (size_t round = 0; round < rounds; ++round) {
    fm::index idx;
    fm::naive_matcher naive;
    for (uint32_t id = 0; id < 300; ++id) {
      const std::string q = random_query(r);
      const std::string err = idx.add(id, q).message;
      ASSERT_EQ(err, naive.add(id, q).message) << q;
    }
    fm::article a;
    fm::source_scope s;
    fm::match_result result;
    ids expect;
    for (int art = 0; art < 20; ++art) {
      if (art == 10) idx.maintain(1u << 30);
      a.assign_text(random_text(r, r() % 4), random_text(r, r() % 12));
      s.assign(pick(r, k_hosts), k_ids[r() % 5]);
      const fm::article_view v = r() % 10 ? a.view(s) : a.view();
      idx.match(v, result);
      naive.match(v, expect);
      ids got(result.ids().begin(), result.ids().end());
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, expect) << "round " << round << " article " << art << " from " << s.host();
      pairs += naive.size();
      matches += expect.size();
      scoped += v.scope() != nullptr;
    }
  }
  EXPECT_GT(matches, pairs / 50);
  EXPECT_GT(scoped, 0u);
  std::printf("pairs %zu, matches %zu\n", pairs, matches);
}

}  // namespace
