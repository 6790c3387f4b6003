// Memory cost of idle keep-alive connections on an HTTP server (bench/RESULTS.md, "## net:
// HTTP server"). Opens N connections to 127.0.0.1:PORT, completes one request on each (so
// each is an idle keep-alive connection the server has served), and reports the growth of
// the server's resident memory (VmRSS summed over the given pids) per connection.
// --tls CA_FILE: the connections are HTTPS (OpenSSL, the certificate checked against
// CA_FILE, no name check), so the figure is what an idle TLS connection costs the server;
// the client's own SSL objects live in this process and are not counted.
//
// usage: http_idle_conns [--tls CA_FILE] PORT N PATH PID [PID...]
//
// Client side (bench/RESULTS.md, "## net: HTTP client"): what a fetch in flight and a pooled
// idle connection cost the fetching process, feedplane's client beside libcurl multi at
// the same concurrency, against an nginx this program starts (one worker,
// worker_connections above N, ssl_session_tickets on):
//
// usage: http_idle_conns --client feedplane|libcurl http|https inflight|idle N
//   inflight: N fetches at once of an 8 KB feed that nginx sends at 256 bytes/s, measured
//             after 8 s (the note says how many had their response headers by then).
//   idle:     N fetches at once of the 8 KB feed, all done; the N connections are pooled
//             (feedplane: its pool; libcurl: the multi's connection cache, easy handles
//             cleaned up). feedplane is also measured after trim() (what its collection
//             timer does with nothing in flight: the fetch slots' buffers released).
// Reported per fetch / per connection: heap in use (glibc mallinfo2: OpenSSL's and
// libcurl's allocations included) and VmRSS growth over a baseline taken after one warm-up
// fetch to another host name. Kernel socket memory is not included (alike for both).
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

#include <curl/curl.h>
#include <malloc.h>

#include <algorithm>

#include "../tests/nginx_fixture.h"
#include "feedplane/net/http_client.h"
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

// ---------------------------------------------------------------- client side

double heap_bytes() {
  struct mallinfo2 m = mallinfo2();
  return double(m.uordblks + m.hblkhd);
}

double self_rss() { return feedplane::bench::rss_bytes(long(getpid())); }

struct measure {
  double heap = 0, rss = 0;
  static measure now() { return {heap_bytes(), self_rss()}; }
};

void report(const char* client, bool https, const char* phase, int n, const measure& base,
            const measure& at, const char* note) {
  std::printf(
      "{\"client\": \"%s\", \"scheme\": \"%s\", \"phase\": \"%s\", \"n\": %d, "
      "\"heap_bytes_per\": %.0f, \"rss_bytes_per\": %.0f, \"note\": \"%s\"}\n",
      client, https ? "https" : "http", phase, n, (at.heap - base.heap) / n,
      (at.rss - base.rss) / n, note);
  std::fflush(stdout);
}

struct farm {
  feedplane::test::nginx_server nginx;
  uint16_t port = 0, tls_port = 0;
  std::string ca_file;
  std::string start(int n) {
    port = feedplane::test::free_port();
    do tls_port = feedplane::test::free_port();
    while (tls_port == port);
    std::ofstream(nginx.dir() / "www" / "feed.xml") << std::string(8192, 'f');
    const std::string d = nginx.dir().string();
    const std::string cmd =
        "cd " + d +
        " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key"
        " -out ca.pem -days 2 -subj /CN=bench-ca 2>/dev/null && openssl req -newkey ec -pkeyopt"
        " ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=localhost"
        " 2>/dev/null && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext.cnf &&"
        " openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem"
        " -days 2 -extfile ext.cnf 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) return "openssl could not make the certificates";
    ca_file = d + "/ca.pem";
    const std::string body =
        "    root @DIR@/www;\n    location /slow/ { alias @DIR@/www/; limit_rate 256; }\n";
    const std::string conf = "  server {\n    listen 127.0.0.1:" + std::to_string(port) +
                             " backlog=8192;\n" + body +
                             "  }\n  server {\n    listen 127.0.0.1:" + std::to_string(tls_port) +
                             " ssl backlog=8192;\n    ssl_certificate @DIR@/leaf.pem;\n"
                             "    ssl_certificate_key @DIR@/leaf.key;\n"
                             "    ssl_session_tickets on;\n" +
                             body + "  }\n";
    return nginx.start(conf, port, 1, 2 * n + 64);
  }
  std::string url(bool https, const char* host, bool slow) const {
    return std::string(https ? "https://" : "http://") + host + ":" +
           std::to_string(https ? tls_port : port) + (slow ? "/slow/feed.xml" : "/feed.xml");
  }
};

// Runs `turn` (one poll of the client) for about `ms` of wall time.
template <class Turn>
void run_for(int ms, Turn turn) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) turn();
}

int client_feedplane(const farm& f, bool https, bool inflight, int n) {
  namespace net = feedplane::net;
  std::string err;
  net::loop_options lo;
  lo.ring_entries = 4096;
  auto l = net::loop::create(lo, &err);
  if (!l) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
  net::client_options o;
  o.ca_file = f.ca_file;
  o.per_host_connections = uint32_t(n);
  o.max_idle_connections = uint32_t(n) + 16;
  o.total_timeout_ms = o.connect_timeout_ms = 60'000;
  auto c = net::http_client::create(*l, o, &err);
  if (!c) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
  struct state {
    int done = 0, ok = 0;
  } st;
  auto cb = [](void* x, uint64_t, net::fetch_result& r) {
    auto* s = static_cast<state*>(x);
    ++s->done;
    if (r.error == net::fetch_error::ok && r.status == 200 && r.body.size() == 8192) ++s->ok;
  };
  net::fetch_request req;
  req.url = f.url(https, "127.0.0.1", false);  // warm-up: another host, its own pool
  c->fetch(req, cb, &st);
  while (st.done < 1) l->run_once(true);
  if (st.ok != 1) return std::fprintf(stderr, "warm-up fetch failed\n"), 1;
  const measure base = measure::now();
  req.url = f.url(https, "localhost", inflight);
  for (int i = 0; i < n; ++i) c->fetch(req, cb, &st);
  if (inflight) {
    run_for(8000, [&] { l->run_once(false); });
    if (c->in_flight() != size_t(n)) std::fprintf(stderr, "only %zu in flight\n", c->in_flight());
    const measure at = measure::now();
    const std::string note = std::to_string(c->stats().tls_handshakes) + " TLS handshakes done";
    report("feedplane", https, "inflight", n, base, at, note.c_str());
  } else {
    while (st.done < n + 1) l->run_once(true);
    if (st.ok != n + 1 || c->idle_connections() != size_t(n) + 1)
      return std::fprintf(stderr, "%d ok, %zu idle\n", st.ok, c->idle_connections()), 1;
    report("feedplane", https, "idle", n, base, measure::now(), "fetch slots keep their buffers");
    c->trim();
    malloc_trim(0);
    report("feedplane", https, "idle", n, base, measure::now(), "after trim()");
  }
  c->shutdown();
  while (!c->quiescent()) l->run_once(true);
  return 0;
}

int client_curl(const farm& f, bool https, bool inflight, int n) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, long(n) + 16);
  struct xfer {
    CURL* easy = nullptr;
    size_t got = 0;
  };
  auto write = +[](char*, size_t sz, size_t k, void* ud) -> size_t {
    static_cast<xfer*>(ud)->got += sz * k;
    return sz * k;
  };
  auto setup = [&](xfer& x, const std::string& u) {
    x.easy = curl_easy_init();
    curl_easy_setopt(x.easy, CURLOPT_URL, u.c_str());
    curl_easy_setopt(x.easy, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(x.easy, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x.easy, CURLOPT_CAINFO, f.ca_file.c_str());
    curl_easy_setopt(x.easy, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(x.easy, CURLOPT_PRIVATE, &x);
    curl_multi_add_handle(multi, x.easy);
  };
  int done = 0, ok = 0;
  auto turn = [&](int timeout_ms) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int q = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &q)) {
      if (m->msg != CURLMSG_DONE) continue;
      xfer* x = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&x));
      long code = 0;
      curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      ++done;
      if (m->data.result == CURLE_OK && code == 200 && x->got == 8192) ++ok;
      // The connection goes to the multi's cache; the easy handle is freed.
      curl_multi_remove_handle(multi, m->easy_handle);
      curl_easy_cleanup(m->easy_handle);
      x->easy = nullptr;
    }
    curl_multi_poll(multi, nullptr, 0, timeout_ms, nullptr);
  };
  std::vector<xfer> xs(size_t(n) + 1);
  setup(xs[0], f.url(https, "127.0.0.1", false));  // warm-up: another host
  while (done < 1) turn(100);
  if (ok != 1) return std::fprintf(stderr, "warm-up fetch failed\n"), 1;
  const measure base = measure::now();
  const std::string u = f.url(https, "localhost", inflight);
  for (int i = 1; i <= n; ++i) setup(xs[size_t(i)], u);
  if (inflight) {
    run_for(8000, [&] { turn(10); });
    const measure at = measure::now();
    int headers = 0;
    for (int i = 1; i <= n; ++i) {
      long code = 0;
      if (xs[size_t(i)].easy != nullptr)
        curl_easy_getinfo(xs[size_t(i)].easy, CURLINFO_RESPONSE_CODE, &code);
      headers += code == 200 ? 1 : 0;
    }
    const std::string note = std::to_string(headers) + " with response headers";
    report("libcurl_multi", https, "inflight", n, base, at, note.c_str());
  } else {
    while (done < n + 1) turn(100);
    if (ok != n + 1) return std::fprintf(stderr, "%d ok of %d\n", ok, n + 1), 1;
    malloc_trim(0);
    report("libcurl_multi", https, "idle", n, base, measure::now(), "easy handles cleaned up");
  }
  for (auto& x : xs) {
    if (x.easy == nullptr) continue;
    curl_multi_remove_handle(multi, x.easy);
    curl_easy_cleanup(x.easy);
  }
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  return 0;
}

int client_main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s --client feedplane|libcurl http|https inflight|idle N\n",
                 argv[0]);
    return 2;
  }
  const std::string who = argv[2];
  const bool https = std::strcmp(argv[3], "https") == 0;
  const bool inflight = std::strcmp(argv[4], "inflight") == 0;
  const int n = std::max(1, std::atoi(argv[5]));
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  farm f;
  if (std::string e = f.start(n); !e.empty()) {
    std::fprintf(stderr, "nginx: %s\n", e.c_str());
    return 1;
  }
  return who == "libcurl" ? client_curl(f, https, inflight, n)
                          : client_feedplane(f, https, inflight, n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--client") == 0) return client_main(argc, argv);
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
