// The HTTP client allocates nothing per fetch in steady state: after warm-up, fetches on
// pooled keep-alive connections to nginx (plain HTTP, and HTTPS on the client's side of
// OpenSSL) make no operator new call. Its own binary because it links the counting
// operator new (tests/support/counting_new.cc). OpenSSL's allocations go
// through malloc and are not counted here.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>

#include "counting_new.h"
#include "feedplane/net/http_client.h"
#include "net_test_certs.h"
#include "nginx_fixture.h"

namespace {
// The process-wide operator new counter (tests/support/counting_new.cc).
auto& counting = feedplane::test::new_counting;
auto& allocations = feedplane::test::new_calls;
}  // namespace

namespace net = feedplane::net;
using feedplane::test::free_port;
using feedplane::test::key_and_cert;
using feedplane::test::make_cert;

namespace {

constexpr long k_day = 86400;

struct counter {
  int done = 0;
  int ok = 0;
};

// Neither moves nor copies the result: the client keeps its buffers for the next fetch.
void on_done(void* ctx, uint64_t, net::fetch_result& r) {
  auto* c = static_cast<counter*>(ctx);
  ++c->done;
  if (r.error == net::fetch_error::ok && r.status == 200 && r.body.size() == 8192) ++c->ok;
}

}  // namespace

TEST(HttpClientAlloc, SteadyStateFetchesAllocateNothing) {
  feedplane::test::nginx_server srv;
  const uint16_t port = free_port();
  uint16_t tls_port;
  do tls_port = free_port();
  while (tls_port == port);
  key_and_cert ca = make_cert("feedplane alloc CA", nullptr, "", -k_day, 30 * k_day, true);
  key_and_cert leaf = make_cert("localhost", &ca, "DNS:localhost", -k_day, k_day, false);
  feedplane::test::write_file((srv.dir() / "ca.pem").string(), ca.cert_pem());
  feedplane::test::write_file((srv.dir() / "leaf.pem").string(), leaf.cert_pem());
  feedplane::test::write_file((srv.dir() / "leaf.key").string(), leaf.key_pem());
  std::ofstream(srv.dir() / "www" / "feed.xml") << std::string(8192, 'x');
  std::string conf = R"(
  server { listen 127.0.0.1:PORT; root @DIR@/www; }
  server {
    listen 127.0.0.1:TLSPORT ssl;
    ssl_certificate @DIR@/leaf.pem;
    ssl_certificate_key @DIR@/leaf.key;
    root @DIR@/www;
  }
)";
  conf.replace(conf.find("TLSPORT"), 7, std::to_string(tls_port));
  conf.replace(conf.find("PORT"), 4, std::to_string(port));
  ASSERT_EQ(srv.start(conf, port), "");

  std::string err;
  net::loop_options lo;
  lo.ring_entries = 64;
  auto l = net::loop::create(lo, &err);
  ASSERT_TRUE(l) << err;
  net::client_options o;
  o.ca_file = (srv.dir() / "ca.pem").string();
  o.per_host_connections = 4;
  auto c = net::http_client::create(*l, o, &err);
  ASSERT_TRUE(c) << err;

  for (const std::string& u : {"http://127.0.0.1:" + std::to_string(port) + "/feed.xml",
                               "https://localhost:" + std::to_string(tls_port) + "/feed.xml"}) {
    net::fetch_request req;
    req.url = u;
    req.if_none_match = "\"an-etag-longer-than-the-small-string-buffer\"";
    req.headers.emplace_back("X-Feedplane-Test", "a header value longer than sixteen bytes");
    // Four at a time (one per pooled connection), rounds of them: warm-up, then counted.
    auto round = [&](counter& k) {
      const int target = k.done + 4;
      for (int i = 0; i < 4; ++i) c->fetch(req, &on_done, &k);
      for (int i = 0; i < 100000 && k.done < target; ++i) l->run_once(true);
    };
    counter warm;
    for (int r = 0; r < 20; ++r) round(warm);
    EXPECT_EQ(warm.ok, 80) << u;
    counter k;
    // Relaxed: the client runs on this thread, which counts and reads after the window.
    allocations.store(0, std::memory_order_relaxed);
    counting.store(true, std::memory_order_relaxed);
    for (int r = 0; r < 50; ++r) round(k);
    counting.store(false, std::memory_order_relaxed);
    EXPECT_EQ(k.ok, 200) << u;
    EXPECT_EQ(allocations.load(std::memory_order_relaxed), 0u) << u;
    EXPECT_EQ(c->stats().connections_opened, u.starts_with("https") ? 8u : 4u);
  }
  c->shutdown();
  for (int i = 0; i < 1000 && !c->quiescent(); ++i) l->run_once(true);
}
