// The SPSC ring and the sleeper: lifetime-tracking elements, order and checksum across
// threads, full and empty edges, wrap-around, and a consumer that sleeps between every
// batch (a lost wake-up would hang the test, not pass it).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "feedplane/runtime/article.h"
#include "feedplane/runtime/sleeper.h"
#include "feedplane/runtime/spsc_ring.h"

namespace rt = feedplane::runtime;

namespace {

// Counts live instances; a moved-from instance is still alive until destroyed.
std::atomic<int64_t> g_live{0};
struct tracked {
  uint64_t v = 0;
  explicit tracked(uint64_t x) : v(x) { g_live.fetch_add(1, std::memory_order_relaxed); }
  tracked(tracked&& o) noexcept : v(o.v) { g_live.fetch_add(1, std::memory_order_relaxed); }
  tracked(const tracked&) = delete;
  tracked& operator=(const tracked&) = delete;
  tracked& operator=(tracked&&) = delete;
  ~tracked() { g_live.fetch_sub(1, std::memory_order_relaxed); }
};

TEST(runtime_ring, capacity_is_a_power_of_two) {
  EXPECT_EQ(rt::spsc_ring<int>(0).capacity(), 2u);
  EXPECT_EQ(rt::spsc_ring<int>(5).capacity(), 8u);
  EXPECT_EQ(rt::spsc_ring<int>(64).capacity(), 64u);
}

TEST(runtime_ring, full_and_empty_edges_and_wraparound) {
  rt::spsc_ring<tracked> r(4);
  int seen = 0;
  EXPECT_EQ(r.consume([&](tracked&) { ++seen; }), 0u);
  for (uint64_t round = 0; round < 10; ++round) {  // wraps the indices many times
    for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(r.try_stage(round * 4 + i));
    EXPECT_FALSE(r.try_stage(uint64_t{99})) << "a full ring must refuse";
    EXPECT_EQ(r.free_slots(), 0u);
    // Staged but not published: the consumer sees nothing.
    EXPECT_FALSE(r.has_published());
    EXPECT_EQ(r.consume([&](tracked&) { ++seen; }), 0u);
    EXPECT_EQ(r.publish(), 4u);
    EXPECT_EQ(r.occupancy(), 4u);
    uint64_t expect = round * 4;
    EXPECT_EQ(r.consume([&](tracked& t) { EXPECT_EQ(t.v, expect++); }, 3), 3u);
    // Three slots freed: three more fit, the fourth does not.
    for (uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(r.try_stage(1000 + i));
    EXPECT_FALSE(r.try_stage(uint64_t{1003}));
    r.publish();
    EXPECT_EQ(r.consume([&](tracked& t) { EXPECT_EQ(t.v, expect++); }, 1), 1u);
    uint64_t next_new = 1000;
    EXPECT_EQ(r.consume([&](tracked& t) { EXPECT_EQ(t.v, next_new++); }), 3u);
    EXPECT_FALSE(r.has_published());
    EXPECT_EQ(g_live.load(), 0);
  }
  EXPECT_EQ(seen, 0);
}

TEST(runtime_ring, destructor_frees_published_and_staged_items) {
  {
    rt::spsc_ring<std::unique_ptr<tracked>> r(8);
    for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(r.try_stage(std::make_unique<tracked>(i)));
    r.publish();
    for (uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(r.try_stage(std::make_unique<tracked>(i)));
    r.consume([](std::unique_ptr<tracked>& p) { auto mine = std::move(p); }, 1);
    EXPECT_EQ(g_live.load(), 6);
  }
  EXPECT_EQ(g_live.load(), 0);
}

// Producer and consumer on two threads: every value arrives once, in order; the sum and
// a position-weighted checksum agree; no element outlives the ring.
void run_two_threads(uint32_t capacity, uint32_t batch, uint64_t n) {
  uint64_t sum = 0, weighted = 0, count = 0;
  bool in_order = true;
  {
    rt::spsc_ring<tracked> r(capacity);
    std::thread consumer([&] {
      uint64_t next = 0;
      while (count < n) {
        const size_t got = r.consume(
            [&](tracked& t) {
              if (t.v != next) in_order = false;
              ++next;
              sum += t.v;
              weighted += t.v * (count + 1);
              ++count;
            },
            batch);
        // An empty ring yields, as the producer does on a full one: with more busy threads
        // than cores (two of these tests side by side under TSan) a spinning consumer held
        // the core for its time slice at every hand-off: 2-33 s, once 288 s, now under 1 s.
        if (got == 0) std::this_thread::yield();
      }
    });
    uint64_t i = 0;
    while (i < n) {
      uint32_t staged = 0;
      while (i < n && staged < batch && r.try_stage(i)) {
        ++i;
        ++staged;
      }
      r.publish();
      if (staged == 0) std::this_thread::yield();
    }
    consumer.join();
  }
  EXPECT_TRUE(in_order);
  EXPECT_EQ(count, n);
  EXPECT_EQ(sum, n * (n - 1) / 2);
  uint64_t expect_weighted = 0;
  for (uint64_t v = 0; v < n; ++v) expect_weighted += v * (v + 1);
  EXPECT_EQ(weighted, expect_weighted);
  EXPECT_EQ(g_live.load(), 0);
}

TEST(runtime_ring, two_threads_one_at_a_time) { run_two_threads(2, 1, 200'000); }
TEST(runtime_ring, two_threads_batched) { run_two_threads(256, 64, 1'000'000); }
TEST(runtime_ring, two_threads_tiny_ring_large_batches) { run_two_threads(4, 1000, 300'000); }

// A consumer that goes to sleep (futex) after every batch, with the sleeper protocol; the
// producer wakes it only when it may be asleep. A lost wake-up hangs here.
TEST(runtime_ring, sleeping_consumer_never_misses_a_wakeup) {
  constexpr uint64_t n = 200'000;
  rt::spsc_ring<uint64_t> r(64);
  rt::sleeper sl;
  std::atomic<uint64_t> wakes{0};
  uint64_t got = 0, sleeps = 0, prepares = 0;
  std::thread consumer([&] {
    uint64_t next = 0;
    while (got < n) {
      sl.cancel();
      r.consume([&](uint64_t& v) {
        EXPECT_EQ(v, next);
        ++next;
        ++got;
      });
      if (got == n) break;
      sl.prepare();
      ++prepares;
      if (r.has_published()) {
        sl.cancel();
        continue;
      }
      ++sleeps;
      sl.word().wait(1, std::memory_order_relaxed);  // until a producer clears the flag
    }
  });
  uint64_t i = 0;
  while (i < n) {
    uint32_t staged = 0;
    while (i < n && staged < 7 && r.try_stage(i)) {
      ++i;
      ++staged;
    }
    if (r.publish() != 0 && sl.must_wake()) {
      wakes.fetch_add(1, std::memory_order_relaxed);
      sl.word().notify_one();
    }
    if (staged == 0) std::this_thread::yield();
  }
  consumer.join();
  EXPECT_EQ(got, n);
  EXPECT_GT(sleeps, 0u) << "the consumer never slept: the test did not test wake-ups";
  // At most one wake-up per announced sleep, however many producers' publishes.
  EXPECT_LE(wakes.load(), prepares);
}

// ---- frozen articles ----

rt::article_ref make_article(rt::article_builder& b, int i) {
  b.clear();
  b.meta.source_id = 7;
  b.meta.published = 1'700'000'000 + i;
  b.source_url = "https://example.org/feed.xml";
  b.guid = "urn:x:" + std::to_string(i);
  b.title = "Apple releases <b>new</b> iPhone " + std::to_string(i);
  b.link = "https://example.org/a/" + std::to_string(i);
  b.summary = "<p>The phone &amp; the watch, caf\xc3\xa9 au lait</p>";
  return b.freeze();
}

TEST(runtime_article, frozen_article_keeps_fields_and_words) {
  rt::article_builder b;
  rt::article_ref a = make_article(b, 3);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->guid(), "urn:x:3");
  EXPECT_EQ(a->link(), "https://example.org/a/3");
  EXPECT_EQ(a->meta().source_id, 7u);
  const auto w = a->words();
  ASSERT_GE(w.title_words(), 4u);  // apple releases new iphone (3)
  EXPECT_EQ(w.word(0), "apple");
  EXPECT_EQ(w.word(3), "iphone");
  bool cafe = false;
  for (size_t i = 0; i < w.size(); ++i) cafe |= w.word(i) == "caf\xc3\xa9";
  EXPECT_TRUE(cafe);
  // The builder is reused: the frozen article does not change with it.
  rt::article_ref b2 = make_article(b, 4);
  EXPECT_EQ(a->guid(), "urn:x:3");
  EXPECT_EQ(a->words().word(0), "apple");
}

TEST(runtime_article, record_round_trips_and_bad_records_are_refused) {
  rt::article_builder b;
  rt::article_ref a = make_article(b, 9);
  std::string err;
  rt::article_ref c = rt::article::decode(a->record(), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->record(), a->record());
  EXPECT_EQ(c->title(), a->title());
  ASSERT_EQ(c->words().size(), a->words().size());
  for (size_t i = 0; i < a->words().size(); ++i) EXPECT_EQ(c->words().word(i), a->words().word(i));
  std::string rec(a->record());
  EXPECT_FALSE(rt::article::decode(std::string_view(rec).substr(0, rec.size() - 1), &err));
  EXPECT_FALSE(rt::article::decode("short", &err));
  // Flip every byte of the header region in turn: decode either refuses or yields an
  // article whose words stay within its block (ASan checks the reads).
  for (size_t i = 0; i < 160 && i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] = char(bad[i] ^ 0x5a);
    rt::article_ref d = rt::article::decode(bad, &err);
    if (d) {
      const auto w = d->words();
      for (size_t k = 0; k < w.size(); ++k) (void)w.word(k).size();
      (void)d->title().size();
    }
  }
}

TEST(runtime_article, the_record_holds_strings_alone_and_the_first_format_still_reads) {
  rt::article_builder b;
  rt::article_ref a = make_article(b, 5);
  ASSERT_TRUE(a);
  // The record is the header and the strings: the words are tokenized again on decode.
  size_t strings = 0;
  for (std::string_view f :
       {a->source_url(), a->guid(), a->title(), a->link(), a->author(), a->summary(), a->content()})
    strings += f.size();
  EXPECT_LT(a->record().size(), a->block().size());
  EXPECT_LE(a->record().size(), strings + 256) << "more than the header and the strings";
  std::string err;
  rt::article_ref c = rt::article::decode(a->record(), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->seq(), a->seq());
  EXPECT_EQ(c->meta().source_id, a->meta().source_id);
  EXPECT_EQ(c->block(), a->block()) << "decode rebuilds the very block freeze made";
  // A record of the first format ("FRA1": the whole block) decodes to the same article,
  // whose own record is then the new format's.
  std::string whole(a->block());
  ASSERT_EQ(whole.compare(0, 4, "FRA2"), 0);
  whole.replace(0, 4, "FRA1");
  rt::article_ref old = rt::article::decode(whole, &err);
  ASSERT_TRUE(old) << err;
  EXPECT_EQ(old->record(), a->record());
  ASSERT_EQ(old->words().size(), a->words().size());
  for (size_t i = 0; i < a->words().size(); ++i)
    EXPECT_EQ(old->words().word(i), a->words().word(i));
  int64_t ms = -1;
  EXPECT_TRUE(rt::article::record_sequenced_ms(whole, &ms));
  EXPECT_TRUE(rt::article::record_sequenced_ms(a->record(), &ms));
  // A string reaching past the record's end is refused, not read.
  std::string rec(a->record());
  rec.resize(rec.size() - 1);
  EXPECT_FALSE(rt::article::decode(rec, &err));
  EXPECT_NE(err.find("length"), std::string::npos) << err;
}

TEST(runtime_article, an_article_too_large_to_read_back_is_not_frozen) {
  rt::article_builder b;
  b.title = "big";
  b.summary.assign(size_t{rt::article::max_bytes} + 1, 'a');
  EXPECT_FALSE(b.freeze()) << "decode() refuses records over max_bytes: freeze must too";
  // One-letter words: the per-word arrays push it over the limit long before the text.
  b.summary.clear();
  for (int i = 0; i < 4'000'000; ++i) b.summary += "a ";  // an 8 MiB body, the fetch cap
  EXPECT_FALSE(b.freeze());
  b.summary = "a b c";
  rt::article_ref ok = b.freeze();
  ASSERT_TRUE(ok);
  std::string err;
  EXPECT_TRUE(rt::article::decode(ok->record(), &err)) << err;
}

TEST(runtime_article, last_reference_frees_across_threads) {
  const int64_t before = rt::article::alive();
  rt::article_builder b;
  std::vector<rt::article_ref> arts;
  for (int i = 0; i < 1000; ++i) arts.push_back(make_article(b, i));
  EXPECT_EQ(rt::article::alive(), before + 1000);
  EXPECT_GT(rt::article::alive_bytes(), 0);
  // Four holders per article, dropped on four threads in different orders.
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    std::vector<rt::article_ref> mine(arts.begin(), arts.end());
    ts.emplace_back([m = std::move(mine), t]() mutable {
      if (t % 2) std::reverse(m.begin(), m.end());
      for (auto& r : m) r.reset();
    });
  }
  arts.clear();
  for (auto& t : ts) t.join();
  EXPECT_EQ(rt::article::alive(), before);
}

}  // namespace
