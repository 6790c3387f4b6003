// One server shard (loop + http_server) on its own thread for loopback tests, with a tiny
// ring and tiny provided buffers so that requests span receives. The server's context
// pointer is the shard_thread itself: handlers reach server() and user state through it.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "feedplane/net/http_server.h"
#include "feedplane/net/loop.h"
#include "gtest/gtest.h"

namespace http_test {

class shard_thread {
 public:
  static feedplane::net::server_options default_options() {
    feedplane::net::server_options so;
    so.limits.max_request_line = 1024;
    so.limits.max_header_bytes = 4096;
    so.limits.max_headers = 20;
    so.limits.max_body = 256 * 1024;
    // Generous: a loaded CI machine under ASan must never hit these by accident.
    so.header_timeout_ms = 10'000;
    so.idle_timeout_ms = 10'000;
    so.defer_timeout_ms = 10'000;
    return so;
  }

  // setup adds the routes; it runs on the constructing thread, before serving starts.
  explicit shard_thread(const std::function<void(feedplane::net::router&)>& setup,
                        feedplane::net::server_options so = default_options())
      : so_(so) {
    setup(routes_);
    std::string err;
    lfd_ = feedplane::net::listen_tcp("127.0.0.1:0", false, &err);
    EXPECT_GE(lfd_, 0) << err;
    port_ = feedplane::net::bound_port(lfd_);
    th_ = std::thread([this] { run(); });
    while (!ready_.load()) std::this_thread::yield();
  }
  ~shard_thread() {
    if (loop_ != nullptr) loop_->request_stop();
    th_.join();
    close(lfd_);
  }
  shard_thread(const shard_thread&) = delete;
  shard_thread& operator=(const shard_thread&) = delete;

  int port() const { return port_; }
  // On the shard thread only (from handlers and timers).
  feedplane::net::http_server& server() { return *srv_; }
  feedplane::net::loop& shard_loop() { return *loop_; }

 private:
  void run() {
    feedplane::net::loop_options lo;
    lo.ring_entries = 16;
    lo.buffer_count = 8;
    lo.buffer_size = 512;
    std::string err;
    auto l = feedplane::net::loop::create(lo, &err);
    if (!l) {
      ADD_FAILURE() << err;
      ready_.store(true);
      return;
    }
    {
      feedplane::net::http_server srv(*l, routes_, so_, this);
      EXPECT_TRUE(srv.start(lfd_));
      srv_ = &srv;
      loop_ = l.get();
      ready_.store(true);
      l->run();
      srv.shutdown();
      for (int i = 0; i < 1000 && srv.stats().open > 0; ++i) l->run_once(false);
      srv_ = nullptr;
    }
  }

  feedplane::net::server_options so_;
  feedplane::net::router routes_;
  feedplane::net::http_server* srv_ = nullptr;
  feedplane::net::loop* loop_ = nullptr;
  int lfd_ = -1;
  int port_ = 0;
  std::thread th_;
  std::atomic<bool> ready_{false};
};

}  // namespace http_test
