#include "feedplane/crawler/schedule.h"

#include <algorithm>
#include <charconv>

#include <xxhash.h>

#include "feedplane/base/ascii.h"
#include "feedplane/net/http_request.h"

namespace feedplane::crawler {

namespace {
uint32_t clamp(uint64_t v, const interval_bounds& b) {
  const uint64_t hi = std::max(b.floor_s, b.ceiling_s);
  return uint32_t(std::clamp<uint64_t>(v, std::max<uint32_t>(1, b.floor_s), hi));
}
}  // namespace

uint32_t initial_interval(const interval_bounds& b) { return clamp(3600, b); }

uint32_t adapt_interval(uint32_t current_s, uint32_t fresh, uint32_t total,
                        const interval_bounds& b) {
  uint64_t next = current_s;
  if (total > 0 && uint64_t(fresh) * 2 >= total) {
    next = current_s / 2;
  } else if (total == 0 || uint64_t(fresh) * 4 < total) {
    next = uint64_t(current_s) * 2;
  }
  return clamp(next, b);
}

uint32_t error_backoff(uint32_t consecutive_errors, const interval_bounds& b) {
  const uint32_t shift =
      std::min<uint32_t>(consecutive_errors == 0 ? 0 : consecutive_errors - 1, 30);
  return clamp(uint64_t(std::max<uint32_t>(1, b.floor_s)) << shift, b);
}

namespace {
// A non-negative decimal filling all of s; false otherwise.
bool parse_seconds(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    *out = INT64_MAX / 2;
    return true;
  }
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return false;
  *out = v;
  return true;
}
}  // namespace

int64_t retry_after_s(std::string_view value, int64_t now_s) {
  value = base::ascii_trim(value);
  if (value.empty()) return -1;
  int64_t v = 0;
  if (parse_seconds(value, &v)) return v;
  const int64_t t = net::parse_http_date(value);
  if (t < 0) return -1;
  return std::max<int64_t>(0, t - now_s);
}

int64_t freshness_s(std::string_view cache_control, std::string_view expires, int64_t now_s) {
  // Cache-Control: comma-separated directives, case-insensitive names.
  int64_t max_age = -1;
  bool no_cache = false;
  std::string_view cc = cache_control;
  while (!cc.empty()) {
    const size_t comma = cc.find(',');
    std::string_view d = base::ascii_trim(cc.substr(0, comma));
    cc = comma == std::string_view::npos ? std::string_view() : cc.substr(comma + 1);
    if (base::ascii_iequals(d, "no-cache") || base::ascii_iequals(d, "no-store")) {
      no_cache = true;
    } else if (base::ascii_istarts_with(d, "max-age=")) {
      std::string_view v = d.substr(8);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      int64_t n = 0;
      if (parse_seconds(v, &n)) max_age = n;
    }
  }
  if (no_cache) return 0;
  if (max_age >= 0) return max_age;
  expires = base::ascii_trim(expires);
  if (expires.empty()) return -1;
  const int64_t t = net::parse_http_date(expires);
  return t < 0 ? 0 : std::max<int64_t>(0, t - now_s);
}

namespace {
constexpr int64_t k_hour_ms = 3'600'000;

// Whether unix time t_ms (>= 0) falls in a skipped UTC hour or day (day 0 = Sunday; the
// epoch was a Thursday).
bool skipped(const feed::fetch_hints& h, int64_t t_ms) {
  const int64_t hours = t_ms / k_hour_ms;
  const int64_t day = (hours / 24 + 4) % 7;
  return (h.skip_hours >> (hours % 24) & 1u) != 0 || (h.skip_days >> day & 1u) != 0;
}
}  // namespace

int64_t bound_by_feed_hints(const feed::fetch_hints& h, int64_t fetched_ms, int64_t at_ms,
                            uint32_t ceiling_s, feed_hint_rule* rule) {
  *rule = feed_hint_rule::none;
  const int64_t cap = std::max(at_ms, fetched_ms + int64_t(ceiling_s) * 1000);
  int64_t t = at_ms;
  const uint32_t wait_s = std::max(h.ttl_s, h.update_s);
  if (wait_s > 0 && fetched_ms + int64_t(wait_s) * 1000 > t) {
    t = fetched_ms + int64_t(wait_s) * 1000;
    *rule = h.ttl_s >= h.update_s ? feed_hint_rule::ttl : feed_hint_rule::update_period;
  }
  if (h.skip_hours != 0 || h.skip_days != 0) {
    // At most a week of hours: the parser never keeps a list that skips every hour or day.
    int64_t s = std::max<int64_t>(t, 0);
    for (int i = 0; i < 7 * 24 + 1 && skipped(h, s); ++i) s = (s / k_hour_ms + 1) * k_hour_ms;
    if (s != t) {
      t = s;
      *rule = feed_hint_rule::skip;
    }
  }
  t = std::min(t, cap);
  if (t == at_ms) *rule = feed_hint_rule::none;  // the ceiling left it where it was
  return t;
}

int64_t spread_interval_ms(uint32_t interval_s, uint64_t source_id, uint64_t fetches, bool wave,
                           const interval_bounds& b) {
  const uint64_t h = XXH3_64bits_withSeed(&source_id, sizeof source_id, fetches);
  const double u = double(h >> 11) * 0x1p-53;  // [0, 1)
  const double f = wave ? 0.1 + 0.9 * u : 0.9 + 0.2 * u;
  const double lo = 1000.0 * std::max<uint32_t>(1, b.floor_s);
  const double hi = 1000.0 * std::max(b.floor_s, b.ceiling_s);
  return int64_t(std::clamp(1000.0 * interval_s * f, lo, hi));
}

int64_t error_retry_ms(const feed::fetch_hints& h, uint32_t consecutive_errors, int64_t now_ms,
                       const interval_bounds& b, feed_hint_rule* rule) {
  const int64_t at = now_ms + int64_t(error_backoff(consecutive_errors, b)) * 1000;
  return bound_by_feed_hints(h, now_ms, at, b.ceiling_s, rule);
}

}  // namespace feedplane::crawler
