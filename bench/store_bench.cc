// The store thread: acknowledged durable writes per second (bench/RESULTS.md, "## store").
//
// Producers stand in for shards: each owns a write ring and an event ring with the store,
// keeps its ring full of writes (one put of a 16-byte key and a 64-256 byte value, in
// kind::test) and reuses each write when its acknowledgement comes back, so the figure is
// the store's, not the allocator's. Every write is acknowledged only after the group's
// synced RocksDB write, so items/s is durable writes/s.
//
// Peers and limit, in the same run by scripts/bench-store on the same disk: RocksDB's own
// `db_bench --benchmarks=fillrandom --sync=1 --threads=<producers> --value_size=128` (one
// synced write per put; its writers join RocksDB's write groups), and BM_fsync_4k below,
// the disk's rate of 4 KiB appends + fdatasync, the ceiling on groups per second.
//
// Output checked before timing: a first batch is read back through the store and each
// value compared; a non-zero status aborts the benchmark.
//
// FEEDPLANE_STORE_BENCH_DIR picks the directory (default /var/tmp/feedplane-store-bench);
// a tmpfs is refused, its fsync is free.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/runtime/messages.h"
#include "feedplane/runtime/sleeper.h"
#include "feedplane/store/store.h"

namespace rt = feedplane::runtime;
namespace st = feedplane::store;

namespace {

std::string bench_dir() {
  const char* d = getenv("FEEDPLANE_STORE_BENCH_DIR");
  return d != nullptr ? d : "/var/tmp/feedplane-store-bench";
}

// Empty when dir is fit for an fsync benchmark, else why not.
std::string check_dir(const std::string& dir) {
  std::filesystem::create_directories(dir);
  struct statfs s {};
  if (statfs(dir.c_str(), &s) != 0) return "cannot statfs " + dir;
  if (s.f_type == TMPFS_MAGIC) return dir + " is a tmpfs: fsync costs nothing there";
  return {};
}

struct bench_write : rt::store_write {
  void on_durable(rt::shard& /*origin*/) override {}
};

uint64_t mix(uint64_t x) {  // splitmix64: keys in random order, like fillrandom
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fill_key(std::string& k, uint32_t producer, uint64_t n) {
  k.resize(16);
  const uint64_t a = mix(n * 64 + producer), b = n;
  std::memcpy(k.data(), &a, 8);
  std::memcpy(k.data() + 8, &b, 8);
}

// Write ring capacity per producer: bounds the writes in flight per shard, and so the
// group size (the disk allows so many synced writes per second; each carries a group).
constexpr uint32_t k_ring = 4096;

struct producer {
  explicit producer(uint32_t i) : index(i), in(k_ring), events(2 * k_ring), articles(64) {}
  uint32_t index;
  rt::write_ring in;
  rt::event_ring events;
  rt::article_ring articles;
  rt::sleeper sl;
  static void wake(void* c) { static_cast<rt::sleeper*>(c)->word().notify_one(); }
  std::vector<rt::write_ptr> free;  // writes back from the store, reused
  uint64_t next = 0;                // key counter
  bool bad = false;

  // Sends `count` writes and waits for all their acks.
  void run(st::store& s, uint64_t count, const std::string& value) {
    uint64_t sent = 0, acked = 0;
    while (acked < count) {
      while (sent < count) {
        if (free.empty()) break;
        rt::write_ptr w = std::move(free.back());
        free.pop_back();
        w->ops.resize(1);
        w->ops[0].k = rt::kind::test;
        fill_key(w->ops[0].key, index, next);
        w->ops[0].value = value;
        w->origin_shard = index;
        if (!in.try_stage(std::move(w))) {
          free.push_back(std::move(w));
          break;
        }
        ++next;
        ++sent;
      }
      if (in.publish() != 0) s.notify();
      const size_t got = events.consume([&](rt::store_event& e) {
        if (e.type != rt::store_event::ack) return;
        bad = bad || e.write->status != 0;
        free.push_back(std::move(e.write));
        ++acked;
      });
      // Nothing back yet: sleep until the store publishes (sleeper protocol), as a shard
      // sleeps in io_uring_enter, so producers do not take the store thread's core.
      if (got == 0 && (sent == count || free.empty())) {
        sl.prepare();
        if (events.has_published()) {
          sl.cancel();
        } else {
          sl.word().wait(1);
          sl.cancel();
        }
      }
    }
  }
};

struct rig {
  std::vector<std::unique_ptr<producer>> producers;
  std::unique_ptr<st::store> store;
  std::string error;

  rig(const std::string& dir, uint32_t n) {
    std::filesystem::remove_all(dir);
    std::vector<st::store_port> ports;
    for (uint32_t i = 0; i < n; ++i) {
      auto p = std::make_unique<producer>(i);
      for (uint32_t j = 0; j < 2 * k_ring; ++j) p->free.push_back(std::make_unique<bench_write>());
      ports.push_back({&p->in, &p->events, &p->articles, &p->sl, &producer::wake, &p->sl});
      producers.push_back(std::move(p));
    }
    st::store_options o;
    o.dir = dir;
    store = st::store::open(o, std::move(ports), nullptr, &error);
    if (!store) return;
    store->start();
    // Consume the start-up `streamed` event.
    for (auto& p : producers) {
      bool streamed = false;
      while (!streamed) {
        p->events.consume(
            [&](rt::store_event& e) { streamed = e.type == rt::store_event::streamed; });
      }
    }
  }
  void run(uint64_t per_producer, const std::string& value) {
    std::vector<std::thread> ts;
    for (auto& p : producers)
      ts.emplace_back([&, q = p.get()] { q->run(*store, per_producer, value); });
    for (auto& t : ts) t.join();
  }
};

void BM_store_acked_writes(benchmark::State& state) {
  const uint32_t n = uint32_t(state.range(0));
  const std::string value(size_t(state.range(1)), 'v');
  const std::string dir = bench_dir() + "/store";
  if (std::string why = check_dir(bench_dir()); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  rig r(dir, n);
  if (!r.store) {
    state.SkipWithError(r.error.c_str());
    return;
  }
  // Check before timing: a first batch reads back through the store, value for value.
  r.run(2000, value);
  for (auto& p : r.producers) {
    std::string k, v, err;
    for (uint64_t i = 0; i < p->next; ++i) {
      fill_key(k, p->index, i);
      if (!r.store->get(rt::kind::test, k, &v, &err) || v != value) {
        state.SkipWithError("a write acknowledged in the check batch is not there");
        return;
      }
    }
  }
  const auto& s = r.store->stats();
  const uint64_t groups0 = s.groups.load(), fsync0 = s.fsync_us.sum.load();
  const uint64_t per_iter = 20000;
  for (auto _ : state) r.run(per_iter / n, value);
  for (auto& p : r.producers) {
    if (p->bad) state.SkipWithError("a write came back with a non-zero status");
  }
  const double groups = double(s.groups.load() - groups0);
  const uint64_t per_producer = per_iter / n;  // whole writes per producer per iteration
  const double writes = double(uint64_t(state.iterations()) * per_producer * n);
  state.SetItemsProcessed(int64_t(writes));
  state.SetBytesProcessed(int64_t(writes * double(value.size() + 16)));
  state.counters["writes_per_group"] = groups > 0 ? writes / groups : 0;
  state.counters["sync_write_us"] =
      groups > 0 ? double(s.fsync_us.sum.load() - fsync0) / groups : 0;
  state.counters["groups_per_s"] = benchmark::Counter(groups, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_store_acked_writes)
    ->ArgNames({"producers", "value"})
    ->Args({1, 64})
    ->Args({1, 256})
    ->Args({2, 64})
    ->Args({2, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3);

// The disk's limit: 4 KiB appended and fdatasync'ed, as a WAL group does.
void BM_fsync_4k(benchmark::State& state) {
  if (std::string why = check_dir(bench_dir()); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const std::string path = bench_dir() + "/fsync_probe";
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    state.SkipWithError("cannot create the probe file");
    return;
  }
  std::string block(4096, 'f');
  uint64_t n = 0;
  for (auto _ : state) {
    if (::write(fd, block.data(), block.size()) != ssize_t(block.size()) || ::fdatasync(fd) != 0) {
      state.SkipWithError("write or fdatasync failed");
      break;
    }
    if (++n % 4096 == 0 && ::ftruncate(fd, 0) == 0) ::lseek(fd, 0, SEEK_SET);
  }
  ::close(fd);
  ::unlink(path.c_str());
  state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_fsync_4k)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(3);

}  // namespace

BENCHMARK_MAIN();
