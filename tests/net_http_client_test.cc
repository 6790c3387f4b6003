// The HTTP/1.1 client on the io_uring loop against real peers on loopback: nginx
// (nginx-light, started by the test on free ports with its own config) for the normal
// cases, HTTPS with a CA the test makes with the openssl CLI, and a small raw socket
// server of the test's own for broken servers (close mid-body, stall, bad chunks, 1xx).
#include "feedplane/net/http_client.h"

#include <gtest/gtest.h>
#include <libdeflate.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "fake_dns.h"
#include "nginx_fixture.h"

using feedplane::net::client_options;
using feedplane::net::fetch_error;
using feedplane::net::fetch_error_name;
using feedplane::net::fetch_request;
using feedplane::net::fetch_result;
using feedplane::net::http_client;
using feedplane::net::loop;
using feedplane::net::loop_options;
using feedplane::test::free_port;
using feedplane::test::nginx_server;

namespace {

std::string feed_body(size_t n) {
  std::string s = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>t</title>";
  for (int i = 0; s.size() + 80 < n; ++i)
    s += "<item><title>entry " + std::to_string(i) + "</title><guid>g" + std::to_string(i) +
         "</guid></item>";
  s += "</channel></rss>";
  s.resize(std::max(s.size(), n), ' ');
  return s;
}

// One loop + one client on the test thread; fetch() runs the loop until the callback.
struct harness {
  std::unique_ptr<loop> l;
  std::unique_ptr<http_client> c;
  explicit harness(client_options opt = {}) {
    std::string err;
    loop_options lo;
    lo.ring_entries = 64;  // deliberately small
    l = loop::create(lo, &err);
    if (!l) throw std::runtime_error(err);
    c = http_client::create(*l, opt, &err);
    if (!c) throw std::runtime_error(err);
  }
  ~harness() {
    c->shutdown();
    for (int i = 0; i < 1000 && !c->quiescent(); ++i) l->run_once(true);
    c.reset();
  }
  fetch_result fetch(fetch_request req) {
    struct box {
      bool done = false;
      fetch_result r;
    } b;
    c->fetch(
        req,
        [](void* ctx, uint64_t, fetch_result& r) {
          auto* bb = static_cast<box*>(ctx);
          bb->r = std::move(r);
          bb->done = true;
        },
        &b);
    for (int i = 0; i < 100000 && !b.done; ++i) l->run_once(true);
    EXPECT_TRUE(b.done);
    return b.r;
  }
  fetch_result get(const std::string& u) {
    fetch_request r;
    r.url = u;
    return fetch(r);
  }
};

#define EXPECT_OK(r) \
  EXPECT_EQ((r).error, fetch_error::ok) << fetch_error_name((r).error) << ": " << (r).detail

class NginxClient : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    srv_ = new nginx_server();
    port_ = free_port();
    do tls_port_ = free_port();
    while (tls_port_ == port_);
    auto www = srv_->dir() / "www";
    std::ofstream(www / "feed.xml") << feed_body(8192);
    std::ofstream(www / "big.bin") << std::string(300000, 'b');
    // CA and server certificate made with the openssl CLI, as an operator would.
    std::string d = srv_->dir().string();
    std::string cmd =
        "cd " + d +
        " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        " -keyout ca.key -out ca.pem -days 2 -subj /CN=feedplane-test-ca 2>/dev/null"
        " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key"
        " -out leaf.csr -subj /CN=localhost 2>/dev/null"
        " && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext.cnf"
        " && openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
        " -out leaf.pem -days 2 -extfile ext.cnf 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl failed";
    std::string conf = R"(
  server {
    listen 127.0.0.1:PORT;
    root @DIR@/www;
    location /gz/ { alias @DIR@/www/; gzip on; gzip_types application/rss+xml; gzip_min_length 0; }
    location = /r301 { return 301 /r302; }
    location = /r302 { return 302 http://127.0.0.1:PORT/r307; }
    location = /r307 { return 307 r308; }
    location = /r308 { return 308 /feed.xml; }
    location = /loop1 { return 302 /loop2; }
    location = /loop2 { return 302 /loop1; }
    location ~ ^/chain(\d+)$ { return 302 /chain$1x; }
    location ~ ^/chain(\d+)x$ { return 302 /chain$1xx; }
    location ~ ^/chain(\d+)xx$ { return 302 /chain$1xxx; }
    location ~ ^/chain(\d+)xxx$ { return 302 /chain$1xxxx; }
    location ~ ^/chain(\d+)xxxx$ { return 302 /chain$1xxxxx; }
    location ~ ^/chain(\d+)xxxxx$ { return 302 /chain$1xxxxxx; }
    location = /limited { add_header Retry-After 120 always; return 429; }
    location = /cached { add_header Cache-Control "max-age=300" always; expires 1h; alias @DIR@/www/feed.xml; }
  }
  server {
    listen 127.0.0.1:TLSPORT ssl;
    ssl_certificate @DIR@/leaf.pem;
    ssl_certificate_key @DIR@/leaf.key;
    root @DIR@/www;
  }
)";
    for (size_t p; (p = conf.find("TLSPORT")) != std::string::npos;)
      conf.replace(p, 7, std::to_string(tls_port_));
    for (size_t p; (p = conf.find("PORT")) != std::string::npos;)
      conf.replace(p, 4, std::to_string(port_));
    auto err = srv_->start(conf, port_);
    ASSERT_EQ(err, "");
    ASSERT_TRUE(feedplane::test::port_open(tls_port_));
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  static nginx_server* srv_;
  static uint16_t port_;
  static uint16_t tls_port_;
};
nginx_server* NginxClient::srv_ = nullptr;
uint16_t NginxClient::port_ = 0;
uint16_t NginxClient::tls_port_ = 0;

}  // namespace

TEST_F(NginxClient, OkThenNotModifiedOnRevalidation) {
  harness h;
  auto r = h.get(base() + "/feed.xml");
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, feed_body(8192));
  EXPECT_EQ(r.decoded_bytes, 8192u);
  EXPECT_GT(r.wire_bytes, 8192u);
  EXPECT_EQ(r.content_type, "application/rss+xml");
  ASSERT_FALSE(r.etag.empty());
  ASSERT_FALSE(r.last_modified.empty());
  EXPECT_FALSE(r.reused_connection);

  fetch_request req;
  req.url = base() + "/feed.xml";
  req.if_none_match = r.etag;
  auto r2 = h.fetch(req);
  EXPECT_OK(r2);
  EXPECT_EQ(r2.status, 304);
  EXPECT_TRUE(r2.body.empty());
  EXPECT_TRUE(r2.reused_connection);  // keep-alive reuse per host

  req.if_none_match.clear();
  req.if_modified_since = r.last_modified;
  auto r3 = h.fetch(req);
  EXPECT_EQ(r3.status, 304);
  EXPECT_EQ(h.c->stats().connections_opened, 1u);
  EXPECT_EQ(h.c->stats().connections_reused, 2u);

  req.if_none_match = "\"some-other-etag\"";
  req.if_modified_since.clear();
  EXPECT_EQ(h.fetch(req).status, 200);
}

TEST_F(NginxClient, IdleConnectionCapClosesInsteadOfPooling) {
  client_options o;
  o.max_idle_connections = 0;
  harness h(o);
  EXPECT_OK(h.get(base() + "/feed.xml"));
  auto r = h.get(base() + "/feed.xml");
  EXPECT_OK(r);
  EXPECT_FALSE(r.reused_connection);
  EXPECT_EQ(h.c->stats().connections_opened, 2u);
  EXPECT_EQ(h.c->stats().connections_reused, 0u);
}

TEST_F(NginxClient, GzipChunked) {
  harness h;
  auto r = h.get(base() + "/gz/feed.xml");
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_encoding, "gzip");
  EXPECT_EQ(r.body, feed_body(8192));
  EXPECT_LT(r.wire_bytes, 8192u);  // compressed on the wire
  bool chunked = false;
  for (auto& [n, v] : r.headers)
    if (n == "Transfer-Encoding" && v == "chunked") chunked = true;
  EXPECT_TRUE(chunked);
  // Without Accept-Encoding nginx sends it plain.
  fetch_request req;
  req.url = base() + "/gz/feed.xml";
  req.accept_compressed = false;
  auto p = h.fetch(req);
  EXPECT_EQ(p.content_encoding, "");
  EXPECT_EQ(p.body, feed_body(8192));
}

TEST_F(NginxClient, RedirectChainReportsEachHop) {
  harness h;
  auto r = h.get(base() + "/r301");
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.final_url, base() + "/feed.xml");
  ASSERT_EQ(r.redirects.size(), 4u);
  EXPECT_EQ(r.redirects[0].status, 301);
  EXPECT_TRUE(r.redirects[0].permanent);
  EXPECT_EQ(r.redirects[0].from, base() + "/r301");
  EXPECT_EQ(r.redirects[0].to, base() + "/r302");
  EXPECT_EQ(r.redirects[1].status, 302);
  EXPECT_FALSE(r.redirects[1].permanent);
  EXPECT_EQ(r.redirects[2].status, 307);
  EXPECT_FALSE(r.redirects[2].permanent);
  EXPECT_EQ(r.redirects[2].to, base() + "/r308");  // relative Location resolved
  EXPECT_EQ(r.redirects[3].status, 308);
  EXPECT_TRUE(r.redirects[3].permanent);
  // 301 then 302: the stored URL moves to the 301's target only.
  EXPECT_EQ(r.permanent_url(), base() + "/r302");
  auto direct = h.get(base() + "/r308");
  EXPECT_EQ(direct.permanent_url(), base() + "/feed.xml");
  EXPECT_EQ(h.get(base() + "/r307").permanent_url(), "");
  EXPECT_EQ(r.body.size(), 8192u);
}

TEST_F(NginxClient, RedirectLoopAndTooManyRedirects) {
  harness h;
  auto r = h.get(base() + "/loop1");
  EXPECT_EQ(r.error, fetch_error::redirect_loop);
  EXPECT_EQ(r.redirects.size(), 2u);
  auto r2 = h.get(base() + "/chain1");
  EXPECT_EQ(r2.error, fetch_error::too_many_redirects);
  EXPECT_EQ(r2.redirects.size(), 6u);
}

TEST_F(NginxClient, NotFoundAndTooManyRequests) {
  harness h;
  auto r = h.get(base() + "/missing.xml");
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 404);
  auto r2 = h.get(base() + "/limited");
  EXPECT_OK(r2);
  EXPECT_EQ(r2.status, 429);
  EXPECT_EQ(r2.retry_after, "120");
  auto r3 = h.get(base() + "/cached");
  EXPECT_EQ(r3.status, 200);
  EXPECT_NE(r3.cache_control.find("max-age=300"), std::string::npos) << r3.cache_control;
  EXPECT_NE(r3.cache_control.find("max-age=3600"), std::string::npos) << r3.cache_control;
  EXPECT_FALSE(r3.expires.empty());
}

TEST_F(NginxClient, BodyOverTheCap) {
  client_options o;
  o.max_body = 100000;
  harness h(o);
  auto r = h.get(base() + "/big.bin");
  EXPECT_EQ(r.error, fetch_error::body_too_large);
  // The per-request cap overrides the client's.
  fetch_request req;
  req.url = base() + "/big.bin";
  req.max_body = 400000;
  auto r2 = h.fetch(req);
  EXPECT_OK(r2);
  EXPECT_EQ(r2.body.size(), 300000u);
}

TEST_F(NginxClient, HttpsWithTheTestCa) {
  client_options o;
  o.ca_file = (srv_->dir() / "ca.pem").string();
  harness h(o);
  std::string u = "https://localhost:" + std::to_string(tls_port_) + "/feed.xml";
  auto r = h.get(u);
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, feed_body(8192));
  auto again = h.get(u);
  EXPECT_TRUE(again.reused_connection);
  // The certificate names localhost and 127.0.0.1, not 127.0.0.2... but the IP works.
  auto ip = h.get("https://127.0.0.1:" + std::to_string(tls_port_) + "/feed.xml");
  EXPECT_OK(ip);
}

TEST_F(NginxClient, HttpsResumesTheSessionOnANewConnection) {
  client_options o;
  o.ca_file = (srv_->dir() / "ca.pem").string();
  o.max_idle_connections = 0;  // every fetch on a new connection
  harness h(o);
  std::string u = "https://localhost:" + std::to_string(tls_port_) + "/feed.xml";
  auto first = h.get(u);
  EXPECT_OK(first);
  EXPECT_FALSE(first.tls_resumed);
  EXPECT_GE(h.c->tls_sessions().tickets, 1u);
  auto second = h.get(u);
  EXPECT_OK(second);
  EXPECT_FALSE(second.reused_connection);
  EXPECT_TRUE(second.tls_resumed);
  EXPECT_EQ(second.body, feed_body(8192));
  // Another host name for the same server: its own cache entry, a full handshake.
  auto other = h.get("https://127.0.0.1:" + std::to_string(tls_port_) + "/feed.xml");
  EXPECT_OK(other);
  EXPECT_FALSE(other.tls_resumed);
  EXPECT_EQ(h.c->stats().tls_handshakes, 3u);
  EXPECT_EQ(h.c->stats().tls_resumed, 1u);
}

TEST_F(NginxClient, HttpsRejectedWithoutTheCa) {
  harness h;  // system CA store only
  std::string u = "https://localhost:" + std::to_string(tls_port_) + "/feed.xml";
  auto r = h.get(u);
  EXPECT_EQ(r.error, fetch_error::tls_unknown_ca) << fetch_error_name(r.error);
  fetch_request req;
  req.url = u;
  req.insecure = true;  // the per-source opt-out
  auto r2 = h.fetch(req);
  EXPECT_OK(r2);
  EXPECT_EQ(r2.status, 200);
}

TEST_F(NginxClient, ConcurrentFetchesShareThePerHostLimit) {
  client_options o;
  o.per_host_connections = 2;
  harness h(o);
  int done = 0;
  int ok = 0;
  struct ctx_t {
    int* done;
    int* ok;
  } ctx{&done, &ok};
  for (int i = 0; i < 20; ++i) {
    fetch_request req;
    req.url = base() + (i % 2 ? "/feed.xml" : "/gz/feed.xml");
    h.c->fetch(
        req,
        [](void* x, uint64_t, fetch_result& r) {
          auto* c = static_cast<ctx_t*>(x);
          ++*c->done;
          if (r.error == fetch_error::ok && r.status == 200 && r.body.size() == 8192) ++*c->ok;
        },
        &ctx);
  }
  for (int i = 0; i < 100000 && done < 20; ++i) h.l->run_once(true);
  EXPECT_EQ(done, 20);
  EXPECT_EQ(ok, 20);
  EXPECT_LE(h.c->stats().connections_opened, 2u);
}

TEST(HttpClient, ConnectionRefusedAndBadUrls) {
  harness h;
  uint16_t port = free_port();  // nothing listens
  auto r = h.get("http://127.0.0.1:" + std::to_string(port) + "/");
  EXPECT_EQ(r.error, fetch_error::connect_refused);
  EXPECT_EQ(h.get("ftp://x/").error, fetch_error::unsupported_scheme);
  EXPECT_EQ(h.get("not a url").error, fetch_error::bad_url);
  fetch_request req;
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  req.headers.push_back({"X-Evil", "a\r\nInjected: yes"});
  EXPECT_EQ(h.fetch(req).error, fetch_error::bad_request_header);
}

namespace {

// A raw TCP server: for each accepted connection, reads the request head and then runs
// `script(fd)`. Runs on its own thread; stopped and joined by the destructor.
class raw_server {
 public:
  explicit raw_server(std::function<void(int)> script, bool v6 = false)
      : script_(std::move(script)), v6_(v6) {
    fd_ = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len;
    if (v6) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
      a6->sin6_family = AF_INET6;
      a6->sin6_addr = in6addr_loopback;
      len = sizeof *a6;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *a;
    }
    bind(fd_, reinterpret_cast<sockaddr*>(&ss), len);
    listen(fd_, 16);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                     : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~raw_server() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  std::string url(const std::string& path = "/") const {
    return std::string(v6_ ? "http://[::1]:" : "http://127.0.0.1:") + std::to_string(port_) + path;
  }
  bool stopping() const { return stop_; }

 private:
  void run() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      script_(c);
      close(c);
    }
  }
  std::function<void(int)> script_;
  bool v6_ = false;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void send_all(int fd, const std::string& s) { (void)!send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

}  // namespace

TEST(HttpClientRaw, CloseMidBody) {
  raw_server s([](int fd) { send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"); });
  harness h;
  auto r = h.get(s.url());
  EXPECT_EQ(r.error, fetch_error::closed_mid_body);
}

TEST(HttpClientRaw, CloseBeforeAnyResponse) {
  raw_server s([](int) {});
  harness h;
  EXPECT_EQ(h.get(s.url()).error, fetch_error::closed_before_response);
}

TEST(HttpClientRaw, StallFiresTheTotalTimeout) {
  std::atomic<bool> release{false};
  raw_server s([&](int fd) {
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  harness h;
  fetch_request req;
  req.url = s.url();
  req.total_timeout_ms = 200;
  auto r = h.fetch(req);
  EXPECT_EQ(r.error, fetch_error::total_timeout);
  release = true;
}

TEST(HttpClientRaw, BadChunkSizes) {
  raw_server s([](int fd) {
    send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n");
  });
  harness h;
  EXPECT_EQ(h.get(s.url()).error, fetch_error::bad_chunk_size);
}

TEST(HttpClientRaw, InterimResponseIsSkipped) {
  raw_server s([](int fd) {
    send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_all(fd,
             "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\n"
             "Content-Length: 5\r\nConnection: close\r\n\r\nhello");
  });
  harness h;
  auto r = h.get(s.url());
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
}

TEST(HttpClientRaw, DeltaFeedWithImUsed) {
  raw_server s([](int fd) {
    send_all(fd,
             "HTTP/1.1 226 IM Used\r\nIM: feed\r\nETag: \"v2\"\r\nContent-Length: 4\r\n"
             "Connection: close\r\n\r\nnew!");
  });
  harness h;
  fetch_request req;
  req.url = s.url();
  req.a_im_feed = true;
  req.if_none_match = "\"v1\"";
  auto r = h.fetch(req);
  EXPECT_OK(r);
  EXPECT_EQ(r.status, 226);
  EXPECT_EQ(r.im, "feed");
  EXPECT_EQ(r.body, "new!");
}

TEST(HttpClientRaw, StaleKeepAliveConnectionIsRetried) {
  // The first connection answers once with keep-alive and is then closed by the server;
  // the second fetch must notice and retry on a new connection.
  std::atomic<int> conns{0};
  raw_server s([&](int fd) {
    ++conns;
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  harness h;
  EXPECT_OK(h.get(s.url()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = h.get(s.url());
  EXPECT_OK(r);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(h.c->stats().retries_on_stale, 1u);
}

TEST(HttpClientRaw, NamesResolvedThroughCaresOnTheLoop) {
  // A DNS server of the test's own: the c-ares sockets are polled by io_uring requests.
  feedplane::test::fake_dns dns;
  raw_server s([](int fd) {
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
  });
  client_options o;
  o.dns.servers = "127.0.0.1:" + std::to_string(dns.port());
  o.dns.use_hosts_file = false;
  o.dns.timeout_ms = 300;
  o.dns.tries = 1;
  harness h(o);
  std::string port = s.url().substr(s.url().rfind(':'));  // ":PORT/"
  auto r = h.get("http://loop.test" + port);
  EXPECT_OK(r);
  EXPECT_EQ(r.body, "hi");
  int queries = dns.queries();
  EXPECT_GE(queries, 1);
  EXPECT_OK(h.get("http://loop.test" + port));  // from the TTL cache
  EXPECT_EQ(dns.queries(), queries);
  EXPECT_EQ(h.get("http://nx.test" + port).error, fetch_error::dns_not_found);
  auto slow = h.get("http://slow.test" + port);
  EXPECT_EQ(slow.error, fetch_error::dns_timeout) << fetch_error_name(slow.error);
}

TEST(HttpClientRaw, ConnectTimeout) {
  // A listener whose accept queue is full drops further SYNs: connect() hangs on loopback.
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(lfd, 0), 0);
  socklen_t len = sizeof a;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 3; ++i) {
    int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)!connect(f, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client_options o;
  o.connect_timeout_ms = 200;
  o.total_timeout_ms = 5000;
  harness h(o);
  auto r = h.get("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/");
  EXPECT_EQ(r.error, fetch_error::connect_timeout) << fetch_error_name(r.error);
  for (int f : fillers) close(f);
  close(lfd);
}

TEST(HttpClientRaw, TlsHandshakeTimeout) {
  // Accepts and reads the ClientHello but never answers it.
  std::atomic<bool> release{false};
  raw_server s([&](int) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  client_options o;
  o.connect_timeout_ms = 200;
  harness h(o);
  std::string u = s.url();
  u.replace(0, 4, "https");
  // raw_server reads until a blank line, which a ClientHello never has: it stalls reading.
  auto r = h.get(u);
  EXPECT_EQ(r.error, fetch_error::tls_handshake_timeout) << fetch_error_name(r.error);
  release = true;
}

TEST(HttpClientRaw, Ipv6LiteralAndAaaaOnlyName) {
  feedplane::test::fake_dns dns;
  raw_server s(
      [](int fd) {
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv6");
      },
      /*v6=*/true);
  client_options o;
  o.dns.servers = "127.0.0.1:" + std::to_string(dns.port());
  o.dns.use_hosts_file = false;
  harness h(o);
  auto r = h.get(s.url());
  EXPECT_OK(r);
  EXPECT_EQ(r.body, "v6");
  std::string port = s.url().substr(s.url().rfind(':'));
  auto r2 = h.get("http://loop6.test" + port);
  EXPECT_OK(r2);
  EXPECT_EQ(r2.body, "v6");
}

TEST(HttpClientRaw, PerHostStateIsFreedWhenUnused) {
  raw_server s([](int fd) {
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  });
  client_options o;
  o.pool_gc_interval_ms = 5;
  harness h(o);
  EXPECT_OK(h.get(s.url()));
  // Run the loop until the collection timer has fired (no timing assertion: bounded loop).
  for (int i = 0; i < 2000 && h.c->host_pools() > 0; ++i) h.l->run_once(true);
  EXPECT_EQ(h.c->host_pools(), 0u);
  EXPECT_OK(h.get(s.url()));  // and a new fetch to that host still works
}
