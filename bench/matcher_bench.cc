// Matcher benchmarks on Cobra's workload (bench/workload): match time per article against
// 10k..10M subscriptions at 61, 250, 637 and 2000 words (Figure 10's axes), with the
// plain-counting peer (Fabret's basic algorithm) and, at small sizes, the naive matcher in
// the same run; at 1M and 10M and 61 words, the index again with the caches evicted before
// each article (the slow tail), and beside the warm rows the machine's own tail (a
// register-only loop as long as the row's median, timed after each article); index bytes per
// subscription; inserts per second; the longest stall a mutation or maintenance step causes;
// tokenizer bytes/s, Highway against scalar.
//
// Every matcher's output is checked against the others before timing. Times are per
// article from a pool of pre-tokenised articles (tokenising is measured separately: an
// article is tokenised once and matched on every shard).
//
//   build/bench/matcher_bench                       # everything up to 1M
//   FEEDPLANE_BENCH_10M=1 build/bench/matcher_bench # adds 10M subscriptions
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "feedplane/matcher/article.h"
#include "feedplane/matcher/index.h"
#include "feedplane/matcher/naive.h"
#include "feedplane/matcher/text.h"
#include "feedplane/workload/workload.h"
#include "machine_tail.h"

namespace fm = feedplane::matcher;
namespace fw = feedplane::workload;

namespace {

using clock_type = std::chrono::steady_clock;

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

// Per-sample times are this thread's CPU time, not wall time: the machine is shared with
// other work, and a descheduled thread's wall time says nothing about the matcher. The
// clock read costs about 0.1 us (a system call), included in every sample.
using feedplane::bench::thread_cpu_ns;

const fw::generator& gen() {
  static const fw::generator g(fw::vocabulary::english());
  return g;
}

constexpr size_t k_warmup_articles = 20000;

// Articles the index has "crawled" before subscriptions arrive, so that filing words are
// chosen from real frequencies.
void warm(fm::index& idx) {
  fw::rng r(1);
  fm::article a;
  for (size_t i = 0; i < k_warmup_articles; ++i) {
    a.assign_text(gen().title(r), gen().text(r, gen().article_length(r)));
    idx.observe(a);
  }
}

// How a world's subscriptions are filed: after 20,000 articles warmed the word counts,
// then one upkeep pass (the rows' default); or as on a shard whose subscriptions came before
// any article: the adds with every count at zero, then the articles, then no upkeep pass
// (the shards until 9bf6a13) or one (the shards since).
enum class filing { warm, cold_unkept, cold_upkept };

struct world {
  size_t n = 0;
  filing how = filing::warm;
  fm::index idx;
  fm::counting_matcher counting;
  std::unique_ptr<fm::naive_matcher> naive;  // small sizes only
  double build_seconds = 0;
  double bytes_per_sub_built = 0;  // right after the bulk insert
  double bytes_per_sub = 0;        // after one maintenance pass (re-filing, trimmed slack)
  double maintain_pass_seconds = 0;
};

double bytes_per_sub(const fm::index& idx, size_t n) {
  const auto m = idx.memory_usage();
  return static_cast<double>(m.total() - m.frequency_sketch) / static_cast<double>(n);
}

constexpr size_t k_naive_limit = 100000;

// One world at a time: the benchmarks run in order of size, and 10M subscriptions twice
// (index and peer) need the memory to themselves.
world& get_world(size_t n, filing how = filing::warm) {
  static std::unique_ptr<world> w;
  if (w && w->n == n && w->how == how) return *w;
  w.reset();
  w = std::make_unique<world>();
  w->n = n;
  w->how = how;
  if (how == filing::warm) warm(w->idx);
  if (n <= k_naive_limit) w->naive = std::make_unique<fm::naive_matcher>();
  fw::rng r(2);
  fm::query_parser parser;
  fm::parsed_query q;
  double index_ns = 0;
  w->idx.reserve(static_cast<uint32_t>(n));
  for (uint32_t id = 0; id < n; ++id) {
    if (!parser.parse(gen().subscription(r), q).ok()) std::abort();
    const auto t0 = clock_type::now();
    w->idx.add(id, q);
    index_ns += ns_since(t0);
    if (!w->counting.add(id, q)) std::abort();
    if (w->naive) w->naive->add(id, q);
  }
  w->build_seconds = index_ns / 1e9;
  w->bytes_per_sub_built = bytes_per_sub(w->idx, n);
  if (how != filing::warm) warm(w->idx);
  const auto t0 = clock_type::now();
  if (how != filing::cold_unkept) w->idx.maintain(SIZE_MAX);
  w->maintain_pass_seconds = ns_since(t0) / 1e9;
  w->bytes_per_sub = bytes_per_sub(w->idx, n);
  return *w;
}

std::vector<fm::article>& articles(size_t words) {
  static std::map<size_t, std::vector<fm::article>> pools;
  auto& pool = pools[words];
  if (pool.empty()) {
    fw::rng r(100 + words);
    pool.resize(words >= 2000 ? 64 : 256);
    for (auto& a : pool) a.assign_text(gen().title(r), gen().text(r, words - 8));
  }
  return pool;
}

struct percentiles {
  double median, p90, p99;
};

percentiles summarize(std::vector<double>& ns) {
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[std::min(ns.size() - 1, static_cast<size_t>(q * static_cast<double>(ns.size())))];
  };
  return {at(0.5), at(0.9), at(0.99)};
}

void check_same(world& w, const std::vector<fm::article>& pool) {
  fm::match_result r;
  std::vector<uint32_t> a, b, c;
  for (size_t i = 0; i < std::min<size_t>(pool.size(), 16); ++i) {
    w.idx.match(pool[i], r);
    a.assign(r.ids().begin(), r.ids().end());
    std::sort(a.begin(), a.end());
    w.counting.match(pool[i], b);
    std::sort(b.begin(), b.end());
    if (a != b) {
      std::fprintf(stderr, "index and plain counting disagree\n");
      std::abort();
    }
    if (w.naive) {
      w.naive->match(pool[i], c);
      if (a != c) {
        std::fprintf(stderr, "index and naive disagree\n");
        std::abort();
      }
    }
  }
}

void report(benchmark::State& state, std::vector<double>& ns) {
  const auto p = summarize(ns);
  state.counters["median_us"] = p.median / 1e3;
  state.counters["p90_us"] = p.p90 / 1e3;
  state.counters["p99_us"] = p.p99 / 1e3;
  state.counters["p99_per_median"] = p.p99 / p.median;
}

// ---- match time: index, plain counting, naive (which = 0, 1, 2) ----

void BM_match(benchmark::State& state, size_t n, size_t words, int which, filing how) {
  world& w = get_world(n, how);
  auto& pool = articles(words);
  check_same(w, pool);
  fm::match_result r;
  std::vector<uint32_t> out;
  std::vector<double> ns;
  // The tail rows (the index at 1M and more, 61 words) also time the machine's own tail
  // (machine_tail.h) after each article, at the length of this row's median (measured
  // first, untimed): its p99 / median is the tail this machine gives any code that long.
  const bool floor = which == 0 && n >= 1000000 && words == 61;
  uint64_t steps = 0, x = 1;
  std::vector<double> floor_ns;
  if (floor) {
    for (size_t k = 0; k < 2 * pool.size(); ++k) {
      const double t0 = thread_cpu_ns();
      w.idx.match(pool[k % pool.size()], r);
      ns.push_back(thread_cpu_ns() - t0);
    }
    steps = feedplane::bench::spin_steps_for(summarize(ns).median);
    ns.clear();
  }
  size_t i = 0, matches = 0, postings = 0, candidates = 0;
  for (auto _ : state) {
    const double t0 = thread_cpu_ns();
    if (which == 0) {
      w.idx.match(pool[i], r);
    } else if (which == 1) {
      w.counting.match(pool[i], out);
    } else {
      w.naive->match(pool[i], out);
    }
    ns.push_back(thread_cpu_ns() - t0);
    if (floor) {
      const double t1 = thread_cpu_ns();
      x = feedplane::bench::spin(steps, x);
      floor_ns.push_back(thread_cpu_ns() - t1);
    }
    if (which == 0) {
      matches += r.ids().size();
      postings += r.stats().postings;
      candidates += r.stats().candidates;
    } else {
      matches += out.size();
      if (which == 1) postings += w.counting.last_postings();
    }
    i = (i + 1) % pool.size();
  }
  report(state, ns);
  if (floor) {
    benchmark::DoNotOptimize(x);
    const auto f = summarize(floor_ns);
    state.counters["floor_median_us"] = f.median / 1e3;
    state.counters["floor_p99_us"] = f.p99 / 1e3;
    state.counters["floor_p99_per_median"] = f.p99 / f.median;
  }
  const double k = static_cast<double>(ns.size());
  state.counters["matches"] = static_cast<double>(matches) / k;
  if (which != 2) state.counters["postings"] = static_cast<double>(postings) / k;
  if (which == 0) {
    state.counters["candidates"] = static_cast<double>(candidates) / k;
    state.counters["B_per_sub"] = w.bytes_per_sub;
    state.counters["B_per_sub_built"] = w.bytes_per_sub_built;
    state.counters["build_s"] = w.build_seconds;
    state.counters["maintain_pass_s"] = w.maintain_pass_seconds;
  } else if (which == 1) {
    state.counters["B_per_sub"] =
        static_cast<double>(w.counting.memory_bytes()) / static_cast<double>(n);
  }
}

// ---- match time with the caches taken: the slow articles of issue 11 ----
// At 1M subscriptions the slow 1-2% of articles are not particular articles (each of the
// pool's articles is slow now and then, none always): they are articles whose postings
// were evicted, by other work on the machine, between two matches. This row makes that
// case repeatable: before each article, untimed, it reads a buffer twice the size of the
// last-level cache, so the postings, the vocabulary and the per-article state all come
// from memory. Only the counters are the result (the reported time includes the
// eviction); compare its median with the p99 of the warm row of the same size.
void BM_match_cold(benchmark::State& state, size_t n, size_t words) {
  world& w = get_world(n);
  auto& pool = articles(words);
  check_same(w, pool);
  constexpr size_t k_evict_bytes = size_t{64} << 20;
  static std::vector<uint64_t> evict(k_evict_bytes / sizeof(uint64_t), 1);
  fm::match_result r;
  std::vector<double> ns;
  size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < evict.size(); k += 8) sum += evict[k];  // one load per line
    benchmark::DoNotOptimize(sum);
    const double t0 = thread_cpu_ns();
    w.idx.match(pool[i], r);
    ns.push_back(thread_cpu_ns() - t0);
    i = (i + 1) % pool.size();
  }
  report(state, ns);
}

size_t max_subscriptions() { return std::getenv("FEEDPLANE_BENCH_10M") ? 10000000 : 1000000; }

// ---- inserts per second ----

void BM_insert(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const bool parsed = state.range(1) != 0;
  const size_t batch = static_cast<size_t>(state.range(2));  // prefetch_adds per batch; 0: off
  fw::rng r(3);
  std::vector<std::string> text(n);
  for (auto& s : text) s = gen().subscription(r);
  std::vector<fm::parsed_query> queries;
  fm::query_parser parser;
  if (parsed) {
    queries.resize(n);
    for (size_t i = 0; i < n; ++i) parser.parse(text[i], queries[i]);
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto idx = std::make_unique<fm::index>();
    warm(*idx);
    state.ResumeTiming();
    std::vector<std::string_view> views;
    for (uint32_t id = 0; id < n; ++id) {
      if (batch != 0 && id % batch == 0) {
        views.assign(text.begin() + id, text.begin() + std::min<size_t>(n, id + batch));
        idx->prefetch_adds(views.data(), views.size());
      }
      if (parsed) {
        idx->add(id, queries[id]);
      } else {
        idx->add(id, text[id]);
      }
    }
    state.PauseTiming();
    idx.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

// ---- query parsing: what every subscription's creation and every restart pays per query ----

// Arg 1: the parser as it runs (plain-word queries on their direct path); arg 0: the general
// parser alone, the peer. Arg reuse 1 parses into one reused parsed_query, as the
// reflector's install at a restart does; 0 into a fresh one each time, as the bulk API does
// (its parse travels with the subscription to the owner shard).
void BM_parse(benchmark::State& state) {
  fw::rng r(5);
  std::vector<std::string> text(100000);
  for (auto& t : text) t = gen().subscription(r);
  fm::query_parser parser;
  parser.set_plain_fast_path(state.range(0) != 0);
  const bool reuse = state.range(1) != 0;
  fm::parsed_query q;
  size_t i = 0;
  for (auto _ : state) {
    if (reuse) {
      if (!parser.parse(text[i], q).ok()) std::abort();
      benchmark::DoNotOptimize(q.clauses.data());
    } else {
      fm::parsed_query fresh;
      if (!parser.parse(text[i], fresh).ok()) std::abort();
      benchmark::DoNotOptimize(fresh.clauses.data());
    }
    i = i + 1 == text.size() ? 0 : i + 1;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["plain_share"] =
      double(parser.plain_parses()) / double(std::max<int64_t>(1, state.iterations()));
}

// ---- stalls: mutations and maintenance interleaved with matching at n subscriptions ----

void BM_mutation_stall(benchmark::State& state, size_t n) {
  world& w = get_world(n);
  auto& pool = articles(61);
  fw::rng r(4);
  fm::query_parser parser;
  fm::parsed_query q;
  fm::match_result res;
  std::vector<double> add_ns, remove_ns, maintain_ns, match_ns;
  uint32_t next_id = static_cast<uint32_t>(n);
  size_t i = 0;
  for (auto _ : state) {
    double t0 = thread_cpu_ns();
    w.idx.match(pool[i], res);
    match_ns.push_back(thread_cpu_ns() - t0);
    i = (i + 1) % pool.size();
    for (int m = 0; m < 20; ++m) {
      // Replace a random subscription's query (remove + add under a fresh id).
      parser.parse(gen().subscription(r), q);
      const auto victim = static_cast<uint32_t>(r.below(next_id));
      t0 = thread_cpu_ns();
      const bool removed = w.idx.remove(victim);
      if (removed) remove_ns.push_back(thread_cpu_ns() - t0);
      t0 = thread_cpu_ns();
      w.idx.add(next_id++, q);
      add_ns.push_back(thread_cpu_ns() - t0);
    }
    t0 = thread_cpu_ns();
    w.idx.maintain(512);
    maintain_ns.push_back(thread_cpu_ns() - t0);
  }
  auto max_of = [](const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  };
  state.counters["add_max_us"] = max_of(add_ns) / 1e3;
  state.counters["remove_max_us"] = max_of(remove_ns) / 1e3;
  state.counters["maintain512_max_us"] = max_of(maintain_ns) / 1e3;
  auto p999 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() * 999 / 1000];
  };
  auto over = [](const std::vector<double>& v, double ns) {
    return static_cast<double>(std::count_if(v.begin(), v.end(), [&](double x) { return x > ns; }));
  };
  state.counters["add_p999_us"] = p999(add_ns) / 1e3;
  state.counters["remove_p999_us"] = p999(remove_ns) / 1e3;
  state.counters["maintain512_p999_us"] = p999(maintain_ns) / 1e3;
  state.counters["ops_over_100us"] = over(add_ns, 1e5) + over(remove_ns, 1e5);
  state.counters["mutations"] = static_cast<double>(add_ns.size() + remove_ns.size());
  state.counters["add_median_us"] = summarize(add_ns).median / 1e3;
  state.counters["remove_median_us"] = summarize(remove_ns).median / 1e3;
  state.counters["match_median_us"] = summarize(match_ns).median / 1e3;
  // The world's index changed: drop it so later benchmarks rebuild the exact workload.
  w.n = 0;
}

// ---- tokenizer ----

const std::string& ascii_text() {
  static const std::string s = [] {
    fw::rng r(9);
    std::string t;
    while (t.size() < (1u << 20)) t += gen().text(r, 1000) + "\n";
    return t;
  }();
  return s;
}

void BM_tokenize(benchmark::State& state) {
  const std::string& s = ascii_text();
  fm::token_buffer simd, scalar;
  fm::tokenize(s, simd);
  fm::tokenize_scalar(s, scalar);
  if (simd.size() != scalar.size()) std::abort();
  fm::token_buffer t;
  const bool use_simd = state.range(0) != 0;
  for (auto _ : state) {
    t.clear();
    if (use_simd) {
      fm::tokenize(s, t);
    } else {
      fm::tokenize_scalar(s, t);
    }
    benchmark::DoNotOptimize(t.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.SetLabel(use_simd ? std::string("highway ") + fm::tokenizer_target() : "scalar table");
}

void BM_scan_kernel(benchmark::State& state) {
  const std::string& s = ascii_text();
  const auto* in = reinterpret_cast<const uint8_t*>(s.data());
  std::vector<uint8_t> lower(s.size());
  std::vector<uint32_t> bounds(s.size() + 1 + fm::detail::k_bounds_slack);
  const bool use_simd = state.range(0) != 0;
  unsigned flags;
  for (auto _ : state) {
    const size_t n =
        use_simd ? fm::detail::scan_words_simd(in, s.size(), lower.data(), bounds.data(), &flags)
                 : fm::detail::scan_words_scalar(in, s.size(), lower.data(), bounds.data(), &flags);
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.SetLabel(use_simd ? std::string("highway ") + fm::tokenizer_target() : "scalar table");
}

void BM_prepare_article(benchmark::State& state) {
  const size_t words = static_cast<size_t>(state.range(0));
  fw::rng r(10);
  const std::string title = gen().title(r), content = gen().text(r, words - 8);
  fm::article a;
  for (auto _ : state) {
    a.assign_html(title, content);
    benchmark::DoNotOptimize(a.size());
  }
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * (title.size() + content.size())));
}

}  // namespace

BENCHMARK(BM_scan_kernel)->Arg(0)->Arg(1);
BENCHMARK(BM_tokenize)->Arg(0)->Arg(1);
BENCHMARK(BM_prepare_article)->Arg(61)->Arg(2000);
BENCHMARK(BM_parse)->ArgNames({"fast", "reuse"})->ArgsProduct({{0, 1}, {1, 0}});
BENCHMARK(BM_insert)
    ->Args({1000000, 0, 0})
    ->Args({1000000, 0, 100})
    ->Args({1000000, 1, 0})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  std::printf("tokenizer target: %s\n", fm::tokenizer_target());
  // Registered in order of size, so each world of subscriptions is built once.
  static const char* const k_names[] = {"index", "counting", "naive"};
  for (size_t n : {10000, 100000, 1000000, 10000000}) {
    if (n > max_subscriptions()) continue;
    for (size_t words : {61, 250, 637, 2000}) {
      for (int which = 0; which < 3; ++which) {
        if (which == 2 && n > k_naive_limit) continue;
        const std::string name = std::string("match/") + k_names[which] +
                                 "/subs:" + std::to_string(n) + "/words:" + std::to_string(words);
        auto* b =
            benchmark::RegisterBenchmark(name.c_str(), BM_match, n, words, which, filing::warm);
        b->Unit(benchmark::kMicrosecond);
        if (which == 2 && n >= 100000) b->Iterations(words >= 637 ? 10 : 50);
      }
      if (n >= 1000000 && words == 61) {
        const std::string cold = "match/index_cold/subs:" + std::to_string(n) + "/words:61";
        benchmark::RegisterBenchmark(cold.c_str(), BM_match_cold, n, words)
            ->Iterations(512)
            ->Unit(benchmark::kMicrosecond);
      }
    }
    if (n == 1000000) {
      benchmark::RegisterBenchmark("mutation_stall/subs:1000000", BM_mutation_stall, n)
          ->Iterations(2000)
          ->Unit(benchmark::kMicrosecond);
      // Filed before any article, without and with one upkeep pass (filing, above).
      benchmark::RegisterBenchmark("match/index_unkept/subs:1000000/words:61", BM_match, n,
                                   size_t{61}, 0, filing::cold_unkept)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark("match/index_upkept/subs:1000000/words:61", BM_match, n,
                                   size_t{61}, 0, filing::cold_upkept)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
