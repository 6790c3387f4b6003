// What /proc says of a process or thread, for the benchmarks and the load harness:
// resident memory (VmRSS) and CPU time (utime + stime). One reader for all of them.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace feedplane::bench {

// VmRSS of /proc/PID/status in bytes; 0 when the process is gone.
inline double rss_bytes(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) * 1024;
  return 0;
}

// A stat file (/proc/PID/stat or /proc/PID/task/TID/stat): its command name and its CPU
// seconds, user + system. False when it cannot be read.
inline bool read_stat(const std::string& path, std::string* comm, double* cpu_s) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return false;
  // The command name sits in parentheses and may hold spaces: fields count after it
  // (state is field 3, utime 14, stime 15).
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 > line.size())
    return false;
  if (comm != nullptr) *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtod(field.c_str(), nullptr);
    if (i == 15) stime = std::strtod(field.c_str(), nullptr);
  }
  *cpu_s = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace feedplane::bench
