// Memory cost of idle keep-alive connections on an HTTP server (bench/RESULTS.md, "## net:
// HTTP server"). Opens N connections to 127.0.0.1:PORT, completes one request on each (so
// each is an idle keep-alive connection the server has served), and reports the growth of
// the server's resident memory (VmRSS summed over the given pids) per connection.
// --tls CA_FILE: the connections are HTTPS (OpenSSL, the certificate checked against
// CA_FILE, no name check), so the figure is what an idle TLS connection costs the server;
// the client's own SSL objects live in this process and are not counted.
//
// usage: http_idle_conns [--tls CA_FILE] PORT N PATH PID [PID...]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
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

#include "proc_stats.h"

namespace {

long rss_kb(const std::vector<int>& pids) {
  double total = 0;
  for (int pid : pids) total += feedplane::bench::rss_bytes(pid);
  return static_cast<long>(total / 1024);
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

// A connection: a socket, and its TLS session with --tls.
struct conn {
  int fd = -1;
  SSL* ssl = nullptr;
  ssize_t send_all(const std::string& s) {
    if (ssl == nullptr) return send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    size_t w = 0;
    return SSL_write_ex(ssl, s.data(), s.size(), &w) == 1 ? ssize_t(w) : -1;
  }
  ssize_t recv_some(char* b, size_t n) {
    if (ssl == nullptr) return recv(fd, b, n, 0);
    size_t got = 0;
    return SSL_read_ex(ssl, b, n, &got) == 1 ? ssize_t(got) : -1;
  }
};

bool request(conn& c, const std::string& req) {
  if (c.send_all(req) != ssize_t(req.size())) return false;
  // Read one response: headers, then Content-Length bytes.
  std::string buf;
  char tmp[16384];
  size_t need = std::string::npos;
  while (need == std::string::npos || buf.size() < need) {
    ssize_t n = c.recv_some(tmp, sizeof(tmp));
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
  const char* prog = argv[0];
  SSL_CTX* tls = nullptr;
  if (argc > 2 && std::strcmp(argv[1], "--tls") == 0) {
    tls = SSL_CTX_new(TLS_client_method());
    if (SSL_CTX_load_verify_locations(tls, argv[2], nullptr) != 1) {
      std::fprintf(stderr, "cannot load CA file %s\n", argv[2]);
      return 1;
    }
    SSL_CTX_set_verify(tls, SSL_VERIFY_PEER, nullptr);
    argc -= 2;
    argv += 2;
  }
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s [--tls CA_FILE] PORT N PATH PID [PID...]\n", prog);
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
  // Opens a connection (with its TLS handshake under --tls).
  auto open_conn = [&](conn& c) {
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
    if (tls == nullptr) return true;
    c.ssl = SSL_new(tls);
    SSL_set_fd(c.ssl, c.fd);
    return SSL_connect(c.ssl) == 1;
  };
  // Warm the server (first request allocates per-process state) before the baseline.
  {
    conn c;
    if (!open_conn(c) || !request(c, req)) {
      std::fprintf(stderr, "warm-up request failed\n");
      return 1;
    }
    SSL_free(c.ssl);
    close(c.fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long before = rss_kb(pids);
  const long tcp_before = tcp_mem_pages();
  std::vector<conn> conns(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (!open_conn(conns[size_t(i)]) || !request(conns[size_t(i)], req)) {
      std::fprintf(stderr, "connection %d failed: %s\n", i, strerror(errno));
      return 1;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long after = rss_kb(pids);
  const long tcp_after = tcp_mem_pages();
  const double per_conn = double(after - before) * 1024.0 / n;
  std::printf(
      "{\"connections\": %d, \"tls\": %s, \"rss_before_kb\": %ld, \"rss_after_kb\": %ld, "
      "\"user_bytes_per_connection\": %.0f, \"tcp_mem_pages_delta_both_ends\": %ld}\n",
      n, tls != nullptr ? "true" : "false", before, after, per_conn, tcp_after - tcp_before);
  for (conn& c : conns) {
    SSL_free(c.ssl);
    close(c.fd);
  }
  SSL_CTX_free(tls);
  return 0;
}
