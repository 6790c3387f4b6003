// Cobra's topology (seed 000, section 3.5): crawler, filter and reflector services, each on
// its own host; the greedy decomposition loop, the exact plan and the lower bound.
//
// Shape: C crawlers each crawl F/C feeds. Filters form a grid: filter_in parts by the
// crawlers they hear from (an in-decomposition splits a filter's incoming links) times
// filter_out parts by the subscriptions they hold (an out-decomposition splits its outgoing
// links); a crawler sends every article to the filter_out filters of its part. R reflectors
// each hold S/R subscriptions and hear every article (from the filter part of its crawler);
// the filters of subscription part j feed the ceil(R / filter_out) reflectors of that part.
// Filters forward every article (Cobra's filter selectivity is ~1 at these sizes, 4.3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/provisioner/inputs.h"
#include "feedplane/provisioner/plan.h"
#include "feedplane/provisioner/report.h"

namespace feedplane::provisioner {

enum class cobra_role : uint8_t { crawler, filter, reflector };
inline constexpr size_t cobra_role_count = 3;
std::string_view cobra_role_name(cobra_role r);

// Figure 3: the decomposition that resolves each violation on each service.
enum class decomposition : uint8_t { in, out, unresolvable, not_modeled };
std::string_view decomposition_name(decomposition d);
decomposition figure3(cobra_role role, resource violated);

struct cobra_shape {
  uint64_t crawlers = 1;
  uint64_t filter_in = 1;
  uint64_t filter_out = 1;
  uint64_t reflectors = 1;
  [[nodiscard]] uint64_t filters() const { return filter_in * filter_out; }
  [[nodiscard]] uint64_t hosts() const { return crawlers + filters() + reflectors; }
  bool operator==(const cobra_shape&) const = default;
};

// The greedy loop's order among simultaneous violations: the least likely to be resolved
// indirectly first (seed 000, 3.5), so those that may "happen to be resolved" wait.
//  1. crawler in-bw: nothing else lowers it, and splitting feeds also lowers crawler out-bw;
//  2. reflector in-bw: unresolvable, so fail before adding hosts;
//  3. filter memory, then filter cpu (out): fewer subscriptions per filter lowers both, and
//     only an out-decomposition of the filter lowers memory;
//  4. reflector memory, cpu, out-bw (out): only splitting reflectors lowers them;
//  5. filter in-bw, out-bw (in): reflector splits above raise filter out-bw, filter
//     out-decompositions lower it;
//  6. crawler out-bw (in): raised by every filter out-decomposition above, lowered by the
//     crawler in-decomposition of step 1, so it is resolved last.
struct violation_ref {
  cobra_role role;
  resource what;
};
inline constexpr violation_ref greedy_order[] = {
    {cobra_role::crawler, resource::in_bw},    {cobra_role::reflector, resource::in_bw},
    {cobra_role::filter, resource::memory},    {cobra_role::filter, resource::cpu},
    {cobra_role::reflector, resource::memory}, {cobra_role::reflector, resource::cpu},
    {cobra_role::reflector, resource::out_bw}, {cobra_role::filter, resource::in_bw},
    {cobra_role::filter, resource::out_bw},    {cobra_role::crawler, resource::out_bw},
    {cobra_role::crawler, resource::cpu},      {cobra_role::crawler, resource::memory},
};  // disk is not in it: Cobra keeps everything in memory

// The cost of a shape under one workload, cost model and node class.
class cobra_model {
 public:
  // Checks that the cost model has every coefficient this topology uses; errors name the
  // costs file and the missing key.
  static std::vector<input_error> make(const workload& w, const cost_model& costs,
                                       const node_class& node, cobra_model& out);

  // Demand x headroom / capacity on one host of `role` that crawls (crawler) or hears
  // (filter, reflector) `feeds` feeds, holds `subs` subscriptions and sends each article to
  // `fanout` hosts of the next tier; 0 where Figure 3 does not model the resource.
  [[nodiscard]] double load(cobra_role role, resource r, double feeds, double subs,
                            double fanout) const;
  // load() on the most loaded host of `role` in the shape.
  [[nodiscard]] double utilisation(const cobra_shape& s, cobra_role role, resource r) const;
  [[nodiscard]] double usable(resource r) const;
  [[nodiscard]] bool violated(const cobra_shape& s, cobra_role role, resource r) const {
    return utilisation(s, role, r) > usable(r) * (1 + 1e-12);
  }
  [[nodiscard]] bool feasible(const cobra_shape& s) const;
  // The largest utilisation over usable share on any host of the shape.
  [[nodiscard]] double worst(const cobra_shape& s) const;

  [[nodiscard]] const workload& work() const { return w_; }
  [[nodiscard]] const node_class& node() const { return node_; }
  // The same costs and node under another workload (growth, tests).
  void set_work(const workload& w) { w_ = w; }

 private:
  workload w_;
  node_class node_;
  const cost_model* costs_ = nullptr;
  double stream_bytes_ = 0, poll_bytes_per_item_ = 0, filter_base_ = 0, filter_per_sub_ = 0,
         reflector_base_ = 0, reflector_per_sub_ = 0, reflector_match_factor_ = 0;
};

struct cobra_result {
  cobra_shape shape;
  bool feasible = false;
  std::string reason;
  std::vector<std::string> steps;
};

// Seed 000's greedy loop: from one crawler, filter and reflector, resolve the first
// violation in greedy_order with its Figure 3 decomposition, into the fewest replicas that
// clear it; stop when nothing is violated, or fail naming the violation and the node size
// that would clear it.
cobra_result cobra_greedy(const cobra_model& m);
// The fewest hosts (then the lowest worst utilisation) over every shape: exhaustive search
// with the bounds each role's constraints give.
cobra_result cobra_exact(const cobra_model& m);
// Every shape with at most max_hosts hosts, tried one by one (the tests' oracle).
cobra_result cobra_brute_force(const cobra_model& m, uint64_t max_hosts);
// Per role, the smallest H with H x (usable capacity - per-host floor) >= demand for every
// resource, whatever the shape; their sum is below every feasible shape.
struct cobra_bound {
  uint64_t role[cobra_role_count] = {};
  [[nodiscard]] uint64_t hosts() const { return role[0] + role[1] + role[2]; }
};
cobra_bound cobra_lower_bound(const cobra_model& m);

// The plan for a shape, as reports print it.
plan cobra_plan(const cobra_model& m, const cobra_result& r, std::string method);

// The largest feeds (subscriptions) the shape still carries, the rest of the workload held.
double cobra_max_feeds(const cobra_model& m, const cobra_shape& s);
double cobra_max_subscriptions(const cobra_model& m, const cobra_shape& s);

// The whole report under Cobra's topology: for each node class the exact plan, the class
// with the cheapest one chosen (the first on ties), then greedy, bound and growth on it.
std::vector<input_error> cobra_report(const workload& w, const std::vector<node_class>& classes,
                                      const cost_model& costs, report& out);

}  // namespace feedplane::provisioner
