// A plan as every topology reports it: hosts per role, the utilisation of every resource on
// the most loaded host of each role, the limit that binds, and how it was reached.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::provisioner {

enum class resource : uint8_t { cpu, memory, in_bw, out_bw, disk };
inline constexpr size_t resource_count = 5;
// "cpu", "memory", "in-bw", "out-bw", "disk"
std::string_view resource_name(resource r);

// One role of a plan (all its hosts are of one class).
struct role_plan {
  std::string role;        // "crawler", "filter", ...
  std::string node_class;  // the class's name
  uint64_t hosts = 0;
  std::string shape;  // how the role is split, e.g. "1 x 28" for filters (in x out)
  // What the most loaded host carries, e.g. "357143 subscriptions".
  std::string per_host;
  // Demand x headroom / capacity on the most loaded host; 0 where the model has no cost.
  std::array<double, resource_count> utilisation{};
  std::array<double, resource_count> usable{};  // the class's usable share of each
  std::array<bool, resource_count> modeled{};
  // Matching roles: each host's partitions as ranges ("0-341,400-410").
  std::vector<std::string> assignment;
  // The resource closest to its usable share (the one that binds the role).
  [[nodiscard]] resource binding() const;
};

struct plan {
  std::string method;  // "greedy" or "exact"
  std::string layout;  // how roles share hosts (feedplane's topology); empty for Cobra's
  bool feasible = false;
  std::string reason;  // when infeasible: why, and the node size that would do
  std::vector<role_plan> roles;
  [[nodiscard]] uint64_t hosts() const;
  double price = 0;
  std::vector<std::string> steps;  // the greedy loop's decompositions, in order
};

// The growth left: the largest whole value in [from, 1e15] for which `fits` holds, doubling
// then bisecting (fits is monotone: more load never fits where less did not); `from` when
// even that does not fit.
double largest_fitting(double from, const std::function<bool(double)>& fits);

}  // namespace feedplane::provisioner
