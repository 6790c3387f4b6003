// Allocator benchmark: the allocation patterns feedplane's shards produce, run once per
// allocator (the same source is linked three times: mimalloc, jemalloc, system glibc).
// The winner is FEEDPLANE_ALLOCATOR's default; bench/RESULTS.md records the run.
//
// Patterns:
//  - cross_thread_article: one shard builds articles (title, body, token offsets) and hands
//    them to another thread that frees them: an article is freed by the last shard that
//    drops it, usually not the one that allocated it.
//  - churn_mixed: one thread keeps a live set of 4096 buffers of 16 B..64 KiB (HTTP bodies,
//    parse trees, strings) and replaces a random one per iteration.
//  - small_strings: short-lived strings of 8..120 bytes (header values, words, ids).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// Peak resident set of the whole process so far, in MiB: the footprint side of the choice.
double max_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

struct article {
  std::string title;
  std::string body;
  std::vector<uint32_t> token_offsets;
};

// Lognormal-ish body sizes: median ~1.5 KiB, tail to 64 KiB, like real feed entries.
size_t body_size(std::mt19937_64& rng) {
  std::lognormal_distribution<double> d(7.3, 1.0);
  double v = d(rng);
  if (v > 65536) v = 65536;
  return static_cast<size_t>(v) + 16;
}

article* make_article(std::mt19937_64& rng) {
  auto* a = new article;
  a->title.assign(40 + rng() % 60, 't');
  a->body.assign(body_size(rng), 'b');
  a->token_offsets.resize(a->body.size() / 6);
  return a;
}

// Hand-off queue in batches of 256 pointers; the mutex is taken once per batch so the
// allocator, not the queue, dominates.
class batch_queue {
 public:
  void push(std::vector<article*>&& b) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return q_.size() < 8; });
    q_.push_back(std::move(b));
    cv_.notify_all();
  }
  bool pop(std::vector<article*>& out) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !q_.empty() || done_; });
    if (q_.empty()) return false;
    out = std::move(q_.front());
    q_.pop_front();
    cv_.notify_all();
    return true;
  }
  void close() {
    std::lock_guard lk(mu_);
    done_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<article*>> q_;
  bool done_ = false;
};

void cross_thread_article(benchmark::State& state) {
  std::mt19937_64 rng(42);
  batch_queue q;
  std::atomic<uint64_t> freed{0};
  std::thread consumer([&] {
    std::vector<article*> b;
    while (q.pop(b)) {
      for (auto* a : b) delete a;
      freed.fetch_add(b.size(), std::memory_order_relaxed);
    }
  });
  uint64_t made = 0, bytes = 0;
  for (auto _ : state) {
    std::vector<article*> b;
    b.reserve(256);
    for (int i = 0; i < 256; ++i) {
      b.push_back(make_article(rng));
      bytes += b.back()->body.size();
    }
    made += b.size();
    q.push(std::move(b));
  }
  q.close();
  consumer.join();
  if (freed.load() != made) state.SkipWithError("lost articles");
  state.SetItemsProcessed(static_cast<int64_t>(made));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["max_rss_MiB"] = max_rss_mib();
}
BENCHMARK(cross_thread_article)->UseRealTime()->MinTime(1.0);

void churn_mixed(benchmark::State& state) {
  std::mt19937_64 rng(7);
  constexpr size_t live = 4096;
  std::vector<std::unique_ptr<char[]>> slots(live);
  std::vector<size_t> sizes(live, 0);
  uint64_t checksum = 0;
  for (auto _ : state) {
    size_t i = rng() % live;
    size_t n = 16u << (rng() % 13);  // 16 B .. 64 KiB, log-uniform
    n += rng() % n;
    slots[i].reset(new char[n]);
    slots[i][0] = static_cast<char>(n);
    slots[i][n - 1] = 1;
    sizes[i] = n;
    checksum += static_cast<unsigned char>(slots[i][0]);
  }
  benchmark::DoNotOptimize(checksum);
  state.SetItemsProcessed(state.iterations());
  state.counters["max_rss_MiB"] = max_rss_mib();
}
BENCHMARK(churn_mixed)->MinTime(1.0);

void small_strings(benchmark::State& state) {
  std::mt19937_64 rng(9);
  std::vector<std::string> v;
  v.reserve(64);
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i) v.emplace_back(8 + rng() % 113, 'x');
    benchmark::DoNotOptimize(v.data());
    v.clear();
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(small_strings)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
