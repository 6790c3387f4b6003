// The HTTP/1.1 server on real loopback sockets: a server shard (loop + http_server) runs on
// its own thread with a deliberately small ring and tiny provided buffers; clients are raw
// blocking sockets so that malformed and slow requests are exactly what the test writes.
// No timing assertions: timeouts are short so that waits end, but only outcomes are checked.
#include <arpa/inet.h>
#include <libdeflate.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/http_server.h"
#include "feedplane/net/loop.h"
#include "gtest/gtest.h"
#include "http_test_client.h"

using namespace feedplane::net;
using namespace http_test;

namespace {

std::string big_body() {
  std::string b;
  for (int i = 0; b.size() < 8192; ++i)
    b += "<item><title>entry " + std::to_string(i) + "</title></item>\n";
  b.resize(8192);
  return b;
}

// 1 MB of text that does not repeat (a send of it is short several times over), and its
// gzip form.
struct kept_body {
  std::string plain, gzip;
};
std::shared_ptr<const kept_body> make_kept_body() {
  auto k = std::make_shared<kept_body>();
  uint64_t x = 88172645463325252ull;
  while (k->plain.size() < (1u << 20)) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    k->plain += "<item>" + std::to_string(x) + "</item>\n";
  }
  libdeflate_compressor* c = libdeflate_alloc_compressor(1);
  k->gzip.resize(libdeflate_gzip_compress_bound(c, k->plain.size()));
  k->gzip.resize(libdeflate_gzip_compress(c, k->plain.data(), k->plain.size(), k->gzip.data(),
                                          k->gzip.size()));
  libdeflate_free_compressor(c);
  return k;
}

// One server shard on a thread. Routes: /a /b /c (their name), /big (8 KB, ETag,
// Last-Modified), POST /echo (request body), /healthz.
class server_thread {
 public:
  explicit server_thread(server_options so = small_options()) : so_(so) {
    body_ = big_body();
    routes_.add("GET", "/healthz", [](request_context&, http_response& r) {
      r.body = "ok\n";
      r.compressible = false;
    });
    for (const char* n : {"/a", "/b", "/c"}) {
      routes_.add("GET", n, [n](request_context&, http_response& r) {
        r.body = n;
        r.compressible = false;
      });
    }
    routes_.add("GET", "/big", [this](request_context&, http_response& r) {
      r.body = body_;
      r.content_type = "application/rss+xml";
      r.etag = "\"v1\"";
      r.last_modified = 1700000000;
    });
    routes_.add("POST", "/echo", [](request_context& c, http_response& r) {
      r.set_body(c.request().body);
      r.compressible = false;
    });
    // Answered later from a loop timer, as a reply from another shard would be.
    routes_.add("GET", "/later", [this](request_context& c, http_response& r) {
      r.defer = true;
      pending_.push_back({r.later, std::string(c.request().query)});
      loop_->arm(later_timer_, 5);
    });
    // A large body sent from where it is (http_response::keep), with its gzip form; the
    // query "later" answers it deferred, from a timer.
    routes_.add("GET", "/kept", [this](request_context& c, http_response& r) {
      if (c.request().query == "later") {
        r.defer = true;
        pending_.push_back({r.later, "kept"});
        loop_->arm(later_timer_, 5);
        return;
      }
      fill_kept(r);
    });
    // Never answered: 503 after the defer timeout.
    routes_.add("GET", "/never", [](request_context&, http_response& r) { r.defer = true; });
    later_timer_.set(&server_thread::answer_later, this);
    std::string err;
    lfd_ = listen_tcp("127.0.0.1:0", false, &err);
    EXPECT_GE(lfd_, 0) << err;
    port_ = bound_port(lfd_);
    th_ = std::thread([this] { run(); });
    // The thread says it is serving (1) or why it cannot (-1): a failure there is a test
    // failure here, never a wait that does not end.
    while (state_.load() == 0) std::this_thread::yield();
    EXPECT_EQ(state_.load(), 1) << start_error_;
  }
  ~server_thread() {
    if (loop_ != nullptr) loop_->request_stop();
    th_.join();
    close(lfd_);
  }
  static server_options small_options() {
    server_options so;
    so.limits.max_request_line = 1024;
    so.limits.max_header_bytes = 4096;
    so.limits.max_headers = 20;
    so.limits.max_body = 64 * 1024;
    // Generous: a loaded CI machine under ASan must never hit these by accident.
    so.header_timeout_ms = 10'000;
    so.idle_timeout_ms = 10'000;
    so.linger_ms = 2'000;
    return so;
  }
  // For the tests whose subject is a timeout: they wait for the outcome, never a time.
  static server_options short_timeouts() {
    server_options so = small_options();
    so.header_timeout_ms = 1'000;
    so.idle_timeout_ms = 1'000;
    so.defer_timeout_ms = 1'000;
    return so;
  }
  int port() const { return port_; }
  int completed_late() const { return completed_.load(); }
  int dropped_late() const { return dropped_.load(); }
  const std::string& body() const { return body_; }
  // The kept body and its gzip form; its use count is 1 when the server holds none.
  const std::shared_ptr<const kept_body>& kept() const { return kept_; }
  server_stats stats() {
    // Read after the server thread stopped, or racy but only for diagnostics.
    return stats_copy_;
  }

 private:
  void run() {
    loop_options lo;
    lo.ring_entries = 16;  // small: SQ-full submits happen under load
    lo.buffer_count = 8;   // tiny ring: requests span buffers, ENOBUFS re-arms happen
    lo.buffer_size = 512;
    std::string err;
    auto l = loop::create(lo, &err);
    if (!l) {
      start_error_ = "loop::create: " + err;
      state_.store(-1);
      return;
    }
    {
      http_server srv(*l, routes_, so_);
      if (!srv.start(lfd_)) {
        start_error_ = "http_server::start failed";
        state_.store(-1);
        return;
      }
      loop_ = l.get();
      state_.store(1);
      l->run();
      srv.shutdown();
      for (int i = 0; i < 1000 && srv.stats().open > 0; ++i) l->run_once(false);
      stats_copy_ = srv.stats();
    }
  }
  static void answer_later(void* self) {
    auto* me = static_cast<server_thread*>(self);
    // Completing one may run the next pipelined request, which may defer again.
    std::vector<std::pair<deferred_response, std::string>> now;
    now.swap(me->pending_);
    for (auto& p : now) {
      http_response r;
      if (p.second == "kept") {
        me->fill_kept(r);
      } else {
        r.set_body("later:" + p.second);
        r.compressible = false;
      }
      if (p.first.complete(r)) {
        me->completed_.fetch_add(1);
      } else {
        me->dropped_.fetch_add(1);
      }
    }
  }
  server_options so_;
  router routes_;
  std::vector<std::pair<deferred_response, std::string>> pending_;
  timer later_timer_;
  std::atomic<int> completed_{0};
  std::atomic<int> dropped_{0};
  void fill_kept(http_response& r) {
    r.body = kept_->plain;
    r.gzip_body = kept_->gzip;
    r.content_type = "application/rss+xml";
    r.etag = "\"k1\"";
    r.keep = kept_;
  }
  std::string body_;
  std::shared_ptr<const kept_body> kept_ = make_kept_body();
  int lfd_ = -1;
  int port_ = 0;
  std::thread th_;
  std::atomic<int> state_{0};  // 0 starting, 1 serving, -1 failed (start_error_ says why)
  std::string start_error_;    // written before state_ becomes -1
  loop* loop_ = nullptr;
  server_stats stats_copy_;
};

// The server still answers a well-formed request on a new connection.
void expect_still_serving(int port) {
  response r = one_shot(port, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
}

}  // namespace

TEST(http_server, keep_alive_and_pipelining_in_order) {
  server_thread s;
  int fd = dial(s.port());
  reader rd(fd);
  // Three pipelined requests in one write, then three more one by one on the same socket.
  send_all(fd,
           "GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n"
           "GET /c HTTP/1.1\r\nHost: t\r\n\r\n");
  response r;
  for (const char* want : {"/a", "/b", "/c"}) {
    ASSERT_TRUE(rd.next(&r));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, want);
  }
  for (const char* want : {"/c", "/a", "/b"}) {
    send_all(fd, std::string("GET ") + want + " HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(rd.next(&r));
    EXPECT_EQ(r.body, want);
  }
  // Connection: close is honoured after the response.
  send_all(fd, "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(rd.at_eof());
  close(fd);
}

TEST(http_server, many_pipelined_requests_over_tiny_buffers_and_high_water) {
  server_options so = server_thread::small_options();
  so.output_high_water = 16 * 1024;  // two 8 KB responses: reading pauses and resumes
  server_thread s(so);
  int fd = dial(s.port());
  std::string reqs;
  const char* paths[] = {"/big", "/a", "/big", "/b", "/c"};
  for (int i = 0; i < 100; ++i)
    reqs += std::string("GET ") + paths[i % 5] + " HTTP/1.1\r\nHost: t\r\n\r\n";
  std::thread writer([&] { send_all(fd, reqs); });
  reader rd(fd);
  response r;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(rd.next(&r)) << i;
    ASSERT_EQ(r.status, 200);
    if (i % 5 == 0 || i % 5 == 2) {
      EXPECT_EQ(r.body, s.body()) << i;
    } else {
      EXPECT_EQ(r.body, paths[i % 5]) << i;
    }
  }
  writer.join();
  close(fd);
}

// Waits (bounded) until the server holds no reference to the kept body: every send that
// carried it completed or was dropped with its connection.
bool kept_released(const server_thread& s) {
  for (int i = 0; i < 3000 && s.kept().use_count() > 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return s.kept().use_count() == 1;
}

TEST(http_server, kept_bodies_are_sent_from_where_they_are_in_order_with_copied_ones) {
  server_thread s;
  int fd = dial(s.port());
  // Pipelined: kept 1 MB bodies (each several short sends), small copied bodies, a copied
  // 8 KB body, a deferred kept body and a gzip'd kept body, in one write.
  const char* paths[] = {"/kept", "/a", "/kept", "/big", "/kept?later", "/b", "/kept"};
  std::string reqs;
  for (int round = 0; round < 3; ++round) {
    for (const char* p : paths) reqs += std::string("GET ") + p + " HTTP/1.1\r\nHost: t\r\n\r\n";
    reqs += "GET /kept HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n";
  }
  std::thread writer([&] { send_all(fd, reqs); });
  reader rd(fd);
  response r;
  for (int round = 0; round < 3; ++round) {
    for (std::string_view p : paths) {
      ASSERT_TRUE(rd.next(&r)) << p;
      ASSERT_EQ(r.status, 200) << p;
      if (p.starts_with("/kept")) {
        EXPECT_TRUE(r.body == s.kept()->plain) << p << ": " << r.body.size() << " bytes";
        EXPECT_EQ(r.headers["etag"], "\"k1\"");
      } else if (p == "/big") {
        EXPECT_EQ(r.body, s.body());
      } else {
        EXPECT_EQ(r.body, p);
      }
    }
    ASSERT_TRUE(rd.next(&r));
    EXPECT_EQ(r.headers["content-encoding"], "gzip");
    EXPECT_TRUE(r.body == s.kept()->gzip) << r.body.size() << " bytes";
  }
  writer.join();
  close(fd);
  EXPECT_TRUE(kept_released(s)) << s.kept().use_count();
}

TEST(http_server, a_client_gone_mid_send_releases_the_kept_bodies) {
  server_thread s;
  for (int i = 0; i < 4; ++i) {
    int fd = dial(s.port());
    // Four 1 MB answers, of which the client reads a few bytes and leaves: the server's
    // sends fail or are cancelled, and every reference it took goes with the connection.
    send_all(fd,
             "GET /kept HTTP/1.1\r\nHost: t\r\n\r\nGET /kept HTTP/1.1\r\nHost: t\r\n\r\n"
             "GET /kept?later HTTP/1.1\r\nHost: t\r\n\r\nGET /kept HTTP/1.1\r\nHost: t\r\n\r\n");
    char buf[256];
    EXPECT_GT(recv(fd, buf, sizeof buf, 0), 0);
    if (i % 2 == 1) {
      linger lg{1, 0};  // a reset, not a FIN
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(fd);
  }
  EXPECT_TRUE(kept_released(s)) << s.kept().use_count();
  expect_still_serving(s.port());
}

TEST(http_server, request_body_content_length_and_chunked_split_across_writes) {
  server_thread s;
  int fd = dial(s.port());
  reader rd(fd);
  std::string body(20000, 'x');
  for (size_t i = 0; i < body.size(); ++i) body[i] = char('a' + i % 26);
  std::string req =
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  // Dribble it in pieces so the server assembles it from many provided buffers.
  for (size_t off = 0; off < req.size(); off += 777) {
    send_all(fd, std::string_view(req).substr(off, 777));
  }
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, body);
  send_all(fd,
           "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
           "3\r\nabc\r\n");
  send_all(fd, "A;name=val\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "abc0123456789");
  close(fd);
}

TEST(http_server, deferred_responses_keep_pipelined_order) {
  server_thread s;
  int fd = dial(s.port());
  reader rd(fd);
  send_all(fd,
           "GET /later?1 HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n"
           "GET /later?2 HTTP/1.1\r\nHost: t\r\n\r\nHEAD /later?3 HTTP/1.1\r\nHost: t\r\n\r\n"
           "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "later:1");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "/a");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "later:2");
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.headers["content-length"], "7");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "/b");
  EXPECT_TRUE(rd.at_eof());
  close(fd);
  EXPECT_EQ(s.completed_late(), 3);
}

TEST(http_server, half_close_after_pipelined_requests_still_gets_every_answer) {
  server_thread s;
  int fd = dial(s.port());
  send_all(fd,
           "GET /later?h HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n"
           "GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
  shutdown(fd, SHUT_WR);  // like `nc -q`: done sending, still reading
  reader rd(fd);
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "later:h");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "/a");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, s.body());
  EXPECT_TRUE(rd.at_eof());
  close(fd);
}

TEST(http_server, deferred_response_after_the_client_left_is_dropped) {
  server_thread s;
  for (int i = 0; i < 5; ++i) {
    int fd = dial(s.port());
    send_all(fd, "GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    linger lg{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);  // reset before the answer
  }
  // The server stays healthy whichever way each race went (answered or dropped).
  expect_still_serving(s.port());
  int fd = dial(s.port());
  reader rd(fd);
  send_all(fd, "GET /later?x HTTP/1.1\r\nHost: t\r\n\r\n");
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "later:x");
  close(fd);
}

// A deferred answer that never comes is a 503 (JSON, Retry-After), not a silent close, and
// the pipelined request behind it is answered on the same connection.
TEST(http_server, deferred_response_that_never_comes_gets_503_then_the_next_request_runs) {
  server_thread s(server_thread::short_timeouts());
  int fd = dial(s.port());
  reader rd(fd);
  send_all(fd, "GET /never HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.headers.count("connection"), 0u);
  EXPECT_NE(r.body.find("\"error\": \"timeout\""), std::string::npos) << r.body;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "/a");
  close(fd);
  expect_still_serving(s.port());
}

TEST(http_server, expect_100_continue) {
  server_thread s;
  int fd = dial(s.port());
  send_all(fd,
           "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  char buf[64];
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    got.append(buf, size_t(n));
  }
  EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
  send_all(fd, "hello");
  reader rd(fd);
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  close(fd);
}

TEST(http_server, malformed_requests_get_their_status_and_a_closed_socket) {
  server_thread s;
  struct c {
    std::string req;
    int status;
    std::string code;  // the JSON body's "error"
  };
  const std::vector<c> cases = {
      {"GARBAGE\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1 extra\r\nHost: t\r\n\r\n", 400, "bad_request"},
      {"GET /" + std::string(2000, 'u') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414, "uri_too_long"},
      {"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5000, 'h') + "\r\n\r\n", 431,
       "header_fields_too_large"},
      {[] {
         std::string r = "GET / HTTP/1.1\r\nHost: t\r\n";
         for (int i = 0; i < 30; ++i) r += "X-" + std::to_string(i) + ": v\r\n";
         return r + "\r\n";
       }(),
       431, "header_fields_too_large"},
      {"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 999999\r\n\r\n", 413,
       "payload_too_large"},
      {"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
       "chunked\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n",
       400, "bad_request"},
      {"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloNOCRLF", 400,
       "bad_request"},
      {"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n20000\r\n", 413,
       "payload_too_large"},
      {"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505, "http_version_not_supported"},
      {"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: compress\r\n\r\n", 501,
       "not_implemented"},
      {"GET / HTTP/1.1\r\n\r\n", 400, "bad_request"},
  };
  for (const auto& k : cases) {
    bool closed = false;
    response r = one_shot(s.port(), k.req, &closed);
    EXPECT_EQ(r.status, k.status) << k.req.substr(0, 80);
    EXPECT_EQ(r.headers["content-type"], "application/json") << k.req.substr(0, 80);
    EXPECT_EQ(r.body.rfind("{\"error\": \"" + k.code + "\", \"message\": \"", 0), 0u) << r.body;
    EXPECT_EQ(r.headers["connection"], "close") << k.req.substr(0, 80);
    EXPECT_TRUE(closed) << k.req.substr(0, 80);
    expect_still_serving(s.port());
  }
}

TEST(http_server, content_length_with_transfer_encoding_is_refused_no_smuggling) {
  server_thread s;
  int fd = dial(s.port());
  // A front end honouring Content-Length would see one request; one honouring chunked would
  // see a second, smuggled "GET /b". The server must refuse the whole thing.
  send_all(fd,
           "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 35\r\n"
           "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n");
  reader rd(fd);
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(rd.at_eof()) << "a second response means a smuggled request ran: " << rd.pending();
  close(fd);
  expect_still_serving(s.port());
}

TEST(http_server, slowloris_gets_408_and_others_are_served_meanwhile) {
  server_thread s(server_thread::short_timeouts());
  int slow = dial(s.port());
  const std::string partial = "GET /a HTTP/1.1\r\nHost: t\r\nX-Slow: ";
  send_all(slow, partial);
  // Keep dribbling one byte at a time: bytes must not extend the header deadline.
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    while (!stop.load()) {
      if (send(slow, "a", 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // Other clients are served while the slow one holds its connection.
  for (int i = 0; i < 5; ++i) expect_still_serving(s.port());
  reader rd(slow);
  response r;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.headers["connection"], "close");
  stop.store(true);
  drip.join();
  // The socket ends (EOF or reset while our drip bytes arrive after the close).
  char c;
  EXPECT_LE(recv(slow, &c, 1, 0), 0);
  close(slow);
  expect_still_serving(s.port());
}

TEST(http_server, idle_connections_are_closed_without_a_response) {
  server_thread s(server_thread::short_timeouts());
  int fd = dial(s.port());
  reader rd(fd);
  EXPECT_TRUE(rd.at_eof());  // closed after the header timeout, no bytes sent
  close(fd);
  // Also after a completed request (keep-alive idle timeout).
  fd = dial(s.port());
  reader rd2(fd);
  send_all(fd, "GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  response r;
  ASSERT_TRUE(rd2.next(&r));
  EXPECT_TRUE(rd2.at_eof());
  close(fd);
}

TEST(http_server, head_has_headers_but_no_body) {
  server_thread s;
  int fd = dial(s.port());
  send_all(fd, "HEAD /big HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  reader rd(fd);
  response r;
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-length"], "8192");
  EXPECT_EQ(r.body, "");
  ASSERT_TRUE(rd.next(&r));  // the next response starts right after the HEAD headers
  EXPECT_EQ(r.body, "/a");
  close(fd);
}

// A HEAD request refused before it parsed (a bad header, too many headers, or too slow)
// still gets a response without content (RFC 9110 9.3.2): headers, then the close.
TEST(http_server, refused_head_requests_get_no_body) {
  server_thread s(server_thread::short_timeouts());
  const std::vector<std::pair<std::string, int>> cases = {
      {"HEAD / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5000, 'h') + "\r\n\r\n", 431},
      {"\r\nHEAD / HTTP/1.1 extra\r\nHost: t\r\n\r\n", 400},
      {"HEAD / HTTP/1.1\r\n\r\n", 400},
  };
  for (const auto& [req, status] : cases) {
    int fd = dial(s.port());
    send_all(fd, req);
    reader rd(fd);
    response r;
    ASSERT_TRUE(rd.next(&r, /*head=*/true)) << req.substr(0, 40);
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(r.headers["connection"], "close");
    EXPECT_TRUE(rd.at_eof()) << "body bytes after a HEAD response: " << rd.pending();
    close(fd);
  }
  // The same error for GET has its JSON body.
  {
    int fd = dial(s.port());
    send_all(fd, "GET / HTTP/1.1\r\n\r\n");
    reader rd(fd);
    response r;
    ASSERT_TRUE(rd.next(&r));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.headers["content-type"], "application/json");
    EXPECT_EQ(r.body.rfind("{\"error\": \"bad_request\", \"message\": ", 0), 0u) << r.body;
    close(fd);
  }
  // Too slow: the 408 for a partial HEAD request has no body either.
  int fd = dial(s.port());
  send_all(fd, "HEAD /a HTTP/1.1\r\nHost: t\r\nX-Slow: ");
  reader rd(fd);
  response r;
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.status, 408);
  EXPECT_TRUE(rd.at_eof()) << "body bytes after a HEAD response: " << rd.pending();
  close(fd);
  expect_still_serving(s.port());
}

TEST(http_server, conditional_get_304) {
  server_thread s;
  auto get = [&](const std::string& extra) {
    return one_shot(s.port(), "GET /big HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n");
  };
  response r = get("");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["etag"], "\"v1\"");
  const std::string lm = r.headers["last-modified"];
  EXPECT_EQ(lm, "Tue, 14 Nov 2023 22:13:20 GMT");
  r = get("If-None-Match: \"v1\"\r\n");
  EXPECT_EQ(r.status, 304);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.headers["etag"], "\"v1\"");
  EXPECT_EQ(get("If-None-Match: \"x\", W/\"v1\"\r\n").status, 304);
  EXPECT_EQ(get("If-None-Match: *\r\n").status, 304);
  EXPECT_EQ(get("If-None-Match: \"v0\"\r\n").status, 200);
  EXPECT_EQ(get("If-Modified-Since: " + lm + "\r\n").status, 304);
  EXPECT_EQ(get("If-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n").status, 304);
  EXPECT_EQ(get("If-Modified-Since: Mon, 13 Nov 2023 00:00:00 GMT\r\n").status, 200);
  EXPECT_EQ(get("If-Modified-Since: garbage\r\n").status, 200);
  // If-None-Match takes precedence over If-Modified-Since.
  EXPECT_EQ(get("If-None-Match: \"v0\"\r\nIf-Modified-Since: " + lm + "\r\n").status, 200);
}

TEST(http_server, gzip_for_clients_that_accept_it) {
  server_thread s;
  response r =
      one_shot(s.port(), "GET /big HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br, gzip\r\n\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-encoding"], "gzip");
  EXPECT_EQ(r.headers["vary"], "Accept-Encoding");
  EXPECT_EQ(r.headers["etag"], "W/\"v1\"");
  EXPECT_LT(r.body.size(), s.body().size());
  std::string plain(s.body().size(), '\0');
  size_t got = 0;
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  ASSERT_EQ(
      libdeflate_gzip_decompress(d, r.body.data(), r.body.size(), plain.data(), plain.size(), &got),
      LIBDEFLATE_SUCCESS);
  libdeflate_free_decompressor(d);
  plain.resize(got);
  EXPECT_EQ(plain, s.body());
  // q=0 refuses gzip; no Accept-Encoding means identity.
  r = one_shot(s.port(),
               "GET /big HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip;q=0, identity\r\n\r\n");
  EXPECT_EQ(r.headers.count("content-encoding"), 0u);
  EXPECT_EQ(r.body, s.body());
  // A 304 for the gzip variant (weak tag) still matches.
  r = one_shot(
      s.port(),
      "GET /big HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nIf-None-Match: W/\"v1\"\r\n\r\n");
  EXPECT_EQ(r.status, 304);
  // ... and carries the tag the gzip 200 carries (RFC 9110 15.4.5), not the identity one.
  EXPECT_EQ(r.headers["etag"], "W/\"v1\"");
  r = one_shot(s.port(), "GET /big HTTP/1.1\r\nHost: t\r\nIf-None-Match: W/\"v1\"\r\n\r\n");
  EXPECT_EQ(r.status, 304);
  EXPECT_EQ(r.headers["etag"], "\"v1\"");
}

TEST(http_server, http10_404_405) {
  server_thread s;
  bool closed = false;
  response r = one_shot(s.port(), "GET /a HTTP/1.0\r\n\r\n", &closed);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(closed);
  // HTTP/1.0 keep-alive on request.
  int fd = dial(s.port());
  reader rd(fd);
  send_all(fd, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.headers["connection"], "keep-alive");
  send_all(fd, "GET /nope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.body, "{\"error\": \"not_found\", \"message\": \"GET /nope: no such route\"}\n");
  close(fd);
  r = one_shot(s.port(), "DELETE /big HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD");
  EXPECT_EQ(r.body,
            "{\"error\": \"method_not_allowed\", \"message\": \"DELETE /big: method not allowed "
            "(allowed: GET, HEAD)\"}\n");
}

TEST(http_server, many_concurrent_connections_with_a_tiny_buffer_ring) {
  server_thread s;
  constexpr int n = 200;
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) fds.push_back(dial(s.port()));
  // All send before any reads: 200 connections compete for 8 provided buffers.
  for (int fd : fds) send_all(fd, "GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
  int ok = 0;
  for (int fd : fds) {
    reader rd(fd);
    response r;
    if (rd.next(&r) && r.status == 200 && r.body == s.body()) ++ok;
    close(fd);
  }
  EXPECT_EQ(ok, n);
}

TEST(http_server, client_reset_mid_request_does_not_disturb_others) {
  server_thread s;
  for (int i = 0; i < 20; ++i) {
    int fd = dial(s.port());
    send_all(fd, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\npartial");
    linger lg{1, 0};  // close with RST
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
  }
  expect_still_serving(s.port());
}

TEST(http_server, listen_address_errors) {
  std::string err;
  EXPECT_LT(listen_tcp("nonsense", false, &err), 0);
  EXPECT_NE(err.find("ADDR:PORT"), std::string::npos) << err;
  EXPECT_LT(listen_tcp("127.0.0.1:99999", false, &err), 0);
  EXPECT_NE(err.find("port"), std::string::npos) << err;
  EXPECT_LT(listen_tcp("not.an.ip:80", false, &err), 0);
  int fd = listen_tcp("[::1]:0", false, &err);
  if (fd >= 0) {
    EXPECT_GT(bound_port(fd), 0);
    close(fd);
  }
}

// The conditional-GET rule the server applies, as handlers may ask it first (RFC 9110 13.1).
TEST(http_server, not_modified_rule) {
  const char* lm_text = "Sun, 06 Nov 1994 08:49:37 GMT";
  const int64_t lm = 784111777;
  EXPECT_TRUE(not_modified("\"a\"", "", "\"a\"", -1));
  EXPECT_TRUE(not_modified("W/\"a\"", "", "\"a\"", -1));  // weak comparison
  EXPECT_TRUE(not_modified("\"b\", W/\"a\"", "", "W/\"a\"", -1));
  EXPECT_TRUE(not_modified("*", "", "\"a\"", -1));
  EXPECT_FALSE(not_modified("\"b\"", "", "\"a\"", -1));
  EXPECT_FALSE(not_modified("\"a\"", "", "", lm));            // no ETag: never matches
  EXPECT_FALSE(not_modified("\"b\"", lm_text, "\"a\"", lm));  // If-None-Match decides alone
  EXPECT_TRUE(not_modified("", lm_text, "", lm));
  EXPECT_TRUE(not_modified("", lm_text, "\"a\"", lm - 10));
  EXPECT_FALSE(not_modified("", lm_text, "", lm + 1));
  EXPECT_FALSE(not_modified("", lm_text, "", -1));
  EXPECT_FALSE(not_modified("", "not a date", "", lm));
  EXPECT_FALSE(not_modified("", "", "\"a\"", lm));
}
