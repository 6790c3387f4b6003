// Entry identity and de-duplication: Cobra's whole-document hash, FeedEx identities, updates
// flagged on content change, and a seen set bounded by the feed's own size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"

using namespace feedplane::feed;

namespace {

struct item {
  std::string guid, link, title, pub, description;
};

std::string rss(const std::vector<item>& items) {
  std::string d = "<rss version=\"2.0\"><channel><title>F</title>";
  for (const auto& it : items) {
    d += "<item>";
    if (!it.guid.empty()) d += "<guid>" + it.guid + "</guid>";
    if (!it.link.empty()) d += "<link>" + it.link + "</link>";
    if (!it.title.empty()) d += "<title>" + it.title + "</title>";
    if (!it.pub.empty()) d += "<pubDate>" + it.pub + "</pubDate>";
    if (!it.description.empty()) d += "<description>" + it.description + "</description>";
    d += "</item>";
  }
  return d + "</channel></rss>";
}

// Parses doc and classifies it against st; returns the verdict names joined by spaces.
std::string run(feed_state& st, const std::string& doc) {
  parser p;
  feed f;
  EXPECT_EQ(p.parse(doc, {}, f), parse_errc::ok);
  std::vector<verdict> v;
  st.classify(f, v);
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : " ") + std::string(verdict_name(x));
  return s;
}

std::string pub(int day) { return "Mon, " + std::to_string(day) + " Jan 2024 10:00:00 GMT"; }

}  // namespace

TEST(feed_dedup, whole_document_hash_first) {
  feed_state st;
  const std::string a = rss({{"1", "", "a", "", ""}});
  EXPECT_FALSE(st.same_document(a));
  EXPECT_TRUE(st.same_document(a));
  EXPECT_FALSE(st.same_document(a + " "));
  EXPECT_FALSE(st.same_document(a));
}

TEST(feed_dedup, guid_identity_new_then_seen_then_updated) {
  feed_state st;
  EXPECT_EQ(run(st, rss({{"g1", "", "one", "", "x"}, {"g2", "", "two", "", "y"}})), "new new");
  EXPECT_EQ(run(st, rss({{"g1", "", "one", "", "x"}, {"g2", "", "two", "", "y"}})), "seen seen");
  // A new entry on top, the second one edited.
  EXPECT_EQ(run(st, rss({{"g3", "", "three", "", ""},
                         {"g1", "", "one", "", "x"},
                         {"g2", "", "two", "", "y (corrected)"}})),
            "new seen updated");
}

TEST(feed_dedup, feed_that_rewrites_every_title_gives_updates_not_new_articles) {
  feed_state st;
  std::vector<item> v;
  for (int i = 0; i < 10; ++i)
    v.push_back({"id-" + std::to_string(i), "", "Title " + std::to_string(i), pub(i + 1), ""});
  EXPECT_EQ(run(st, rss(v)), "new new new new new new new new new new");
  for (auto& it : v) it.title += " | Site Name";  // the CMS changed its title template
  EXPECT_EQ(run(st, rss(v)),
            "updated updated updated updated updated updated updated updated updated updated");
  EXPECT_EQ(run(st, rss(v)), "seen seen seen seen seen seen seen seen seen seen");
}

TEST(feed_dedup, feed_whose_guids_all_repeat_falls_back_to_links) {
  feed_state st;
  // Every item carries the same guid (a broken CMS): the guid identifies nothing.
  std::vector<item> v = {{"same", "http://x/1", "one", "", ""},
                         {"same", "http://x/2", "two", "", ""},
                         {"same", "http://x/3", "three", "", ""}};
  EXPECT_EQ(run(st, rss(v)), "new new new");
  v.insert(v.begin(), item{"same", "http://x/4", "four", "", ""});
  EXPECT_EQ(run(st, rss(v)), "new seen seen seen");
  // Links too repeat: title + published identify.
  feed_state st2;
  std::vector<item> w = {{"same", "http://x/", "one", pub(1), ""},
                         {"same", "http://x/", "two", pub(2), ""}};
  EXPECT_EQ(run(st2, rss(w)), "new new");
  w.push_back({"same", "http://x/", "three", pub(3), ""});
  EXPECT_EQ(run(st2, rss(w)), "seen seen new");
}

TEST(feed_dedup, feed_without_ids_uses_links_then_title_and_date) {
  feed_state st;
  std::vector<item> v = {{"", "http://x/a", "A", "", "body a"}, {"", "http://x/b", "B", "", ""}};
  EXPECT_EQ(run(st, rss(v)), "new new");
  v[0].title = "A (updated)";
  EXPECT_EQ(run(st, rss(v)), "updated seen");
  // No ids and no links at all: title plus published.
  feed_state st2;
  std::vector<item> w = {{"", "", "Only title", pub(1), ""}, {"", "", "Other", pub(2), ""}};
  EXPECT_EQ(run(st2, rss(w)), "new new");
  w[0].description = "now with a summary";
  EXPECT_EQ(run(st2, rss(w)), "updated seen");
}

TEST(feed_dedup, identical_entries_within_a_document_are_duplicates) {
  feed_state st;
  const item it{"", "", "", "", "same body"};
  EXPECT_EQ(run(st, rss({it, it, it})), "new duplicate duplicate");
  EXPECT_EQ(run(st, rss({it, it})), "seen duplicate");
}

TEST(feed_dedup, seen_set_is_bounded_by_the_feeds_size_and_keeps_live_entries) {
  feed_state st;
  // A 10-entry feed that rotates one new entry per fetch, 2000 times, and pins entry "keep".
  std::vector<item> window;
  for (int i = 0; i < 9; ++i) window.push_back({"n" + std::to_string(i), "", "t", "", ""});
  window.push_back({"keep", "", "pinned", "", ""});
  run(st, rss(window));
  for (int i = 9; i < 2009; ++i) {
    window.erase(window.begin() + 8);  // the oldest rotating entry leaves
    window.insert(window.begin(), item{"n" + std::to_string(i), "", "t", "", ""});
    const std::string v = run(st, rss(window));
    ASSERT_EQ(v, "new seen seen seen seen seen seen seen seen seen") << "fetch " << i;
  }
  // Bounded: 2x the feed's entry count (at least 16), one record per entry.
  EXPECT_EQ(st.seen().capacity(), 20u);
  EXPECT_EQ(st.seen().size(), 20u);
}

TEST(feed_dedup, seen_set_keeps_the_most_recent_and_records_keep_order) {
  seen_set s;
  EXPECT_EQ(s.capacity(), seen_set::k_min_limit);
  std::vector<seen_record> merged;
  auto put = [&](std::vector<uint64_t> ids, std::vector<uint8_t> replaced = {}) {
    std::vector<seen_record> added;
    for (uint64_t id : ids) added.push_back(seen_record::from_hashes(id, id + 1000, id * 10));
    replaced.resize(s.size(), 0);
    s.update(replaced, added, merged);
  };
  for (uint64_t i = 1; i <= 16; ++i) put({i});
  ASSERT_EQ(s.size(), 16u);
  const ptrdiff_t one = s.find(seen_record::fingerprint(1), false);
  ASSERT_EQ(one, 0);
  EXPECT_EQ(s[0].content(), seen_record::content_fingerprint(10));
  // Refresh 1 (its old record replaced): now the most recent; 17 then pushes out 2.
  std::vector<uint8_t> rep(s.size(), 0);
  rep[size_t(one)] = 1;
  put({1}, rep);
  put({17});
  EXPECT_EQ(s.find(seen_record::fingerprint(2), false), -1);
  EXPECT_EQ(s.find(seen_record::fingerprint(1), false), 14);
  EXPECT_EQ(s.find(seen_record::fingerprint(17), false), 15);
  // A link fingerprint is found only when asked for.
  EXPECT_EQ(s.find(seen_record::fingerprint(1017), false), -1);
  EXPECT_EQ(s.find(seen_record::fingerprint(1017), true), 15);
  // Raised, never lowered; records() is oldest first.
  s.prepare(40);
  EXPECT_EQ(s.capacity(), 80u);
  s.prepare(5);
  EXPECT_EQ(s.capacity(), 80u);
  EXPECT_EQ(s.records().back().identity(), seen_record::fingerprint(17));
  // Fingerprints: 48 bits, never 0; the content's 32 bits survive the split.
  const seen_record r = seen_record::from_hashes(uint64_t{1} << 48, 0, 0xdeadbeefcafef00dull);
  EXPECT_EQ(r.identity(), 1u);
  EXPECT_EQ(r.link(), 0u);
  EXPECT_EQ(r.content(), seen_record::content_fingerprint(0xdeadbeefcafef00dull));
}

TEST(feed_dedup, converted_records_are_kept_then_bounded_by_the_next_document) {
  // An older record's set: 64 records (8x an 8-entry feed), oldest first.
  std::vector<seen_record> old;
  for (uint64_t i = 0; i < 64; ++i) old.push_back(seen_record::from_hashes(1000 + i, 0, i));
  feed_state st;
  st.restore_converted(7, old);
  EXPECT_EQ(st.seen().size(), 64u);
  EXPECT_EQ(st.seen().capacity(), 64u);
  // The next document (10 entries, all new) bounds the set at 2 x 10: its 10 and the 10
  // most recent older records.
  std::vector<item> v;
  for (int i = 0; i < 10; ++i) v.push_back({"n" + std::to_string(i), "", "t", "", ""});
  run(st, rss(v));
  EXPECT_EQ(st.seen().capacity(), 20u);
  EXPECT_EQ(st.seen().size(), 20u);
  EXPECT_EQ(st.seen().find(seen_record::fingerprint(1063), false), 9);
  EXPECT_EQ(st.seen().find(seen_record::fingerprint(1053), false), -1);
}

TEST(feed_dedup, state_restored_after_a_restart_redelivers_nothing) {
  feed_state before;
  const std::string doc = rss({{"a", "", "A", "", ""}, {"b", "", "B", "", ""}});
  EXPECT_FALSE(before.same_document(doc));
  EXPECT_EQ(run(before, doc), "new new");
  feed_state after;  // a new process
  after.restore(before.document_hash(), before.seen().records(), before.seen().capacity());
  EXPECT_TRUE(after.same_document(doc));
  EXPECT_EQ(
      run(after, rss({{"c", "", "C", "", ""}, {"a", "", "A", "", ""}, {"b", "", "B", "", ""}})),
      "new seen seen");
}

TEST(feed_dedup, guids_that_start_or_stop_repeating_redeliver_nothing) {
  feed_state st;
  std::vector<item> v = {{"g1", "http://x/1", "one", "", ""}, {"g2", "http://x/2", "two", "", ""}};
  EXPECT_EQ(run(st, rss(v)), "new new");
  // The CMS breaks: every guid becomes the same. Links now identify; nothing is new.
  std::vector<item> broken = {{"same", "http://x/1", "one", "", ""},
                              {"same", "http://x/2", "two", "", ""}};
  EXPECT_EQ(run(st, rss(broken)), "seen seen");
  broken.insert(broken.begin(), item{"same", "http://x/3", "three", "", ""});
  EXPECT_EQ(run(st, rss(broken)), "new seen seen");
  // Fixed again, with fresh guids: known by their links, still nothing re-delivered.
  std::vector<item> fixed = {{"h3", "http://x/3", "three", "", ""},
                             {"h1", "http://x/1", "one", "", ""},
                             {"h2", "http://x/2", "two", "", ""}};
  EXPECT_EQ(run(st, rss(fixed)), "seen seen seen");
  // Restart in between changes nothing.
  feed_state after;
  after.restore(st.document_hash(), st.seen().records(), st.seen().capacity());
  fixed[1].title = "one, edited";
  EXPECT_EQ(run(after, rss(fixed)), "seen updated seen");
}

TEST(feed_dedup, a_guid_that_starts_repeating_keeps_old_seen_and_new_fresh) {
  feed_state st;
  std::vector<item> v = {{"g1", "http://x/1", "one", "", ""}, {"g2", "http://x/2", "two", "", ""}};
  EXPECT_EQ(run(st, rss(v)), "new new");
  // A new entry reuses g1 (a CMS bug): g1 now identifies nothing; "one" is known by its link,
  // the newcomer is new (not an "update" of "one").
  v.insert(v.begin(), item{"g1", "http://x/3", "three", "", ""});
  EXPECT_EQ(run(st, rss(v)), "new seen seen");
}

TEST(feed_dedup, a_stale_copy_of_the_previous_document_is_not_new) {
  // A 10-entry feed replaced whole each fetch; a stale copy of the previous document (a
  // cache) then comes back: its entries are still known.
  feed_state st;
  std::vector<item> a, b;
  for (int i = 0; i < 10; ++i) a.push_back({"a" + std::to_string(i), "", "t", "", ""});
  for (int i = 0; i < 10; ++i) b.push_back({"b" + std::to_string(i), "", "t", "", ""});
  run(st, rss(a));
  EXPECT_EQ(run(st, rss(b)), "new new new new new new new new new new");
  EXPECT_EQ(run(st, rss(a)), "seen seen seen seen seen seen seen seen seen seen");
  EXPECT_EQ(run(st, rss(b)), "seen seen seen seen seen seen seen seen seen seen");
}

TEST(feed_dedup, a_guid_scheme_change_keeping_links_redelivers_nothing) {
  // The CMS changes every guid but keeps the links: known by the link alias.
  feed_state st;
  EXPECT_EQ(run(st, rss({{"old-1", "http://x/1", "one", "", ""},
                         {"old-2", "http://x/2", "two", "", ""}})),
            "new new");
  EXPECT_EQ(run(st, rss({{"new-1", "http://x/1", "one", "", ""},
                         {"new-2", "http://x/2", "two", "", ""}})),
            "seen seen");
  // One record per entry: the old guids' records were replaced, not kept beside.
  EXPECT_EQ(st.seen().size(), 2u);
}

TEST(feed_dedup, scratch_is_reused_across_feeds) {
  dedup_scratch scratch;
  parser p;
  feed f;
  ASSERT_EQ(p.parse(rss({{"g1", "http://x/1", "one", "", ""}}), {}, f), parse_errc::ok);
  feed_state a, b;
  std::vector<verdict> v;
  a.classify(f, scratch, v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], verdict::fresh);
  ASSERT_EQ(scratch.keys.size(), 1u);
  b.classify(f, scratch, v);
  EXPECT_EQ(v[0], verdict::fresh);  // b is another feed: its own records
  a.classify(f, scratch, v);
  EXPECT_EQ(v[0], verdict::seen);
}
