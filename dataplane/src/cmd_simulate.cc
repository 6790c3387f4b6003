// `feedplane simulate-schedule`: replays a posting trace against the crawler's scheduling
// policies under one fetch budget, as Sia, Cho and Cho's section IV does (learn from the
// first two weeks, evaluate on the rest), and writes synthetic traces with the paper's
// statistics. The policies call the crawler's own functions (scheduler.h, schedule.h).
//
//   --generate-trace FILE [--feeds N] [--weeks W] [--seed S]
//   --trace FILE --interval-hours H --policy P [--k K]   one policy at one budget
//   --trace FILE --table [--k K]                         Table II's layout, every policy
//
// Delay is measured for every posting in the evaluation weeks, from its publication to the
// first fetch at or after it (the paper's Definition 1); a posting is missed when k newer
// ones were published before that fetch (it had left the feed's last k).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "commands.h"
#include "feedplane/crawler/schedule.h"
#include "feedplane/crawler/scheduler.h"

namespace feedplane::dataplane {

namespace {

namespace cr = crawler;

constexpr int64_t k_learn_s = 2 * cr::k_week_s;    // the paper's two-week estimation window
constexpr double k_floor_s = 300;                  // [crawler] min_interval_s
constexpr double k_ceiling_s = 86'400;             // FeedEx's and Miniflux's ceiling
constexpr double k_max_interval_s = 7 * 86'400.0;  // the allocation's longest interval
// Monday 2004-09-27 00:00 UTC: the paper's trace began on Sunday, Sep 26, 2004.
constexpr int64_t k_trace_start = 1'096'243'200;

struct simulate_args {
  std::string trace, generate, policy;
  double interval_hours = 0;
  uint32_t k = 10;
  bool table = false;
  uint32_t feeds = 2000;
  uint32_t weeks = 13;
  uint64_t seed = 1;
};

// ---------------------------------------------------------------- the trace generator

// Posting rates: 20% of feeds nearly silent (at most three postings in 13 weeks), the rest
// a power law in the number of postings per 13 weeks, density x^-0.78 (the paper's fit,
// y = 376 x^-0.78 feeds at x postings) on [1, 2600]: 2600 is where 376 x^-0.78 summed over
// x reaches the paper's 9,634 feeds. Each feed posts as an inhomogeneous Poisson process:
// a daily cycle exp(kappa cos(2 pi (hour - peak) / 24)) with kappa 0.5-2.5 and the peak near
// 13:00 local time, and a weekly one (weekends at 0.3-1 of weekdays), in its own time zone,
// 85% American as the paper's domains were. Calibrated to Figure 3(b): the aggregate's
// weekday peak is 4.5 times its night trough (the figure: about 5000 against 1000-1500 per
// two hours) and weekend peaks about 0.65 of weekday ones. (A first version, a cosine of
// amplitude 0.3-1 across more time zones, gave 1.8: too flat.)
int generate_trace(const simulate_args& a) {
  std::mt19937_64 rng(a.seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double span = double(a.weeks) * double(cr::k_week_s);
  struct posting {
    int64_t t;
    uint32_t feed;
  };
  std::vector<posting> out;
  // Mostly American, as the paper's domains were: Eastern, Central, Mountain, Pacific.
  const int tz_choices[] = {-5, -5, -5, -5, -5, -5, -5, -6, -6, -6,
                            -6, -7, -8, -8, -8, -8, -8, 0,  1,  9};
  for (uint32_t f = 0; f < a.feeds; ++f) {
    double total = 0;  // expected postings over 13 weeks
    if (u(rng) < 0.2) {
      total = 0.25 + 2.75 * u(rng);
    } else {
      const double e = 0.22;  // 1 - 0.78
      total = std::pow(1 + u(rng) * (std::pow(2600.0, e) - 1), 1 / e);
    }
    const double rate = total / (13.0 * double(cr::k_week_s));  // per second, on average
    const double kappa = 0.5 + 2 * u(rng);                      // the daily cycle's strength
    const double peak = std::clamp(13 + 3 * std::normal_distribution<double>(0, 1)(rng), 6.0, 22.0);
    const double weekend = 0.3 + 0.7 * u(rng);
    const int tz = tz_choices[size_t(u(rng) * 20) % 20];
    // shape(t) has mean (5 + 2 weekend) / 7 over a week; thinning against its maximum.
    auto daily = [&](double hour) {
      return std::exp(kappa * std::cos(2 * std::numbers::pi * (hour - peak) / 24));
    };
    double mean_daily = 0;
    for (int i = 0; i < 1440; ++i) mean_daily += daily((i + 0.5) / 60) / 1440;
    const double mean_shape = mean_daily * (5 + 2 * weekend) / 7;
    const double max_shape = std::exp(kappa);
    const double max_rate = rate * max_shape / mean_shape;
    std::exponential_distribution<double> gap(max_rate);
    for (double t = gap(rng); t < span; t += gap(rng)) {
      const int64_t unix_t = k_trace_start + int64_t(t);
      const int64_t local = unix_t + int64_t(tz) * 3600;
      const double hour = double(((local % 86'400) + 86'400) % 86'400) / 3600;
      const uint32_t dow = cr::hour_of_week(local) / 24;  // 0 = Thursday: 2, 3 the weekend
      const double day = dow == 2 || dow == 3 ? weekend : 1.0;
      if (u(rng) * max_shape < daily(hour) * day) out.push_back({unix_t, f});
    }
  }
  std::sort(out.begin(), out.end(), [](const posting& x, const posting& y) { return x.t < y.t; });
  std::FILE* fp = std::fopen(a.generate.c_str(), "w");
  if (fp == nullptr) {
    fmt::print(stderr, "simulate-schedule: cannot write {}\n", a.generate);
    return 1;
  }
  fmt::print(fp,
             "# feedplane simulate-schedule trace: {} feeds, {} weeks from {}, seed {}\n"
             "# feed id, unix publish time\n",
             a.feeds, a.weeks, k_trace_start, a.seed);
  for (const posting& p : out) fmt::print(fp, "f{} {}\n", p.feed, p.t);
  const bool ok = std::fclose(fp) == 0;
  fmt::print("wrote {} postings from {} feeds over {} weeks to {}\n", out.size(), a.feeds, a.weeks,
             a.generate);
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------- the trace

struct trace {
  std::vector<std::vector<int64_t>> feeds;  // posting times per feed, sorted
  int64_t start = 0, end = 0;
  size_t postings = 0;
};

bool load_trace(const std::string& path, trace& tr, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "cannot open " + path;
    return false;
  }
  std::unordered_map<std::string, size_t> ids;
  std::string line;
  size_t lineno = 0;
  tr.start = INT64_MAX;
  tr.end = INT64_MIN;
  while (std::getline(in, line)) {
    ++lineno;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t sep = line.find_first_of(" \t,", first);
    if (sep == std::string::npos) {
      *why = fmt::format("line {}: expected 'feed time'", lineno);
      return false;
    }
    const std::string id = line.substr(first, sep - first);
    const size_t ts = line.find_first_not_of(" \t,", sep);
    char* endp = nullptr;
    const long long t = ts == std::string::npos ? 0 : std::strtoll(line.c_str() + ts, &endp, 10);
    if (ts == std::string::npos || endp == line.c_str() + ts || t <= 0) {
      *why = fmt::format("line {}: expected a unix time after the feed id", lineno);
      return false;
    }
    auto [it, added] = ids.emplace(id, tr.feeds.size());
    if (added) tr.feeds.emplace_back();
    tr.feeds[it->second].push_back(t);
    tr.start = std::min<int64_t>(tr.start, t);
    tr.end = std::max<int64_t>(tr.end, t);
    ++tr.postings;
  }
  if (tr.postings == 0) {
    *why = "the trace has no postings";
    return false;
  }
  for (auto& f : tr.feeds) std::sort(f.begin(), f.end());
  // Whole days from the first posting's (UTC) day.
  tr.start -= ((tr.start % 86'400) + 86'400) % 86'400;
  tr.end = tr.start + (tr.end - tr.start) / 86'400 * 86'400 + 86'400;
  if (tr.end - tr.start <= k_learn_s) {
    *why = "the trace spans two weeks or less: nothing is left to evaluate after learning";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- policies

enum class policy { uniform, scheduling, allocation, combined, adaptive, entry_frequency };
constexpr const char* k_policy_names[] = {"uniform",  "scheduling", "allocation",
                                          "combined", "adaptive",   "entry-frequency"};

struct result {
  double mean_h = 0, p90_h = 0;
  uint64_t missed = 0, evaluated = 0, fetches = 0;
  double mean_interval_h = 0;  // the evaluation weeks over fetches per feed
};

class simulator {
 public:
  simulator(const trace& tr, uint32_t k, uint64_t seed) : tr_(tr), k_(k), seed_(seed) {
    eval_start_ = tr.start + k_learn_s;
    // The paper's learning: each feed's history from the first two weeks only.
    hist_.resize(tr.feeds.size());
    for (size_t i = 0; i < tr.feeds.size(); ++i) {
      hist_[i].watch_from(tr.start);
      for (int64_t t : tr.feeds[i]) {
        if (t < eval_start_) hist_[i].observe(t, params_);
      }
    }
  }

  result run(policy p, double interval_h) {
    const double eval_s = double(tr_.end - eval_start_);
    const double budget = double(tr_.feeds.size()) * eval_s / (interval_h * 3600);
    if (p == policy::adaptive || p == policy::entry_frequency) {
      // These policies set their own intervals; one multiplier on all of them (Miniflux's
      // SCHEDULER_ENTRY_FREQUENCY_FACTOR; FeedEx's floor and ceiling) is set so that they
      // spend the budget, where their clamps allow.
      double lo = 1.0 / 64, hi = 64;
      result best = simulate(p, interval_h, 1);
      for (int i = 0; i < 30; ++i) {
        const double s = std::sqrt(lo * hi);
        const result r = simulate(p, interval_h, s);
        if (std::abs(double(r.fetches) - budget) < std::abs(double(best.fetches) - budget)) {
          best = r;
        }
        (double(r.fetches) > budget ? lo : hi) = s;
        if (std::abs(double(r.fetches) - budget) < budget * 0.005) break;
      }
      return best;
    }
    return simulate(p, interval_h, 1);
  }

 private:
  result simulate(policy p, double interval_h, double scale) {
    std::mt19937_64 rng(seed_);
    std::uniform_real_distribution<double> u(0, 1);
    const double interval_s = interval_h * 3600;
    double k_alloc = 0;
    const double lo = 1 / k_max_interval_s, hi = 1 / k_floor_s;
    if (p == policy::allocation || p == policy::combined) {
      std::vector<double> demand(tr_.feeds.size());
      for (size_t i = 0; i < demand.size(); ++i) {
        demand[i] = std::sqrt(hist_[i].rate(eval_start_, params_));  // weight 1
      }
      const double budget_rate = double(tr_.feeds.size()) / interval_s;
      k_alloc = cr::allocation_constant(demand, budget_rate, lo, hi);
    }
    delays_.clear();
    result r;
    std::vector<int64_t> fetches;
    for (size_t i = 0; i < tr_.feeds.size(); ++i) {
      const auto& posts = tr_.feeds[i];
      fetches.clear();
      const int64_t last = std::max(posts.back(), tr_.end);
      const double phase = u(rng);
      switch (p) {
        case policy::uniform:
          for (double t = double(eval_start_) + phase * interval_s;; t += interval_s) {
            fetches.push_back(int64_t(t));
            if (t > double(last)) break;
          }
          break;
        case policy::allocation: {
          const double rate =
              std::clamp(k_alloc * std::sqrt(hist_[i].rate(eval_start_, params_)), lo, hi);
          for (double t = double(eval_start_) + phase / rate;; t += 1 / rate) {
            fetches.push_back(int64_t(t));
            if (t > double(last)) break;
          }
          break;
        }
        case policy::scheduling:
        case policy::combined: {
          double per_week = double(cr::k_week_s) / interval_s;
          if (p == policy::combined) {
            per_week =
                std::clamp(k_alloc * std::sqrt(hist_[i].rate(eval_start_, params_)), lo, hi) *
                double(cr::k_week_s);
          }
          const cr::fetch_plan plan = cr::make_plan(hist_[i], per_week, eval_start_, params_);
          for (int64_t t = eval_start_;;) {
            t = std::max(cr::next_in_plan(plan, t), t + int64_t(k_floor_s));
            fetches.push_back(t);
            if (t > last) break;
          }
          break;
        }
        case policy::adaptive: {
          cr::interval_bounds b;
          b.floor_s = uint32_t(k_floor_s * scale);
          b.ceiling_s = uint32_t(k_ceiling_s * scale);
          uint32_t iv = cr::initial_interval(b);
          size_t seen = 0;  // postings published by the previous fetch
          bool first = true;
          for (int64_t t = tr_.start + int64_t(phase * iv);; t += iv) {
            fetches.push_back(t);
            const size_t upto =
                size_t(std::upper_bound(posts.begin(), posts.end(), t) - posts.begin());
            const auto fresh = uint32_t(std::min<size_t>(upto - seen, k_));
            const auto total = uint32_t(std::min<size_t>(upto, k_));
            if (!first) iv = cr::adapt_interval(iv, fresh, total, b);
            first = false;
            seen = upto;
            if (t > last) break;
          }
          break;
        }
        case policy::entry_frequency: {
          double t = double(tr_.start) + phase * 3600;
          for (;;) {
            fetches.push_back(int64_t(t));
            if (t > double(last)) break;
            const auto lo_it =
                std::upper_bound(posts.begin(), posts.end(), int64_t(t) - cr::k_week_s);
            const auto hi_it = std::upper_bound(posts.begin(), posts.end(), int64_t(t));
            const auto weekly = double(hi_it - lo_it);
            const double iv = weekly == 0 ? k_ceiling_s
                                          : std::clamp(double(cr::k_week_s) / weekly * scale,
                                                       k_floor_s, k_ceiling_s);
            t += iv;
          }
          break;
        }
      }
      for (int64_t f : fetches) {
        if (f >= eval_start_ && f < tr_.end) ++r.fetches;
      }
      // Each evaluated posting against the first fetch at or after it.
      size_t j = 0;
      for (size_t n = 0; n < posts.size(); ++n) {
        const int64_t t = posts[n];
        if (t < eval_start_) continue;
        while (j < fetches.size() && fetches[j] < t) ++j;
        const int64_t f = j < fetches.size() ? fetches[j] : last;
        delays_.push_back(double(f - t) / 3600);
        if (n + k_ < posts.size() && posts[n + k_] <= f) ++r.missed;
      }
    }
    r.evaluated = delays_.size();
    if (!delays_.empty()) {
      double sum = 0;
      for (double d : delays_) sum += d;
      r.mean_h = sum / double(delays_.size());
      const size_t at = std::min(delays_.size() - 1, size_t(double(delays_.size()) * 0.9));
      std::nth_element(delays_.begin(), delays_.begin() + ptrdiff_t(at), delays_.end());
      r.p90_h = delays_[at];
    }
    const double eval_h = double(tr_.end - eval_start_) / 3600;
    r.mean_interval_h = r.fetches == 0 ? 0 : eval_h * double(tr_.feeds.size()) / double(r.fetches);
    return r;
  }

  const trace& tr_;
  uint32_t k_;
  uint64_t seed_;
  cr::history_params params_;
  int64_t eval_start_ = 0;
  std::vector<cr::posting_history> hist_;
  std::vector<double> delays_;
};

bool parse_policy(const std::string& s, policy* p) {
  for (size_t i = 0; i < std::size(k_policy_names); ++i) {
    if (s == k_policy_names[i]) {
      *p = policy(i);
      return true;
    }
  }
  return false;
}

int run_simulate(const simulate_args& a) {
  if (!a.generate.empty()) return generate_trace(a);
  if (a.trace.empty()) {
    fmt::print(stderr, "simulate-schedule: give --trace FILE (or --generate-trace FILE)\n");
    return 2;
  }
  if (a.k == 0) {
    fmt::print(stderr, "simulate-schedule: --k must be at least 1\n");
    return 2;
  }
  trace tr;
  std::string why;
  if (!load_trace(a.trace, tr, &why)) {
    fmt::print(stderr, "simulate-schedule: {}\n", why);
    return 1;
  }
  simulator sim(tr, a.k, a.seed);
  const double weeks = double(tr.end - tr.start) / double(cr::k_week_s);
  fmt::print(
      "trace: {} feeds, {} postings, {:.1f} weeks (learning from the first two, "
      "evaluating the rest), k = {}\n",
      tr.feeds.size(), tr.postings, weeks, a.k);
  if (a.table) {
    const double intervals[] = {6, 8, 12, 24};
    fmt::print(
        "\n| policy | interval (h) | mean delay (h) | p90 delay (h) | missed entries | "
        "vs uniform | fetched every (h) |\n|---|---|---|---|---|---|---|\n");
    double mean_min[std::size(k_policy_names)][std::size(intervals)] = {};
    for (size_t pi = 0; pi < std::size(k_policy_names); ++pi) {
      for (size_t ii = 0; ii < std::size(intervals); ++ii) {
        const result r = sim.run(policy(pi), intervals[ii]);
        mean_min[pi][ii] = r.mean_h * 60;
        const double vs = mean_min[0][ii] > 0 ? r.mean_h * 60 / mean_min[0][ii] - 1 : 0;
        fmt::print("| {} | {} | {:.2f} | {:.2f} | {} ({:.2f}%) | {:+.0f}% | {:.2f} |\n",
                   k_policy_names[pi], intervals[ii], r.mean_h, r.p90_h, r.missed,
                   100.0 * double(r.missed) / double(std::max<uint64_t>(1, r.evaluated)), 100 * vs,
                   r.mean_interval_h);
      }
    }
    fmt::print(
        "\nmean delay in minutes (Table II's layout)\n\n| policy | 6 h | 8 h | 12 h | 24 h "
        "|\n|---|---|---|---|---|\n");
    for (size_t pi = 0; pi < std::size(k_policy_names); ++pi) {
      fmt::print("| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} |\n", k_policy_names[pi],
                 mean_min[pi][0], mean_min[pi][1], mean_min[pi][2], mean_min[pi][3]);
    }
    return 0;
  }
  policy p{};
  if (!parse_policy(a.policy, &p)) {
    fmt::print(stderr,
               "simulate-schedule: --policy is one of uniform, scheduling, allocation, "
               "combined, adaptive, entry-frequency\n");
    return 2;
  }
  if (!(a.interval_hours > 0)) {
    fmt::print(stderr, "simulate-schedule: --interval-hours must be positive\n");
    return 2;
  }
  const result r = sim.run(p, a.interval_hours);
  fmt::print("policy {} at one fetch per {} h per feed on average\n", a.policy, a.interval_hours);
  fmt::print("fetches {} (every {:.2f} h per feed on average)\n", r.fetches, r.mean_interval_h);
  fmt::print("evaluated entries {}\n", r.evaluated);
  fmt::print("mean delay {:.3f} h\n", r.mean_h);
  fmt::print("p90 delay {:.3f} h\n", r.p90_h);
  fmt::print("missed entries {}\n", r.missed);
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "simulate-schedule",
      "replay a posting trace against the crawler's scheduling policies under a fetch budget "
      "(Sia and Cho's Table II), or generate a trace with the paper's statistics");
  auto args = std::make_shared<simulate_args>();
  cmd->add_option("--trace", args->trace,
                  "posting trace: one line per entry, feed id and unix publish time (space or "
                  "comma); # comments");
  cmd->add_option("--interval-hours", args->interval_hours,
                  "the budget: this many hours between fetches per feed on average");
  cmd->add_option("--policy", args->policy,
                  "uniform|scheduling|allocation|combined|adaptive|entry-frequency");
  cmd->add_option("--k", args->k, "entries a feed shows (older ones are pushed out)")
      ->capture_default_str();
  cmd->add_flag("--table", args->table,
                "every policy at 6, 8, 12 and 24 h (the layout of the paper's Table II)");
  cmd->add_option("--generate-trace", args->generate, "write a synthetic trace to this file");
  cmd->add_option("--feeds", args->feeds, "feeds in a generated trace")->capture_default_str();
  cmd->add_option("--weeks", args->weeks, "weeks in a generated trace")->capture_default_str();
  cmd->add_option("--seed", args->seed, "random seed (generator, and the policies' phases)")
      ->capture_default_str();
  cmd->callback([args, rc] { *rc = run_simulate(*args); });
}

}  // namespace feedplane::dataplane
