#include "feedplane/crawler/scheduler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>

namespace feedplane::crawler {

uint32_t hour_of_week(int64_t unix_s) {
  const int64_t h = unix_s >= 0 ? unix_s / 3600 : (unix_s - 3599) / 3600;
  return uint32_t(((h % k_week_hours) + k_week_hours) % k_week_hours);
}

int64_t posting_time(bool has_published, int64_t published_s, int64_t previous_fetch_s,
                     int64_t now_s) {
  if (!has_published || published_s <= 0 || published_s > now_s + 600) return now_s;
  if (previous_fetch_s > 0 && published_s < previous_fetch_s - 86'400) return now_s;
  return std::min(published_s, now_s);
}

// ---------------------------------------------------------------- match_weight

void match_weight::decay(double elapsed_s, double half_life_s) {
  if (elapsed_s <= 0 || half_life_s <= 0) return;
  const double f = std::exp2(-elapsed_s / half_life_s);
  matches = float(double(matches) * f);
  articles = float(double(articles) * f);
  if (articles < 1e-30f) *this = {};
}

void match_weight::add_matches(uint64_t m) {
  if (m == 0) return;
  if (articles <= 0) articles = 1;
  matches = float(double(matches) + double(m));
}

// ---------------------------------------------------------------- posting_history

// Every feed holds one (issue 10: <= 1 KiB per feed, everything included).
static_assert(sizeof(posting_history) <= 88);

namespace {
double decay(double dt_s, const history_params& p) {
  return dt_s <= 0 ? 1.0 : std::exp2(-dt_s / p.half_life_s);
}
}  // namespace

void posting_history::decay_to(int64_t t_s, const history_params& p) {
  if (t_s <= updated_s_) return;
  const auto f = float(decay(double(t_s - updated_s_), p));
  unit_ *= f;
  count_ *= f;
  updated_s_ = t_s;
  if (unit_ < 1e-30f) {  // decades of silence: the shape is gone anyway
    const int64_t since = since_s_;
    *this = posting_history();
    since_s_ = since;
    updated_s_ = t_s;
  }
}

// Adds postings to one hour bin and one day bin. When a bin would pass 65,535 steps,
// every bin is rescaled (halved, or more) first: a posting stays at least 16 steps while
// no bin holds more than 2,000 decayed postings.
void posting_history::add(uint16_t* bin, uint16_t* other, double postings) {
  double steps = postings / unit_;
  while (double(*bin) + steps > 65'535 || double(*other) + steps > 65'535) {
    for (uint16_t& v : hour_) v = uint16_t(v / 2);
    for (uint16_t& v : day_) v = uint16_t(v / 2);
    unit_ *= 2;
    steps /= 2;
  }
  *bin = uint16_t(std::lround(double(*bin) + steps));
  *other = uint16_t(std::lround(double(*other) + steps));
}

void posting_history::observe(int64_t t_s, const history_params& p) {
  if (since_s_ == 0 || t_s < since_s_) since_s_ = t_s;
  float w = 1;
  if (t_s >= updated_s_) {
    decay_to(t_s, p);
  } else {
    w = float(decay(double(updated_s_ - t_s), p));
  }
  const uint32_t h = hour_of_week(t_s);
  add(&hour_[h % 24], &day_[h / 24], w);
  count_ += w;
}

void posting_history::watch_from(int64_t t_s) {
  if (since_s_ != 0) return;
  since_s_ = t_s;
  updated_s_ = std::max(updated_s_, t_s);
}

double posting_history::rate(int64_t now_s, const history_params& p) const {
  if (since_s_ == 0) return 0;
  now_s = std::max(now_s, updated_s_);
  const double count = count_ * decay(double(now_s - updated_s_), p);
  // A window shorter than a day counts as a day: one posting just seen is not 1/s.
  const double span = std::max<double>(86'400, double(now_s - since_s_));
  // The window's decayed length: integral over [since, now] of 2^(-(now - t) / half-life).
  const double exposure = p.half_life_s / std::numbers::ln2 * (1 - decay(span, p));
  return count / exposure;
}

bool posting_history::enough(int64_t now_s, const history_params& p) const {
  if (since_s_ == 0) return false;
  const int64_t span = now_s - since_s_;
  if (span >= p.min_span_s) return true;
  const double count = count_ * decay(double(now_s - updated_s_), p);
  return span >= 86'400 && count >= p.min_postings;
}

void posting_history::weekly_profile(int64_t now_s, const history_params& p,
                                     std::span<double, k_week_hours> out) const {
  // Hours smoothed with their neighbours (history_params::smoothing), then both
  // histograms shrunk towards flat by the prior's pseudo-postings.
  double hs[24], ds[7];
  double hsum = 0, dsum = 0;
  for (int i = 0; i < 24; ++i) {
    hs[i] = unit_ * (p.smoothing / 2 * (hour_[(i + 23) % 24] + hour_[(i + 1) % 24]) +
                     (1 - p.smoothing) * hour_[i]) +
            p.prior / 24;
    hsum += hs[i];
  }
  for (int d = 0; d < 7; ++d) {
    ds[d] = unit_ * day_[d] + p.prior / 7;
    dsum += ds[d];
  }
  const double per_hour = rate(now_s, p) * 3600;
  for (uint32_t h = 0; h < k_week_hours; ++h) {
    out[h] = per_hour * (24 * hs[h % 24] / hsum) * (7 * ds[h / 24] / dsum);
  }
}

namespace {
void put_u16(std::string& o, uint16_t v) {
  o.push_back(char(uint8_t(v)));
  o.push_back(char(uint8_t(v >> 8)));
}
void put_u32(std::string& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(char(uint8_t(v >> (8 * i))));
}
void put_u64(std::string& o, uint64_t v) {
  for (int i = 0; i < 8; ++i) o.push_back(char(uint8_t(v >> (8 * i))));
}
uint64_t get(std::string_view& in, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | uint8_t(in[size_t(i)]);
  in.remove_prefix(size_t(bytes));
  return v;
}
}  // namespace

void posting_history::encode(std::string& out) const {
  for (uint16_t v : hour_) put_u16(out, v);
  for (uint16_t v : day_) put_u16(out, v);
  put_u32(out, std::bit_cast<uint32_t>(unit_));
  put_u32(out, std::bit_cast<uint32_t>(count_));
  put_u64(out, uint64_t(since_s_));
  put_u64(out, uint64_t(updated_s_));
}

bool posting_history::decode(std::string_view in) {
  if (in.size() != k_encoded_size) return false;
  for (uint16_t& v : hour_) v = uint16_t(get(in, 2));
  for (uint16_t& v : day_) v = uint16_t(get(in, 2));
  unit_ = std::bit_cast<float>(uint32_t(get(in, 4)));
  count_ = std::bit_cast<float>(uint32_t(get(in, 4)));
  since_s_ = int64_t(get(in, 8));
  updated_s_ = int64_t(get(in, 8));
  return true;
}

// ---------------------------------------------------------------- allocation

double allocation_constant(std::span<const double> demand, double budget, double lo, double hi) {
  auto spent = [&](double k) {
    double s = 0;
    for (double d : demand) s += std::clamp(k * d, lo, hi);
    return s;
  };
  double min_positive = std::numeric_limits<double>::infinity();
  for (double d : demand) {
    if (d > 0) min_positive = std::min(min_positive, d);
  }
  if (demand.empty() || std::isinf(min_positive) || spent(0) >= budget) return 0;
  double top = hi / min_positive;  // every feed with demand at hi
  if (spent(top) <= budget) return top;
  double bottom = 0;
  for (int i = 0; i < 100 && top - bottom > top * 1e-12; ++i) {
    const double mid = (bottom + top) / 2;
    (spent(mid) < budget ? bottom : top) = mid;
  }
  return (bottom + top) / 2;
}

// ---------------------------------------------------------------- placement

namespace {

// A periodic piecewise-constant rate and its integrals L(x) = int_0^x rate and
// M(x) = int_0^x t rate(t) dt for any real x (whole periods added in closed form).
class periodic_rate {
 public:
  periodic_rate(std::span<const double> cells, double period)
      : cells_(cells), period_(period), width_(period / double(cells.size())) {
    pl_.resize(cells.size() + 1);
    pm_.resize(cells.size() + 1);
    for (size_t k = 0; k < cells.size(); ++k) {
      const double u = double(k) * width_, v = double(k + 1) * width_;
      pl_[k + 1] = pl_[k] + cells[k] * width_;
      pm_[k + 1] = pm_[k] + cells[k] * (v * v - u * u) / 2;
    }
  }
  double total() const { return pl_.back(); }
  double width() const { return width_; }
  double rate_of_cell(int64_t k) const {
    const auto n = int64_t(cells_.size());
    return cells_[size_t(((k % n) + n) % n)];
  }
  double l(double x) const {
    double r = 0;
    size_t k = 0;
    const double n = split(x, &r, &k);
    return n * total() + pl_[k] + cells_[k] * (r - double(k) * width_);
  }
  double m(double x) const {
    double r = 0;
    size_t k = 0;
    const double n = split(x, &r, &k);
    const double u = double(k) * width_;
    const double lp = pl_[k] + cells_[k] * (r - u);
    const double mp = pm_[k] + cells_[k] * (r * r - u * u) / 2;
    return n * pm_.back() + period_ * total() * n * (n - 1) / 2 + mp + n * period_ * lp;
  }
  // Delay of postings in [a, b] all fetched at b: int_a^b rate(t) (b - t) dt.
  double delay(double a, double b) const { return b * (l(b) - l(a)) - (m(b) - m(a)); }

 private:
  // x = n * period + r with r in [0, period), k its cell; returns n.
  double split(double x, double* r, size_t* k) const {
    const double n = std::floor(x / period_);
    *r = std::clamp(x - n * period_, 0.0, period_);
    *k = std::min(cells_.size() - 1, size_t(*r / width_));
    return n;
  }

  std::span<const double> cells_;
  double period_, width_;
  std::vector<double> pl_, pm_;  // L and M at cell boundaries within one period
};

// The point in [a, b] minimising delay(a, t) + delay(t, b): inside a cell of rate c the
// derivative L(t) - L(a) - c (b - t) is linear in t, so each cell's minimum is its root
// clamped to the cell (the left end when c = 0: the derivative is then >= 0). Why it is
// cheap: L and M are carried from cell to cell, a few multiplications per cell.
double best_between(const periodic_rate& pr, double a, double b) {
  const double w = pr.width();
  const double la = pr.l(a), ma = pr.m(a), lb = pr.l(b), mb = pr.m(b);
  // delay(a, t) + delay(t, b) from L(t) and M(t).
  const auto cost_at = [&](double t, double lt, double mt) {
    return t * (lt - la) - (mt - ma) + b * (lb - lt) - (mb - mt);
  };
  double best = a, best_cost = cost_at(a, la, ma);
  auto k = int64_t(std::floor(a / w));
  double cu = double(k) * w;
  double lu = pr.l(cu), mu = pr.m(cu);  // L and M at the cell's start
  for (; cu < b; ++k, cu = double(k) * w) {
    const double u = std::max(a, cu), v = std::min(b, cu + w);
    const double c = pr.rate_of_cell(k);
    double t = u;
    if (c > 0) t = std::clamp((c * (b + cu) - (lu - la)) / (2 * c), u, v);
    const double cost = cost_at(t, lu + c * (t - cu), mu + c * (t * t - cu * cu) / 2);
    if (cost < best_cost) {
      best_cost = cost;
      best = t;
    }
    const double next = cu + w;
    mu += c * (next * next - cu * cu) / 2;
    lu += c * w;
  }
  return best;
}

// The cumulative mass of sqrt(rate) over a periodic piecewise-constant rate and its
// inverse: retrievals at equal steps of it have density proportional to sqrt(rate), the
// optimum when there are many (each short interval then costs rate x gap^2 / 2).
class sqrt_mass {
 public:
  sqrt_mass(std::span<const double> cells, double period)
      : period_(period), width_(period / double(cells.size())), sq_(cells.size() + 1, 0.0) {
    for (size_t k = 0; k < cells.size(); ++k) sq_[k + 1] = sq_[k] + std::sqrt(cells[k]);
  }
  double total() const { return sq_.back(); }
  double at(double x) const {
    const double q = std::floor(x / period_);
    const double r = x - q * period_;
    const size_t k = std::min(sq_.size() - 2, size_t(r / width_));
    return q * total() + sq_[k] + (sq_[k + 1] - sq_[k]) * (r / width_ - double(k));
  }
  // The x with at(x) = s (the start of a zero-rate stretch where there is a choice).
  double inverse(double s) const {
    const double q = std::floor(s / total());
    const double r = s - q * total();
    size_t k = size_t(std::upper_bound(sq_.begin(), sq_.end(), r) - sq_.begin());
    k = std::clamp<size_t>(k, 1, sq_.size() - 1) - 1;
    const double sk = sq_[k + 1] - sq_[k];
    const double frac = sk > 0 ? std::clamp((r - sq_[k]) / sk, 0.0, 1.0) : 0.0;
    return q * period_ + (double(k) + frac) * width_;
  }

 private:
  double period_, width_;
  std::vector<double> sq_;  // at() at cell boundaries within one period
};

}  // namespace

std::vector<double> place_retrievals(std::span<const double> cell_rate, double period, uint32_t m) {
  std::vector<double> t;
  if (m == 0 || cell_rate.empty() || period <= 0) return t;
  const periodic_rate pr(cell_rate, period);
  const auto n = int64_t(cell_rate.size());
  if (pr.total() <= 0) {
    for (uint32_t j = 0; j < m; ++j) t.push_back(period * j / m);
    return t;
  }
  // One retrieval (Theorem 2): D(t) = delay(t - T, t) is linear inside each cell (its slope
  // is total - T rate), so the minimum is at a cell boundary.
  double anchor = 0, anchor_cost = pr.delay(-period, 0);
  for (int64_t k = 1; k < n; ++k) {
    const double x = double(k) * pr.width();
    const double cost = pr.delay(x - period, x);
    if (cost < anchor_cost - 1e-12 * std::abs(anchor_cost)) {
      anchor_cost = cost;
      anchor = x;
    }
  }
  if (m == 1) return {anchor};
  // Start: the anchor last, the others before it at equal steps of sqrt(rate) mass.
  const sqrt_mass sm(cell_rate, period);
  const double s_anchor = sm.at(anchor);
  t.resize(m);
  for (uint32_t j = 0; j < m; ++j) {
    t[j] = sm.inverse(s_anchor - double(m - 1 - j) * sm.total() / m);
  }
  // Refine: each point to the best place between its neighbours (Equation 3 at a minimum),
  // the first and last seeing each other across the period. The work is bounded (about
  // 50,000 point moves): many points start close to the optimum already.
  const int sweeps = int(std::clamp<uint32_t>(2'000 / m, 4, 40));
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    double moved = 0;
    for (uint32_t j = 0; j < m; ++j) {
      const double a = j > 0 ? t[j - 1] : t[m - 1] - period;
      const double b = j + 1 < m ? t[j + 1] : t[0] + period;
      const double x = best_between(pr, a, b);
      moved = std::max(moved, std::abs(x - t[j]));
      t[j] = x;
    }
    if (moved < period * 1e-6) break;  // 0.6 s in a week
  }
  for (double& x : t) x -= std::floor(x / period) * period;
  std::sort(t.begin(), t.end());
  return t;
}

double expected_delay(std::span<const double> cell_rate, double period,
                      std::span<const double> times) {
  if (times.empty() || cell_rate.empty()) return 0;
  const periodic_rate pr(cell_rate, period);
  double d = 0;
  for (size_t j = 0; j < times.size(); ++j) {
    const double prev = j > 0 ? times[j - 1] : times.back() - period;
    d += pr.delay(prev, times[j]);
  }
  return d;
}

// ---------------------------------------------------------------- plans

fetch_plan make_plan(const posting_history& h, double per_week, int64_t now_s,
                     const history_params& p) {
  fetch_plan plan;
  const int weeks = per_week >= 4 ? 1 : std::min(4, int(std::ceil(4 / std::max(per_week, 1.0))));
  plan.period_s = k_week_s * weeks;
  const auto m = uint32_t(std::max<long>(1, std::lround(per_week * weeks)));
  double week[k_week_hours];
  h.weekly_profile(now_s, p, week);
  std::vector<double> cells(size_t(k_week_hours) * size_t(weeks));
  for (size_t i = 0; i < cells.size(); ++i) cells[i] = week[i % k_week_hours];
  if (m > 2 * k_week_hours) {
    // More than one fetch per half hour on average: equal steps of sqrt(rate) mass, which
    // is within a few percent of the refined optimum there and costs nothing per fetch.
    plan.profile.resize(k_week_hours);
    for (size_t i = 0; i < k_week_hours; ++i) plan.profile[i] = week[i];
    plan.per_period = m;
    return plan;
  }
  plan.offsets = place_retrievals(cells, double(plan.period_s), m);
  return plan;
}

int64_t next_in_plan(const fetch_plan& plan, int64_t now_s) {
  if (!plan.profile.empty()) {
    const sqrt_mass sm(plan.profile, double(plan.period_s));
    if (sm.total() <= 0) return now_s + plan.period_s / std::max<int64_t>(1, plan.per_period);
    const int64_t start = now_s - (((now_s % plan.period_s) + plan.period_s) % plan.period_s);
    const double x = sm.inverse(sm.at(double(now_s - start)) + sm.total() / plan.per_period);
    return std::max(now_s + 1, start + int64_t(std::ceil(x)));
  }
  if (plan.offsets.empty()) return now_s + plan.period_s;
  const int64_t start = now_s - (((now_s % plan.period_s) + plan.period_s) % plan.period_s);
  for (int64_t base : {start, start + plan.period_s}) {
    for (double off : plan.offsets) {
      const auto t = base + int64_t(std::ceil(off));
      if (t > now_s) return t;
    }
  }
  return start + 2 * plan.period_s;
}

}  // namespace feedplane::crawler
