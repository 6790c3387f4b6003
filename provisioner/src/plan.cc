#include "feedplane/provisioner/plan.h"

#include <cmath>

namespace feedplane::provisioner {

std::string_view resource_name(resource r) {
  switch (r) {
    case resource::cpu:
      return "cpu";
    case resource::memory:
      return "memory";
    case resource::in_bw:
      return "in-bw";
    case resource::out_bw:
      return "out-bw";
    case resource::disk:
      return "disk";
  }
  return "?";
}

resource role_plan::binding() const {
  size_t best = 0;
  double best_share = -1;
  for (size_t i = 0; i < resource_count; ++i) {
    if (!modeled[i]) continue;
    const double share = utilisation[i] / usable[i];
    if (share > best_share) {
      best_share = share;
      best = i;
    }
  }
  return static_cast<resource>(best);
}

uint64_t plan::hosts() const {
  uint64_t n = 0;
  for (const auto& r : roles) n += r.hosts;
  return n;
}

double largest_fitting(double from, const std::function<bool(double)>& fits) {
  double lo = from;
  if (!fits(lo)) return lo;
  double hi = lo * 2;
  while (hi < 1e15 && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi >= 1e15) return lo;
  // Whole numbers: lo fits, hi does not.
  while (hi - lo > 1) {
    const double mid = std::floor((lo + hi) / 2);
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace feedplane::provisioner
