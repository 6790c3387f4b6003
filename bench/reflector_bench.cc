// reflector_bench: the per-match work after the index has matched (issue 14's
// cpu_per_match_insert; issue 11's matching on shards): for each matched subscription, find
// it among S subscriptions and append the article's sequence to its last-k list
// (reflector::last_k at full k, so every insert also drops the oldest), as
// reflector::on_article does. Subscriptions are separate heap objects of the reflector's
// size and matched in random order, so the figure includes the two cache misses a real
// match pays (the subscription, then its list), not a hot loop over one list.
//
// The peer, BM_list_insert_shift, is the list the reflector had before (a vector that scans
// for duplicates and shifts out its oldest), same subscriptions, same order.
//
// Counter: sec_per_insert (CPU time per matched subscription, one thread).
//
// BM_snapshot_round: a snapshot round's durable file writes (dataplane::write_files_durably:
// one syncfs per chunk of files, renames, one directory fsync) of N partition files of 3 KB,
// against BM_snapshot_round_fsync_each, the same files each fsynced before its rename (what
// the writer did before). CPU time is the writing thread's, user and system; the directory
// is FEEDPLANE_BENCH_DIR (default the current one: on a tmpfs neither syncs anything).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "feedplane/dataplane/file.h"
#include "feedplane/reflector/last_k.h"

namespace {

using feedplane::reflector::last_k;

// The earlier last-k list: scan for the sequence, append, erase the oldest.
class shift_list {
 public:
  bool insert(uint64_t seq, uint64_t replaces, uint32_t k) {
    if (std::find(seqs_.begin(), seqs_.end(), seq) != seqs_.end()) return false;
    if (replaces != 0) {
      if (auto it = std::find(seqs_.begin(), seqs_.end(), replaces); it != seqs_.end()) {
        *it = seq;
        return true;
      }
    }
    if (seqs_.capacity() < k) seqs_.reserve(k);
    seqs_.push_back(seq);
    if (seqs_.size() > k) seqs_.erase(seqs_.begin(), seqs_.end() - k);
    return true;
  }

 private:
  std::vector<uint64_t> seqs_;
};

// The fields of reflector.cc's subscription that a match touches, padded to its size, so
// that S of them spread over memory as the real ones do.
template <class List>
struct subscription {
  std::array<std::string, 4> text;  // id, account, query, title
  uint32_t k = 10;
  uint64_t from_seq = 0;
  int64_t changed = 0;
  List list;
  std::array<std::shared_ptr<const std::string>, 3> feeds;  // rendered RSS, Atom, JSON
  std::vector<std::string> words;
};

template <class List>
void insert_matches(benchmark::State& st) {
  const auto subs = static_cast<size_t>(st.range(0));
  const auto k = static_cast<uint32_t>(st.range(1));
  std::vector<std::unique_ptr<subscription<List>>> all(subs);
  uint64_t seq = 1;
  for (auto& s : all) {
    s = std::make_unique<subscription<List>>();
    s->k = k;
    for (uint32_t i = 0; i < k; ++i) s->list.insert(seq++, 0, k);
  }
  // A fixed random order of matched subscriptions, longer than the cache.
  std::vector<uint32_t> order(1U << 20);
  std::mt19937_64 rng(7);
  for (auto& o : order) o = static_cast<uint32_t>(rng() % subs);
  size_t i = 0;
  int64_t now = 1;
  for (auto _ : st) {
    subscription<List>& s = *all[order[i++ & (order.size() - 1)]];
    if (seq > s.from_seq && s.list.insert(seq, 0, s.k)) {
      for (auto& f : s.feeds) f.reset();
      s.changed = now;
    }
    ++seq;
  }
  st.counters["sec_per_insert"] =
      benchmark::Counter(static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  benchmark::DoNotOptimize(now);
}
void BM_list_insert(benchmark::State& st) { insert_matches<last_k>(st); }
void BM_list_insert_shift(benchmark::State& st) { insert_matches<shift_list>(st); }
void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"subs", "k"})->Args({100'000, 10})->Args({1'000'000, 10})->Args({1'000'000, 100});
}
BENCHMARK(BM_list_insert)->Apply(args);
BENCHMARK(BM_list_insert_shift)->Apply(args);

// The per-file way: write, fsync and rename each file; then fsync the directory.
size_t write_each_synced(const std::vector<feedplane::dataplane::file_bytes>& files,
                         const std::string& dir) {
  size_t done = 0;
  for (const auto& f : files) {
    const std::string tmp = f.path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) continue;
    const bool ok =
        ::write(fd, f.bytes.data(), f.bytes.size()) == ssize_t(f.bytes.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (ok && ::rename(tmp.c_str(), f.path.c_str()) == 0) ++done;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return done;
}

template <bool each>
void snapshot_round(benchmark::State& st) {
  const char* base = std::getenv("FEEDPLANE_BENCH_DIR");
  const std::filesystem::path dir = std::filesystem::path(base != nullptr ? base : ".") /
                                    ("fp-snapshot-bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<feedplane::dataplane::file_bytes> files(static_cast<size_t>(st.range(0)));
  std::mt19937_64 rng(11);
  for (size_t i = 0; i < files.size(); ++i) {
    files[i].path = (dir / ("p-" + std::to_string(i) + ".lists")).string();
    files[i].bytes.resize(3000);
    for (char& c : files[i].bytes) c = char(rng());
  }
  std::string why;
  for (auto _ : st) {
    files[0].bytes[0]++;  // each round's bytes differ (nothing is skipped as unchanged)
    const size_t n = each ? write_each_synced(files, dir.string())
                          : feedplane::dataplane::write_files_durably(files, &why);
    if (n != files.size()) st.SkipWithError(("not every file written: " + why).c_str());
  }
  st.counters["sec_per_file"] =
      benchmark::Counter(static_cast<double>(st.iterations() * files.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  std::filesystem::remove_all(dir);
}
void BM_snapshot_round(benchmark::State& st) { snapshot_round<false>(st); }
void BM_snapshot_round_fsync_each(benchmark::State& st) { snapshot_round<true>(st); }
BENCHMARK(BM_snapshot_round)->ArgName("files")->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_snapshot_round_fsync_each)->ArgName("files")->Arg(512)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
