// Peak heap while parsing, against the document's size: every malloc in this binary is
// counted (malloc and friends are replaced here and forward to glibc), so pugixml's pages,
// the transcoding and repair copies and the output model all count. The bound: peak extra
// heap <= 4 x the document + 4 MiB, for the hostile shapes of issue 9 (dense nested or
// flat markup) and for every document of the shared corpus.
#include <malloc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "feedplane/feed/parser.h"

#if defined(__SANITIZE_ADDRESS__)
#define FEEDPLANE_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FEEDPLANE_COUNT_MALLOC 0
#endif
#endif
#ifndef FEEDPLANE_COUNT_MALLOC
#define FEEDPLANE_COUNT_MALLOC 1
#endif
#if !FEEDPLANE_COUNT_MALLOC
#error \
    "feed_memory_test counts malloc, which a sanitizer owns: tests/CMakeLists.txt builds it only without sanitizers"
#endif

namespace {
std::atomic<int64_t> g_live{0};  // bytes held now (malloc_usable_size of each block)
std::atomic<int64_t> g_peak{0};  // highest g_live since reset_peak()

[[maybe_unused]] void on_alloc(void* p) {
  if (p == nullptr) return;
  const auto n = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t now = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
[[maybe_unused]] void on_free(void* p) {
  if (p != nullptr)
    g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}
}  // namespace

// glibc's own entry points, which the replacements below forward to.
extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  on_alloc(p);
  return p;
}
void free(void* p) {
  on_free(p);
  __libc_free(p);
}
void* calloc(size_t n, size_t m) {
  void* p = __libc_calloc(n, m);
  on_alloc(p);
  return p;
}
void* realloc(void* old, size_t n) {
  on_free(old);
  void* p = __libc_realloc(old, n);
  if (p == nullptr && n != 0) {
    on_alloc(old);  // failed: the old block stays
    return nullptr;
  }
  on_alloc(p);
  return p;
}
void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  on_alloc(p);
  return p;
}
void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void** out, size_t align, size_t n) {
  void* p = memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

namespace {

using namespace feedplane::feed;
namespace fs = std::filesystem;

// Peak heap above what was live before, while parsing doc with a fresh parser (its reused
// buffers count: a shard's parser holds them between documents).
int64_t peak_extra(std::string_view doc, parse_errc* rc = nullptr) {
  parser p;
  feed f;
  const int64_t before = g_live.load();
  g_peak.store(before);
  const parse_errc e = p.parse(doc, {}, f);
  if (rc != nullptr) *rc = e;
  return g_peak.load() - before;
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
  const int64_t before = g_live.load();
  void* p = std::malloc(1 << 20);
  EXPECT_GE(g_live.load() - before, 1 << 20);
  std::free(p);
  EXPECT_EQ(g_live.load(), before);
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
