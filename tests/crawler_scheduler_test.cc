// Sia and Cho's scheduling math (scheduler.h) against hand-computed cases: the learnt rate
// and weekly profile, Theorem 1's square-root allocation, and Theorem 3's placement on the
// paper's Example 1 (one retrieval lands where the rate falls to its average) and Example 2
// (six retrievals on 2 + 2 sin(2 pi t)).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "feedplane/crawler/scheduler.h"

namespace feedplane::crawler {
namespace {

constexpr int64_t k_day = 86'400;
// Monday 2004-09-27 00:00 UTC, the paper's trace's first week.
constexpr int64_t k_t0 = 1'096'243'200;

TEST(Scheduler, HourOfWeekStartsOnThursday) {
  EXPECT_EQ(hour_of_week(0), 0u);  // Thursday 1970-01-01 00:00 UTC
  EXPECT_EQ(hour_of_week(3599), 0u);
  EXPECT_EQ(hour_of_week(k_day + 3600), 25u);
  EXPECT_EQ(hour_of_week(-1), 167u);
  EXPECT_EQ(hour_of_week(k_t0), 4u * 24);  // a Monday: the fifth day from Thursday
}

TEST(Scheduler, PostingTimeIsThePublishedTimeWherePlausible) {
  const int64_t now = k_t0 + 10 * k_day;
  const int64_t prev = now - 3600;
  EXPECT_EQ(posting_time(true, now - 1800, prev, now), now - 1800);
  EXPECT_EQ(posting_time(true, now + 300, prev, now), now);         // skew: clamped to now
  EXPECT_EQ(posting_time(true, now + 3600, prev, now), now);        // the future: first seen
  EXPECT_EQ(posting_time(true, prev - 2 * k_day, prev, now), now);  // long before last look
  EXPECT_EQ(posting_time(false, now - 1800, prev, now), now);
  EXPECT_EQ(posting_time(true, now - 90 * k_day, 0, now), now - 90 * k_day);  // first document
}

TEST(Scheduler, SteadyPostingGivesItsRate) {
  const history_params p;
  posting_history h;
  h.watch_from(k_t0);
  for (int64_t t = k_t0 + 1800; t < k_t0 + 28 * k_day; t += 3600) h.observe(t, p);
  const int64_t now = k_t0 + 28 * k_day;
  EXPECT_NEAR(h.rate(now, p) * 3600, 1.0, 0.02);
  // Ten days of silence: the decayed count over the decayed window falls.
  EXPECT_LT(h.rate(now + 10 * k_day, p) * 3600, 0.8);
  EXPECT_TRUE(h.enough(now, p));
}

TEST(Scheduler, EnoughHistory) {
  const history_params p;
  posting_history h;
  EXPECT_FALSE(h.enough(k_t0, p));
  EXPECT_EQ(h.rate(k_t0, p), 0);
  h.watch_from(k_t0);
  EXPECT_FALSE(h.enough(k_t0 + 13 * k_day, p));
  EXPECT_TRUE(h.enough(k_t0 + 14 * k_day, p));  // watched two weeks, even if silent
  posting_history busy;
  busy.watch_from(k_t0);
  for (int i = 0; i < 20; ++i) busy.observe(k_t0 + i * 3600, p);
  EXPECT_FALSE(busy.enough(k_t0 + 20 * 3600, p));  // many, but not a day yet
  EXPECT_TRUE(busy.enough(k_t0 + k_day, p));
}

TEST(Scheduler, ProfileFollowsTheHourAndDay) {
  history_params p;
  posting_history h;
  h.watch_from(k_t0);
  // Three weeks: every weekday at 14:30 UTC, nothing at weekends.
  for (int d = 0; d < 21; ++d) {
    const int64_t day = k_t0 + d * k_day;
    const uint32_t dow = hour_of_week(day) / 24;  // 0 = Thursday, 2 = Saturday, 3 = Sunday
    if (dow == 2 || dow == 3) continue;
    h.observe(day + 14 * 3600 + 1800, p);
  }
  const int64_t now = k_t0 + 21 * k_day;
  double prof[k_week_hours];
  h.weekly_profile(now, p, prof);
  double sum = 0;
  for (double v : prof) sum += v;
  EXPECT_NEAR(sum / k_week_hours, h.rate(now, p) * 3600, 1e-9);  // mean is the rate
  const uint32_t monday = 4 * 24, saturday = 2 * 24;
  EXPECT_GT(prof[monday + 14], 5 * prof[monday + 3]);
  EXPECT_GT(prof[monday + 14], prof[monday + 13]);  // smoothing spreads, peak stays
  EXPECT_GT(prof[monday + 14], 3 * prof[saturday + 14]);
}

// 16-bit bins: a feed posting 5,000 times an hour for three weeks (bins rescaled many
// times) keeps its shape and rate.
TEST(Scheduler, BusyFeedsRescaleTheBinsAndKeepTheirShape) {
  const history_params p;
  posting_history h;
  h.watch_from(k_t0);
  for (int d = 0; d < 21; ++d) {
    for (int i = 0; i < 5000; ++i) h.observe(k_t0 + d * k_day + 9 * 3600 + i / 2, p);
    h.observe(k_t0 + d * k_day + 20 * 3600, p);  // and one in the evening
  }
  const int64_t now = k_t0 + 21 * k_day;
  double prof[k_week_hours];
  h.weekly_profile(now, p, prof);
  const uint32_t monday = 4 * 24;
  EXPECT_GT(prof[monday + 9], 1000 * prof[monday + 3]);
  EXPECT_GT(prof[monday + 20], prof[monday + 3]);  // one evening posting in 5,000 still shows
  double sum = 0;
  for (double v : prof) sum += v;
  EXPECT_NEAR(sum / k_week_hours / 3600 / h.rate(now, p), 1, 1e-9);
  // The decayed count over the decayed window: the steady rate, 5,001 a day.
  EXPECT_NEAR(h.rate(now, p) * k_day, 5001, 5001 * 0.1);
}

TEST(Scheduler, HistoryRoundTrips) {
  const history_params p;
  posting_history h;
  h.watch_from(k_t0);
  h.observe(k_t0 + 100, p);
  h.observe(k_t0 + 5 * k_day, p);
  std::string s;
  h.encode(s);
  EXPECT_EQ(s.size(), posting_history::k_encoded_size);
  posting_history back;
  ASSERT_TRUE(back.decode(s));
  EXPECT_EQ(back.since_s(), k_t0);
  EXPECT_EQ(back.rate(k_t0 + 6 * k_day, p), h.rate(k_t0 + 6 * k_day, p));
  EXPECT_FALSE(back.decode(s.substr(1)));
}

// ---- the weight: 1 + subscriptions a recent article matched ----

TEST(Weight, NoArticlesIsOne) {
  match_weight w;
  EXPECT_EQ(w.weight(), 1.0f);
  w.decay(30 * k_day, 7 * k_day);
  EXPECT_EQ(w.weight(), 1.0f);
  w.add_articles(5);  // articles nobody matched
  EXPECT_EQ(w.weight(), 1.0f);
}

TEST(Weight, EveryArticleMatchingNSubscriptionsGivesOnePlusN) {
  // Three articles, each matched by 4 subscriptions: 2 on one shard and 2 on another (two
  // reports each per article batch), whatever the posting rate.
  match_weight w;
  w.add_articles(3);
  w.add_matches(6);  // 3 articles x 2 subscriptions of one shard
  w.add_matches(6);  // ... and of the other
  EXPECT_FLOAT_EQ(w.weight(), 5);
  // Later fetches bring more such articles: the weight stays 1 + 4, not 1 + 4 x articles.
  for (int day = 1; day <= 20; ++day) {
    w.decay(k_day, 7 * k_day);
    w.add_articles(10);
    w.add_matches(40);
    EXPECT_NEAR(w.weight(), 5, 1e-4) << day;
  }
}

TEST(Weight, DecayAgesBothPartsAndKeepsTheRatio) {
  match_weight w;
  w.add_articles(2);
  w.add_matches(10);
  w.decay(7 * k_day, 7 * k_day);  // one half-life
  EXPECT_FLOAT_EQ(w.articles, 1);
  EXPECT_FLOAT_EQ(w.matches, 5);
  EXPECT_FLOAT_EQ(w.weight(), 6);  // a quiet feed keeps its weight
  w.decay(14 * k_day, 7 * k_day);
  EXPECT_FLOAT_EQ(w.articles, 0.25);
  EXPECT_FLOAT_EQ(w.weight(), 6);
  // A half-life of 0 never ages; a non-positive elapsed time changes nothing.
  match_weight still = w;
  still.decay(1e9, 0);
  EXPECT_EQ(still, w);
  still.decay(-5, 7 * k_day);
  EXPECT_EQ(still, w);
}

TEST(Weight, RecentArticlesOutweighOldOnes) {
  // 10 old articles matched by 9 subscriptions each; two half-lives later, 10 articles
  // nobody matches: the old ones count a quarter as much as the new.
  match_weight w;
  w.add_articles(10);
  w.add_matches(90);
  w.decay(14 * k_day, 7 * k_day);
  w.add_articles(10);
  // (90 / 4) / (10 / 4 + 10) = 1.8
  EXPECT_NEAR(w.weight(), 1 + 1.8, 1e-5);
  // An audience that left fades towards 1 as the feed keeps posting.
  for (int week = 0; week < 20; ++week) {
    w.decay(7 * k_day, 7 * k_day);
    w.add_articles(10);
  }
  EXPECT_LT(w.weight(), 1.001);
}

TEST(Weight, MatchesOfUncountedArticlesCountAsOneArticle) {
  // Articles committed before the weight was kept (a version 5 record) have no count.
  match_weight w;
  w.add_matches(7);
  EXPECT_FLOAT_EQ(w.articles, 1);
  EXPECT_FLOAT_EQ(w.weight(), 8);
  w.add_matches(0);
  EXPECT_FLOAT_EQ(w.weight(), 8);
}

TEST(Weight, IsBoundedWhateverTheParts) {
  match_weight w;
  w.matches = 3e38f;
  w.articles = 1e-40f;  // a garbled record's: the quotient is infinite
  EXPECT_EQ(w.weight(), match_weight::k_max);
}

TEST(Weight, PartsThatDecayedToNothingAreCleared) {
  match_weight w;
  w.add_articles(1);
  w.add_matches(3);
  w.decay(1400 * k_day, 7 * k_day);  // 200 half-lives: 2^-200 is below a float
  EXPECT_EQ(w, match_weight());
  EXPECT_EQ(w.weight(), 1.0f);
}

// Theorem 1: m_i proportional to sqrt(w_i lambda_i).
TEST(Scheduler, AllocationIsSquareRootOfWeightTimesRate) {
  const double inf = 1e18;
  // Rates 1, 4, 9 at weight 1: sqrt 1, 2, 3; twelve fetches go 2, 4, 6.
  const std::vector<double> d = {1, 2, 3};
  const double k = allocation_constant(d, 12, 0, inf);
  EXPECT_NEAR(k * d[0], 2, 1e-9);
  EXPECT_NEAR(k * d[1], 4, 1e-9);
  EXPECT_NEAR(k * d[2], 6, 1e-9);
  // Weight 4 at rate 1 equals weight 1 at rate 4.
  const std::vector<double> wd = {std::sqrt(4.0 * 1), std::sqrt(1.0 * 4)};
  const double kw = allocation_constant(wd, 10, 0, inf);
  EXPECT_NEAR(kw * wd[0], 5, 1e-9);
  EXPECT_NEAR(kw * wd[1], 5, 1e-9);
  // Optimal: moving a fetch between feeds only adds delay (sum lambda T^2 / (2 m)).
  const std::vector<double> lambda = {1, 4, 9};
  auto delay = [&](double m0, double m1, double m2) {
    return lambda[0] / (2 * m0) + lambda[1] / (2 * m1) + lambda[2] / (2 * m2);
  };
  EXPECT_LT(delay(2, 4, 6), delay(2.5, 3.5, 6));
  EXPECT_LT(delay(2, 4, 6), delay(2, 4.5, 5.5));
  EXPECT_LT(delay(2, 4, 6), delay(4, 4, 4));  // uniform
}

TEST(Scheduler, AllocationWaterFillsAroundTheClamps) {
  // Demands 1, 1, 10 with six fetches and at most 3 each: the third takes 3, the others
  // share the rest equally.
  const std::vector<double> d = {1, 1, 10};
  const double k = allocation_constant(d, 6, 0.1, 3);
  EXPECT_NEAR(std::clamp(k * d[0], 0.1, 3.0), 1.5, 1e-9);
  EXPECT_NEAR(std::clamp(k * d[2], 0.1, 3.0), 3, 1e-9);
  // A silent feed still gets the floor; a budget below the floors gives k = 0.
  const std::vector<double> z = {0, 4};
  const double kz = allocation_constant(z, 2, 0.5, 10);
  EXPECT_NEAR(std::clamp(kz * 4, 0.5, 10.0), 1.5, 1e-9);
  EXPECT_EQ(allocation_constant(z, 0.5, 0.5, 10), 0);
  // A budget beyond every cap: everyone with demand at the cap.
  EXPECT_NEAR(std::clamp(allocation_constant(d, 100, 0.1, 3) * d[0], 0.1, 3.0), 3, 1e-9);
}

// Example 1: rate 1 on [0, 1), 0 on [1, 2), period 2, one retrieval: at t = 1, where the
// rate falls through its average 0.5; the expected delay is then 1/2.
TEST(Scheduler, Example1OneRetrievalWhereTheRateFallsToItsAverage) {
  const std::vector<double> coarse = {1, 0};
  const auto t = place_retrievals(coarse, 2, 1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_NEAR(t[0], 1, 1e-12);
  EXPECT_NEAR(expected_delay(coarse, 2, t), 0.5, 1e-12);
  std::vector<double> fine(200, 0.0);
  for (int i = 0; i < 100; ++i) fine[size_t(i)] = 1;
  const auto tf = place_retrievals(fine, 2, 1);
  EXPECT_NEAR(tf[0], 1, 1e-12);
  // Anywhere else costs more: at 0.5 the delay is (3 - 2 * 0.5) / 2 = 1.
  const std::vector<double> half = {0.5};
  EXPECT_NEAR(expected_delay(fine, 2, half), 1.0, 1e-9);
}

// The rate 2 + 2 sin(2 pi t) of period 1 as cells holding its exact average.
std::vector<double> sine_cells(size_t n) {
  std::vector<double> c(n);
  const double pi = std::numbers::pi;
  for (size_t i = 0; i < n; ++i) {
    const double a = double(i) / double(n), b = double(i + 1) / double(n);
    c[i] = (2 * (b - a) - (std::cos(2 * pi * b) - std::cos(2 * pi * a)) / pi) * double(n);
  }
  return c;
}

// Example 2: six retrievals on 2 + 2 sin(2 pi t). The optimum, computed independently by
// gradient descent on the closed-form delay (from 12 starting phases), is at 0.050703,
// 0.170839, 0.274810, 0.377743, 0.491435, 0.641516 with total delay 0.1299483 per period;
// any uniform schedule gives 1/6.
TEST(Scheduler, Example2SixRetrievalsOnASine) {
  const auto cells = sine_cells(20'000);
  const auto t = place_retrievals(cells, 1, 6);
  ASSERT_EQ(t.size(), 6u);
  const double want[] = {0.050703, 0.170839, 0.274810, 0.377743, 0.491435, 0.641516};
  for (size_t j = 0; j < 6; ++j) EXPECT_NEAR(t[j], want[j], 5e-4) << j;
  EXPECT_NEAR(expected_delay(cells, 1, t), 0.1299483, 1e-6);
  const std::vector<double> uniform = {0.1,           0.1 + 1.0 / 6, 0.1 + 2.0 / 6,
                                       0.1 + 3.0 / 6, 0.1 + 4.0 / 6, 0.1 + 5.0 / 6};
  EXPECT_NEAR(expected_delay(cells, 1, uniform), 1.0 / 6, 1e-6);
  // Equation 3 at every point: lambda(tau_j) (tau_{j+1} - tau_j) = int_{tau_{j-1}}^{tau_j}.
  const double pi = std::numbers::pi;
  auto lambda = [&](double x) { return 2 + 2 * std::sin(2 * pi * x); };
  auto integral = [&](double a, double b) {
    return 2 * (b - a) - (std::cos(2 * pi * b) - std::cos(2 * pi * a)) / pi;
  };
  for (size_t j = 0; j < 6; ++j) {
    const double prev = j > 0 ? t[j - 1] : t[5] - 1;
    const double next = j < 5 ? t[j + 1] : t[0] + 1;
    EXPECT_NEAR(lambda(t[j]) * (next - t[j]), integral(prev, t[j]), 2e-3) << j;
  }
  // One retrieval on the same rate (Theorem 2): where it falls through its average 2.
  EXPECT_NEAR(place_retrievals(cells, 1, 1)[0], 0.5, 1e-4);
}

TEST(Scheduler, FlatOrSilentRatesSpreadEvenly) {
  const std::vector<double> flat(168, 1.0);
  const auto t = place_retrievals(flat, 168, 4);
  ASSERT_EQ(t.size(), 4u);
  for (size_t j = 1; j < 4; ++j) EXPECT_NEAR(t[j] - t[j - 1], 42, 1e-6);
  const std::vector<double> silent(168, 0.0);
  const auto s = place_retrievals(silent, 168, 3);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NEAR(s[1] - s[0], 56, 1e-9);
}

TEST(Scheduler, PlanFetchesAfterTheDailyBurst) {
  const history_params p;
  posting_history h;
  h.watch_from(k_t0);
  // Four weeks, ten postings every day between 14:00 and 15:00 UTC.
  for (int d = 0; d < 28; ++d) {
    for (int i = 0; i < 10; ++i) h.observe(k_t0 + d * k_day + 14 * 3600 + i * 360, p);
  }
  const int64_t now = k_t0 + 28 * k_day + 3600;
  const fetch_plan plan = make_plan(h, 7, now, p);
  EXPECT_EQ(plan.period_s, k_week_s);
  ASSERT_EQ(plan.offsets.size(), 7u);
  int64_t t = now;
  for (int i = 0; i < 7; ++i) {
    const int64_t next = next_in_plan(plan, t);
    EXPECT_GT(next, t);
    EXPECT_LE(next - t, 2 * k_day);
    // Right after the burst (its smoothed edge reaches into the next hour).
    const uint32_t hour = hour_of_week(next - 1) % 24;
    EXPECT_TRUE(hour == 14 || hour == 15) << i << ": " << hour;
    t = next;
  }
  // A thousand a week: steps of sqrt(rate) mass, as many as planned over a week, and
  // denser in the burst's hour than at night.
  const fetch_plan dense = make_plan(h, 1000, now, p);
  EXPECT_TRUE(dense.offsets.empty());
  const int64_t week_start = now - now % k_week_s;
  int fetches = 0, in_burst = 0, at_night = 0;
  for (int64_t x = next_in_plan(dense, week_start); x < week_start + k_week_s;
       x = next_in_plan(dense, x)) {
    ++fetches;
    in_burst += hour_of_week(x) % 24 == 14;
    at_night += hour_of_week(x) % 24 == 3;
  }
  EXPECT_NEAR(fetches, 1000, 6);  // each step rounds up to a whole second
  EXPECT_GT(in_burst, 3 * at_night);
  // Two a week: planned over a fortnight's period in whole fetches.
  EXPECT_EQ(make_plan(h, 2, now, p).period_s, 2 * k_week_s);
  EXPECT_EQ(make_plan(h, 2, now, p).offsets.size(), 4u);
}

}  // namespace
}  // namespace feedplane::crawler
