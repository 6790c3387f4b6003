// The crawler's pure parts: OPML import and export, FeedEx's adaptive interval and the
// error back-off, placement (politeness keys from Debian's publicsuffix list, ids, store
// keys and owners).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "feedplane/crawler/opml.h"
#include "feedplane/crawler/placement.h"
#include "feedplane/crawler/schedule.h"

namespace feedplane::crawler {
namespace {

TEST(Opml, NestedOutlinesDuplicatesAndInvalid) {
  const std::string doc = R"(<?xml version="1.0" encoding="UTF-8"?>
<opml version="1.0">
  <head><title>subs</title></head>
  <body>
    <outline text="Tech">
      <outline text="A" title="Feed A" type="rss" xmlUrl="https://A.example.com/feed.xml"/>
      <outline text="Deeper">
        <outline text="B" type="rss" xmlurl="http://b.example.org/rss"/>
      </outline>
    </outline>
    <outline text="A again" xmlUrl="https://a.example.com/feed.xml"/>
    <outline text="mail" xmlUrl="mailto:someone@example.com"/>
    <outline text="broken" xmlUrl="not a url"/>
    <outline text="just a link" htmlUrl="https://c.example.com/"/>
  </body>
</opml>)";
  opml_import out;
  std::string err;
  ASSERT_TRUE(parse_opml(doc, out, &err)) << err;
  ASSERT_EQ(out.feeds.size(), 2u);
  EXPECT_EQ(out.feeds[0].url, "https://a.example.com/feed.xml");  // host lower-cased
  EXPECT_EQ(out.feeds[0].title, "Feed A");
  EXPECT_EQ(out.feeds[1].url, "http://b.example.org/rss");
  EXPECT_EQ(out.feeds[1].title, "B");  // text when there is no title
  EXPECT_EQ(out.duplicates, 1u);
  ASSERT_EQ(out.invalid.size(), 2u);
  EXPECT_EQ(out.invalid[0], "mailto:someone@example.com");
  EXPECT_EQ(out.invalid[1], "not a url");
}

TEST(Opml, Opml2AndRefusals) {
  opml_import out;
  std::string err;
  EXPECT_TRUE(parse_opml(R"(<opml version="2.0"><head/><body>
    <outline type="rss" text="x" xmlUrl="http://x.example/f"/></body></opml>)",
                         out, &err));
  EXPECT_EQ(out.feeds.size(), 1u);
  EXPECT_FALSE(parse_opml("<rss version=\"2.0\"/>", out, &err));
  EXPECT_NE(err.find("<opml>"), std::string::npos);
  EXPECT_FALSE(parse_opml("this is not xml <", out, &err));
  EXPECT_FALSE(parse_opml("", out, &err));
}

TEST(Opml, ExportReadsBack) {
  const std::vector<opml_feed> feeds = {{"https://a.example.com/feed.xml", "A & B <x>"},
                                        {"http://b.example.org/rss?x=1&y=2", ""}};
  const std::string text = render_opml(feeds, "feedplane sources");
  opml_import back;
  std::string err;
  ASSERT_TRUE(parse_opml(text, back, &err)) << err << "\n" << text;
  ASSERT_EQ(back.feeds.size(), 2u);
  EXPECT_EQ(back.feeds[0].url, feeds[0].url);
  EXPECT_EQ(back.feeds[0].title, feeds[0].title);
  EXPECT_EQ(back.feeds[1].url, feeds[1].url);
  EXPECT_EQ(back.feeds[1].title, feeds[1].url);  // an untitled feed is labelled by its URL
}

TEST(Schedule, AdaptiveIntervalHalvesDoublesAndClamps) {
  const interval_bounds b{300, 86'400};
  EXPECT_EQ(initial_interval(b), 3600u);
  EXPECT_EQ(initial_interval({5, 10}), 10u);
  EXPECT_EQ(initial_interval({7200, 86'400}), 7200u);
  // Mostly new (at least half): halve.
  EXPECT_EQ(adapt_interval(3600, 10, 10, b), 1800u);
  EXPECT_EQ(adapt_interval(3600, 5, 10, b), 1800u);
  // In between: keep.
  EXPECT_EQ(adapt_interval(3600, 4, 10, b), 3600u);
  EXPECT_EQ(adapt_interval(3600, 3, 10, b), 3600u);
  // Mostly old (under a quarter), or nothing new at all (304, same document): double.
  EXPECT_EQ(adapt_interval(3600, 2, 10, b), 7200u);
  EXPECT_EQ(adapt_interval(3600, 0, 10, b), 7200u);
  EXPECT_EQ(adapt_interval(3600, 0, 0, b), 7200u);
  // Clamped to the floor and the ceiling.
  EXPECT_EQ(adapt_interval(400, 10, 10, b), 300u);
  EXPECT_EQ(adapt_interval(60'000, 0, 0, b), 86'400u);
  // A ceiling below the floor is the floor.
  EXPECT_EQ(adapt_interval(100, 0, 0, {50, 10}), 50u);
  // Repeated silence walks to the ceiling and stays.
  uint32_t t = initial_interval(b);
  for (int i = 0; i < 20; ++i) t = adapt_interval(t, 0, 0, b);
  EXPECT_EQ(t, 86'400u);
}

TEST(Schedule, ErrorBackoffGrowsToTheCeiling) {
  const interval_bounds b{300, 86'400};
  EXPECT_EQ(error_backoff(1, b), 300u);
  EXPECT_EQ(error_backoff(2, b), 600u);
  EXPECT_EQ(error_backoff(3, b), 1200u);
  EXPECT_EQ(error_backoff(9, b), 76'800u);
  EXPECT_EQ(error_backoff(10, b), 86'400u);
  EXPECT_EQ(error_backoff(1000, b), 86'400u);
}

TEST(Placement, PolitenessKeyIsTheRegistrableDomain) {
  EXPECT_EQ(politeness_key("www.example.com"), "example.com");
  EXPECT_EQ(politeness_key("a.b.example.com"), "example.com");
  EXPECT_EQ(politeness_key("news.bbc.co.uk"), "bbc.co.uk");
  EXPECT_EQ(politeness_key("Feeds.Example.COM."), "example.com");
  // Private suffixes of the list: each blog is its own domain.
  EXPECT_EQ(politeness_key("alice.github.io"), "alice.github.io");
  EXPECT_EQ(politeness_key("bob.blogspot.com"), "bob.blogspot.com");
  // No registrable domain: the host itself.
  EXPECT_EQ(politeness_key("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(politeness_key("localhost"), "localhost");
  EXPECT_EQ(politeness_key("co.uk"), "co.uk");
}

TEST(Placement, IdsKeysAndOwners) {
  const uint64_t a = source_id("example.com", "https://www.example.com/a.xml");
  const uint64_t b = source_id("example.com", "https://feeds.example.com/b.xml");
  const uint64_t c = source_id("example.org", "https://example.org/c.xml");
  EXPECT_EQ(a >> 32, b >> 32);  // one domain, one shard whatever the shard count
  EXPECT_NE(a, b);
  EXPECT_NE(a >> 32, c >> 32);
  for (uint32_t shards = 1; shards <= 64; ++shards) {
    EXPECT_EQ(owner_of(a, shards), owner_of(b, shards));
    EXPECT_LT(owner_of(c, shards), shards);
  }
  // A collision probe keeps the domain half.
  EXPECT_EQ(next_id_candidate(a) >> 32, a >> 32);
  EXPECT_EQ(next_id_candidate(0x12345678ffffffffull), 0x1234567800000000ull);
  // Store keys: 8 bytes, big-endian (id order is key order), and back.
  const std::string k = store_key(a);
  ASSERT_EQ(k.size(), 8u);
  uint64_t back = 0;
  ASSERT_TRUE(parse_store_key(k, &back));
  EXPECT_EQ(back, a);
  EXPECT_LT(store_key(1), store_key(256));
  EXPECT_FALSE(parse_store_key("short", &back));
  // API ids: 16 hex digits.
  EXPECT_EQ(format_id(0xab), "00000000000000ab");
  ASSERT_TRUE(parse_id(format_id(a), &back));
  EXPECT_EQ(back, a);
  ASSERT_TRUE(parse_id("00000000000000AB", &back));
  EXPECT_EQ(back, 0xabu);
  EXPECT_FALSE(parse_id("ab", &back));
  EXPECT_FALSE(parse_id("00000000000000xg", &back));
}

TEST(Placement, DomainsSpreadOverShards) {
  // 1000 domains over 8 shards: every shard gets some (hash spread, not a timing claim).
  std::set<uint32_t> used;
  for (int i = 0; i < 1000; ++i) {
    const std::string d = "d" + std::to_string(i) + ".example";
    used.insert(owner_of(source_id(politeness_key(d), "http://" + d + "/"), 8));
  }
  EXPECT_EQ(used.size(), 8u);
}

}  // namespace
}  // namespace feedplane::crawler

namespace feedplane::crawler {
namespace {

TEST(Hints, RetryAfterSecondsOrDate) {
  EXPECT_EQ(retry_after_s("120", 1000), 120);
  EXPECT_EQ(retry_after_s(" 0 ", 1000), 0);
  EXPECT_EQ(retry_after_s("", 1000), -1);
  EXPECT_EQ(retry_after_s("soon", 1000), -1);
  EXPECT_EQ(retry_after_s("-5", 1000), -1);
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777
  EXPECT_EQ(retry_after_s("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 30), 30);
  EXPECT_EQ(retry_after_s("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 30), 0);
}

TEST(Hints, FreshnessFromCacheControlThenExpires) {
  EXPECT_EQ(freshness_s("max-age=600", "", 0), 600);
  EXPECT_EQ(freshness_s("public, Max-Age=\"60\", must-revalidate", "", 0), 60);
  EXPECT_EQ(freshness_s("no-cache, max-age=600", "", 0), 0);
  EXPECT_EQ(freshness_s("no-store", "Sun, 06 Nov 1994 08:49:37 GMT", 0), 0);
  EXPECT_EQ(freshness_s("", "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 90), 90);
  EXPECT_EQ(freshness_s("", "0", 100), 0);  // an invalid Expires means already stale
  EXPECT_EQ(freshness_s("max-age=30", "Sun, 06 Nov 1994 08:49:37 GMT", 0), 30);
  EXPECT_EQ(freshness_s("private", "", 0), -1);
  EXPECT_EQ(freshness_s("", "", 0), -1);
}

// The feed's own hints bound the next fetch: ttl and the syndication module's period push it
// later, skipHours / skipDays move it to the first allowed UTC hour, the ceiling caps both.
TEST(Hints, FeedHintsBoundTheNextFetch) {
  constexpr int64_t thu = int64_t{1'704'326'400} * 1000;  // Thursday 2024-01-04 00:00 UTC
  constexpr int64_t hour = 3'600'000, day = 24 * hour;
  const int64_t fetched = thu + 10 * hour + 30 * 60'000;  // 10:30
  feed_hint_rule rule{};
  auto bound = [&](const feed::fetch_hints& h, int64_t at, uint32_t ceiling_s = 86'400) {
    return bound_by_feed_hints(h, fetched, at, ceiling_s, &rule);
  };
  // No hints: unchanged.
  EXPECT_EQ(bound({}, fetched + 300'000), fetched + 300'000);
  EXPECT_EQ(rule, feed_hint_rule::none);
  // ttl: not sooner than ttl after the fetch; a later fetch stays.
  EXPECT_EQ(bound({.ttl_s = 3600}, fetched + 300'000), fetched + hour);
  EXPECT_EQ(rule, feed_hint_rule::ttl);
  EXPECT_EQ(bound({.ttl_s = 3600}, fetched + 2 * hour), fetched + 2 * hour);
  EXPECT_EQ(rule, feed_hint_rule::none);
  // The longer of ttl and the update period wins, and is named.
  EXPECT_EQ(bound({.ttl_s = 600, .update_s = 7200}, fetched + 60'000), fetched + 2 * hour);
  EXPECT_EQ(rule, feed_hint_rule::update_period);
  // Capped by the ceiling: a week's ttl under a day's ceiling is a day; a later fetch that
  // the schedule chose itself (the allocation can go past the ceiling) is kept.
  EXPECT_EQ(bound({.ttl_s = 7 * 86'400}, fetched + 300'000), fetched + day);
  EXPECT_EQ(rule, feed_hint_rule::ttl);
  EXPECT_EQ(bound({.ttl_s = 7 * 86'400}, fetched + 3 * day), fetched + 3 * day);
  EXPECT_EQ(rule, feed_hint_rule::none);
  // skipHours (UTC): 10:45 inside 10 and 11 -> 12:00; outside -> unchanged.
  const feed::fetch_hints night_and_noon{.skip_hours = (1u << 10) | (1u << 11) | (1u << 23)};
  EXPECT_EQ(bound(night_and_noon, fetched + 15 * 60'000), thu + 12 * hour);
  EXPECT_EQ(rule, feed_hint_rule::skip);
  EXPECT_EQ(bound(night_and_noon, thu + 13 * hour), thu + 13 * hour);
  EXPECT_EQ(rule, feed_hint_rule::none);
  // 23:10 skipped -> 00:00 the next day (a day boundary).
  EXPECT_EQ(bound(night_and_noon, thu + 23 * hour + 600'000), thu + day);
  // skipDays (0 = Sunday): Saturday and Sunday skipped; Saturday 09:00 -> Monday 00:00.
  const feed::fetch_hints weekend{.skip_days = (1u << 6) | (1u << 0)};
  EXPECT_EQ(bound(weekend, thu + 2 * day + 9 * hour, 7 * 86'400), thu + 4 * day);
  EXPECT_EQ(rule, feed_hint_rule::skip);
  EXPECT_EQ(bound(weekend, thu + 9 * hour), thu + 9 * hour);  // a Thursday is fine
  // ttl first, then the skip: the ttl lands at 11:30, inside 11 -> 12:00.
  feed::fetch_hints both = night_and_noon;
  both.ttl_s = 3600;
  EXPECT_EQ(bound(both, fetched + 60'000), thu + 12 * hour);
  EXPECT_EQ(rule, feed_hint_rule::skip);
  // The ceiling bounds a skip too: with an hour's ceiling, 11:30 at the latest.
  EXPECT_EQ(bound(night_and_noon, fetched + 60'000, 3600), fetched + hour);
  EXPECT_EQ(rule, feed_hint_rule::skip);
  // Hints that skip everything (never kept by the parser; a corrupt record): bounded work,
  // the ceiling decides.
  EXPECT_EQ(bound({.skip_hours = (1u << 24) - 1}, fetched + 60'000, 7200), fetched + 2 * hour);
  EXPECT_EQ(bound({.skip_hours = ~0u, .skip_days = 0xff}, fetched, 60), fetched + 60'000);
}

TEST(Placement, SharedPlatformsShareOneKey) {
  const std::vector<std::string> shared = {"github.io", "tumblr.com"};
  EXPECT_EQ(politeness_key("alice.github.io", shared), "github.io");
  EXPECT_EQ(politeness_key("bob.github.io", shared), "github.io");
  EXPECT_EQ(politeness_key("github.io", shared), "github.io");
  EXPECT_EQ(politeness_key("x.tumblr.com", shared), "tumblr.com");
  EXPECT_EQ(politeness_key("notgithub.io", shared), "notgithub.io");
  EXPECT_EQ(politeness_key("www.example.com", shared), "example.com");
}

}  // namespace
}  // namespace feedplane::crawler
