// `feedplane farm|load ARGS...`: runs feedplane-farm or feedplane-load, found beside this
// binary (else on PATH), with the same arguments, as git runs git-NAME. The harness is its
// own binaries so that dataplane never links it (DESIGN.md 9: arrows stay one-way).
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"

namespace feedplane::dataplane {

namespace {

std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  const std::string p(buf, size_t(n));
  return p.substr(0, p.rfind('/'));
}

// Replaces this process with `binary` beside this one, else the one on PATH. Returns only
// on failure, with the exit status to use.
int exec_tool(const std::string& binary, const std::vector<std::string>& args) {
  const std::string path = self_dir() + "/" + binary;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  execvp(binary.c_str(), argv.data());
  fmt::print(stderr, "feedplane: cannot run {} (beside this binary or on PATH): {}\n", binary,
             strerror(errno));
  return 127;
}

}  // namespace

void add_tool_command(CLI::App& app, int* rc, const char* name, const char* binary,
                      const char* description) {
  auto* cmd = app.add_subcommand(name, description);
  cmd->prefix_command();  // every argument after the name goes to the tool as is
  cmd->set_help_flag();   // `feedplane load --help` is the tool's own help
  cmd->allow_extras();
  const std::string bin = binary;
  cmd->callback([cmd, rc, bin] { *rc = exec_tool(bin, cmd->remaining()); });
}

}  // namespace feedplane::dataplane
