#include "feedplane/crawler/schedule.h"

#include <algorithm>

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

}  // namespace feedplane::crawler
