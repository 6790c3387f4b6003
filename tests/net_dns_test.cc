// The c-ares resolver against a small DNS server of the test's own on loopback UDP:
// A and AAAA answers with TTLs, NXDOMAIN, a server that never answers, the cache, and
// coalescing of concurrent queries. Driven with poll(), as the loop drives it with
// io_uring poll requests.
#include "feedplane/net/dns.h"
#include "feedplane/net/http_client.h"

#include "fake_dns.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

using feedplane::net::dns_options;
using feedplane::net::dns_resolver;
using feedplane::net::fetch_error;
using feedplane::net::ip_address;
using feedplane::test::fake_dns;

namespace {

struct driver {
  std::map<int, short> fds;
  static void watch(void* ctx, int fd, bool r, bool w) {
    auto* d = static_cast<driver*>(ctx);
    if (!r && !w) {
      d->fds.erase(fd);
      return;
    }
    d->fds[fd] = static_cast<short>((r ? POLLIN : 0) | (w ? POLLOUT : 0));
  }
  // Runs until the resolver has nothing pending.
  void run(dns_resolver& r) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (r.busy() && std::chrono::steady_clock::now() < deadline) {
      std::vector<pollfd> p;
      for (auto [fd, ev] : fds) p.push_back({fd, ev, 0});
      int64_t t = r.next_timeout_ms();
      int n = poll(p.data(), p.size(), t < 0 ? 100 : static_cast<int>(t));
      if (n <= 0) {
        r.process_timeouts();
        continue;
      }
      for (auto& x : p)
        if (x.revents)
          r.process_fd(x.fd, x.revents & (POLLIN | POLLERR | POLLHUP), x.revents & POLLOUT);
    }
  }
};

struct result {
  int calls = 0;
  fetch_error e = fetch_error::internal;
  std::vector<ip_address> addrs;
  static void done(void* ctx, fetch_error e, const std::vector<ip_address>& a) {
    auto* r = static_cast<result*>(ctx);
    ++r->calls;
    r->e = e;
    r->addrs = a;
  }
};

std::unique_ptr<dns_resolver> make(const fake_dns& server, driver& d, uint32_t timeout_ms = 2000) {
  dns_options o;
  o.servers = "127.0.0.1:" + std::to_string(server.port());
  o.timeout_ms = timeout_ms;
  o.tries = 1;
  o.use_hosts_file = false;
  std::string err;
  auto r = dns_resolver::create(o, &err);
  EXPECT_TRUE(r) << err;
  if (r) r->set_watch_fn(&driver::watch, &d);
  return r;
}

}  // namespace

TEST(Dns, ResolvesIpv4AndIpv6ThenServesFromCache) {
  fake_dns server;
  driver d;
  auto r = make(server, d);
  result res;
  uint64_t id;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_FALSE(r->resolve("feed.test", &result::done, &res, &id, &e, &out));
  d.run(*r);
  ASSERT_EQ(res.calls, 1);
  ASSERT_EQ(res.e, fetch_error::ok);
  ASSERT_EQ(res.addrs.size(), 2u);
  EXPECT_EQ(res.addrs[0].family, AF_INET);
  EXPECT_EQ(res.addrs[0].str(), "192.0.2.7");
  EXPECT_EQ(res.addrs[1].family, AF_INET6);
  EXPECT_EQ(res.addrs[1].str(), "2001:db8::7");
  int sent = server.queries();
  EXPECT_GE(sent, 2);  // A and AAAA

  // Cached now (TTL 300 s): answered synchronously, no new query.
  ASSERT_TRUE(r->resolve("feed.test", &result::done, &res, &id, &e, &out));
  EXPECT_EQ(e, fetch_error::ok);
  EXPECT_EQ(out, res.addrs);
  EXPECT_EQ(server.queries(), sent);
  EXPECT_EQ(r->cache_size(), 1u);

  ASSERT_FALSE(r->resolve("v6only.test", &result::done, &res, &id, &e, &out));
  d.run(*r);
  ASSERT_EQ(res.e, fetch_error::ok);
  ASSERT_EQ(res.addrs.size(), 1u);
  EXPECT_EQ(res.addrs[0].family, AF_INET6);
}

TEST(Dns, NxdomainIsNotFoundAndNegativelyCached) {
  fake_dns server;
  driver d;
  auto r = make(server, d);
  result res;
  uint64_t id;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_FALSE(r->resolve("nope.test", &result::done, &res, &id, &e, &out));
  d.run(*r);
  EXPECT_EQ(res.e, fetch_error::dns_not_found);
  int sent = server.queries();
  ASSERT_TRUE(r->resolve("nope.test", &result::done, &res, &id, &e, &out));
  EXPECT_EQ(e, fetch_error::dns_not_found);
  EXPECT_EQ(server.queries(), sent);
}

TEST(Dns, SilentServerTimesOut) {
  fake_dns server;
  driver d;
  auto r = make(server, d, /*timeout_ms=*/200);
  result res;
  uint64_t id;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_FALSE(r->resolve("slow.test", &result::done, &res, &id, &e, &out));
  d.run(*r);
  EXPECT_EQ(res.calls, 1);
  EXPECT_EQ(res.e, fetch_error::dns_timeout);
}

TEST(Dns, ConcurrentQueriesCoalesceAndCancelWorks) {
  fake_dns server;
  driver d;
  auto r = make(server, d);
  result a, b, c;
  uint64_t ida, idb, idc;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_FALSE(r->resolve("feed.test", &result::done, &a, &ida, &e, &out));
  ASSERT_FALSE(r->resolve("feed.test", &result::done, &b, &idb, &e, &out));
  ASSERT_FALSE(r->resolve("feed.test", &result::done, &c, &idc, &e, &out));
  EXPECT_EQ(r->queries_sent(), 1u);
  r->cancel(idc);
  d.run(*r);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(c.calls, 0);
  EXPECT_EQ(b.e, fetch_error::ok);
}

TEST(Dns, LiteralsAndHostsFile) {
  dns_options o;
  std::string err;
  auto r = dns_resolver::create(o, &err);
  ASSERT_TRUE(r) << err;
  result res;
  uint64_t id;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_TRUE(r->resolve("127.0.0.1", &result::done, &res, &id, &e, &out));
  EXPECT_EQ(out.at(0).str(), "127.0.0.1");
  ASSERT_TRUE(r->resolve("::1", &result::done, &res, &id, &e, &out));
  EXPECT_EQ(out.at(0).family, AF_INET6);
  // "localhost" is in /etc/hosts on Debian: answered without any DNS traffic.
  ASSERT_TRUE(r->resolve("localhost", &result::done, &res, &id, &e, &out));
  EXPECT_EQ(e, fetch_error::ok);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(res.calls, 0);
}

TEST(Dns, CacheStaysBounded) {
  fake_dns server;
  driver d;
  dns_options o;
  o.servers = "127.0.0.1:" + std::to_string(server.port());
  o.use_hosts_file = false;
  o.max_cache_entries = 8;
  std::string err;
  auto r = dns_resolver::create(o, &err);
  ASSERT_TRUE(r) << err;
  r->set_watch_fn(&driver::watch, &d);
  for (int i = 0; i < 40; ++i) {
    result res;
    uint64_t id;
    fetch_error e;
    std::vector<ip_address> out;
    // NXDOMAIN answers are cached too (negative TTL): 40 distinct names.
    if (!r->resolve("n" + std::to_string(i) + ".test", &result::done, &res, &id, &e, &out))
      d.run(*r);
    EXPECT_LE(r->cache_size(), 8u);
  }
  EXPECT_GT(r->cache_size(), 0u);
}

TEST(Dns, BadServerListIsAnError) {
  dns_options o;
  o.servers = "not an address";
  std::string err;
  EXPECT_FALSE(dns_resolver::create(o, &err));
  EXPECT_NE(err.find("not an address"), std::string::npos);
}

TEST(Dns, CallbackMayCancelALaterWaiterOfTheSameQuery) {
  fake_dns server;
  driver d;
  auto r = make(server, d);
  struct canceller {
    dns_resolver* r;
    uint64_t victim = 0;
    int calls = 0;
    static void done(void* ctx, fetch_error, const std::vector<ip_address>&) {
      auto* c = static_cast<canceller*>(ctx);
      ++c->calls;
      c->r->cancel(c->victim);
    }
  } first{r.get()};
  result second;
  uint64_t id1, id2;
  fetch_error e;
  std::vector<ip_address> out;
  ASSERT_FALSE(r->resolve("feed.test", &canceller::done, &first, &id1, &e, &out));
  ASSERT_FALSE(r->resolve("feed.test", &result::done, &second, &id2, &e, &out));
  first.victim = id2;
  d.run(*r);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 0);
}

// The addresses a crawler may not reach unless pinned (DESIGN.md 9 "Crawling").
TEST(AddressPolicy, PrivateLoopbackLinkLocalAndMetadata) {
  auto priv = [](const char* s) {
    feedplane::net::ip_address a;
    EXPECT_TRUE(feedplane::net::parse_ip_literal(s, a)) << s;
    return feedplane::net::is_private_address(a);
  };
  for (const char* s : {"127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255",
                        "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
                        "::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"})
    EXPECT_TRUE(priv(s)) << s;
  for (const char* s : {"8.8.8.8", "172.32.0.1", "172.15.255.255", "192.169.0.1", "100.128.0.1",
                        "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"})
    EXPECT_FALSE(priv(s)) << s;
}

TEST(ResolvePin, ParsesLikeCurl) {
  feedplane::net::resolve_pin p;
  std::string err;
  ASSERT_TRUE(feedplane::net::parse_resolve_pin("Feeds.Example.com:443:127.0.0.1", p, &err));
  EXPECT_EQ(p.host, "feeds.example.com");
  EXPECT_EQ(p.port, 443);
  EXPECT_EQ(p.addr.str(), "127.0.0.1");
  ASSERT_TRUE(feedplane::net::parse_resolve_pin("*:8080:[::1]", p, &err));
  EXPECT_EQ(p.host, "*");
  EXPECT_EQ(p.addr.family, AF_INET6);
  ASSERT_TRUE(feedplane::net::parse_resolve_pin("h:1:::1", p, &err));
  EXPECT_FALSE(feedplane::net::parse_resolve_pin("h:80", p, &err));
  EXPECT_FALSE(feedplane::net::parse_resolve_pin("h:0:127.0.0.1", p, &err));
  EXPECT_FALSE(feedplane::net::parse_resolve_pin("h:65536:127.0.0.1", p, &err));
  EXPECT_FALSE(feedplane::net::parse_resolve_pin("h:80:not-an-ip", p, &err));
  EXPECT_FALSE(feedplane::net::parse_resolve_pin(":80:127.0.0.1", p, &err));
}
