// The HTTP client's memory and admission against real peers on loopback: nginx (plain and
// HTTPS with ssl_session_tickets on) and the project's own TLS server. An idle pooled
// connection holds no buffer, idle connections and their objects are freed, a second
// connection to a host resumes its TLS session (a different host or a restarted server
// does a full handshake, without error), and max_in_flight refuses at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "feedplane/net/http_client.h"
#include "feedplane/net/http_server.h"
#include "feedplane/net/tls_server.h"
#include "http_test_shard.h"
#include "net_test_certs.h"
#include "nginx_fixture.h"

namespace net = feedplane::net;
using feedplane::test::free_port;
using feedplane::test::key_and_cert;
using feedplane::test::make_cert;
using feedplane::test::nginx_server;

namespace {

constexpr long k_day = 86400;

net::loop_options small_ring() {
  net::loop_options lo;
  lo.ring_entries = 64;  // deliberately small
  return lo;
}

// One loop + one client on the test thread.
struct harness {
  std::unique_ptr<net::loop> l;
  std::unique_ptr<net::http_client> c;
  int done = 0;
  std::vector<net::fetch_result> results;
  // Leave each result in the client's slot, as the crawler does (what the slot keeps is
  // then what fetch_state_memory() counts), noting only its body's size.
  bool leave_results = false;
  size_t last_body = 0;

  explicit harness(const net::client_options& opt, net::loop_options lo = small_ring()) {
    std::string err;
    l = net::loop::create(lo, &err);
    if (!l) throw std::runtime_error(err);
    c = net::http_client::create(*l, opt, &err);
    if (!c) throw std::runtime_error(err);
  }
  ~harness() {
    c->shutdown();
    for (int i = 0; i < 1000 && !c->quiescent(); ++i) l->run_once(true);
    c.reset();
  }
  static void on_done(void* ctx, uint64_t, net::fetch_result& r) {
    auto* h = static_cast<harness*>(ctx);
    if (h->leave_results) {
      h->last_body = r.error == net::fetch_error::ok ? r.body.size() : 0;
    } else {
      h->results.push_back(std::move(r));
    }
    ++h->done;
  }
  uint64_t start(const std::string& u) {
    net::fetch_request req;
    req.url = u;
    return c->fetch(req, &harness::on_done, this);
  }
  // Runs the loop until `n` callbacks in all have run (bounded, not timed).
  void wait_done(int n) {
    for (int i = 0; i < 200000 && done < n; ++i) l->run_once(true);
    EXPECT_EQ(done, n);
  }
  net::fetch_result get(const std::string& u) {
    const int before = done;
    start(u);
    wait_done(before + 1);
    return results.back();
  }
};

#define EXPECT_OK(r)                         \
  EXPECT_EQ((r).error, net::fetch_error::ok) \
      << net::fetch_error_name((r).error) << ": " << (r).detail

class NginxMem : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    srv_ = new nginx_server();
    port_ = free_port();
    do tls_port_ = free_port();
    while (tls_port_ == port_);
    auto www = srv_->dir() / "www";
    std::ofstream(www / "feed.xml") << std::string(8192, 'f');
    // A large document, served gzipped under /gz/ (decoded on the client's side).
    std::filesystem::create_directories(www / "gz");
    std::string big;
    for (int i = 0; big.size() < 200 * 1024; ++i) big += "<item>" + std::to_string(i) + "</item>\n";
    big_size_ = big.size();
    std::ofstream(www / "big.xml") << big;
    std::ofstream(www / "gz" / "big.xml") << big;
    ca_ =
        new key_and_cert(make_cert("feedplane mem test CA", nullptr, "", -k_day, 30 * k_day, true));
    key_and_cert leaf = make_cert("localhost", ca_, "DNS:localhost,DNS:alias.test,IP:127.0.0.1",
                                  -k_day, k_day, false);
    feedplane::test::write_file((srv_->dir() / "ca.pem").string(), ca_->cert_pem());
    feedplane::test::write_file((srv_->dir() / "leaf.pem").string(), leaf.cert_pem());
    feedplane::test::write_file((srv_->dir() / "leaf.key").string(), leaf.key_pem());
    std::string conf = R"(
  server {
    listen 127.0.0.1:PORT;
    root @DIR@/www;
    location /gz/ {
      gzip on;
      gzip_types *;
      gzip_min_length 0;
    }
  }
  server {
    listen 127.0.0.1:TLSPORT ssl;
    ssl_certificate @DIR@/leaf.pem;
    ssl_certificate_key @DIR@/leaf.key;
    ssl_session_tickets on;
    root @DIR@/www;
  }
)";
    for (size_t p; (p = conf.find("TLSPORT")) != std::string::npos;)
      conf.replace(p, 7, std::to_string(tls_port_));
    for (size_t p; (p = conf.find("PORT")) != std::string::npos;)
      conf.replace(p, 4, std::to_string(port_));
    ASSERT_EQ(srv_->start(conf, port_), "");
    ASSERT_TRUE(feedplane::test::port_open(tls_port_));
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
    delete ca_;
    ca_ = nullptr;
  }
  static net::client_options options() {
    net::client_options o;
    o.ca_file = (srv_->dir() / "ca.pem").string();
    return o;
  }
  static std::string http_url() {
    return "http://127.0.0.1:" + std::to_string(port_) + "/feed.xml";
  }
  static std::string https_url(const std::string& host = "localhost") {
    return "https://" + host + ":" + std::to_string(tls_port_) + "/feed.xml";
  }

  static nginx_server* srv_;
  static key_and_cert* ca_;
  static uint16_t port_;
  static uint16_t tls_port_;
  static size_t big_size_;
};
size_t NginxMem::big_size_ = 0;
nginx_server* NginxMem::srv_ = nullptr;
key_and_cert* NginxMem::ca_ = nullptr;
uint16_t NginxMem::port_ = 0;
uint16_t NginxMem::tls_port_ = 0;

}  // namespace

// 32 connections to one host, all pooled idle afterwards: what they hold is the connection
// objects and nothing more (no receive, plaintext, output or parser buffer).
TEST_F(NginxMem, IdlePooledConnectionsHoldNoBuffers) {
  for (bool https : {false, true}) {
    net::client_options o = options();
    o.per_host_connections = 32;
    harness h(o);
    for (int i = 0; i < 32; ++i) h.start(https ? https_url() : http_url());
    h.wait_done(32);
    for (const auto& r : h.results) {
      EXPECT_OK(r);
      EXPECT_EQ(r.body.size(), 8192u);
    }
    EXPECT_EQ(h.c->idle_connections(), 32u) << https;
    // Connection objects, their slot vectors and nothing else: under 1 KiB each (the
    // old client held 16 KiB, 32 KiB with TLS, per connection for life).
    const size_t per_conn = h.c->connection_memory() / 32;
    EXPECT_LT(per_conn, 1024u) << (https ? "https " : "http ") << per_conn;
    std::printf("%s: %zu bytes of client heap per idle pooled connection\n",
                https ? "https" : "http", per_conn);
    // A second round reuses them: no new connection, nothing grows.
    const size_t before = h.c->connection_memory();
    for (int i = 0; i < 32; ++i) h.start(https ? https_url() : http_url());
    h.wait_done(64);
    EXPECT_EQ(h.c->stats().connections_opened, 32u);
    EXPECT_EQ(h.c->connection_memory(), before);
  }
}

// A fetch slot keeps its body buffers for the next fetch only up to keep_buffer_bytes each:
// after a 200 KB document (plain, and gzipped, where the wire and the decoded bodies differ)
// the slab holds at most three buffers of that size, and small documents still reuse
// theirs. The callback leaves the result in place (as the crawler does), so what the slot
// keeps is what fetch_state_memory() counts.
TEST_F(NginxMem, SlotsDoNotKeepTheBuffersOfALargeDocument) {
  const std::string base = "http://127.0.0.1:" + std::to_string(port_);
  for (const char* path : {"/big.xml", "/gz/big.xml"}) {
    for (uint32_t keep : {32u * 1024, 1u << 20}) {
      net::client_options o = options();
      o.keep_buffer_bytes = keep;
      harness h(o);
      h.leave_results = true;
      auto get = [&h](const std::string& u) {
        const int before = h.done;
        h.start(u);
        h.wait_done(before + 1);
        return h.last_body;
      };
      EXPECT_EQ(get(http_url()), 8192u);
      const size_t small = h.c->fetch_state_memory();
      EXPECT_GE(small, 8192u) << "the slot did not keep an 8 KB body";
      EXPECT_EQ(get(base + path), big_size_) << path;
      const size_t after_big = h.c->fetch_state_memory();
      if (keep < big_size_) {
        EXPECT_LE(after_big, small + 3 * size_t{keep}) << path;
      } else {
        // What the cap prevents: the slot keeps a buffer of the large document's size.
        EXPECT_GE(after_big, big_size_) << path;
      }
      // Small documents go on reusing the slot's buffers: nothing grows.
      EXPECT_EQ(get(http_url()), 8192u);
      const size_t warm = h.c->fetch_state_memory();
      EXPECT_EQ(get(http_url()), 8192u);
      EXPECT_EQ(h.c->fetch_state_memory(), warm) << path;
    }
  }
}

// Receives borrow the loop's provided buffers: with two buffers of 256 bytes for eight
// concurrent 8 KB responses the ring runs dry (-ENOBUFS, re-armed) and TLS records span
// many receives; every body still arrives whole.
TEST_F(NginxMem, TinyProvidedBuffersRunDryAndRecover) {
  net::loop_options lo = small_ring();
  lo.buffer_count = 2;
  lo.buffer_size = 256;
  for (bool https : {false, true}) {
    net::client_options o = options();
    o.per_host_connections = 8;
    harness h(o, lo);
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 8; ++i) h.start(https ? https_url() : http_url());
      h.wait_done(8 * (round + 1));
    }
    for (const auto& r : h.results) {
      EXPECT_OK(r);
      EXPECT_EQ(r.body, std::string(8192, 'f'));
    }
    EXPECT_GT(h.l->stats().enobufs, 0u) << https;
  }
}

TEST_F(NginxMem, IdleConnectionsAndTheirObjectsAreFreed) {
  net::client_options o = options();
  o.per_host_connections = 200;
  o.idle_timeout_ms = 20;
  harness h(o);
  for (int i = 0; i < 200; ++i) h.start(i % 2 ? https_url() : http_url());
  h.wait_done(200);
  for (const auto& r : h.results) EXPECT_OK(r);
  EXPECT_EQ(h.c->stats().connections_opened, 200u);
  // The idle timeout closes them; the reap timer frees every object beyond the reserve.
  for (int i = 0; i < 5000 && (h.c->idle_connections() > 0 || h.c->connection_objects() > 64); ++i)
    h.l->run_once(true);
  EXPECT_EQ(h.c->idle_connections(), 0u);
  EXPECT_LE(h.c->connection_objects(), 64u);
  EXPECT_GE(h.c->stats().connection_objects_freed, 136u);
  // And the client still works (a kept object is reused).
  EXPECT_OK(h.get(http_url()));
  EXPECT_OK(h.get(https_url()));
}

TEST_F(NginxMem, MaxIdleConnectionsClosesTheRest) {
  net::client_options o = options();
  o.per_host_connections = 16;
  o.max_idle_connections = 4;
  harness h(o);
  for (int i = 0; i < 16; ++i) h.start(http_url());
  h.wait_done(16);
  EXPECT_EQ(h.c->idle_connections(), 4u);
}

// Against nginx with ssl_session_tickets on: a new connection to the same host resumes; a
// different host name for the same server does not; with the cache off nothing resumes.
TEST_F(NginxMem, NewConnectionToTheSameHostResumes) {
  net::client_options o = options();
  o.max_idle_connections = 0;  // each fetch on a new connection
  harness h(o);
  auto first = h.get(https_url());
  EXPECT_OK(first);
  EXPECT_FALSE(first.tls_resumed);
  for (int i = 0; i < 3; ++i) {
    auto again = h.get(https_url());
    EXPECT_OK(again);
    EXPECT_FALSE(again.reused_connection);
    EXPECT_TRUE(again.tls_resumed) << i;
    EXPECT_EQ(again.body.size(), 8192u);
  }
  auto other = h.get(https_url("alias.test"));
  EXPECT_EQ(other.error, net::fetch_error::dns_not_found);  // not pinned: just checking below
  net::client_options pinned = options();
  pinned.max_idle_connections = 0;
  net::resolve_pin pin;
  std::string err;
  ASSERT_TRUE(
      net::parse_resolve_pin("alias.test:" + std::to_string(tls_port_) + ":127.0.0.1", pin, &err));
  pinned.pins.push_back(pin);
  harness h2(pinned);
  EXPECT_FALSE(h2.get(https_url()).tls_resumed);  // another client: its own cache
  auto alias = h2.get(https_url("alias.test"));
  EXPECT_OK(alias);
  EXPECT_FALSE(alias.tls_resumed);  // another host: its own entry
  EXPECT_TRUE(h2.get(https_url()).tls_resumed);
  EXPECT_TRUE(h2.get(https_url("alias.test")).tls_resumed);
  EXPECT_EQ(h2.c->tls_sessions().hosts, 2u);

  net::client_options off = options();
  off.max_idle_connections = 0;
  off.tls_session_hosts = 0;
  harness h3(off);
  EXPECT_OK(h3.get(https_url()));
  auto no = h3.get(https_url());
  EXPECT_OK(no);
  EXPECT_FALSE(no.tls_resumed);
  EXPECT_EQ(h3.c->stats().tls_resumed, 0u);
}

TEST_F(NginxMem, MaxInFlightRefusesAtOnce) {
  net::client_options o = options();
  o.max_in_flight = 3;
  harness h(o);
  EXPECT_TRUE(h.c->can_fetch());
  for (int i = 0; i < 3; ++i) h.start(http_url());
  EXPECT_FALSE(h.c->can_fetch());
  EXPECT_EQ(h.c->in_flight(), 3u);
  // The fourth is refused before fetch() returns, with its own error, and costs nothing.
  const uint64_t id = h.start(http_url());
  EXPECT_NE(id, 0u);
  ASSERT_EQ(h.done, 1);
  EXPECT_EQ(h.results.back().error, net::fetch_error::too_many_in_flight);
  EXPECT_EQ(net::fetch_error_name(h.results.back().error), "too_many_in_flight");
  EXPECT_EQ(h.results.back().final_url, http_url());
  EXPECT_EQ(h.c->in_flight(), 3u);
  EXPECT_EQ(h.c->stats().refused_in_flight, 1u);
  h.wait_done(4);
  for (int i = 1; i < 4; ++i) EXPECT_OK(h.results[size_t(i)]);
  EXPECT_TRUE(h.c->can_fetch());
  EXPECT_OK(h.get(http_url()));
  // Cancelling an id of a finished (refused) fetch is a no-op, even once its slot is reused.
  h.c->cancel(id);
  EXPECT_EQ(h.done, 5);
}

// The project's own TLS server (stateless tickets): the client resumes on a new
// connection, and a second host name served by it gets its own full handshake.
TEST(OwnTlsServer, NewConnectionResumes) {
  auto dir = std::filesystem::temp_directory_path() /
             ("feedplane_client_mem_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  key_and_cert ca = make_cert("feedplane own CA", nullptr, "", -k_day, 30 * k_day, true);
  key_and_cert leaf = make_cert("a.test", &ca, "DNS:a.test,DNS:b.test", -k_day, 30 * k_day, false);
  const std::string ca_file = (dir / "ca.pem").string();
  feedplane::test::write_file(ca_file, ca.cert_pem());
  std::string err;
  auto id = net::tls_identity::adopt(leaf.cert, leaf.key, &err);
  ASSERT_TRUE(id) << err;
  auto tls = net::tls_server_context::create(std::move(id), nullptr, &err);
  ASSERT_TRUE(tls) << err;
  net::server_options so = http_test::shard_thread::default_options();
  so.tls = tls.get();
  http_test::shard_thread srv(
      [](net::router& r) {
        r.add("GET", "/hello",
              [](net::request_context&, net::http_response& resp) { resp.set_body("hello"); });
      },
      so);
  net::client_options o;
  o.ca_file = ca_file;
  o.max_idle_connections = 0;
  for (const char* host : {"a.test", "b.test"}) {
    net::resolve_pin pin;
    ASSERT_TRUE(net::parse_resolve_pin(
        std::string(host) + ":" + std::to_string(srv.port()) + ":127.0.0.1", pin, &err));
    o.pins.push_back(pin);
  }
  harness h(o);
  auto url = [&](const char* host) {
    return std::string("https://") + host + ":" + std::to_string(srv.port()) + "/hello";
  };
  auto first = h.get(url("a.test"));
  EXPECT_OK(first);
  EXPECT_FALSE(first.tls_resumed);
  for (int i = 0; i < 3; ++i) {
    auto again = h.get(url("a.test"));
    EXPECT_OK(again);
    EXPECT_TRUE(again.tls_resumed) << i;
    EXPECT_EQ(again.body, "hello");
  }
  auto b = h.get(url("b.test"));
  EXPECT_OK(b);
  EXPECT_FALSE(b.tls_resumed);
  EXPECT_EQ(h.c->stats().tls_resumed, 3u);
  std::filesystem::remove_all(dir);
}

// nginx restarted on the same port makes new ticket keys: the ticket the client offers is
// rejected, and the fetch succeeds on a full handshake (which brings a new ticket).
TEST(NginxRestart, RejectedTicketFallsBackToAFullHandshake) {
  nginx_server srv;
  const uint16_t port = free_port();
  key_and_cert ca = make_cert("feedplane restart CA", nullptr, "", -k_day, 30 * k_day, true);
  key_and_cert leaf = make_cert("localhost", &ca, "DNS:localhost", -k_day, k_day, false);
  feedplane::test::write_file((srv.dir() / "ca.pem").string(), ca.cert_pem());
  feedplane::test::write_file((srv.dir() / "leaf.pem").string(), leaf.cert_pem());
  feedplane::test::write_file((srv.dir() / "leaf.key").string(), leaf.key_pem());
  std::ofstream(srv.dir() / "www" / "feed.xml") << "feed";
  std::string conf = R"(
  server {
    listen 127.0.0.1:PORT ssl;
    ssl_certificate @DIR@/leaf.pem;
    ssl_certificate_key @DIR@/leaf.key;
    ssl_session_tickets on;
    root @DIR@/www;
  }
)";
  conf.replace(conf.find("PORT"), 4, std::to_string(port));
  ASSERT_EQ(srv.start(conf, port), "");
  net::client_options o;
  o.ca_file = (srv.dir() / "ca.pem").string();
  o.max_idle_connections = 0;
  harness h(o);
  const std::string u = "https://localhost:" + std::to_string(port) + "/feed.xml";
  EXPECT_OK(h.get(u));
  auto resumed = h.get(u);
  EXPECT_OK(resumed);
  EXPECT_TRUE(resumed.tls_resumed);
  srv.stop();
  ASSERT_EQ(srv.start(conf, port), "");
  auto after = h.get(u);
  EXPECT_OK(after);
  EXPECT_FALSE(after.tls_resumed);
  EXPECT_EQ(after.body, "feed");
  EXPECT_EQ(h.c->tls_sessions().offered, 2u);  // the rejected one was offered
  auto again = h.get(u);                       // and the new server's ticket works
  EXPECT_OK(again);
  EXPECT_TRUE(again.tls_resumed);
}
