// Sia, Cho and Cho's scheduling (seed 001, sections II and III) as pure functions: learn a
// feed's posting rate and weekly profile from the times it published (posting_history),
// split a fetch budget across feeds in proportion to sqrt(weight x rate) (Theorem 1:
// allocation_constant), and place a feed's fetches within the period where its profile
// says postings pile up (Theorem 3: place_retrievals). The crawler and the simulator
// (`feedplane simulate-schedule`) call the same functions; FeedEx's interval for feeds
// without history stays in schedule.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::crawler {

constexpr int64_t k_week_s = int64_t{7} * 86'400;
constexpr uint32_t k_week_hours = 168;

// The hour of the week of a unix time, in [0, 168): weeks start on Thursday 00:00 UTC
// (the epoch's weekday), so hour % 24 is the UTC hour and hour / 24 the day.
uint32_t hour_of_week(int64_t unix_s);

// The time a newly seen entry counts as posted: its published time where plausible (not
// after now_s plus ten minutes of clock skew, not before previous_fetch_s minus a day: an
// entry first seen now was not posted long before the previous look), else now_s.
// previous_fetch_s = 0 on a feed's first document: any past date is plausible then.
int64_t posting_time(bool has_published, int64_t published_s, int64_t previous_fetch_s,
                     int64_t now_s);

struct history_params {
  double half_life_s = 28.0 * 86'400;  // older postings count half as much per half-life
  double prior = 8.0;      // pseudo-postings spread evenly over each histogram (shrinks noise)
  double smoothing = 0.5;  // share of an hour's postings spread to its two neighbours
  int64_t min_span_s = int64_t{14} * 86'400;  // history enough once watched this long...
  double min_postings = 16;                   // ...or once this many postings were seen
};

// What one feed's publishing taught us, in 88 bytes: a decayed count of postings, the
// window it was counted over, and decayed hour-of-day and day-of-week histograms whose
// product is the hour-of-week profile (31 numbers learn faster than 168 and hold the
// daily and weekly cycles the paper found). Owned by the feed's shard; not thread-safe.
class posting_history {
 public:
  // Records a posting at t_s (any order; postings before the window widen it).
  void observe(int64_t t_s, const history_params& p);
  // Opens the window at t_s if it is not open yet (a feed watched, nothing posted yet).
  void watch_from(int64_t t_s);
  bool empty() const { return since_s_ == 0; }
  // Postings per second at now_s: decayed count over the decayed length of the window
  // (exact for a steady Poisson source); 0 before any window.
  double rate(int64_t now_s, const history_params& p) const;
  // Whether the rate and profile are worth planning on (history_params' thresholds).
  bool enough(int64_t now_s, const history_params& p) const;
  // The rate per hour of week, 168 cells whose mean is rate(now_s) * 3600.
  void weekly_profile(int64_t now_s, const history_params& p,
                      std::span<double, k_week_hours> out) const;
  int64_t since_s() const { return since_s_; }

  // Persistence (little-endian, k_encoded_size bytes; decode refuses anything else).
  void encode(std::string& out) const;
  bool decode(std::string_view in);
  static constexpr size_t k_encoded_size = 31 * 2 + 2 * 4 + 2 * 8;

 private:
  void decay_to(int64_t t_s, const history_params& p);

  void add(uint16_t* bin, uint16_t* other, double postings);

  // Decayed postings by UTC hour of day and by day of week (0 = Thursday) are
  // bin * unit_: decay scales unit_ alone, never the bins (no rounding per step); the
  // bins are rescaled only when one would overflow.
  uint16_t hour_[24] = {};
  uint16_t day_[7] = {};
  float unit_ = 1.0f / 64;  // postings per bin step, as of updated_s_
  float count_ = 0;         // decayed postings, as of updated_s_
  int64_t since_s_ = 0;     // the window's start (0: never watched)
  int64_t updated_s_ = 0;
};

// ---- weight (issue 10: "1 + the number of subscriptions its recent articles matched") ----

// A feed's weight in the allocation: 1 + the subscriptions one of its recent articles
// reaches, that is the decayed sum of the subscriptions its articles matched (every shard's
// reflector counts its own subscriptions; they are disjoint, so the counts add) over the
// decayed count of its articles. Why a ratio and not the decayed matches alone: that sum
// grows with the posting rate, which the allocation already takes (sqrt(weight x rate)), so
// a busy feed would get fetches in proportion to its rate instead of its square root; and
// Sia and Cho's objective weighs each posting's delay by the readers it reaches, which is
// what the ratio measures. A feed whose every article matches the same N subscriptions has
// weight 1 + N however often it posts. Both parts decay by one factor, so the ratio moves
// only when articles or matches arrive: recent articles count more than old ones, and a
// feed that falls quiet keeps its weight (its rate already says it is quiet).
// 8 bytes in the source's crawl_fields, persisted with its crawl record (version 6).
struct match_weight {
  float matches = 0;   // decayed subscription matches of its articles, summed over shards
  float articles = 0;  // decayed articles it published (the crawler counts them at commit)

  // Ages both parts by elapsed_s under half_life_s (0: no decay). Parts that decayed to
  // nothing (about 100 half-lives) are cleared rather than left to lose precision.
  void decay(double elapsed_s, double half_life_s);
  void add_articles(uint64_t n) { articles = float(double(articles) + double(n)); }
  // Matches of articles not counted here (committed by a version that did not count them)
  // count as from one article, so the weight stays finite.
  void add_matches(uint64_t m);
  // 1 + matches per article; 1 without articles. At most k_max (no deployment has more
  // subscriptions), so a garbled record cannot give the allocation an infinity.
  static constexpr float k_max = 1e9f;
  float weight() const { return articles > 0 ? std::min(1.0f + matches / articles, k_max) : 1.0f; }
  friend bool operator==(const match_weight&, const match_weight&) = default;
};

// ---- allocation (Theorem 1) ----

// The k with sum_i clamp(k * demand[i], lo, hi) = budget, demand[i] = sqrt(weight_i x
// rate_i): feed i is then fetched clamp(k * demand[i], lo, hi) times per unit of time.
// Without the clamps this is m_i = k sqrt(w_i lambda_i), which minimises the weighted delay
// sum_i w_i lambda_i T^2 / (2 m_i) under sum m_i = M; with them, the fetches a clamped feed
// cannot take go to the others (water-filling). 0 when even k = 0 spends the budget (every
// feed at lo); the k that puts every feed with demand at hi when the budget exceeds that.
double allocation_constant(std::span<const double> demand, double budget, double lo, double hi);

// ---- placement (Theorem 3) ----

// m retrieval times in [0, period), sorted, minimising the expected delay of postings from
// a periodic rate given as equal cells over the period (piecewise constant). m = 1 is
// Theorem 2 (the retrieval lands where the rate falls through its average); m > 1 starts
// from the square-root density (retrievals spaced by equal mass of sqrt(rate), the optimum
// when m is large) and refines each point between its neighbours until Equation 3 holds,
// the paper's "iterative refinement" (section III-B.2). Each point moves to the exact
// minimum of its local delay, which is a convex quadratic inside each cell. All-zero rate:
// uniform spacing. O(cells + m) per sweep.
std::vector<double> place_retrievals(std::span<const double> cell_rate, double period, uint32_t m);

// The expected total delay over one period of postings at the periodic rate when fetched
// at `times` (sorted, within one period, repeated every period): Lemma 1 summed.
double expected_delay(std::span<const double> cell_rate, double period,
                      std::span<const double> times);

// ---- a feed's plan ----

// Where a feed's fetches go: times within a period of `weeks` weeks, repeated. Planned over
// several weeks when the feed gets fewer than 4 fetches a week, so rounding to whole fetches
// per period costs little.
// Above two fetches an hour on average the fetches follow the square-root density instead
// (no list of thousands of times): each is one step of sqrt(rate) mass after the last.
struct fetch_plan {
  int64_t period_s = k_week_s;
  std::vector<double> offsets;  // seconds from a period start (a multiple of period_s)
  std::vector<double> profile;  // density mode: the weekly profile (hourly cells)
  int64_t per_period = 0;       // density mode: fetches per period
};

// The plan for a feed fetched per_week times a week on h's weekly profile (p's prior).
fetch_plan make_plan(const posting_history& h, double per_week, int64_t now_s,
                     const history_params& p);
// The first planned fetch strictly after now_s (unix seconds).
int64_t next_in_plan(const fetch_plan& plan, int64_t now_s);

}  // namespace feedplane::crawler
