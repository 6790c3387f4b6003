// feedplane-provision (`feedplane provision`): the offline planner of issue 14. Reads a
// workload, node classes and a cost model, prints the plan; timings go to stderr so that
// identical input gives byte-identical output.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "feedplane/provisioner/cobra.h"
#include "feedplane/provisioner/feedplane_topology.h"
#include "feedplane/provisioner/inputs.h"
#include "feedplane/provisioner/report.h"

namespace fp = feedplane::provisioner;

namespace {

// Prints every error; true when there were any.
bool report_errors(const std::vector<fp::input_error>& errors) {
  for (const auto& e : errors) fmt::print(stderr, "feedplane provision: {}\n", e.to_string());
  return !errors.empty();
}

struct plan_options {
  std::string workload, nodes, costs, topology = "feedplane";
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
  const auto errors = o.topology == "cobra" ? fp::cobra_report(w, classes, costs, r)
                                            : fp::fp_report(w, classes, costs, r);
  if (report_errors(errors)) return 2;
  const std::string out = o.json ? fp::render_json(r) : fp::render_text(r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  fmt::print(stderr, "feedplane provision: planned in {:.1f} ms\n", ms.count());
  return r.exact.feasible ? 0 : 1;
}

int run(int argc, char** argv) {
  CLI::App app{
      "feedplane provision: how many hosts of which class and role a workload needs, which "
      "limit binds each role, and how far the plan is from the best possible (issue 14). "
      "Exit 0 with a plan, 1 when no plan exists (the reason is printed), 2 on bad input."};
  app.name("feedplane provision");
  plan_options o;
  app.add_option("--workload", o.workload, "workload TOML (provisioner/models/workloads/)")
      ->required();
  app.add_option("--nodes", o.nodes, "node classes TOML (provisioner/models/nodes/)")->required();
  app.add_option("--costs", o.costs,
                 "cost model TOML (provisioner/models/measured.toml, cobra.toml)")
      ->required();
  app.add_option("--topology", o.topology,
                 "feedplane: hosts running shards that crawl, match or both, with NATS servers; "
                 "cobra: crawler, filter and reflector hosts (seed 000)")
      ->check(CLI::IsMember({"feedplane", "cobra"}))
      ->capture_default_str();
  app.add_flag("--json", o.json, "print JSON (its shape: README.md, Provisioning)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
