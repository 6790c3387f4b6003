// The reflector's pure parts: feed tokens and placement, last-k lists with updated entries,
// entity tags, and the rendered documents (well-formed XML and JSON whatever the text,
// hostile text escaped, matched words marked).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <pugixml.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/matcher/query.h"
#include "feedplane/reflector/last_k.h"
#include "feedplane/reflector/render.h"
#include "feedplane/reflector/render_cache.h"
#include "feedplane/reflector/seq_list.h"
#include "feedplane/reflector/token.h"

namespace rf = feedplane::reflector;

namespace {

TEST(reflector_token, round_trips_and_is_url_safe) {
  std::mt19937_64 rng(7);
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    rf::feed_token t;
    t.partition = uint32_t(rng() % rf::partitions);
    t.slot = i % 3 == 0 ? uint32_t(rng()) : uint32_t(rng() % 1000);
    for (auto& b : t.random_bits) b = uint8_t(rng());
    const std::string s = rf::encode_token(t);
    ASSERT_EQ(s.size(), rf::token_text_size);
    for (char c : s) {
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << s;
    }
    rf::feed_token back;
    ASSERT_TRUE(rf::decode_token(s, &back)) << s;
    EXPECT_EQ(back, t);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 2000u);
}

TEST(reflector_token, refuses_what_it_did_not_make) {
  rf::feed_token t;
  t.partition = 5;
  t.slot = 9;
  t.random_bits.fill(0xAB);
  const std::string good = rf::encode_token(t);
  rf::feed_token out;
  EXPECT_FALSE(rf::decode_token("", &out));
  EXPECT_FALSE(rf::decode_token(good.substr(1), &out));
  EXPECT_FALSE(rf::decode_token(good + "A", &out));
  std::string bad = good;
  bad[3] = '+';  // standard base64, not URL-safe
  EXPECT_FALSE(rf::decode_token(bad, &out));
  bad = good;
  bad[3] = '.';
  EXPECT_FALSE(rf::decode_token(bad, &out));
  // Every byte value in a middle position: exactly the 64 of the URL-safe alphabet decode
  // (bytes above 0x7F included, which are negative as a char), each to its own bits.
  int accepted = 0;
  for (int c = 0; c < 256; ++c) {
    bad = good;
    bad[3] = char(c);
    const bool in_alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '_';
    EXPECT_EQ(rf::decode_token(bad, &out), in_alphabet) << c;
    if (in_alphabet) {
      ++accepted;
      EXPECT_EQ(rf::encode_token(out), bad);  // one spelling per token: the same text back
    }
  }
  EXPECT_EQ(accepted, 64);
  // The last character carries 2 bits of data and 4 zero bits: any other is another text
  // for the same bytes, refused so that one token has one spelling.
  bad = good;
  bad.back() = 'B';  // low bits 0001
  EXPECT_FALSE(rf::decode_token(bad, &out)) << bad;
  // A partition beyond the fixed number.
  t.partition = rf::partitions;
  EXPECT_FALSE(rf::decode_token(rf::encode_token(t), &out));
}

TEST(reflector_token, partitions_are_fixed_and_spread) {
  // The partition of an id must never change (tokens and placement depend on it).
  EXPECT_EQ(rf::partition_of("s_abc"), rf::partition_of("s_abc"));
  std::vector<int> count(rf::partitions, 0);
  for (int i = 0; i < 100000; ++i) ++count[rf::partition_of("s_" + std::to_string(i))];
  for (uint32_t p = 0; p < rf::partitions; ++p) {
    EXPECT_GT(count[p], 40) << p;  // mean 97.7
    EXPECT_LT(count[p], 170) << p;
  }
  EXPECT_EQ(rf::shard_of_partition(1023, 4), 3u);
  EXPECT_EQ(rf::shard_of_partition(1023, 1), 0u);
}

TEST(reflector_token, hex_and_random_bytes) {
  const uint8_t b[] = {0xfb, 0xff, 0x00, 0x10};
  EXPECT_EQ(rf::hex(b, 4), "fbff0010");
  uint8_t r1[32] = {}, r2[32] = {};
  ASSERT_TRUE(rf::random_bytes(r1, sizeof(r1)));
  ASSERT_TRUE(rf::random_bytes(r2, sizeof(r2)));
  EXPECT_NE(rf::hex(r1, 32), rf::hex(r2, 32));
}

TEST(reflector_token, random_bytes_never_repeat_across_pool_refills_and_threads) {
  // Tokens of 22 bytes, as subscriptions draw them: well past several 4 KiB refills, on two
  // threads at once (each with its own pool), every draw distinct.
  std::set<std::string> seen;
  std::vector<std::string> other(2000);
  std::thread t([&] {
    for (auto& s : other) {
      uint8_t b[rf::token_bytes];
      ASSERT_TRUE(rf::random_bytes(b, sizeof(b)));
      s = rf::hex(b, sizeof(b));
    }
  });
  for (int i = 0; i < 2000; ++i) {
    uint8_t b[rf::token_bytes];
    ASSERT_TRUE(rf::random_bytes(b, sizeof(b)));
    EXPECT_TRUE(seen.insert(rf::hex(b, sizeof(b))).second) << i;
  }
  t.join();
  for (const auto& s : other) EXPECT_TRUE(seen.insert(s).second);
  uint8_t big[10000];  // more than a pool: drawn straight from OpenSSL
  ASSERT_TRUE(rf::random_bytes(big, sizeof(big)));
  EXPECT_NE(rf::hex(big, 16), rf::hex(big + 16, 16));
}

TEST(reflector_token, time_ordered_ids_sort_by_creation_and_stay_unique) {
  const uint64_t t0 = 1'795'000'000'000;  // 2026-11-18, in Unix milliseconds
  std::vector<std::string> ids;
  std::set<std::string> distinct;
  for (uint64_t ms :
       {t0, t0 + 1, t0 + 63, t0 + 64, t0 + 4096, t0 + 86'400'000, (uint64_t(1) << 48) - 1}) {
    for (int i = 0; i < 50; ++i) {
      const std::string id = rf::time_ordered_id('s', ms);
      ASSERT_EQ(id.size(), 21u) << id;
      EXPECT_EQ(id.substr(0, 2), "s_");
      for (char c : id.substr(2)) EXPECT_TRUE(std::isalnum(uint8_t(c)) || c == '-' || c == '_');
      EXPECT_TRUE(distinct.insert(id).second) << id;
      ids.push_back(id);
    }
  }
  // Within a millisecond the order is random; across milliseconds it is the creation order.
  for (size_t i = 50; i < ids.size(); ++i) EXPECT_LT(ids[(i / 50 - 1) * 50 + i % 50], ids[i]) << i;
  EXPECT_EQ(rf::time_ordered_id('a', 0).substr(0, 10), "a_--------");
}

TEST(reflector_token, a_forked_child_draws_other_bytes_than_its_parent) {
  uint8_t b[16];
  ASSERT_TRUE(rf::random_bytes(b, sizeof(b)));  // the pool is filled and partly used
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    uint8_t c[16] = {};
    const bool ok = rf::random_bytes(c, sizeof(c));
    const ssize_t w = write(fds[1], c, sizeof(c));
    _exit(ok && w == ssize_t(sizeof(c)) ? 0 : 1);
  }
  close(fds[1]);
  uint8_t child[16] = {};
  const ssize_t r = read(fds[0], child, sizeof(child));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(r, ssize_t(sizeof(child)));
  uint8_t parent[16];
  ASSERT_TRUE(rf::random_bytes(parent, sizeof(parent)));
  EXPECT_NE(rf::hex(child, 16), rf::hex(parent, 16)) << "the child drew its parent's next bytes";
}

std::vector<uint64_t> items(const rf::last_k& l) { return l.items(); }

TEST(reflector_last_k, keeps_the_newest_k) {
  rf::last_k l;
  for (uint64_t s = 1; s <= 5; ++s) EXPECT_TRUE(l.insert(s, 0, 3));
  EXPECT_EQ(items(l), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_FALSE(l.insert(5, 0, 3)) << "a replayed match changes nothing";
  EXPECT_FALSE(l.insert(4, 0, 3));
  EXPECT_EQ(items(l), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_TRUE(l.trim(1));
  EXPECT_EQ(items(l), (std::vector<uint64_t>{5}));
  EXPECT_FALSE(l.trim(1));
}

TEST(reflector_last_k, an_update_swaps_in_place) {
  rf::last_k l;
  l.insert(10, 0, 4);
  l.insert(11, 0, 4);
  l.insert(12, 0, 4);
  EXPECT_TRUE(l.insert(20, 11, 4));  // 20 is the new version of 11
  EXPECT_EQ(items(l), (std::vector<uint64_t>{10, 20, 12}));
  EXPECT_FALSE(l.insert(20, 11, 4)) << "replayed: already there";
  // An update of an entry that already left the list is a new entry.
  EXPECT_TRUE(l.insert(21, 3, 4));
  EXPECT_EQ(items(l), (std::vector<uint64_t>{10, 20, 12, 21}));
  // The list never holds one entry twice whatever the order of updates.
  EXPECT_TRUE(l.insert(22, 20, 4));
  EXPECT_TRUE(l.insert(23, 22, 4));
  EXPECT_EQ(items(l), (std::vector<uint64_t>{10, 23, 12, 21}));
}

TEST(reflector_last_k, matches_a_model_list_under_any_order) {
  // The ring against the plainest list: a vector that appends, replaces in place, skips
  // duplicates and erases from the front. Out-of-order sequences (backfill, replays),
  // updates of present and departed entries, and k changing both ways.
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    rf::last_k l;
    std::vector<uint64_t> model;
    uint64_t highest = 0;  // the highest sequence the list took
    uint32_t k = 1 + uint32_t(rng() % 12);
    for (int step = 0; step < 300; ++step) {
      if (rng() % 40 == 0) {
        k = 1 + uint32_t(rng() % 12);
        const bool dropped = model.size() > k;
        if (dropped) model.erase(model.begin(), model.end() - k);
        EXPECT_EQ(l.trim(k), dropped);
        continue;
      }
      const uint64_t seq = 1 + rng() % 400;
      const uint64_t replaces = rng() % 3 == 0 ? 1 + rng() % 400 : 0;
      bool changed = true;
      if (std::find(model.begin(), model.end(), seq) != model.end()) {
        changed = false;
      } else if (auto it = std::find(model.begin(), model.end(), replaces);
                 replaces != 0 && it != model.end()) {
        *it = seq;
        highest = std::max(highest, seq);
      } else if (seq <= highest && model.size() == k) {
        // Out of order into a full list: the newest k by sequence stay.
        auto low = std::min_element(model.begin(), model.end());
        if (seq < *low) {
          changed = false;
        } else {
          *low = seq;
        }
      } else {
        model.push_back(seq);
        if (model.size() > k) model.erase(model.begin());
        highest = std::max(highest, seq);
      }
      ASSERT_EQ(l.insert(seq, replaces, k), changed) << round << " " << step;
      ASSERT_EQ(items(l), model) << round << " " << step;
    }
  }
}

TEST(reflector_etag, is_stable_and_names_every_input) {
  const std::vector<uint64_t> a = {1, 2, 3};
  const std::string base = rf::feed_etag(a, 1, "t", 10, rf::feed_format::rss);
  EXPECT_EQ(base, rf::feed_etag(a, 1, "t", 10, rf::feed_format::rss));
  EXPECT_EQ(base.front(), '"');
  EXPECT_EQ(base.back(), '"');
  std::set<std::string> tags = {base};
  tags.insert(rf::feed_etag(std::vector<uint64_t>{1, 2, 4}, 1, "t", 10, rf::feed_format::rss));
  tags.insert(rf::feed_etag(std::vector<uint64_t>{2, 1, 3}, 1, "t", 10, rf::feed_format::rss));
  tags.insert(rf::feed_etag(std::vector<uint64_t>{1, 2}, 1, "t", 10, rf::feed_format::rss));
  tags.insert(rf::feed_etag(a, 2, "t", 10, rf::feed_format::rss));
  tags.insert(rf::feed_etag(a, 1, "u", 10, rf::feed_format::rss));
  tags.insert(rf::feed_etag(a, 1, "t", 11, rf::feed_format::rss));
  tags.insert(rf::feed_etag(a, 1, "t", 10, rf::feed_format::atom));
  tags.insert(rf::feed_etag(a, 1, "t", 10, rf::feed_format::json));
  EXPECT_EQ(tags.size(), 9u);
}

TEST(reflector_render, escapes_markup_and_marks_words) {
  std::string out;
  rf::append_escaped("<script>alert('x')</script> & \"q\"", out);
  EXPECT_EQ(out, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  out.clear();
  rf::append_escaped(std::string("a\x01"
                                 "b\xff"
                                 "c\xEF\xBF\xBF"
                                 "d",
                                 9),
                     out);
  EXPECT_EQ(out,
            "ab\xEF\xBF\xBD"
            "cd")
      << "control characters and U+FFFF dropped, bad UTF-8 replaced";
  out.clear();
  rf::append_marked("Rust 1.0 and <b>Tokio</b>, rusty", {"rust", "tokio"}, out);
  EXPECT_EQ(out, "<mark>Rust</mark> 1.0 and &lt;b&gt;<mark>Tokio</mark>&lt;/b&gt;, rusty");
  out.clear();
  rf::append_marked("STRASSE straße", {"strasse"}, out);
  EXPECT_EQ(out, "<mark>STRASSE</mark> <mark>straße</mark>");
}

TEST(reflector_render, positive_words_skip_negations) {
  feedplane::matcher::query_parser p;
  feedplane::matcher::parsed_query q;
  ASSERT_TRUE(p.parse("rust (tokio OR \"async std\") -java NOT kotlin title:ferris", q).ok());
  EXPECT_EQ(rf::positive_words(q.tree),
            (std::vector<std::string>{"rust", "tokio", "async", "std", "ferris"}));
  EXPECT_EQ(rf::words_in({"rust", "tokio", "java"}, {"Tokio rocks", "RUST"}),
            (std::vector<std::string>{"rust", "tokio"}));
}

// Hostile text in every field, rendered in each format: the documents stay well-formed,
// the text comes back as text, and nothing becomes markup.
TEST(reflector_render, documents_are_well_formed_whatever_the_text) {
  const std::string evil = "<script>alert(1)</script>]]><![CDATA[ & &amp; \"'\x01\xff";
  rf::feed_item it;
  it.seq = 42;
  it.title = evil;
  it.link = "https://example.com/a?x=1&y=<2>";
  it.guid = "tag:example.com,2026:1";
  it.source_url = "https://example.com/feed.xml";
  const std::string summary = evil + " rust";
  it.summary = summary;
  it.published = 1700000000;
  it.matched = {"rust"};
  rf::feed_item plain;
  plain.seq = 41;
  plain.title = "plain";
  plain.guid = "1234";  // not an IRI: Atom uses the link or a URN instead
  std::vector<rf::feed_item> items = {it, plain};
  rf::feed_info info;
  info.title = evil;
  info.id = "s_x";
  info.self_path = "/f/TOKEN";
  info.query = "rust";
  info.updated = 1700000001;
  for (auto f : {rf::feed_format::rss, rf::feed_format::atom}) {
    std::string doc;
    rf::render_feed(f, info, items, doc);
    pugi::xml_document x;
    const auto res = x.load_buffer(doc.data(), doc.size());
    ASSERT_TRUE(res) << res.description() << "\n" << doc;
    EXPECT_EQ(doc.find("<script"), std::string::npos) << doc;
    if (f == rf::feed_format::rss) {
      auto item = x.child("rss").child("channel").child("item");
      EXPECT_EQ(std::string(item.child_value("guid")), "tag:example.com,2026:1");
      EXPECT_EQ(std::string(item.child_value("link")), "https://example.com/a?x=1&y=<2>");
      const std::string desc = item.child_value("description");
      EXPECT_NE(desc.find("&lt;script&gt;"), std::string::npos) << desc;
      EXPECT_NE(desc.find("<mark>rust</mark>"), std::string::npos) << desc;
    } else {
      auto feed = x.child("feed");
      auto e = feed.child("entry");
      EXPECT_EQ(std::string(e.child_value("id")), "tag:example.com,2026:1");
      EXPECT_EQ(std::string(e.next_sibling("entry").child_value("id")), "urn:feedplane:article:41");
    }
  }
  std::string doc;
  rf::render_feed(rf::feed_format::json, info, items, doc);
  simdjson::dom::parser p;
  simdjson::dom::element root;
  ASSERT_EQ(p.parse(doc).get(root), simdjson::SUCCESS) << doc;
  EXPECT_EQ(std::string_view(root["version"]), "https://jsonfeed.org/version/1.1");
  simdjson::dom::array arr = root["items"];
  ASSERT_EQ(arr.size(), 2u);
  simdjson::dom::element first = arr.at(0);
  EXPECT_EQ(std::string_view(first["id"]), "tag:example.com,2026:1");
  EXPECT_EQ(std::string_view(first["url"]), "https://example.com/a?x=1&y=<2>");
  EXPECT_EQ(int64_t(first["_feedplane"]["seq"]), 42);
  EXPECT_EQ(std::string_view(first["_feedplane"]["source"]), "https://example.com/feed.xml");
  EXPECT_EQ(std::string_view(first["_feedplane"]["matched"].at(0)), "rust");
  EXPECT_EQ(std::string_view(first["date_published"]), "2023-11-14T22:13:20Z");
  EXPECT_EQ(std::string_view(arr.at(1)["id"]), "1234") << "the original guid, as given";
}

// The render cache: current only at the subscription's version; within its budget; a
// polled (used) feed outlives one that was not; the feed just put is never evicted.
TEST(reflector_render_cache, versions_budget_and_clock) {
  using feedplane::reflector::render_cache;
  render_cache<std::string> c(1000);
  auto feed = [](char ch) { return std::make_shared<const std::string>(100, ch); };
  c.put(1, 7, feed('a'), 300);
  ASSERT_NE(c.get(1, 7), nullptr);
  EXPECT_EQ(*c.get(1, 7), std::string(100, 'a'));
  EXPECT_EQ(c.get(1, 8), nullptr) << "a changed subscription renders again";
  EXPECT_EQ(c.get(2, 7), nullptr);
  c.put(1, 8, feed('b'), 300);  // replaced in place: counted once
  EXPECT_EQ(c.bytes(), 300u);
  EXPECT_EQ(c.get(1, 7), nullptr);
  c.put(2, 1, feed('c'), 300);
  c.put(3, 1, feed('d'), 300);
  EXPECT_EQ(c.bytes(), 900u);
  EXPECT_EQ(c.evictions(), 0u);
  ASSERT_NE(c.get(1, 8), nullptr);  // polled: used
  c.put(4, 1, feed('e'), 300);      // over budget: one goes, not 1 (used) nor 4 (just put)
  EXPECT_LE(c.bytes(), 1000u);
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_NE(c.get(1, 8), nullptr);
  EXPECT_NE(c.get(4, 1), nullptr);
  EXPECT_EQ(int(c.get(2, 1) != nullptr) + int(c.get(3, 1) != nullptr), 1);
  // One pass over many feeds stays within the budget.
  for (uint64_t k = 10; k < 10'000; ++k) {
    c.put(k, 1, feed('f'), 250);
    ASSERT_LE(c.bytes(), 1000u);
  }
  EXPECT_LE(c.size(), 4u);
  // A feed bigger than the budget is still kept, alone, until the next put.
  c.put(99'999, 1, feed('g'), 5000);
  EXPECT_NE(c.get(99'999, 1), nullptr);
  EXPECT_EQ(c.size(), 1u);
}

}  // namespace

// The recent index's postings against a std::deque doing the same: appends of ascending
// sequences, trims of the front at random points (the window's start moving), the newest
// first iteration that a search reads, and the compaction that keeps memory to what is live.
TEST(reflector_seq_list, behaves_as_a_deque_trimmed_from_the_front) {
  std::mt19937_64 rng(7);
  rf::seq_list l;
  std::deque<uint64_t> model;
  uint64_t next = 1, first = 1;
  size_t most_kept = 0;
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 3 != 0) {
      next += 1 + rng() % 5;
      l.push_back(next);
      model.push_back(next);
    } else {
      first = std::min(next + 1, first + rng() % 12);
      size_t dropped = 0;
      while (!model.empty() && model.front() < first) {
        model.pop_front();
        ++dropped;
      }
      ASSERT_EQ(l.trim_below(first), dropped) << step;
      // Compacted: what it keeps is at most twice the live postings (or 16 dead ones).
      ASSERT_LE(l.v.size(), std::max<size_t>(2 * l.size(), l.size() + 16)) << step;
    }
    ASSERT_EQ(l.size(), model.size()) << step;
    ASSERT_EQ(l.empty(), model.empty()) << step;
    most_kept = std::max(most_kept, l.size());
    if (step % 97 == 0) {
      const std::vector<uint64_t> got(l.rbegin(), l.rend());
      const std::vector<uint64_t> want(model.rbegin(), model.rend());
      ASSERT_EQ(got, want) << step;
    }
  }
  EXPECT_GT(most_kept, 20u);  // the trims left lists long enough to compact
  EXPECT_EQ(l.trim_below(UINT64_MAX), model.size());
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(l.v.empty());
}
