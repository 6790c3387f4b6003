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
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

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

}  // namespace

BENCHMARK_MAIN();
