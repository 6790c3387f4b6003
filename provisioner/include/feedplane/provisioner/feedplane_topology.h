// feedplane's own topology (issue 14, DESIGN.md 7): hosts of a node class running one shard
// per core. A host crawls, or matches and reflects, or both. Every matching host consumes
// the article stream once (one JetStream consumer shared by its shards), so the stream is
// a floor on each such host's inbound bandwidth and CPU; each owns whole subscription
// partitions (P is fixed by the workload). More than one host means NATS servers, counted
// as hosts. Layouts: one host doing everything; crawl, match and NATS hosts apart (each
// role of one class); or every host crawling and matching, with NATS apart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/provisioner/inputs.h"
#include "feedplane/provisioner/plan.h"
#include "feedplane/provisioner/report.h"

namespace feedplane::provisioner {

enum class fp_layout : uint8_t { single, split, combined };
inline constexpr size_t fp_layout_count = 3;
std::string_view fp_layout_id(fp_layout l);    // "single", "split", "combined": in JSON
std::string_view fp_layout_name(fp_layout l);  // what it means, for people

enum class fp_role : uint8_t { crawl, match, nats };
inline constexpr size_t fp_role_count = 3;
std::string_view fp_role_name(fp_role r, fp_layout l);

struct fp_shape {
  fp_layout layout = fp_layout::single;
  // Per role: the class (index into the classes) and the host count. single: match is the
  // one host; combined: match hosts also crawl and crawl has no hosts of its own.
  size_t cls[fp_role_count] = {};
  uint64_t hosts[fp_role_count] = {};
  [[nodiscard]] uint64_t total() const { return hosts[0] + hosts[1] + hosts[2]; }
  bool operator==(const fp_shape&) const = default;
};

class fp_model {
 public:
  // Checks that the cost model has every coefficient the topology uses.
  static std::vector<input_error> make(const workload& w, const cost_model& costs,
                                       const std::vector<node_class>& classes, fp_model& out);

  // Demand x headroom / capacity on the most loaded host of the role (0: the role has no
  // hosts or the resource no cost). Fractional: loads split evenly, no partition rounding.
  [[nodiscard]] double utilisation(const fp_shape& s, fp_role role, resource r,
                                   bool fractional = false) const;
  // The part of it every matching host carries whatever the count: the article stream.
  [[nodiscard]] double stream_floor(const fp_shape& s, resource r) const;
  [[nodiscard]] double usable(size_t cls, resource r) const;
  [[nodiscard]] bool role_ok(const fp_shape& s, fp_role role, bool fractional = false) const;
  [[nodiscard]] bool feasible(const fp_shape& s, bool fractional = false) const;
  [[nodiscard]] double price(const fp_shape& s) const;
  [[nodiscard]] double worst(const fp_shape& s) const;

  [[nodiscard]] const workload& work() const { return w_; }
  void set_work(const workload& w) { w_ = w; }
  [[nodiscard]] const std::vector<node_class>& classes() const { return classes_; }
  // Bytes that move with a subscription when its partition changes host.
  [[nodiscard]] double state_bytes_per_subscription() const { return c_.disk_per_sub; }
  [[nodiscard]] double nats_replicas() const { return c_.nats_replicas; }

 private:
  // Per-host demand of each part, in resource units before headroom.
  void crawl_demand(double feeds, double out[resource_count]) const;
  void match_demand(double subs, double shards, double out[resource_count]) const;
  void nats_demand(double servers, double consumers, double out[resource_count]) const;

  workload w_;
  std::vector<node_class> classes_;
  const cost_model* costs_ = nullptr;
  struct coefficients {
    double cpu_200, cpu_304, cpu_tls, cpu_handshake, cpu_resumed, cpu_parse_8kb, fetch_request,
        fetch_304, per_feed, disk_per_feed, stream_bytes, disk_per_article, nats_cpu, nats_replicas,
        nats_base, prepare, per_shard, insert, poll_cpu, poll_tls, poll_request, poll_304,
        poll_item, per_sub, disk_per_sub, cached_article, cache_s, host_base;
  } c_{};
};

struct fp_result {
  fp_shape shape;
  bool feasible = false;
  std::string reason;
  std::vector<std::string> steps;
};

// The cheapest shape over every layout and class per role (then fewer hosts, then the lowest
// worst utilisation); each role's count is the fewest that fits, found by binary search.
fp_result fp_exact(const fp_model& m);
// Every shape with at most max_hosts hosts per role (the tests' oracle).
fp_result fp_brute_force(const fp_model& m, uint64_t max_hosts);
// Start from one host of the first class; when it does not fit, split the roles, and add to
// the role whose limit is furthest over the fewest hosts that clear it, until all fit.
fp_result fp_greedy(const fp_model& m);
// The exact search with fractional loads (whole partitions and feeds not required): no
// shape is cheaper. hosts: the bound shape's host count.
fp_result fp_lower_bound(const fp_model& m);

// Whole partitions per matching host: host i's partition numbers, ascending. Without a
// previous assignment, contiguous balanced ranges; with one, each kept host keeps what it
// can of its own (the hosts holding most get the larger quotas), and only the rest moves.
std::vector<std::vector<uint32_t>> assign_partitions(
    uint32_t partitions, uint64_t hosts, const std::vector<std::vector<uint32_t>>* previous);
// "0-341,400-410": a host's partitions as ranges; and back (false on malformed text).
std::string partition_ranges(const std::vector<uint32_t>& parts);
bool parse_partition_ranges(std::string_view text, uint32_t partitions, std::vector<uint32_t>& out);

// A plan printed earlier with --json (its exact plan), as the starting point of --previous.
struct fp_previous {
  fp_shape shape;
  bool known_classes = true;                      // every class it names is in today's node file
  std::vector<std::string> class_names;           // per role, as it names them
  std::vector<std::vector<uint32_t>> partitions;  // per matching host
};
std::vector<input_error> read_previous_plan(std::string_view json, std::string_view file,
                                            const std::vector<node_class>& classes,
                                            uint32_t partitions, fp_previous& out);
std::vector<input_error> load_previous_plan(const std::string& path,
                                            const std::vector<node_class>& classes,
                                            uint32_t partitions, fp_previous& out);

plan fp_plan(const fp_model& m, const fp_result& r, std::string method,
             const std::vector<std::vector<uint32_t>>* assignment = nullptr);

// The report; with `previous`, the plan keeps the previous shape when it still fits and is
// no dearer than the exact one (so planning again from a plan's own output moves nothing),
// and lists the moves from it: hosts added and removed, partitions and state moved.
std::vector<input_error> fp_report(const workload& w, const std::vector<node_class>& classes,
                                   const cost_model& costs, report& out,
                                   const fp_previous* previous = nullptr);

}  // namespace feedplane::provisioner
