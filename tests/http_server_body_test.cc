// Request bodies larger than a receive buffer cost no heap churn per request: 100 KB JSON
// POSTs over 512-byte provided buffers, on one connection and on several at once, parsed
// in place with simdjson, while this binary counts every operator new in the process (the
// client side allocates nothing inside the counted window). Its own binary because it
// links the counting operator new (tests/support/counting_new.cc).
#include <simdjson.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "counting_new.h"
#include "feedplane/net/http_server.h"
#include "gtest/gtest.h"
#include "http_test_client.h"
#include "http_test_shard.h"
#include "http_test_sum_route.h"

namespace {
// The process-wide operator new counter (tests/support/counting_new.cc).
auto& counting = feedplane::test::new_counting;
auto& allocations = feedplane::test::new_calls;
}  // namespace

using namespace feedplane::net;
using namespace http_test;

namespace {

void add_routes(router& rt) {
  add_sum_route(rt);
  rt.add("GET", "/mem", [](request_context& c, http_response& r) {
    http_server& s = c.context_as<shard_thread>().server();
    r.set_body(std::to_string(s.input_pool_memory()));
  });
  rt.add("GET", "/body-mem", [](request_context& c, http_response& r) {
    http_server& s = c.context_as<shard_thread>().server();
    r.set_body(std::to_string(s.body_pool_memory()));
  });
  rt.add("GET", "/conn-mem", [](request_context& c, http_response& r) {
    http_server& s = c.context_as<shard_thread>().server();
    r.set_body(std::to_string(s.connection_memory()));
  });
}

// ~100 KB: [0,1,2,...]; *sum is its sum.
std::string big_array(int64_t* sum) {
  std::string b = "[";
  *sum = 0;
  for (int i = 0; b.size() < 100'000; ++i) {
    if (i != 0) b.push_back(',');
    b += std::to_string(i);
    *sum += i;
  }
  b += "]";
  return b;
}

// Reads one response into buf without allocating; returns its status (0 on error) and
// its body in *body.
int read_response(int fd, char* buf, size_t cap, std::string_view* body) {
  size_t have = 0, head = 0, want = 0;
  while (true) {
    if (head == 0) {
      std::string_view v(buf, have);
      size_t e = v.find("\r\n\r\n");
      if (e != std::string_view::npos) {
        head = e + 4;
        size_t cl = v.find("Content-Length: ");
        if (cl == std::string_view::npos || cl > e) return 0;
        size_t len = 0;
        std::from_chars(buf + cl + 16, buf + e, len);
        want = head + len;
      }
    }
    if (head != 0 && have >= want) break;
    if (have == cap) return 0;
    ssize_t n = recv(fd, buf + have, cap - have, 0);
    if (n <= 0) return 0;
    have += size_t(n);
  }
  int status = 0;
  std::from_chars(buf + 9, buf + 12, status);
  *body = std::string_view(buf + head, want - head);
  return status;
}

struct outcome {
  int ok = 0;
  int bad = 0;
};

std::string get_body(int port, const char* target) {
  return one_shot(port, std::string("GET ") + target + " HTTP/1.1\r\nHost: t\r\n\r\n").body;
}

// One POST on each fd: the first half of every request, then the second halves, so that
// connections hold partial bodies at the same time. Allocation-free unless wait_port is
// set: then it waits until the server holds connection memory for every partial body
// (peak concurrency reached, for the warm-up).
void post_round(const std::vector<int>& fds, std::string_view req, std::string_view want,
                outcome* o, int wait_port = 0, size_t wait_bytes = 0) {
  const size_t half = req.size() / 2;
  for (int fd : fds) send_all(fd, req.substr(0, half));
  for (int i = 0; wait_port != 0 && i < 10'000; ++i) {
    if (std::stoul(get_body(wait_port, "/conn-mem")) >= wait_bytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int fd : fds) send_all(fd, req.substr(half));
  char buf[512];
  for (int fd : fds) {
    std::string_view body;
    if (read_response(fd, buf, sizeof(buf), &body) == 200 && body == want) {
      ++o->ok;
    } else {
      ++o->bad;
    }
  }
}

// Transfer-Encoding: chunked, in chunks of `size` bytes.
std::string chunked(std::string_view body, size_t size) {
  std::string out;
  for (size_t i = 0; i < body.size(); i += size) {
    const std::string_view c = body.substr(i, size);
    char hex[32];
    const auto [end, ec] = std::to_chars(hex, hex + sizeof hex, c.size(), 16);
    out.append(hex, end).append("\r\n").append(c).append("\r\n");
  }
  return out + "0\r\n\r\n";
}

void run(size_t nconn, bool chunked_body = false) {
  shard_thread s(add_routes);
  int64_t sum = 0;
  const std::string body = big_array(&sum);
  const std::string req =
      chunked_body ? "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n" +
                         chunked(body, 8000)
                   : "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;
  // A chunked body is decoded out of the input block, then copied once to the padded scratch.
  const std::string want = std::to_string(sum) + (chunked_body ? " copied" : " in-place");
  std::vector<int> fds;
  for (size_t i = 0; i < nconn; ++i) fds.push_back(dial(s.port()));
  outcome o;
  // The first round allocates (the input blocks, the parser, output buffers): the counter
  // sees it, so a zero below means something. Seq_cst stores and loads (the default): the
  // server's shard threads allocate, and each round's replies order their counted calls
  // before the load here.
  allocations.store(0);
  counting.store(true);
  post_round(fds, req, want, &o);
  counting.store(false);
  EXPECT_GT(allocations.load(), 0u);
  // Warm-up at peak concurrency: every connection holds a block at once.
  for (int i = 0; i < 3; ++i) post_round(fds, req, want, &o, s.port(), nconn * body.size());
  // Steady state: no allocation anywhere in the process across many rounds.
  constexpr int rounds = 100;
  allocations.store(0);
  counting.store(true);
  for (int i = 0; i < rounds; ++i) post_round(fds, req, want, &o);
  counting.store(false);
  EXPECT_EQ(allocations.load(), 0u) << "heap allocations in " << rounds * nconn << " POSTs";
  EXPECT_EQ(o.ok, int((rounds + 4) * nconn));
  EXPECT_EQ(o.bad, 0);
  for (int fd : fds) close(fd);
  // The blocks wait in the pool, bounded: at most one per connection (and for chunked
  // bodies, one decoded-body buffer per connection).
  const size_t pooled = std::stoul(get_body(s.port(), "/mem"));
  EXPECT_GE(pooled, body.size());
  // A chunked request's block grows by doubling (its head gives no length).
  EXPECT_LE(pooled, nconn * (req.size() + 2 * body_padding + 4096) * (chunked_body ? 2 : 1));
  if (chunked_body) {
    const size_t bodies = std::stoul(get_body(s.port(), "/body-mem"));
    EXPECT_GE(bodies, body.size());
    EXPECT_LE(bodies, nconn * 2 * body.size());
  }
}

}  // namespace

TEST(http_server_body, large_posts_on_one_connection_allocate_nothing_per_request) { run(1); }

TEST(http_server_body, large_posts_on_several_connections_at_once_allocate_nothing) { run(4); }

TEST(http_server_body, large_chunked_posts_allocate_nothing_per_request) { run(1, true); }

TEST(http_server_body, large_chunked_posts_on_several_connections_allocate_nothing) {
  run(4, true);
}
