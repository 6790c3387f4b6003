// HTTPS on net's http_server against real TLS clients on loopback: a blocking OpenSSL client
// of the test's own (pipelining, resumption, raw bytes), curl --cacert, and the project's
// http_client. Certificates are made per test run (net_test_certs.h); the server picks one
// per SNI name through its selector.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "feedplane/net/http_client.h"
#include "feedplane/net/tls_server.h"
#include "http_test_shard.h"
#include "net_test_certs.h"

namespace net = feedplane::net;
using feedplane::test::key_and_cert;
using feedplane::test::make_cert;

namespace {

constexpr long k_day = 86400;

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

int connect_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{20, 0};  // a server that stalls fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Everything the peer sends until it closes (or the receive timeout).
std::string read_to_eof(int fd, bool* eof) {
  std::string s;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *eof = n == 0;
      return s;
    }
    s.append(buf, static_cast<size_t>(n));
  }
}

// A blocking TLS client over a socket, verifying the chain against the test CA and the
// host name it sends as SNI.
class tls_conn {
 public:
  tls_conn(SSL_CTX* ctx, int port, const std::string& sni, SSL_SESSION* resume = nullptr) {
    fd_ = connect_loopback(port);
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    if (!sni.empty()) {
      SSL_set_tlsext_host_name(ssl_, sni.c_str());
      SSL_set1_host(ssl_, sni.c_str());
    }
    if (resume != nullptr) SSL_set_session(ssl_, resume);
    ok_ = SSL_connect(ssl_) == 1;
    if (!ok_) error_ = net::tls_error_text();
  }
  ~tls_conn() {
    // close_notify: without it OpenSSL marks the session not resumable when it is freed.
    if (ok_) SSL_shutdown(ssl_);
    SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
  }
  tls_conn(const tls_conn&) = delete;
  tls_conn& operator=(const tls_conn&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  SSL* ssl() const { return ssl_; }

  bool write(const std::string& s) {
    size_t w = 0;
    return SSL_write_ex(ssl_, s.data(), s.size(), &w) == 1 && w == s.size();
  }
  // One response: head and Content-Length body. "" on EOF or error.
  std::string read_response() {
    for (;;) {
      size_t h = buf_.find("\r\n\r\n");
      if (h != std::string::npos) {
        size_t cl = buf_.find("Content-Length: ");
        size_t len = cl < h ? std::stoul(buf_.substr(cl + 16)) : 0;
        if (buf_.size() >= h + 4 + len) {
          std::string r = buf_.substr(0, h + 4 + len);
          buf_.erase(0, h + 4 + len);
          return r;
        }
      }
      char tmp[16384];
      size_t n = 0;
      if (SSL_read_ex(ssl_, tmp, sizeof tmp, &n) != 1) return {};
      buf_.append(tmp, n);
    }
  }
  std::string peer_cn() const {
    X509* x = SSL_get1_peer_certificate(ssl_);
    if (x == nullptr) return {};
    char cn[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
    X509_free(x);
    return cn;
  }

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
  std::string error_;
  std::string buf_;
};

std::string body_of(const std::string& response) {
  size_t h = response.find("\r\n\r\n");
  return h == std::string::npos ? std::string() : response.substr(h + 4);
}

std::string get(const std::string& path, const std::string& host, bool close = false) {
  return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" +
         (close ? "Connection: close\r\n" : "") + "\r\n";
}

class HttpsServer : public ::testing::Test {
 protected:
  virtual net::server_options options() { return http_test::shard_thread::default_options(); }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("feedplane_https_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ca_ = make_cert("feedplane https test CA", nullptr, "", -k_day, 30 * k_day, true);
    ca_file_ = (dir_ / "ca.pem").string();
    feedplane::test::write_file(ca_file_, ca_.cert_pem());
    for (const char* name : {"a.test", "b.test", "default.test"}) {
      leaves_.emplace(name,
                      make_cert(name, &ca_, std::string("DNS:") + name, -k_day, 30 * k_day, false));
      std::string err;
      ids_[name] = net::tls_identity::adopt(leaves_[name].cert, leaves_[name].key, &err);
      ASSERT_TRUE(ids_[name]) << err;
    }
    std::string err;
    // a.test and b.test by SNI; anything else gets default.test.
    tls_ = net::tls_server_context::create(
        std::move(ids_["default.test"]),
        [this](std::string_view name) -> const net::tls_identity* {
          ++selections_;
          auto it = ids_.find(std::string(name));
          return it == ids_.end() ? nullptr : it->second.get();
        },
        &err);
    ASSERT_TRUE(tls_) << err;
    net::server_options so = options();
    so.tls = tls_.get();
    srv_ = std::make_unique<http_test::shard_thread>(
        [](net::router& r) {
          r.add("GET", "/hello", [](net::request_context&, net::http_response& resp) {
            resp.set_body("hello over TLS\n");
          });
          r.add("GET", "/big", [](net::request_context&, net::http_response& resp) {
            resp.compressible = false;
            resp.set_body(pattern(size_t{1} << 20));
          });
          r.add("GET", "/n/{i}", [](net::request_context& c, net::http_response& resp) {
            resp.set_body("n=" + std::string(c.param("i")));
          });
          r.add("POST", "/len", [](net::request_context& c, net::http_response& resp) {
            const std::string_view b = c.padded_body();
            resp.set_body(std::to_string(b.size()) + (b == pattern(b.size()) ? " ok" : " bad"));
          });
          r.add("GET", "/stats", [](net::request_context& c, net::http_response& resp) {
            const auto& st = c.context_as<http_test::shard_thread>().server().stats();
            resp.set_body(std::to_string(st.open) + " " + std::to_string(st.tls_handshakes) + " " +
                          std::to_string(st.tls_resumed) + " " + std::to_string(st.tls_failed));
          });
        },
        so);
    client_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(client_, ca_file_.c_str(), nullptr);
    SSL_CTX_set_verify(client_, SSL_VERIFY_PEER, nullptr);
  }
  void TearDown() override {
    srv_.reset();
    SSL_CTX_free(client_);
    std::filesystem::remove_all(dir_);
  }

  struct counters {
    unsigned long open = 0, handshakes = 0, resumed = 0, failed = 0;
  };
  // The server's counters, read on its thread through /stats (this request's connection
  // is one of the open ones).
  counters stats() {
    tls_conn c(client_, srv_->port(), "a.test");
    EXPECT_TRUE(c.ok()) << c.error();
    c.write(get("/stats", "a.test"));
    counters k;
    std::sscanf(body_of(c.read_response()).c_str(), "%lu %lu %lu %lu", &k.open, &k.handshakes,
                &k.resumed, &k.failed);
    return k;
  }
  // Waits (bounded, not timed) until only the /stats connection is open.
  counters settled() {
    counters k;
    for (int i = 0; i < 400; ++i) {
      k = stats();
      if (k.open == 1) break;
      usleep(25'000);
    }
    EXPECT_EQ(k.open, 1u);
    return k;
  }

  std::filesystem::path dir_;
  key_and_cert ca_;
  std::string ca_file_;
  std::map<std::string, key_and_cert> leaves_;
  std::map<std::string, std::unique_ptr<net::tls_identity>> ids_;
  // Bumped by the selector on the server thread, read here after the handshake that
  // bumped it (seq_cst increments; the handshake itself orders them before the read).
  std::atomic<int> selections_{0};
  std::unique_ptr<net::tls_server_context> tls_;
  std::unique_ptr<http_test::shard_thread> srv_;
  SSL_CTX* client_ = nullptr;
};

TEST_F(HttpsServer, HandshakeKeepAliveAndAlpn) {
  SSL_CTX_set_alpn_protos(client_, reinterpret_cast<const unsigned char*>("\x02h2\x08http/1.1"),
                          12);
  tls_conn c(client_, srv_->port(), "a.test");
  ASSERT_TRUE(c.ok()) << c.error();
  const unsigned char* alpn = nullptr;
  unsigned alpn_len = 0;
  SSL_get0_alpn_selected(c.ssl(), &alpn, &alpn_len);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(alpn), alpn_len), "http/1.1");
  for (int i = 0; i < 3; ++i) {  // one connection, three requests
    ASSERT_TRUE(c.write(get("/hello", "a.test")));
    std::string r = c.read_response();
    EXPECT_EQ(r.substr(0, 15), "HTTP/1.1 200 OK") << r;
    EXPECT_EQ(body_of(r), "hello over TLS\n");
  }
  counters k = stats();
  EXPECT_EQ(k.handshakes, 2u);  // this connection and the /stats one
  EXPECT_EQ(k.failed, 0u);
}

TEST_F(HttpsServer, PipelinedRequestsInOneRecordAnsweredInOrder) {
  tls_conn c(client_, srv_->port(), "a.test");
  ASSERT_TRUE(c.ok()) << c.error();
  std::string batch;
  for (int i = 0; i < 20; ++i) batch += get("/n/" + std::to_string(i), "a.test");
  ASSERT_TRUE(c.write(batch));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(body_of(c.read_response()), "n=" + std::to_string(i));
}

TEST_F(HttpsServer, LargeResponseAndLargeRequestBody) {
  tls_conn c(client_, srv_->port(), "b.test");
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.write(get("/big", "b.test")));
  std::string r = c.read_response();
  EXPECT_EQ(body_of(r).size(), size_t{1} << 20);
  EXPECT_TRUE(body_of(r) == pattern(size_t{1} << 20));
  // A 200 KB body: many records, received over many tiny provided buffers.
  const std::string body = pattern(200'000);
  ASSERT_TRUE(c.write("POST /len HTTP/1.1\r\nHost: b.test\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body));
  EXPECT_EQ(body_of(c.read_response()), "200000 ok");
  // And the connection goes on.
  ASSERT_TRUE(c.write(get("/hello", "b.test", true)));
  EXPECT_EQ(body_of(c.read_response()), "hello over TLS\n");
}

TEST_F(HttpsServer, SniSelectsTheCertificate) {
  for (const char* name : {"a.test", "b.test"}) {
    tls_conn c(client_, srv_->port(), name);  // verifies the chain and the name
    ASSERT_TRUE(c.ok()) << name << ": " << c.error();
    EXPECT_EQ(c.peer_cn(), name);
  }
  // An unknown name, and no SNI at all: the default certificate.
  tls_conn other(client_, srv_->port(), "");
  SSL_set_verify(other.ssl(), SSL_VERIFY_NONE, nullptr);
  EXPECT_TRUE(other.ok()) << other.error();
  EXPECT_EQ(other.peer_cn(), "default.test");
  EXPECT_GE(selections_.load(), 3);
}

TEST_F(HttpsServer, SessionTicketResumes) {
  SSL_SESSION* sess = nullptr;
  {
    tls_conn c(client_, srv_->port(), "a.test");
    ASSERT_TRUE(c.ok()) << c.error();
    c.write(get("/hello", "a.test"));
    c.read_response();  // TLS 1.3 tickets arrive after the handshake
    sess = SSL_get1_session(c.ssl());
    ASSERT_NE(sess, nullptr);
    EXPECT_TRUE(SSL_SESSION_has_ticket(sess));
    EXPECT_TRUE(SSL_SESSION_is_resumable(sess));
    EXPECT_FALSE(SSL_session_reused(c.ssl()));
  }
  const int before = selections_.load();
  {
    tls_conn c(client_, srv_->port(), "a.test", sess);
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_TRUE(SSL_session_reused(c.ssl()));
    c.write(get("/hello", "a.test"));
    EXPECT_EQ(body_of(c.read_response()), "hello over TLS\n");
  }
  SSL_SESSION_free(sess);
  counters k = stats();
  EXPECT_EQ(k.resumed, 1u);
  EXPECT_EQ(selections_.load() - before, 1);  // the /stats connection only
}

TEST_F(HttpsServer, Tls12ClientsResumeByTicketToo) {
  SSL_CTX_set_max_proto_version(client_, TLS1_2_VERSION);
  SSL_SESSION* sess = nullptr;
  {
    tls_conn c(client_, srv_->port(), "b.test");
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(SSL_version(c.ssl()), TLS1_2_VERSION);
    c.write(get("/hello", "b.test"));
    EXPECT_EQ(body_of(c.read_response()), "hello over TLS\n");
    sess = SSL_get1_session(c.ssl());
    ASSERT_NE(sess, nullptr);
    EXPECT_TRUE(SSL_SESSION_has_ticket(sess));  // no server cache: the ticket is the state
  }
  {
    tls_conn c(client_, srv_->port(), "b.test", sess);
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_TRUE(SSL_session_reused(c.ssl()));
    c.write(get("/hello", "b.test"));
    EXPECT_EQ(body_of(c.read_response()), "hello over TLS\n");
  }
  SSL_SESSION_free(sess);
}

TEST_F(HttpsServer, ClientClosingMidHandshakeLeavesNothing) {
  // A real ClientHello, made with memory BIOs, of which only the first half is sent.
  SSL* s = SSL_new(client_);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(s, in, out);
  SSL_set_tlsext_host_name(s, "a.test");
  SSL_set_connect_state(s);
  SSL_do_handshake(s);
  char* p = nullptr;
  const long n = BIO_get_mem_data(out, &p);
  ASSERT_GT(n, 100);
  const std::string hello(p, static_cast<size_t>(n));
  SSL_free(s);
  ERR_clear_error();
  for (size_t cut : {size_t{0}, size_t{3}, hello.size() / 2, hello.size()}) {
    int fd = connect_loopback(srv_->port());
    ASSERT_GE(fd, 0);
    if (cut > 0) {
      ASSERT_EQ(send(fd, hello.data(), cut, MSG_NOSIGNAL), static_cast<ssize_t>(cut));
    }
    close(fd);
  }
  counters k = settled();
  EXPECT_EQ(k.handshakes, 1u);  // /stats only
}

// A short header timeout: the handshake must finish within it from accept.
class HttpsServerShortTimeout : public HttpsServer {
 protected:
  net::server_options options() override {
    net::server_options so = http_test::shard_thread::default_options();
    so.header_timeout_ms = 300;
    return so;
  }
};

TEST_F(HttpsServerShortTimeout, TricklingHandshakeIsClosedAtTheAcceptDeadline) {
  // A ClientHello sent a byte every 20 ms would take seconds; the bytes must not push the
  // deadline back, so the server closes long before the last byte (counted, not timed).
  SSL* s = SSL_new(client_);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(s, in, out);
  SSL_set_connect_state(s);
  SSL_do_handshake(s);
  char* p = nullptr;
  const long n = BIO_get_mem_data(out, &p);
  const std::string hello(p, static_cast<size_t>(n));
  SSL_free(s);
  ERR_clear_error();
  ASSERT_GT(hello.size(), 200u);
  int fd = connect_loopback(srv_->port());
  ASSERT_GE(fd, 0);
  size_t sent = 0;
  for (; sent < hello.size(); ++sent) {
    if (send(fd, hello.data() + sent, 1, MSG_NOSIGNAL) != 1) break;  // reset: closed
    usleep(20'000);
    char c;
    if (recv(fd, &c, 1, MSG_DONTWAIT) == 0) break;  // EOF: closed
  }
  EXPECT_LT(sent, hello.size()) << "the handshake deadline was pushed back by trickled bytes";
  close(fd);
  EXPECT_EQ(settled().handshakes, 1u);  // /stats only
}

TEST_F(HttpsServer, GarbageInsteadOfClientHelloGetsAnAlertAndClose) {
  // Not a TLS record at all; and a handshake record header with junk inside.
  const std::string junk[] = {
      std::string("\x01\x02\x03\x04\x05 not a TLS record") + std::string(200, '\x7f'),
      std::string("\x16\x03\x01\x00\x40", 5) + std::string(64, '\x33')};
  for (const std::string& j : junk) {
    int fd = connect_loopback(srv_->port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, j.data(), j.size(), MSG_NOSIGNAL), static_cast<ssize_t>(j.size()));
    bool eof = false;
    const std::string reply = read_to_eof(fd, &eof);
    close(fd);
    EXPECT_TRUE(eof) << "the server must close, not stall";
    ASSERT_GE(reply.size(), 7u);
    EXPECT_EQ(reply[0], '\x15') << "a TLS alert record";
    EXPECT_EQ(reply[5], '\x02') << "fatal";
  }
  EXPECT_EQ(settled().failed, 2u);
}

TEST_F(HttpsServer, PlainHttpOnTheHttpsPortIsTold) {
  int fd = connect_loopback(srv_->port());
  ASSERT_GE(fd, 0);
  const std::string req = get("/hello", "a.test");
  ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  bool eof = false;
  const std::string reply = read_to_eof(fd, &eof);
  close(fd);
  EXPECT_TRUE(eof);
  EXPECT_EQ(reply.substr(0, 24), "HTTP/1.1 400 Bad Request") << reply;
  EXPECT_NE(reply.find("plain HTTP request sent to an HTTPS port"), std::string::npos) << reply;
  EXPECT_EQ(settled().failed, 1u);
}

TEST_F(HttpsServer, CurlWithCacertReusesItsConnection) {
  const std::string port = std::to_string(srv_->port());
  const std::string url = "https://a.test:" + port;
  const std::string cmd = "curl -sS --cacert " + ca_file_ + " --resolve a.test:" + port +
                          ":127.0.0.1 -w '|%{num_connects}|%{http_version}\\n' " + url + "/hello " +
                          url + "/n/7 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string outp;
  char buf[512];
  while (size_t got = fread(buf, 1, sizeof buf, f)) outp.append(buf, got);
  ASSERT_EQ(pclose(f), 0) << outp;
  EXPECT_EQ(outp, "hello over TLS\n|1|1.1\nn=7|0|1.1\n");
}

TEST_F(HttpsServer, ProjectClientVerifiesAndFetches) {
  std::string err;
  net::loop_options lo;
  lo.ring_entries = 64;
  auto l = net::loop::create(lo, &err);
  ASSERT_TRUE(l) << err;
  net::client_options o;
  o.ca_file = ca_file_;
  net::resolve_pin pin;
  ASSERT_TRUE(
      net::parse_resolve_pin("b.test:" + std::to_string(srv_->port()) + ":127.0.0.1", pin, &err))
      << err;
  o.pins.push_back(pin);
  auto c = net::http_client::create(*l, o, &err);
  ASSERT_TRUE(c) << err;
  for (const char* path : {"/hello", "/big"}) {
    struct box {
      bool done = false;
      net::fetch_result r;
    } b;
    net::fetch_request req;
    req.url = "https://b.test:" + std::to_string(srv_->port()) + path;
    c->fetch(
        req,
        [](void* ctx, uint64_t, net::fetch_result& r) {
          auto* bb = static_cast<box*>(ctx);
          bb->r = std::move(r);
          bb->done = true;
        },
        &b);
    for (int i = 0; i < 100000 && !b.done; ++i) l->run_once(true);
    ASSERT_TRUE(b.done);
    EXPECT_EQ(b.r.error, net::fetch_error::ok) << b.r.detail;
    EXPECT_EQ(b.r.status, 200);
    if (std::string_view(path) == "/big") {
      EXPECT_TRUE(b.r.body == pattern(size_t{1} << 20));
    } else {
      EXPECT_EQ(b.r.body, "hello over TLS\n");
    }
  }
  c->shutdown();
  for (int i = 0; i < 1000 && !c->quiescent(); ++i) l->run_once(true);
}

}  // namespace
