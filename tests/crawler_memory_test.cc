// Heap per resident source (issue 10: a million feeds in 1 KiB each, everything included):
// the crawler's std::map node with the source in it, its strings' block and its seen
// records, counted at the allocator's usable size (tests/support/counting_malloc.cc). The
// schedule's heap entry (16 bytes) and the client's per-host state are outside `source`:
// the whole-process figure (bench/crawler_memory.sh) counts those.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "counting_malloc.h"
#include "feedplane/crawler/source.h"
#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"

namespace feedplane::crawler {
namespace {

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

struct figures {
  double first = 0;  // bytes per source after its first document
  double full = 0;   // ... once its seen set is full
};

// k sources with realistic strings (a 45-byte URL, a title, an ETag and a Last-Modified),
// each fed documents of entries(i) entries rotating by half a document per fetch.
template <class Entries>
figures measure(int k, Entries entries) {
  feed::parser p;
  feed::dedup_scratch scratch;
  std::vector<feed::verdict> v;
  std::vector<std::vector<feed::feed>> docs(64);  // by entry count, 7 rounds each
  for (int i = 0; i < k; ++i) {
    auto& d = docs[size_t(entries(i))];
    if (!d.empty()) continue;
    d.resize(7);
    for (int r = 0; r < 7; ++r)
      EXPECT_EQ(p.parse(rotating_rss(r * entries(i) / 2, entries(i)), {}, d[size_t(r)]),
                feed::parse_errc::ok);
  }
  {
    // Scratch at its working size first: it is the shard's, not the sources'.
    feed::feed_state warm;
    for (int r = 0; r < 3; ++r) {
      feed::feed big;
      EXPECT_EQ(p.parse(rotating_rss(r * 64, 64), {}, big), feed::parse_errc::ok);
      warm.classify(big, scratch, v);
    }
  }
  figures out;
  const int64_t before = test::heap_live();
  {
    std::map<uint64_t, source> sources;
    for (int i = 0; i < k; ++i) {
      source& s = sources[uint64_t(i) * 7919];
      s.id = uint64_t(i) * 7919;
      char url[64];
      std::snprintf(url, sizeof url, "https://blog-%06d.example.com/feed/atom.xml", i);
      s.text.set(source_text::url, url);
      s.text.set(source_text::title, "A blog about things " + std::to_string(i));
    }
    for (int r = 0; r < 7; ++r) {
      for (auto& [id, s] : sources) {
        const int i = int(id / 7919);
        s.text.set(source_text::etag, "\"5f3c-61a2b9e0c4f8" + std::to_string(r) + "\"",
                   source_text::last_modified,
                   "Mon, 06 May 2024 07:08:0" + std::to_string(r) + " GMT");
        s.state.classify(docs[size_t(entries(i))][size_t(r)], scratch, v);
      }
      const double per = double(test::heap_live() - before) / k;
      if (r == 0) out.first = per;
      out.full = per;
    }
  }
  EXPECT_EQ(test::heap_live(), before) << "the map gave back everything";
  return out;
}

TEST(crawler_memory, a_source_fits_in_a_kibibyte_on_average_at_10_to_20_entries) {
  for (const int n : {10, 15, 20, 50}) {
    const figures f = measure(1000, [n](int) { return n; });
    std::printf("source, %d entries: %.0f bytes after one fetch, %.0f when its seen set is full\n",
                n, f.first, f.full);
    // At most: the node (map links, key, source), ~128 bytes of strings, 16 bytes per seen
    // record (2n when full) and the allocator's rounding.
    EXPECT_LE(f.full, 48 + sizeof(source) + 144 + 16.0 * 2 * n + 32) << n;
  }
  // The goal's mix: 10 to 20 entries, evenly.
  const figures mix = measure(1100, [](int i) { return 10 + i % 11; });
  std::printf("source, 10-20 entries: %.0f bytes after one fetch, %.0f when full\n", mix.first,
              mix.full);
  EXPECT_LE(mix.full, 1024.0);
  EXPECT_LE(mix.first, 1024.0);
}

TEST(crawler_memory, strings_share_one_block) {
  const int64_t before = test::heap_live();
  {
    source_text t;
    EXPECT_EQ(t.heap_bytes(), 0u);
    t.set(source_text::url, "https://blog.example.com/feed.xml");
    t.set(source_text::etag, "\"abc\"");
    t.set(source_text::last_modified, "Mon, 06 May 2024 07:08:09 GMT");
    EXPECT_EQ(t.get(source_text::url), "https://blog.example.com/feed.xml");
    EXPECT_EQ(t.get(source_text::etag), "\"abc\"");
    EXPECT_EQ(t.get(source_text::title), "");
    EXPECT_EQ(t.heap_bytes(), 6u + 33 + 5 + 29);
    EXPECT_LE(test::heap_live() - before, 96);  // one block
    // A value from the block itself; lengths of one, two and three varint bytes; a value
    // over the limit cut on a character boundary.
    t.set(source_text::title, t.get(source_text::url));
    EXPECT_EQ(t.get(source_text::title), "https://blog.example.com/feed.xml");
    const std::string mid(300, 'm'), big(20'000, 'b');
    t.set(source_text::last_error, mid, source_text::moved_to, big);
    EXPECT_EQ(t.get(source_text::last_error), mid);
    EXPECT_EQ(t.get(source_text::moved_to), big);
    EXPECT_EQ(t.get(source_text::url), "https://blog.example.com/feed.xml");
    std::string huge = std::string(source_text::k_max - 1, 'x') + "\xc3\xa9";  // é across the cut
    t.set(source_text::title, huge);
    EXPECT_EQ(t.get(source_text::title).size(), source_text::k_max - 1);
    source_text copy = t;
    EXPECT_EQ(copy.get(source_text::moved_to), big);
    for (auto f : {source_text::url, source_text::title, source_text::etag,
                   source_text::last_modified, source_text::last_error, source_text::moved_to})
      t.set(f, {});
    EXPECT_EQ(t.heap_bytes(), 0u);
  }
  EXPECT_EQ(test::heap_live(), before);
}

}  // namespace
}  // namespace feedplane::crawler
