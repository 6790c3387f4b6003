// feedplane-provision (`feedplane provision`): the offline planner of issue 14. Reads a
// workload, node classes and a cost model, prints the plan; timings go to stderr so that
// identical input gives byte-identical output.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "feedplane/provisioner/cobra.h"
#include "feedplane/provisioner/feedplane_topology.h"
#include "feedplane/provisioner/inputs.h"
#include "feedplane/provisioner/map.h"
#include "feedplane/provisioner/report.h"

namespace fp = feedplane::provisioner;

namespace {

// Prints every error; true when there were any.
bool report_errors(const std::vector<fp::input_error>& errors) {
  for (const auto& e : errors) fmt::print(stderr, "feedplane provision: {}\n", e.to_string());
  return !errors.empty();
}

struct plan_options {
  std::string workload, nodes, costs, topology = "feedplane", previous;
  bool json = false;
};

int run_plan(const plan_options& o) {
  const auto start = std::chrono::steady_clock::now();
  fp::workload w;
  std::vector<fp::node_class> classes;
  fp::cost_model costs;
  bool bad = report_errors(fp::load_workload(o.workload, w));
  bad = report_errors(fp::load_node_classes(o.nodes, classes)) || bad;
  bad = report_errors(fp::load_cost_model(o.costs, costs)) || bad;
  if (bad) return 2;
  fp::report r;
  fp::fp_previous before;
  if (!o.previous.empty()) {
    if (o.topology == "cobra") {
      fmt::print(stderr, "feedplane provision: --previous needs --topology feedplane\n");
      return 2;
    }
    if (report_errors(fp::load_previous_plan(o.previous, classes, w.partitions, before))) return 2;
  }
  const auto errors = o.topology == "cobra" ? fp::cobra_report(w, classes, costs, r)
                                            : fp::fp_report(w, classes, costs, r,
                                                            o.previous.empty() ? nullptr : &before);
  if (report_errors(errors)) return 2;
  const std::string out = o.json ? fp::render_json(r) : fp::render_text(r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  fmt::print(stderr, "feedplane provision: planned in {:.1f} ms\n", ms.count());
  return r.exact.feasible ? 0 : 1;
}

struct map_options {
  std::string latency, output, algorithm = "min-cost";
  uint32_t crawlers = 0;
  uint64_t capacity = 0;
  bool json = false;
};

std::string mapping_json(const fp::mapping& r) {
  if (!r.feasible) return "null";
  const auto [lo, hi] = std::minmax_element(r.per_crawler.begin(), r.per_crawler.end());
  return fmt::format(
      "{{\"mean_ms\":{:.2f},\"median_ms\":{:.1f},\"p90_ms\":{:.1f},\"feeds_per_crawler_min\":{},"
      "\"feeds_per_crawler_max\":{},\"groups_split\":{},\"paths\":{},\"cycles\":{}}}",
      r.mean_ms, r.median_ms, r.p90_ms, *lo, *hi, r.split_groups, r.paths, r.cycles);
}

std::string mapping_row(std::string_view name, const fp::mapping& r) {
  if (!r.feasible) return fmt::format("{:<10} none: {}\n", name, r.reason);
  const auto [lo, hi] = std::minmax_element(r.per_crawler.begin(), r.per_crawler.end());
  std::string row = fmt::format("{:<10} {:>9.2f} {:>10.1f} {:>8.1f}  {:>10}-{:<10} {:>12}", name,
                                r.mean_ms, r.median_ms, r.p90_ms, *lo, *hi, r.split_groups);
  if (r.paths > 0) row += fmt::format("  ({} paths, {} cycles)", r.paths, r.cycles);
  return row + "\n";
}

int run_map(const map_options& o) {
  const auto start = std::chrono::steady_clock::now();
  fp::latency_matrix m;
  if (report_errors(fp::load_latency_csv(o.latency, m))) return 2;
  if (m.crawlers != o.crawlers) {
    fmt::print(stderr, "feedplane provision map: {} has {} RTT columns, not --crawlers {}\n",
               o.latency, m.crawlers, o.crawlers);
    return 2;
  }
  const uint64_t capacity =
      o.capacity != 0 ? o.capacity : (m.total_feeds + m.crawlers - 1) / m.crawlers;
  const fp::mapping first = fp::map_first_fit(m, capacity);
  const auto first_done = std::chrono::steady_clock::now();
  fp::mapping best;
  const bool min_cost = o.algorithm == "min-cost";
  if (min_cost) best = fp::map_min_cost(m, capacity);
  const auto done = std::chrono::steady_clock::now();
  const fp::mapping& chosen = min_cost ? best : first;
  std::string out;
  if (o.json) {
    out = fmt::format(
        "{{\"groups\":{},\"feeds\":{},\"crawlers\":{},\"capacity\":{},\"algorithm\":\"{}\","
        "\"first_fit\":{},\"min_cost\":{}}}\n",
        m.groups.size(), m.total_feeds, m.crawlers, capacity, o.algorithm, mapping_json(first),
        min_cost ? mapping_json(best) : "null");
  } else {
    out = fmt::format("latency    {}: {} groups, {} feeds, {} crawlers, at most {} feeds each\n",
                      o.latency, m.groups.size(), m.total_feeds, m.crawlers, capacity);
    out += fmt::format("{:<10} {:>9} {:>10} {:>8}  {:>21} {:>12}\n", "algorithm", "mean ms",
                       "median ms", "p90 ms", "feeds per crawler", "groups split");
    out += mapping_row("first-fit", first);
    if (min_cost) out += mapping_row("min-cost", best);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!o.output.empty() && chosen.feasible) {
    std::ofstream f(o.output, std::ios::binary);
    f << "group,crawler,feeds\n";
    for (size_t g = 0; g < chosen.placed.size(); ++g)
      for (const auto& [c, n] : chosen.placed[g])
        f << m.groups[g] << ',' << c + 1 << ',' << n << '\n';
    if (!f) {
      fmt::print(stderr, "feedplane provision map: cannot write {}\n", o.output);
      return 2;
    }
  }
  const auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  fmt::print(stderr, "feedplane provision map: first-fit {:.0f} ms{}\n", ms(start, first_done),
             min_cost ? fmt::format(", min-cost {:.0f} ms", ms(first_done, done)) : "");
  return chosen.feasible ? 0 : 1;
}

int run(int argc, char** argv) {
  CLI::App app{
      "feedplane provision: how many hosts of which class and role a workload needs, which "
      "limit binds each role, and how far the plan is from the best possible (issue 14). "
      "Exit 0 with a plan, 1 when no plan exists (the reason is printed), 2 on bad input."};
  app.name("feedplane provision");
  app.require_subcommand(0, 1);
  plan_options o;
  app.add_option("--workload", o.workload, "workload TOML (provisioner/models/workloads/)");
  app.add_option("--nodes", o.nodes, "node classes TOML (provisioner/models/nodes/)");
  app.add_option("--costs", o.costs,
                 "cost model TOML (provisioner/models/measured.toml, cobra.toml)");
  app.add_option("--topology", o.topology,
                 "feedplane: hosts running shards that crawl, match or both, with NATS servers; "
                 "cobra: crawler, filter and reflector hosts (seed 000)")
      ->check(CLI::IsMember({"feedplane", "cobra"}))
      ->capture_default_str();
  app.add_flag("--json", o.json, "print JSON (its shape: README.md, Provisioning)");
  app.add_option("--previous", o.previous,
                 "a plan printed earlier with --json: keep it if it still fits and is no dearer, "
                 "and print the moves from it (hosts, partitions, state)");

  map_options mo;
  auto* map = app.add_subcommand(
      "map",
      "feed-to-crawler mapping (seed 000 3.7): Cobra's first-fit against the min-cost "
      "optimum; RTT mean, median and p90, feeds per crawler, groups split");
  map->add_option("--latency", mo.latency, "CSV: group,feeds,rtt_ms_1,...,rtt_ms_C")->required();
  map->add_option("--crawlers", mo.crawlers, "C, the CSV's RTT columns")->required();
  map->add_option("--capacity", mo.capacity, "feeds per crawler (default ceil(feeds / C))");
  map->add_option("--algorithm", mo.algorithm, "min-cost (beside first-fit) or first-fit")
      ->check(CLI::IsMember({"first-fit", "min-cost"}))
      ->capture_default_str();
  map->add_option("--output", mo.output, "write group,crawler,feeds rows of the chosen mapping");
  map->add_flag("--json", mo.json, "print JSON");

  uint64_t groups = 0, feeds = 0, seed = 1;
  uint32_t crawlers = 0;
  auto* gen = app.add_subcommand(
      "latency", "print a latency matrix CSV shaped like the measured Internet, for map");
  gen->add_option("--groups", groups, "groups of feeds (addresses)")
      ->required()
      ->check(CLI::Range(uint64_t{1}, uint64_t{10000000}));
  gen->add_option("--crawlers", crawlers, "crawlers (RTT columns)")
      ->required()
      ->check(CLI::Range(1U, 10000U));
  gen->add_option("--feeds", feeds, "feeds in all (at least one per group)")->required();
  gen->add_option("--seed", seed, "random seed")->capture_default_str();
  try {
    app.parse(argc, argv);
    if (gen->parsed() && feeds < groups)
      throw CLI::ValidationError("--feeds", "must be at least --groups");
    if (!map->parsed() && !gen->parsed()) {
      for (const char* name : {"--workload", "--nodes", "--costs"}) {
        if (app.get_option(name)->count() == 0) throw CLI::RequiredError(name);
      }
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (map->parsed()) return run_map(mo);
  if (gen->parsed()) {
    const std::string csv = fp::generate_latency_csv(groups, crawlers, feeds, seed);
    std::fwrite(csv.data(), 1, csv.size(), stdout);
    return 0;
  }
  return run_plan(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "feedplane provision: {}\n", e.what());
  }
  return 1;
}
