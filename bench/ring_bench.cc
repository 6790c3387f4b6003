// One SPSC ring between two threads (pinned to two cores when the machine has them).
//
// Peers, in the same binary and run: boost::lockfree::spsc_queue (Debian libboost-dev) and
// moodycamel::ReaderWriterQueue (Debian libreaderwriterqueue-dev), both with a fixed
// capacity like ours. Each benchmark moves 8-byte messages from producer to consumer and
// checks the sum and the order before it reports, so a broken ring cannot look fast.
//   ring_throughput/<kind>/<batch>: messages/s; batch 1 = publish every message, 64 =
//     stage 64 then one release store (boost and moodycamel have a bulk push for boost
//     only: moodycamel is measured per message, as it has no batch API).
//   ring_latency_busy: publish -> handled on the other thread while the consumer spins.
//   ring_latency_sleeping: the consumer sleeps in io_uring_enter (its shard loop) and is
//     woken with IORING_OP_MSG_RING by the producer's loop, as shards are.
// Latency counters: p50_ns and p99_ns (from CLOCK_MONOTONIC stamps in the message).
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <readerwriterqueue/readerwriterqueue.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/loop.h"
#include "feedplane/runtime/messages.h"
#include "feedplane/runtime/sleeper.h"
#include "feedplane/runtime/spsc_ring.h"
#include "feedplane/workload/workload.h"

namespace rt = feedplane::runtime;

namespace {

constexpr uint32_t k_capacity = 4096;
constexpr uint64_t k_messages = 1 << 22;

void pin(int cpu) {
  if (std::thread::hardware_concurrency() < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ring_bench: wrong result: %s\n", what);
    std::abort();
  }
}

// ---- throughput ----

void ours(uint64_t n, uint32_t batch) {
  rt::spsc_ring<uint64_t> r(k_capacity);
  uint64_t sum = 0;
  bool order = true;
  std::thread c([&] {
    pin(1);
    uint64_t next = 0;
    while (next < n) {
      r.consume([&](uint64_t& v) {
        order &= v == next;
        sum += v;
        ++next;
      });
    }
  });
  pin(0);
  uint64_t i = 0;
  if (batch == 1) {
    while (i < n) {
      if (r.try_push(i)) ++i;
    }
  } else {
    // The batch API, from a local array as boost's bulk push below.
    std::vector<uint64_t> tmp(batch);
    while (i < n) {
      uint32_t k = 0;
      for (; k < batch && i + k < n; ++k) tmp[k] = i + k;
      i += r.try_stage_n(tmp.data(), k);
      r.publish();
    }
  }
  c.join();
  check(order && sum == n * (n - 1) / 2, "ours");
}

void boost_q(uint64_t n, uint32_t batch) {
  boost::lockfree::spsc_queue<uint64_t, boost::lockfree::capacity<k_capacity>> q;
  uint64_t sum = 0;
  bool order = true;
  std::thread c([&] {
    pin(1);
    uint64_t next = 0;
    uint64_t buf[256];
    while (next < n) {
      const size_t got = q.pop(buf, 256);
      for (size_t j = 0; j < got; ++j) {
        order &= buf[j] == next;
        sum += buf[j];
        ++next;
      }
    }
  });
  pin(0);
  uint64_t i = 0;
  std::vector<uint64_t> tmp(batch);
  while (i < n) {
    if (batch == 1) {
      if (q.push(i)) ++i;
      continue;
    }
    uint32_t k = 0;
    for (; k < batch && i + k < n; ++k) tmp[k] = i + k;
    i += q.push(tmp.data(), k);
  }
  c.join();
  check(order && sum == n * (n - 1) / 2, "boost");
}

void moody(uint64_t n) {
  moodycamel::ReaderWriterQueue<uint64_t> q(k_capacity);
  uint64_t sum = 0;
  bool order = true;
  std::thread c([&] {
    pin(1);
    uint64_t next = 0, v = 0;
    while (next < n) {
      if (q.try_dequeue(v)) {
        order &= v == next;
        sum += v;
        ++next;
      }
    }
  });
  pin(0);
  for (uint64_t i = 0; i < n;) {
    if (q.try_enqueue(i)) ++i;  // try_: fixed capacity, as the others
  }
  c.join();
  check(order && sum == n * (n - 1) / 2, "moodycamel");
}

void BM_ring_throughput_ours(benchmark::State& st) {
  for (auto _ : st) ours(k_messages, uint32_t(st.range(0)));
  st.SetItemsProcessed(int64_t(st.iterations() * k_messages));
  st.SetBytesProcessed(int64_t(st.iterations() * k_messages * 8));
}
void BM_ring_throughput_boost(benchmark::State& st) {
  for (auto _ : st) boost_q(k_messages, uint32_t(st.range(0)));
  st.SetItemsProcessed(int64_t(st.iterations() * k_messages));
  st.SetBytesProcessed(int64_t(st.iterations() * k_messages * 8));
}
void BM_ring_throughput_moodycamel(benchmark::State& st) {
  for (auto _ : st) moody(k_messages);
  st.SetItemsProcessed(int64_t(st.iterations() * k_messages));
  st.SetBytesProcessed(int64_t(st.iterations() * k_messages * 8));
}
BENCHMARK(BM_ring_throughput_ours)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ring_throughput_boost)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ring_throughput_moodycamel)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- latency ----

void report(benchmark::State& st, std::vector<uint64_t>& lat, const char* what) {
  check(!lat.empty(), what);
  std::sort(lat.begin(), lat.end());
  st.counters["p50_ns"] = double(lat[lat.size() / 2]);
  st.counters["p99_ns"] = double(lat[lat.size() * 99 / 100]);
}

// Consumer spins on the ring; one message at a time, the producer waits for each.
void BM_ring_latency_busy(benchmark::State& st) {
  constexpr int n = 20'000;
  std::vector<uint64_t> lat;
  for (auto _ : st) {
    rt::spsc_ring<uint64_t> r(64);
    std::atomic<int> handled{0};
    std::vector<uint64_t> l(n);
    std::thread c([&] {
      pin(1);
      int got = 0;
      while (got < n) {
        got += int(r.consume([&](uint64_t& t) { l[size_t(got)] = now_ns() - t; }));
        // Release: the latency slots written above are complete when the producer (and the
        // final read after join) sees the count.
        handled.store(got, std::memory_order_release);
      }
    });
    pin(0);
    for (int i = 0; i < n; ++i) {
      r.try_push(now_ns());
      // Acquire: pairs with the consumer's release of `handled` (one message in flight).
      while (handled.load(std::memory_order_acquire) <= i) {
      }
    }
    c.join();
    lat.insert(lat.end(), l.begin(), l.end());
  }
  report(st, lat, "busy latency");
}
BENCHMARK(BM_ring_latency_busy)->Iterations(1)->UseRealTime();

// Consumer is a shard loop that sleeps in io_uring_enter between messages; the producer's
// loop wakes it (MSG_RING when the kernel has it) only after the sleeper check says so.
// wake_share = the part of the median that a spinning consumer does not pay.
void BM_ring_latency_sleeping(benchmark::State& st) {
  constexpr int n = 5'000;
  std::vector<uint64_t> lat;
  uint64_t wakes = 0;
  for (auto _ : st) {
    rt::spsc_ring<uint64_t> r(64);
    rt::sleeper sl;
    std::atomic<feedplane::net::loop*> cl{nullptr};
    std::atomic<int> handled{0};
    std::atomic<bool> done{false}, may_exit{false};
    std::vector<uint64_t> l(n);
    std::thread c([&] {
      pin(1);
      std::string err;
      auto lp = feedplane::net::loop::create({}, &err);
      check(lp != nullptr, "loop");
      struct hook_ctx {
        rt::spsc_ring<uint64_t>* r;
        rt::sleeper* sl;
        std::vector<uint64_t>* l;
        std::atomic<int>* handled;
        int got;
      } h{&r, &sl, &l, &handled, 0};
      lp->set_turn_hook(
          [](void* p) {
            auto& x = *static_cast<hook_ctx*>(p);
            x.sl->cancel();
            x.got += int(x.r->consume([&](uint64_t& t) { (*x.l)[size_t(x.got)] = now_ns() - t; }));
            // Release: pairs with the producer's acquire spin on `handled`.
            x.handled->store(x.got, std::memory_order_release);
            x.sl->prepare();
            if (x.r->has_published()) {
              x.sl->cancel();
              return true;
            }
            return false;
          },
          &h);
      // Release: the loop is fully built before the producer (acquire below) wakes it.
      cl.store(lp.get(), std::memory_order_release);
      // Acquire: pairs with the producer's release of `done` after its last message.
      while (!done.load(std::memory_order_acquire)) lp->run_once(true);
      lp->set_turn_hook(nullptr, nullptr);
      // The loop outlives the producer's last wake-up: it is destroyed only after
      // `may_exit` (acquire, pairs with the producer's release after that wake).
      while (!may_exit.load(std::memory_order_acquire)) std::this_thread::yield();
    });
    pin(0);
    std::string err;
    auto pl = feedplane::net::loop::create({}, &err);
    check(pl != nullptr, "loop");
    feedplane::net::loop* target = nullptr;
    // Acquire: pairs with the consumer's release of `cl` once its loop exists.
    while ((target = cl.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
    for (int i = 0; i < n; ++i) {
      // Let the consumer fall asleep first: this measures the wake-up path.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      r.try_push(now_ns());
      if (sl.must_wake()) {
        pl->wake(*target);
        ++wakes;
      }
      pl->run_once(false);  // submits the MSG_RING
      // Acquire: pairs with the consumer hook's release of `handled`.
      while (handled.load(std::memory_order_acquire) <= i) {
      }
    }
    done.store(true, std::memory_order_release);  // pairs with the consumer's acquire
    target->wake_from_any_thread();
    may_exit.store(true, std::memory_order_release);  // after the last use of `target`
    c.join();
    lat.insert(lat.end(), l.begin(), l.end());
  }
  st.counters["wakes_per_msg"] = double(wakes) / double(lat.size());
  report(st, lat, "sleeping latency");
}
BENCHMARK(BM_ring_latency_sleeping)->Iterations(1)->UseRealTime();

// ---- broadcast ----
// The store's hand-off of one frozen article to every shard: one reference copy per shard
// into its article ring, the consumer's drop, and the last drop's free. Articles are
// built outside the timed region; per-article-per-shard cost = 1 / (items/s x shards).
void BM_broadcast(benchmark::State& st) {
  const auto shards = uint32_t(st.range(0));
  constexpr int n = 200'000;
  rt::article_builder b;
  std::vector<rt::article_ref> arts;
  arts.reserve(n);
  for (int i = 0; i < n; ++i) {
    b.clear();
    b.title = "apple releases a new phone " + std::to_string(i);
    b.summary = "words words words";
    arts.push_back(b.freeze());
  }
  const int64_t alive = rt::article::alive();
  for (auto _ : st) {
    std::vector<std::unique_ptr<rt::article_ring>> rings;
    for (uint32_t s = 0; s < shards; ++s) rings.push_back(std::make_unique<rt::article_ring>(4096));
    std::vector<std::thread> cs;
    std::atomic<uint64_t> got{0};
    for (uint32_t s = 0; s < shards; ++s) {
      cs.emplace_back([&, s] {
        pin(int(1 + s));
        uint64_t mine = 0;
        while (mine < uint64_t(n)) mine += rings[s]->consume([](rt::article_ref& a) { a.reset(); });
        got.fetch_add(mine);  // seq_cst (default); read only after join()
      });
    }
    pin(0);
    for (int i = 0; i < n; ++i) {
      for (uint32_t s = 0; s < shards; ++s) {
        while (!rings[s]->try_stage(arts[size_t(i)])) rings[s]->publish();
        if ((i & 63) == 63) rings[s]->publish();
      }
      arts[size_t(i)].reset();  // the store drops its own reference
    }
    for (uint32_t s = 0; s < shards; ++s) rings[s]->publish();
    for (auto& c : cs) c.join();
    check(got.load() == uint64_t(n) * shards, "broadcast count");
    check(rt::article::alive() == alive - n, "every article freed by its last holder");
    st.PauseTiming();
    for (int i = 0; i < n; ++i) {  // rebuild for the next iteration
      b.clear();
      b.title = "apple releases a new phone " + std::to_string(i);
      arts[size_t(i)] = b.freeze();
    }
    st.ResumeTiming();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
  st.counters["sec_per_article_per_shard"] =
      benchmark::Counter(double(st.iterations()) * n * shards,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_broadcast)->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- article memory and freeze cost ----
// Bytes of one frozen article (header, strings, folded words, hashes, distinct words)
// for Cobra's article lengths (61 words median, 637 p90, 2000 long), with a title of 8
// words, a link and a guid; the summary is the text wrapped in <p>. bytes_per_word shows
// what the matcher's arrays cost beyond the text itself.
void BM_article_freeze(benchmark::State& st) {
  const auto words = size_t(st.range(0));
  feedplane::workload::rng r(42);
  feedplane::workload::generator g(feedplane::workload::vocabulary::english());
  rt::article_builder b;
  std::vector<std::string> texts, titles;
  for (int i = 0; i < 64; ++i) {
    texts.push_back("<p>" + g.text(r, words) + "</p>");
    titles.push_back(g.title(r));
  }
  size_t bytes = 0, n = 0;
  for (auto _ : st) {
    b.clear();
    b.title = titles[n % 64];
    b.summary = texts[n % 64];
    b.link = "https://blog.example.org/2026/11/23/some-article-slug";
    b.guid = "https://blog.example.org/?p=123456";
    b.source_url = "https://blog.example.org/feed/";
    rt::article_ref a = b.freeze();
    benchmark::DoNotOptimize(a.get());
    bytes += a->bytes();
    ++n;
  }
  st.SetItemsProcessed(int64_t(n));
  st.counters["bytes_per_article"] = double(bytes) / double(n);
  st.counters["words"] = double(words);
}
BENCHMARK(BM_article_freeze)->Arg(61)->Arg(637)->Arg(2000);

}  // namespace

BENCHMARK_MAIN();
