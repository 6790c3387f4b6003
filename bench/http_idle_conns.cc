// Memory cost of idle keep-alive connections on an HTTP server (bench/RESULTS.md, "## net:
// HTTP server"). Opens N connections to 127.0.0.1:PORT, completes one request on each (so
// each is an idle keep-alive connection the server has served), and reports the growth of
// the server's resident memory (VmRSS summed over the given pids) per connection.
//
// usage: http_idle_conns PORT N PATH PID [PID...]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

long rss_kb(const std::vector<int>& pids) {
  long total = 0;
  for (int pid : pids) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("VmRSS:", 0) == 0) total += std::atol(line.c_str() + 6);
    }
  }
  return total;
}

// Kernel memory charged to TCP sockets, in pages ("TCP: ... mem N" in /proc/net/sockstat).
long tcp_mem_pages() {
  std::ifstream f("/proc/net/sockstat");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("TCP:", 0) == 0) {
      size_t m = line.find(" mem ");
      if (m != std::string::npos) return std::atol(line.c_str() + m + 5);
    }
  }
  return -1;
}

bool request(int fd, const std::string& req) {
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) return false;
  // Read one response: headers, then Content-Length bytes.
  std::string buf;
  char tmp[16384];
  size_t need = std::string::npos;
  while (need == std::string::npos || buf.size() < need) {
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, size_t(n));
    size_t h = buf.find("\r\n\r\n");
    if (need == std::string::npos && h != std::string::npos) {
      size_t cl = buf.find("Content-Length: ");
      if (cl == std::string::npos || cl > h) return false;
      need = h + 4 + std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
    }
  }
  return buf.compare(0, 12, "HTTP/1.1 200") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s PORT N PATH PID [PID...]\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int n = std::atoi(argv[2]);
  const std::string req = std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: bench\r\n\r\n";
  std::vector<int> pids;
  for (int i = 4; i < argc; ++i) pids.push_back(std::atoi(argv[i]));

  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rlim_t(n) + 16) {
    std::fprintf(stderr, "RLIMIT_NOFILE hard limit %llu is below %d connections\n",
                 static_cast<unsigned long long>(rl.rlim_max), n);
    return 1;
  }

  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Warm the server (first request allocates per-process state) before the baseline.
  {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || !request(fd, req)) {
      std::fprintf(stderr, "warm-up request failed\n");
      return 1;
    }
    close(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long before = rss_kb(pids);
  const long tcp_before = tcp_mem_pages();
  std::vector<int> fds;
  fds.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        !request(fd, req)) {
      std::fprintf(stderr, "connection %d failed: %s\n", i, strerror(errno));
      return 1;
    }
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long after = rss_kb(pids);
  const long tcp_after = tcp_mem_pages();
  const double per_conn = double(after - before) * 1024.0 / n;
  std::printf(
      "{\"connections\": %d, \"rss_before_kb\": %ld, \"rss_after_kb\": %ld, "
      "\"user_bytes_per_connection\": %.0f, \"tcp_mem_pages_delta_both_ends\": %ld}\n",
      n, before, after, per_conn, tcp_after - tcp_before);
  for (int fd : fds) close(fd);
  return 0;
}
