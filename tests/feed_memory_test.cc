// Peak heap while parsing, against the document's size: every malloc in this binary is
// counted (malloc and friends are replaced here and forward to glibc), so pugixml's pages,
// the transcoding and repair copies and the output model all count. The bound: peak extra
// heap <= 4 x the document + 4 MiB, for the hostile shapes of issue 9 (dense nested or
// flat markup) and for every document of the shared corpus.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "counting_malloc.h"
#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"

namespace {

using namespace feedplane::feed;
namespace fs = std::filesystem;

// Peak heap above what was live before, while parsing doc with a fresh parser (its reused
// buffers count: a shard's parser holds them between documents).
int64_t peak_extra(std::string_view doc, parse_errc* rc = nullptr) {
  parser p;
  feed f;
  const int64_t before = feedplane::test::heap_live();
  feedplane::test::reset_heap_peak();
  const parse_errc e = p.parse(doc, {}, f);
  if (rc != nullptr) *rc = e;
  return feedplane::test::heap_peak() - before;
}

constexpr int64_t k_slack = 4 << 20;
int64_t bound(size_t doc) { return 4 * static_cast<int64_t>(doc) + k_slack; }

std::string repeat(std::string_view s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}

TEST(feed_memory, counting_works) {
  const int64_t before = feedplane::test::heap_live();
  void* volatile p = std::malloc(1 << 20);  // volatile: the pair must not be elided
  EXPECT_GE(feedplane::test::heap_live() - before, 1 << 20);
  std::free(p);
  EXPECT_EQ(feedplane::test::heap_live(), before);
}

// 8 MB of nested <a> (never closed) and of flat <x/>: the shapes that peaked at 35x and
// 19x the document before the bound.
TEST(feed_memory, dense_markup_is_bounded) {
  const std::string nested = "<rss version=\"2.0\"><channel>" + repeat("<a>", 8 << 18);
  const std::string flat =
      "<rss version=\"2.0\"><channel>" + repeat("<x/>", 2 << 20) + "</channel></rss>";
  const std::string items = "<rss version=\"2.0\"><channel>" +
                            repeat("<item><title>t</title></item>", 1 << 18) + "</channel></rss>";
  for (const std::string* doc : {&nested, &flat, &items}) {
    parse_errc rc;
    const int64_t peak = peak_extra(*doc, &rc);
    std::printf("%zu bytes: peak %lld (%.1fx), %s\n", doc->size(), static_cast<long long>(peak),
                double(peak) / double(doc->size()), std::string(errc_name(rc)).c_str());
    EXPECT_LE(peak, bound(doc->size())) << doc->substr(0, 40);
    EXPECT_EQ(rc, parse_errc::too_complex) << doc->substr(0, 40);  // named, not a crash
  }
}

// A large feed shaped like real ones (text outweighs markup) parses whole within the bound:
// RSS and Atom with 8,000 entries of a few hundred bytes, and the same as a JSON Feed.
TEST(feed_memory, large_real_shaped_feeds_parse_within_the_bound) {
  const std::string words = repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 6);
  std::string rss = "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>big</title>\n";
  std::string atom = "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>big</title>\n";
  std::string json = "{\"version\":\"https://jsonfeed.org/version/1.1\",\"items\":[";
  for (int i = 0; i < 8000; ++i) {
    const std::string n = std::to_string(i);
    rss += "  <item>\n    <title>Entry number " + n +
           " of the big feed</title>\n    <link>https://example.com/posts/" + n +
           "</link>\n    <guid>https://example.com/posts/" + n +
           "</guid>\n    <pubDate>Mon, 06 May 2024 07:08:09 GMT</pubDate>\n    <description>" +
           words + "</description>\n  </item>\n";
    atom += "<entry><id>urn:" + n + "</id><title>Entry " + n +
            "</title><link rel=\"alternate\" href=\"https://example.com/" + n +
            "\"/><updated>2024-05-06T07:08:09Z</updated><summary>" + words + "</summary></entry>\n";
    json += std::string(i ? "," : "") + "{\"id\":\"" + n + "\",\"url\":\"https://example.com/" + n +
            "\",\"title\":\"Entry " + n + "\",\"content_text\":\"" + words + "\"}";
  }
  rss += "</channel></rss>\n";
  atom += "</feed>\n";
  json += "]}";
  for (const std::string* doc : {&rss, &atom, &json}) {
    parse_errc rc;
    const int64_t peak = peak_extra(*doc, &rc);
    std::printf("%zu bytes: peak %lld (%.1fx), %s\n", doc->size(), static_cast<long long>(peak),
                double(peak) / double(doc->size()), std::string(errc_name(rc)).c_str());
    EXPECT_EQ(rc, parse_errc::ok) << doc->substr(0, 40);
    // JSON: simdjson On-Demand sizes its structural index (4 bytes a byte) and string buffer
    // (5/3 a byte) for the worst case of the document's length, so it cannot meet the XML
    // bound: with the UTF-8 copy (padded in place, no second copy) and the model, measured
    // 9.2x here (10.2x with a padded copy; the DOM parser's tape took about 18x). Held to 10x.
    const int64_t limit =
        doc == &json ? 10 * static_cast<int64_t>(doc->size()) + k_slack : bound(doc->size());
    EXPECT_LE(peak, limit) << doc->substr(0, 40);
  }
}

// Real feeds stay within the bound and are not refused by it. Built only when CMake found
// the shared corpus (tests/CMakeLists.txt), so here its absence is a failure.
#if FEEDPLANE_MEMORY_TEST_CORPUS
TEST(feed_memory, corpus_is_bounded) {
  const char* dir = std::getenv("FEEDPLANE_CORPUS_DIR");
  ASSERT_TRUE(dir != nullptr && *dir != '\0') << "FEEDPLANE_CORPUS_DIR is not set";
  size_t files = 0;
  double worst = 0;
  std::string worst_name;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".xml" && ext != ".json" && ext != ".rss" && ext != ".atom") continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (doc.empty()) continue;
    parse_errc rc;
    const int64_t peak = peak_extra(doc, &rc);
    ++files;
    const double ratio = double(peak) / double(doc.size());
    if (doc.size() > 4096 && ratio > worst) {
      worst = ratio;
      worst_name = e.path().string();
    }
    EXPECT_LE(peak, bound(doc.size())) << e.path();
    EXPECT_NE(rc, parse_errc::too_complex) << e.path();
  }
  std::printf("%zu corpus files; worst ratio over 4 KiB: %.1fx (%s)\n", files, worst,
              worst_name.c_str());
}

#endif

}  // namespace

// ---- per-feed dedup state (issue 10: a million feeds in memory) ----

// An RSS document of n entries numbered first.. (guid, link, title, date, a summary).
std::string rotating_rss(int first, int n) {
  std::string d = "<rss version=\"2.0\"><channel><title>F</title>";
  for (int i = first; i < first + n; ++i) {
    const std::string k = std::to_string(i);
    d += "<item><guid>https://blog.example.com/p/" + k +
         "</guid><link>https://blog.example.com/p/" + k + "</link><title>Post " + k +
         "</title><pubDate>Mon, 06 May 2024 07:08:09 GMT</pubDate>" + "<description>Text of post " +
         k + "</description></item>";
  }
  return d + "</channel></rss>";
}

// Heap per feed_state after its first document and once its seen set is full (the feed
// rotated through 3x its size), at 10, 20 and 50 entries, with one scratch for all feeds.
// Bound: one 16-byte record per entry up to 2x the document, plus the allocator's rounding;
// the scratch is the caller's, not the feed's.
TEST(feed_memory, feed_state_holds_two_records_per_entry_at_most) {
  constexpr int k_feeds = 1000;
  parser p;
  dedup_scratch scratch;
  std::vector<verdict> v;
  {
    // Scratch at its working size first: it is the shard's, not the feeds'.
    feed_state warm;
    for (int r = 0; r < 3; ++r) {
      feed big;
      ASSERT_EQ(p.parse(rotating_rss(r * 64, 64), {}, big), parse_errc::ok);
      warm.classify(big, scratch, v);
    }
  }
  for (const int n : {10, 20, 50}) {
    std::vector<feed> docs(7);
    for (int round = 0; round < 7; ++round)
      ASSERT_EQ(p.parse(rotating_rss(round * n / 2, n), {}, docs[size_t(round)]), parse_errc::ok);
    std::vector<feed_state> states(k_feeds);
    const int64_t before = feedplane::test::heap_live();
    auto per_feed = [&] {
      return double(feedplane::test::heap_live() - before) / k_feeds + sizeof(feed_state);
    };
    double first = 0;
    for (int round = 0; round < 7; ++round) {
      for (feed_state& st : states) st.classify(docs[size_t(round)], scratch, v);
      if (round == 0) first = per_feed();
    }
    const double full = per_feed();
    std::printf("feed_state, %d entries: %.0f bytes after one document, %.0f when full\n", n, first,
                full);
    ASSERT_EQ(states[0].seen().size(), size_t(2 * n));
    // The allocator rounds each array up by 8 bytes (its header is not counted); a few
    // bytes more for the verdicts' growth, which is the caller's.
    EXPECT_LE(full, 16.0 * 2 * n + sizeof(feed_state) + 16);
    EXPECT_LE(first, 16.0 * n + sizeof(feed_state) + 16);
  }
}
