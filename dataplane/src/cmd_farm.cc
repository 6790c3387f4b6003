// `feedplane farm ARGS...`: runs feedplane-farm (bench/farm, the load harness's synthetic
// feed farm) with ARGS, as git runs its subcommands: the binary beside this one, else the
// one on PATH. The farm is its own binary so the data plane links none of the harness.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace feedplane::dataplane {

namespace {

// Replaces this process with `name` (beside /proc/self/exe, else found on PATH) given args.
// Returns only on failure, with the exit status to use.
int exec_beside(const char* name, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(name));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string path(self, static_cast<size_t>(n));
    path.resize(path.rfind('/') + 1);
    path += name;
    execv(path.c_str(), argv.data());
  }
  execvp(name, argv.data());
  std::fprintf(stderr, "feedplane: cannot run %s (beside %s or on PATH): %s\n", name,
               n > 0 ? std::string(self, static_cast<size_t>(n)).c_str() : "feedplane",
               std::strerror(errno));
  return 127;
}

}  // namespace

void add_farm_command(CLI::App& app, int* rc) {
  CLI::App* cmd = app.add_subcommand(
      "farm",
      "run the load harness's synthetic feed farm (feedplane-farm; `feedplane farm --help`)");
  // Every argument, --help included, belongs to feedplane-farm.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->callback([cmd, rc] { *rc = exec_beside("feedplane-farm", cmd->remaining()); });
}

}  // namespace feedplane::dataplane
