// The crawler's pure parts: OPML import and export, FeedEx's adaptive interval and the
// error back-off, placement (politeness keys from Debian's publicsuffix list, ids, store
// keys and owners).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "feedplane/crawler/opml.h"
#include "feedplane/crawler/placement.h"
#include "feedplane/crawler/records.h"
#include "feedplane/crawler/schedule.h"
#include "feedplane/crawler/source.h"
#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"

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

// An error's retry is bounded by the feed's hints as a success is; the ceiling still caps.
TEST(Schedule, HintsBoundTheErrorBackoff) {
  const interval_bounds b{300, 86'400};
  constexpr int64_t now = int64_t{1'704'326'400} * 1000 + int64_t{10} * 3'600'000;  // Thu 10:00 UTC
  feed_hint_rule rule{};
  EXPECT_EQ(error_retry_ms({}, 1, now, b, &rule), now + 300'000);
  EXPECT_EQ(rule, feed_hint_rule::none);
  EXPECT_EQ(error_retry_ms({.ttl_s = 3600}, 1, now, b, &rule), now + 3'600'000);
  EXPECT_EQ(rule, feed_hint_rule::ttl);
  // A back-off already past the ttl stays.
  EXPECT_EQ(error_retry_ms({.ttl_s = 3600}, 5, now, b, &rule), now + 4'800'000);
  EXPECT_EQ(rule, feed_hint_rule::none);
  // Skipped hours 10 and 11: the retry waits for 12:00.
  EXPECT_EQ(error_retry_ms({.skip_hours = (1u << 10) | (1u << 11)}, 1, now, b, &rule),
            now + int64_t{2} * 3'600'000);
  EXPECT_EQ(rule, feed_hint_rule::skip);
  // Under a 10-minute ceiling a day's ttl waits 10 minutes.
  EXPECT_EQ(error_retry_ms({.ttl_s = 86'400}, 1, now, {300, 600}, &rule), now + 600'000);
  EXPECT_EQ(rule, feed_hint_rule::ttl);
}

// The spread: within 10% either way and the bounds, deterministic, and it dissolves a wave.
TEST(Schedule, SpreadIntervalStaysNearAndDissolvesWaves) {
  const interval_bounds b{300, 86'400};
  int64_t lo = INT64_MAX, hi = 0;
  for (uint64_t id = 1; id <= 10'000; ++id) {
    const int64_t v = spread_interval_ms(3600, id, 7, false, b);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ASSERT_EQ(v, spread_interval_ms(3600, id, 7, false, b));
  }
  EXPECT_GE(lo, 3'240'000);
  EXPECT_LT(lo, 3'250'000);
  EXPECT_LT(hi, 3'960'000);
  EXPECT_GT(hi, 3'950'000);
  // The bounds hold: at the floor and the ceiling only one side spreads.
  for (uint64_t id = 1; id <= 1000; ++id) {
    EXPECT_GE(spread_interval_ms(300, id, 1, false, b), 300'000);
    EXPECT_LE(spread_interval_ms(86'400, id, 1, false, b), 86'400'000);
  }
  // After a wave: 10-100% of the interval, within the bounds.
  lo = INT64_MAX, hi = 0;
  for (uint64_t id = 1; id <= 10'000; ++id) {
    const int64_t v = spread_interval_ms(3600, id, 1, true, b);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, 360'000);
  EXPECT_LT(lo, 361'000);
  EXPECT_GT(hi, 3'590'000);
  EXPECT_LT(hi, 3'600'000);
  // 10,000 feeds fetched in the same second (an import), every 600 s: after their first
  // spread and 10 rounds more their fetches fall evenly over the interval (each tenth of it
  // holds 8-12% of them); unspread, all would stay in one tenth.
  const interval_bounds fast{60, 86'400};
  std::vector<int64_t> t(10'000, 0);
  for (uint64_t round = 1; round <= 11; ++round) {
    for (size_t i = 0; i < t.size(); ++i)
      t[i] += spread_interval_ms(600, i + 1, round, round == 1, fast);
  }
  std::array<int, 10> tenth{};
  for (int64_t v : t) ++tenth[size_t(v % 600'000 / 60'000)];
  for (int n : tenth) {
    EXPECT_GT(n, 800);
    EXPECT_LT(n, 1200);
  }
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

// ---- crawl records (version 6: the match weight; 2 to 5 still load) ----

crawl_record sample_record() {
  crawl_record r;
  r.etag = "\"v1\"";
  r.last_modified = "Mon, 06 May 2024 07:08:09 GMT";
  r.document_hash = 0x1234;
  r.interval_s = 600;
  r.next_fetch_ms = 1'700'000'000'000;
  r.next_reason = 3;
  r.last_fetch_ms = 1'699'999'000'000;
  r.last_status = 200;
  r.last_bytes = 7600;
  r.last_new = 2;
  r.consecutive_errors = 1;
  r.last_error = "timeout";
  r.fetches = 9;
  r.articles = 40;
  r.moved_to = "https://new.example/feed";
  r.moved_count = 2;
  r.history.observe(1'699'990'000, history_params());
  r.hints = feed::fetch_hints{.ttl_s = 3600, .skip_days = 3};
  for (uint64_t i = 1; i <= 5; ++i)
    r.seen.push_back(feed::seen_record::from_hashes(i * 0x9e3779b97f4a7c15ull, i, i * 77));
  r.seen_limit = 20;
  r.matched.add_articles(3);
  r.matched.add_matches(12);
  r.matched.decay(3600, 86'400);
  return r;
}

TEST(Records, Version6RoundTrips) {
  const crawl_record r = sample_record();
  std::string bytes;
  encode(r, bytes);
  EXPECT_EQ(bytes[0], 6);
  crawl_record back;
  ASSERT_EQ(decode(bytes, back), record_errc::ok);
  EXPECT_EQ(back.etag, r.etag);
  EXPECT_EQ(back.last_modified, r.last_modified);
  EXPECT_EQ(back.document_hash, r.document_hash);
  EXPECT_EQ(back.next_fetch_ms, r.next_fetch_ms);
  EXPECT_EQ(back.last_error, r.last_error);
  EXPECT_EQ(back.moved_to, r.moved_to);
  EXPECT_EQ(back.hints, r.hints);
  EXPECT_EQ(back.seen, r.seen);
  EXPECT_EQ(back.seen_limit, 20u);
  EXPECT_FALSE(back.seen_converted);
  EXPECT_EQ(back.matched, r.matched);  // bit for bit
  EXPECT_FLOAT_EQ(back.matched.weight(), 5);
  // 16 bytes per seen record (version 4 also took 16 per identity, and twice the records).
  std::string empty_seen;
  crawl_record e = r;
  e.seen.clear();
  encode(e, empty_seen);
  EXPECT_EQ(bytes.size() - empty_seen.size(), 5u * 16);
}

TEST(Records, OlderVersionsLoadAndConvert) {
  crawl_record r = sample_record();
  // Version 5: no match weight (8 bytes before the seen limit and count): weight 1.
  std::string v6;
  encode(r, v6);
  const size_t weight_at = v6.size() - 4 - 4 - r.seen.size() * 16 - 8;
  std::string v5 = v6.substr(0, weight_at) + v6.substr(weight_at + 8);
  v5[0] = 5;
  crawl_record b5;
  ASSERT_EQ(decode(v5, b5), record_errc::ok);
  EXPECT_EQ(b5.matched, match_weight());
  EXPECT_EQ(b5.matched.weight(), 1.0f);
  EXPECT_FALSE(b5.seen_converted);
  EXPECT_EQ(b5.seen, r.seen);
  EXPECT_EQ(b5.seen_limit, 20u);
  EXPECT_EQ(b5.hints, r.hints);
  EXPECT_EQ(b5.etag, r.etag);
  const std::vector<std::pair<uint64_t, uint64_t>> pairs = {{0xabcdef0123456789ull, 11}, {0, 12}};
  std::string v4;
  encode_v4(r, pairs, v4);
  crawl_record back;
  ASSERT_EQ(decode(v4, back), record_errc::ok);
  EXPECT_TRUE(back.seen_converted);
  EXPECT_EQ(back.hints, r.hints);
  ASSERT_EQ(back.seen.size(), 2u);
  EXPECT_EQ(back.seen[0], feed::seen_record::from_hashes(0xabcdef0123456789ull, 0, 11));
  EXPECT_EQ(back.seen[1].identity(), 1u);  // identity 0 was stored as 1
  // Version 3: no publisher's hints (13 bytes before the seen count).
  const size_t seen_at = v4.size() - 4 - pairs.size() * 16;
  std::string v3 = v4.substr(0, seen_at - 13) + v4.substr(seen_at);
  v3[0] = 3;
  crawl_record b3;
  ASSERT_EQ(decode(v3, b3), record_errc::ok);
  EXPECT_TRUE(b3.hints.get().empty());
  EXPECT_EQ(b3.history.since_s(), r.history.since_s());
  EXPECT_EQ(b3.seen, back.seen);
  // Version 2: no posting history either.
  std::string v2 =
      v3.substr(0, seen_at - 13 - posting_history::k_encoded_size) + v3.substr(seen_at - 13);
  v2[0] = 2;
  crawl_record b2;
  ASSERT_EQ(decode(v2, b2), record_errc::ok);
  EXPECT_TRUE(b2.history.empty());
  EXPECT_EQ(b2.seen, back.seen);
  EXPECT_EQ(b2.etag, r.etag);
}

TEST(Records, TruncatedOrGarbledRecordsAreNamedErrors) {
  std::string bytes;
  encode(sample_record(), bytes);
  crawl_record out;
  EXPECT_EQ(decode("", out), record_errc::empty);
  for (size_t n = 1; n < bytes.size(); ++n)
    EXPECT_NE(decode(std::string_view(bytes).substr(0, n), out), record_errc::ok) << n;
  EXPECT_EQ(decode(bytes + "x", out), record_errc::trailing_bytes);
  std::string v9 = bytes;
  v9[0] = 9;
  EXPECT_EQ(decode(v9, out), record_errc::unknown_version);
  // A seen count far beyond the bytes there.
  std::string huge = bytes.substr(0, bytes.size() - 5 * 16 - 4);
  huge += std::string("\xff\xff\xff\x7f", 4);
  EXPECT_EQ(decode(huge, out), record_errc::bad_field);
  // A string length past the end.
  std::string longstr = bytes;
  longstr[1] = char(0xff);
  longstr[2] = char(0xff);
  EXPECT_EQ(decode(longstr, out), record_errc::truncated);
  // A weight that is no number, or negative.
  const size_t weight_at = bytes.size() - 4 - 4 - size_t{5} * 16 - 8;
  for (const uint32_t bad : {0x7fc00000u, 0x7f800000u, 0xbf800000u}) {  // NaN, inf, -1
    std::string b = bytes;
    for (size_t i = 0; i < 4; ++i) b[weight_at + i] = char(uint8_t(bad >> (8 * i)));
    EXPECT_EQ(decode(b, out), record_errc::bad_field) << std::hex << bad;
  }
  // A zero identity fingerprint.
  std::string zero = bytes;
  const size_t last = zero.size() - 16;
  for (size_t i = 0; i < 6; ++i) zero[last + i] = 0;
  EXPECT_EQ(decode(zero, out), record_errc::bad_field);
  // Every single-byte corruption decodes or is refused, never crashes.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = char(b[i] ^ 0x5a);
    (void)decode(b, out);
  }
  source_record sr;
  EXPECT_EQ(decode("", sr), record_errc::empty);
  EXPECT_EQ(decode(std::string("\x01\x05\x00\x00\x00"
                               "ab",
                               7),
                   sr),
            record_errc::truncated);
}

TEST(Records, ASourceRestoredFromItsRecordRedeliversNothing) {
  feed::parser p;
  feed::feed f;
  std::string doc = "<rss version=\"2.0\"><channel><title>F</title>";
  for (int i = 0; i < 12; ++i)
    doc += "<item><guid>g" + std::to_string(i) + "</guid><link>http://x/" + std::to_string(i) +
           "</link><title>t</title></item>";
  doc += "</channel></rss>";
  ASSERT_EQ(p.parse(doc, {}, f), feed::parse_errc::ok);
  source before;
  before.text.set(source_text::url, "http://x/feed");
  before.text.set(source_text::etag, "\"e\"");
  EXPECT_FALSE(before.state.same_document(doc));
  std::vector<feed::verdict> v;
  before.state.classify(f, v);
  before.rec.interval_s = 900;
  before.rec.matched.add_articles(2);
  before.rec.matched.add_matches(6);
  crawl_record r;
  before.to_record(r);
  std::string bytes;
  encode(r, bytes);
  crawl_record loaded;
  ASSERT_EQ(decode(bytes, loaded), record_errc::ok);
  source after;  // a new process
  after.from_record(loaded);
  EXPECT_EQ(after.text.get(source_text::etag), "\"e\"");
  EXPECT_EQ(after.rec.interval_s, 900u);
  EXPECT_FLOAT_EQ(after.weight(), 4);  // 1 + 6 matches over 2 articles
  EXPECT_EQ(after.state.seen().capacity(), 24u);
  EXPECT_TRUE(after.state.same_document(doc));
  after.state.classify(f, v);
  for (feed::verdict x : v) EXPECT_EQ(x, feed::verdict::seen);
  // The same through a version 4 record (identity and link alias as separate pairs).
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  std::vector<feed::entry_key> keys;
  feed::compute_keys(f, keys);
  for (const auto& k : keys) {
    pairs.emplace_back(k.identity, k.content);
    pairs.emplace_back(k.link_alias, k.content);
  }
  std::string v4;
  encode_v4(r, pairs, v4);
  ASSERT_EQ(decode(v4, loaded), record_errc::ok);
  source old;
  old.from_record(loaded);
  EXPECT_EQ(old.state.seen().size(), 24u);
  old.state.classify(f, v);
  for (feed::verdict x : v) EXPECT_EQ(x, feed::verdict::seen);
  EXPECT_EQ(old.state.seen().size(), 24u);  // 12 entries' records, 12 converted link aliases
  EXPECT_EQ(old.state.seen().capacity(), 24u);
}

}  // namespace
}  // namespace feedplane::crawler
