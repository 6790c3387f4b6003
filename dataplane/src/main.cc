#include <cstdio>
#include <exception>

#include "commands.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "feedplane: a feed aggregation data plane. `feedplane serve` crawls RSS/Atom/JSON feeds, "
      "matches every new article against keyword subscriptions and serves each subscription's "
      "matches as a private feed; the other subcommands fetch, parse, match, plan and load-test "
      "from the command line."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "feedplane 0.1");
  int rc = 0;
  feedplane::dataplane::add_config_command(app, &rc);
  feedplane::dataplane::add_fetch_command(app, &rc);
  feedplane::dataplane::add_match_command(app, &rc);
  feedplane::dataplane::add_parse_command(app, &rc);
  feedplane::dataplane::add_serve_command(app, &rc);
  feedplane::dataplane::add_simulate_command(app, &rc);
  feedplane::dataplane::add_tool_command(
      app, &rc, "farm", "feedplane-farm",
      "the load harness's synthetic feed farm (feedplane farm --help)");
  feedplane::dataplane::add_tool_command(
      app, &rc, "load", "feedplane-load",
      "the load harness: starts a feed farm and feedplane, loads sources and subscriptions, "
      "runs, and checks delivery (feedplane load --help)");
  feedplane::dataplane::add_tool_command(
      app, &rc, "provision", "feedplane-provision",
      "the offline planner: hosts per role and class for a workload, the limit that binds "
      "each, greedy vs exact vs the lower bound (feedplane provision --help)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // Start-up code may throw (allocation, library set-up); say what and exit non-zero.
    std::fprintf(stderr, "feedplane: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "feedplane: unknown exception\n");
  }
  return 1;
}
