// Subcommands of the `feedplane` binary. Each lives in its own cmd_*.cc and registers
// itself on the CLI11 app; the callback stores the exit code in *rc. Option storage is
// held by shared_ptr captured in the callback (the app owns both).
#pragma once

#include <CLI/CLI.hpp>

namespace feedplane::dataplane {

void add_config_command(CLI::App& app, int* rc);
void add_fetch_command(CLI::App& app, int* rc);
void add_match_command(CLI::App& app, int* rc);
void add_parse_command(CLI::App& app, int* rc);
void add_serve_command(CLI::App& app, int* rc);
void add_simulate_command(CLI::App& app, int* rc);
// A subcommand that runs a tool binary beside this one with the remaining arguments
// (`feedplane load ...` runs feedplane-load ...).
void add_tool_command(CLI::App& app, int* rc, const char* name, const char* binary,
                      const char* description);

}  // namespace feedplane::dataplane
