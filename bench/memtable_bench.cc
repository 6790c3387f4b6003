// The subscriptions' memtable (store/memtable.h) against its peer, RocksDB's own vector
// memtable (VectorRepFactory, what the store used before): the flush of a memtable of N
// subscription records, which sorts it and writes it as a table file, and the inserts
// that fill it (the store thread's share); and, for the crawler's families, against
// RocksDB's default skip list (BM_crawl_memtable). bench/RESULTS.md, "## store".
//
// Each repetition opens a fresh RocksDB (FEEDPLANE_STORE_BENCH_DIR, default
// /var/tmp/feedplane-store-bench), writes N records shaped like the reflector's: keys
// `s_` + 8 time-ordered characters + 11 random ones (reflector/token.cc), values 200 bytes,
// in batches of 1,000 without the log (the flush is what is measured, not the disk's sync),
// into one memtable large enough to hold them all; then times db->Flush(). The flushed
// table is read back and counted before the figure is kept.
//
//   build/bench/memtable_bench --benchmark_repetitions=5
//   --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <rocksdb/db.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "feedplane/store/memtable.h"

namespace {

std::string bench_dir() {
  const char* d = getenv("FEEDPLANE_STORE_BENCH_DIR");
  return (d != nullptr ? std::string(d) : std::string("/var/tmp/feedplane-store-bench")) +
         "/memtable";
}

// Keys as the reflector makes them: time-ordered to the millisecond, then random, with a
// few hundred ids per millisecond as a bulk creation makes them on two shards.
std::string id_key(std::mt19937_64& rng, uint64_t ms) {
  static constexpr char sorted[] =
      "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
  std::string s = "s_";
  for (int shift = 42; shift >= 0; shift -= 6) s.push_back(sorted[(ms >> shift) & 63]);
  for (int i = 0; i < 11; ++i) s.push_back(sorted[rng() & 63]);
  return s;
}

// One benchmark's repetitions: a fresh RocksDB per repetition, one memtable of `factory`
// (RocksDB's skip list when null) large enough for all n records; fill(db, wo) writes them
// without the log (timed: the inserts, the store thread's share) and returns how many keys
// the table must hold; then db->Flush() (timed: the flush thread's share); the table is
// read back and counted (RocksDB checks the order as it builds it).
template <class Fill>
void fill_and_flush(benchmark::State& state, std::shared_ptr<rocksdb::MemTableRepFactory> factory,
                    size_t n, Fill&& fill) {
  const std::string dir = bench_dir();
  double insert_s = 0, flush_s = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.allow_concurrent_memtable_write = false;
    o.write_buffer_size = size_t{2} << 30;  // one memtable holds them all
    o.max_write_buffer_number = 2;
    if (factory) o.memtable_factory = factory;
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::Open(o, dir, &raw).ok()) {
      state.SkipWithError("cannot open RocksDB");
      break;
    }
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    const auto t0 = std::chrono::steady_clock::now();
    const size_t want = fill(*db, wo);
    const auto t1 = std::chrono::steady_clock::now();
    state.ResumeTiming();
    const rocksdb::Status s = db->Flush(rocksdb::FlushOptions());
    state.PauseTiming();
    const auto t2 = std::chrono::steady_clock::now();
    if (!s.ok()) state.SkipWithError("flush failed");
    size_t count = 0;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++count;
    if (count != want) state.SkipWithError("records missing after the flush");
    insert_s += std::chrono::duration<double>(t1 - t0).count();
    flush_s += std::chrono::duration<double>(t2 - t1).count();
    state.ResumeTiming();
  }
  const double iters = double(state.iterations());
  state.counters["flush_ns_per_record"] = flush_s / iters / double(n) * 1e9;
  state.counters["insert_ns_per_record"] = insert_s / iters / double(n) * 1e9;
  state.counters["total_ns_per_record"] = (insert_s + flush_s) / iters / double(n) * 1e9;
  std::filesystem::remove_all(dir);
}

void BM_memtable_flush(benchmark::State& state) {
  const bool ours = state.range(0) == 1;
  const size_t n = size_t(state.range(1));
  fill_and_flush(state,
                 ours ? feedplane::store::make_prefix_vector_memtable()
                      : std::make_shared<rocksdb::VectorRepFactory>(),
                 n, [&](rocksdb::DB& db, const rocksdb::WriteOptions& wo) {
                   std::mt19937_64 rng(42);
                   const std::string value(200, 'v');
                   rocksdb::WriteBatch batch;
                   uint64_t ms = 1'795'000'000'000;
                   for (size_t i = 0; i < n; ++i) {
                     if (i % 300 == 0) ++ms;
                     batch.Put(id_key(rng, ms), value).PermitUncheckedError();
                     if (batch.Count() == 1000 || i + 1 == n) {
                       if (!db.Write(wo, &batch).ok()) state.SkipWithError("write failed");
                       batch.Clear();
                     }
                   }
                   return n;
                 });
}

// Arg 0: RocksDB's VectorRep (the peer); 1: ours. 100,000 records: about what one of the
// store's memtables holds at the default memtable_mb (64 MiB, two 32 MiB memtables), which
// a 1M bulk creation fills and flushes ~10 times.
BENCHMARK(BM_memtable_flush)
    ->ArgNames({"ours", "records"})
    ->Args({0, 100'000})
    ->Args({1, 100'000})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The crawler's families (kind::crawl) on ours against RocksDB's default skip list (what
// they used before): each changed feed rewrites its source's record, at a random one of
// `sources` keys (8 bytes big-endian, a domain id above a feed's number, as
// crawler/records.h keys them), 400-byte values, ten records per write (a store group
// under a crawl), until the memtable holds 100,000. insert_ns is the store thread's share
// (the skip list's search for each record's place), flush_ns the flush thread's (ours
// sorts there); their sum is what each record costs in all. Read back and counted (the
// newest value of every key written) before the figure is kept.
void BM_crawl_memtable(benchmark::State& state) {
  const bool ours = state.range(0) == 1;
  const size_t sources = size_t(state.range(1));
  const size_t n = 100'000;
  // Outside the timed fill: the keys, and the generator's state the fill starts from.
  std::mt19937_64 rng0(7);
  std::vector<uint64_t> ids(sources);
  for (uint64_t& id : ids) id = (rng0() & 0xffff'ffff'0000'0000ull) | (rng0() & 0xffff);
  std::vector<bool> written;
  fill_and_flush(state, ours ? feedplane::store::make_prefix_vector_memtable() : nullptr, n,
                 [&](rocksdb::DB& db, const rocksdb::WriteOptions& wo) {
                   std::mt19937_64 rng = rng0;
                   std::string value(400, 'v');
                   rocksdb::WriteBatch batch;
                   written.assign(sources, false);
                   for (size_t i = 0; i < n; ++i) {
                     const size_t j = size_t(rng() % sources);
                     written[j] = true;
                     char key[8];
                     for (int b = 0; b < 8; ++b) key[b] = char(uint8_t(ids[j] >> (56 - 8 * b)));
                     std::memcpy(value.data(), &i, sizeof i);  // each version its own bytes
                     batch.Put(rocksdb::Slice(key, 8), value).PermitUncheckedError();
                     if (batch.Count() == 10 || i + 1 == n) {
                       if (!db.Write(wo, &batch).ok()) state.SkipWithError("write failed");
                       batch.Clear();
                     }
                   }
                   size_t want = 0;  // the newest version of every key written
                   for (bool w : written) want += w ? 1 : 0;
                   return want;
                 });
}

// Arg 0: RocksDB's skip list (the peer); 1: ours. 10,000 sources (the crawler benchmark's
// farm) and 1,000,000 (issue 10's host).
BENCHMARK(BM_crawl_memtable)
    ->ArgNames({"ours", "sources"})
    ->Args({0, 10'000})
    ->Args({1, 10'000})
    ->Args({0, 1'000'000})
    ->Args({1, 1'000'000})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
