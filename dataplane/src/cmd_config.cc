// `feedplane config [--config FILE]`: validate a configuration file and print the
// configuration in effect (defaults where the file is silent), each option documented.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "feedplane/dataplane/config.h"

namespace feedplane::dataplane {

void add_config_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "config", "check a configuration file and print every option in effect with its doc");
  // Option storage is owned by the callback, which the app owns.
  auto path = std::make_shared<std::string>();
  cmd->add_option("--config,-c", *path, "TOML configuration file");
  cmd->callback([path, rc] {
    config c;
    if (!path->empty()) {
      if (auto err = load_config_file(*path, c); !err.empty()) {
        fmt::print(stderr, "feedplane: {}\n", err);
        *rc = 2;
        return;
      }
    }
    fmt::print("{}", render_config(c));
  });
}

}  // namespace feedplane::dataplane
