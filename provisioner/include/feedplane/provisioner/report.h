// What `feedplane provision` prints: the exact and greedy plans side by side with the lower
// bound, the limit that binds each role, the growth left, as text or as JSON of a stable
// shape (README.md, "Provisioning"). Identical input gives byte-identical output: numbers
// are printed with fixed precision and nothing depends on time or addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "feedplane/provisioner/inputs.h"
#include "feedplane/provisioner/plan.h"

namespace feedplane::provisioner {

struct report {
  std::string topology;  // "cobra" or "feedplane"
  workload work;
  std::string costs_name;
  std::vector<std::string> fitted;         // names of the fitted coefficients the plan used
  std::string node_class;                  // the class the plans use (the cheapest exact plan)
  std::vector<std::string> other_classes;  // "NAME: price P" (or "no plan") for the others
  plan exact;
  plan greedy;
  std::vector<std::string> bound_roles;
  std::vector<uint64_t> bound_hosts;  // per role, in bound_roles' order
  bool bound_feasible = true;         // false: some per-host floor exceeds a host
  double bound_price = 0;             // feedplane's topology: the bound is on price
  double max_feeds = 0;               // what the exact plan carries, the rest held
  double max_subscriptions = 0;
  // Seconds between polls that keep a typical subscription's last k from being overrun.
  double poll_interval_needed_s = 0;
  // --previous: one line per role and the totals, in text and JSON.
  struct move {
    std::string role, class_before, class_after;
    uint64_t hosts_before = 0, hosts_after = 0, added = 0, removed = 0;
    uint64_t partitions_moved = 0;
    double subscriptions_moved = 0, bytes_moved = 0;
  };
  bool has_previous = false;
  bool kept_previous = false;  // the previous shape still fits and is no dearer
  std::vector<move> moves;
  [[nodiscard]] uint64_t bound() const;
};

std::string render_text(const report& r);
std::string render_json(const report& r);

}  // namespace feedplane::provisioner
