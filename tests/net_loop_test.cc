// The io_uring event loop on real loopback sockets, with a deliberately tiny ring and
// tiny provided buffers so that SQ-full, ENOBUFS re-arm and multishot paths all run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/loop.h"
#include "gtest/gtest.h"

using namespace feedplane::net;

namespace {

loop_options tiny() {
  loop_options o;
  o.ring_entries = 8;
  o.buffer_count = 4;
  o.buffer_size = 64;
  return o;
}

std::unique_ptr<loop> make_loop(const loop_options& o = tiny()) {
  std::string err;
  auto l = loop::create(o, &err);
  EXPECT_NE(l, nullptr) << err;
  return l;
}

// A blocking TCP listener on 127.0.0.1, port chosen by the kernel.
int listen_any(sockaddr_in* addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(fd, 64), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *addr = a;
  return fd;
}

// Runs the loop until `done()` or a generous turn budget runs out (no timing asserts).
template <class F>
bool run_until(loop& l, F done, int max_turns = 200000) {
  for (int i = 0; i < max_turns && !done(); ++i) {
    if (l.run_once(true) < 0) return false;
  }
  return done();
}

// Server side: multishot accept, multishot recv with tiny provided buffers, re-armed on
// -ENOBUFS; sums what arrives. Client side: connect, then many sends through an 8-entry SQ.
struct echo_fixture {
  loop* l = nullptr;
  int accepted = -1;
  std::string received;
  int recv_final = 1;  // res of the final multishot completion
  int rearms = 0;
  bool peer_closed = false;

  void on_accept(const completion& c) {
    ASSERT_GE(c.res, 0) << strerror(-c.res);
    accepted = c.res;
    l->recv_multishot(accepted, bind<&echo_fixture::on_recv>(this));
  }
  void on_recv(const completion& c) {
    if (c.res > 0) {
      received.append(reinterpret_cast<const char*>(c.data.data()), c.data.size());
      EXPECT_EQ(c.data.size(), size_t(c.res));
    }
    if (c.more()) return;
    // The one place that classifies the end of the multishot.
    if (c.res == -ENOBUFS || c.res > 0) {
      ++rearms;
      l->recv_multishot(accepted, bind<&echo_fixture::on_recv>(this));
    } else if (c.res == 0) {
      peer_closed = true;
    } else {
      recv_final = c.res;
    }
  }
};

struct client {
  loop* l = nullptr;
  int fd = -1;
  int connect_res = 1;
  std::string payload;
  size_t sent = 0;
  size_t inflight = 0;
  int send_err = 0;

  void on_connect(const completion& c) { connect_res = c.res; }
  void on_send(const completion& c) {
    --inflight;
    if (c.res < 0) {
      send_err = c.res;
      return;
    }
    // Sends of 100 bytes from distinct offsets are issued in order on one socket; each
    // completes fully on a blocking loopback socket or the test notices a gap.
    EXPECT_EQ(size_t(c.res), c.tag);
  }
};

}  // namespace

TEST(net_loop, probe_names_missing_opcode) {
  EXPECT_NE(check_required_opcodes(nullptr), "");
  // A probe claiming nothing is supported: the message names the first required opcode.
  std::vector<unsigned char> mem(sizeof(io_uring_probe) + 256 * sizeof(io_uring_probe_op), 0);
  auto* p = reinterpret_cast<io_uring_probe*>(mem.data());
  p->last_op = IORING_OP_LAST - 1;
  std::string msg = check_required_opcodes(p);
  EXPECT_NE(msg.find("IORING_OP_ACCEPT"), std::string::npos) << msg;
  // Every op supported except SEND.
  for (int i = 0; i < IORING_OP_LAST; ++i) p->ops[i].flags = IO_URING_OP_SUPPORTED;
  EXPECT_EQ(check_required_opcodes(p), "");
  p->ops[IORING_OP_SEND].flags = 0;
  msg = check_required_opcodes(p);
  EXPECT_NE(msg.find("IORING_OP_SEND "), std::string::npos) << msg;
  // The real kernel has them all.
  io_uring_probe* real = io_uring_get_probe();
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(check_required_opcodes(real), "");
  io_uring_free_probe(real);
}

TEST(net_loop, tcp_connect_accept_send_recv_tiny_ring) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  sockaddr_in addr;
  int lfd = listen_any(&addr);
  echo_fixture srv;
  srv.l = l.get();
  ASSERT_TRUE(l->accept_multishot(lfd, bind<&echo_fixture::on_accept>(&srv)).valid());

  client cl;
  cl.l = l.get();
  cl.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(l->connect(cl.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                         bind<&client::on_connect>(&cl))
                  .valid());
  ASSERT_TRUE(run_until(*l, [&] { return cl.connect_res != 1 && srv.accepted >= 0; }));
  ASSERT_EQ(cl.connect_res, 0) << strerror(-cl.connect_res);

  // 64 KiB in 100-byte sends, many more than the 8 SQ entries, all queued in one turn.
  for (int i = 0; i < 65536; ++i) cl.payload.push_back(char('a' + (i * 7) % 26));
  for (size_t off = 0; off < cl.payload.size(); off += 100) {
    size_t n = std::min<size_t>(100, cl.payload.size() - off);
    handler h = bind<&client::on_send>(&cl, n);
    ASSERT_TRUE(l->send(cl.fd, cl.payload.data() + off, n, h).valid());
    ++cl.inflight;
  }
  ASSERT_TRUE(run_until(*l, [&] { return cl.inflight == 0; }));
  EXPECT_EQ(cl.send_err, 0);
  shutdown(cl.fd, SHUT_WR);
  ASSERT_TRUE(run_until(*l, [&] { return srv.peer_closed || srv.recv_final != 1; }));
  EXPECT_TRUE(srv.peer_closed);
  EXPECT_EQ(srv.received, cl.payload);
  // 64 KiB through four 64-byte buffers: the multishot recv ran dry and was re-armed.
  EXPECT_GT(srv.rearms, 0);
  EXPECT_GT(l->stats().enobufs, 0u);
  EXPECT_EQ(l->stats().stale, 0u);
  close(cl.fd);
  close(srv.accepted);
  close(lfd);
}

namespace {
struct result_box {
  int res = 1;
  int calls = 0;
  void on(const completion& c) {
    res = c.res;
    ++calls;
  }
};
}  // namespace

TEST(net_loop, connect_refused_is_negative_errno) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  sockaddr_in addr;
  int lfd = listen_any(&addr);
  close(lfd);  // nothing listens on that port any more
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  result_box r;
  l->connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr), bind<&result_box::on>(&r));
  ASSERT_TRUE(run_until(*l, [&] { return r.calls > 0; }));
  EXPECT_EQ(r.res, -ECONNREFUSED);
  close(fd);
}

TEST(net_loop, cancel_pending_recv_and_user_buffer_recv) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  result_box r;
  op_id op = l->recv_multishot(sv[0], bind<&result_box::on>(&r));
  ASSERT_TRUE(op.valid());
  l->run_once(false);  // submitted, nothing to read
  EXPECT_EQ(r.calls, 0);
  l->cancel(op);
  ASSERT_TRUE(run_until(*l, [&] { return r.calls > 0; }));
  EXPECT_EQ(r.res, -ECANCELED);
  EXPECT_EQ(l->ops_in_flight(), 0u);
  // Cancelling an op that already finished is harmless (its generation no longer matches).
  l->cancel(op);
  l->run_once(false);

  // recv into the caller's buffer.
  char buf[16] = {};
  result_box r2;
  l->recv(sv[0], buf, sizeof(buf), bind<&result_box::on>(&r2));
  ASSERT_EQ(write(sv[1], "hello", 5), 5);
  ASSERT_TRUE(run_until(*l, [&] { return r2.calls > 0; }));
  EXPECT_EQ(r2.res, 5);
  EXPECT_EQ(std::string(buf, 5), "hello");

  // One-shot readiness poll.
  result_box rp;
  l->poll_add(sv[0], POLLIN, bind<&result_box::on>(&rp));
  l->run_once(false);
  EXPECT_EQ(rp.calls, 0);
  ASSERT_EQ(write(sv[1], "x", 1), 1);
  ASSERT_TRUE(run_until(*l, [&] { return rp.calls > 0; }));
  EXPECT_TRUE(rp.res & POLLIN);
  ASSERT_EQ(read(sv[0], buf, 1), 1);

  // Single-shot provided-buffer recv, then peer close gives 0.
  result_box r3;
  l->recv_provided(sv[0], bind<&result_box::on>(&r3));
  close(sv[1]);
  ASSERT_TRUE(run_until(*l, [&] { return r3.calls > 0; }));
  EXPECT_EQ(r3.res, 0);
  close(sv[0]);
}

// The loop posts few of its provided buffers (so receives reuse warm memory) and posts more
// when a turn's receives find the ring empty: nothing is lost, and no receive ever lands in
// a buffer that was not posted.
TEST(net_loop, provided_buffers_posted_on_demand) {
  loop_options o;
  o.ring_entries = 256;
  o.buffer_count = 256;
  o.buffer_size = 64;
  auto l = make_loop(o);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->stats().buffers_posted, 64u);
  constexpr int n = 150;  // more receives in one turn than the 64 posted at first
  struct peer {
    loop* l = nullptr;
    int fd[2] = {-1, -1};
    std::string got;
    int rearms = 0;
    std::vector<const std::byte*>* seen = nullptr;
    void arm() { ASSERT_TRUE(l->recv_provided(fd[0], bind<&peer::on>(this)).valid()); }
    void on(const completion& c) {
      if (c.res == -ENOBUFS) {
        ++rearms;
        arm();
        return;
      }
      ASSERT_GT(c.res, 0);
      seen->push_back(c.data.data());
      got.append(reinterpret_cast<const char*>(c.data.data()), c.data.size());
    }
  };
  std::vector<const std::byte*> seen;
  std::vector<peer> peers(n);
  for (int i = 0; i < n; ++i) {
    peer& p = peers[size_t(i)];
    p.l = l.get();
    p.seen = &seen;
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.fd), 0);
    const std::string msg = "message " + std::to_string(i);
    ASSERT_EQ(write(p.fd[1], msg.data(), msg.size()), ssize_t(msg.size()));
  }
  for (peer& p : peers) p.arm();  // all submitted in one turn, the data already there
  size_t done = 0;
  ASSERT_TRUE(run_until(*l, [&] {
    done = 0;
    for (int i = 0; i < n; ++i) done += peers[size_t(i)].got == "message " + std::to_string(i);
    return done == size_t(n);
  }));
  int rearms = 0;
  for (const peer& p : peers) rearms += p.rearms;
  EXPECT_GT(rearms, 0);  // the first turn ran the ring dry
  EXPECT_GT(l->stats().enobufs, 0u);
  const uint32_t posted = l->stats().buffers_posted;
  EXPECT_GT(posted, 64u);
  EXPECT_LE(posted, 256u);
  // Every receive landed in one of the first `posted` buffers.
  const std::byte* lowest = *std::min_element(seen.begin(), seen.end());
  for (const std::byte* b : seen) {
    EXPECT_LT(size_t(b - lowest), size_t(posted) * o.buffer_size);
    EXPECT_EQ(size_t(b - lowest) % o.buffer_size, 0u);
  }
  // A quiet stream of single receives now cycles through the posted buffers only.
  seen.clear();
  for (int round = 0; round < 3 * 256; ++round) {
    peer& p = peers[size_t(round % n)];
    p.got.clear();
    ASSERT_EQ(write(p.fd[1], "x", 1), 1);
    p.arm();
    ASSERT_TRUE(run_until(*l, [&] { return !p.got.empty(); }));
  }
  EXPECT_EQ(l->stats().buffers_posted, posted);
  for (const std::byte* b : seen) EXPECT_LT(size_t(b - lowest), size_t(posted) * o.buffer_size);
  for (peer& p : peers) {
    close(p.fd[0]);
    close(p.fd[1]);
  }
}

TEST(net_loop, slab_exhaustion_returns_invalid_op) {
  loop_options o = tiny();
  o.max_ops = 3;
  auto l = make_loop(o);
  ASSERT_TRUE(l);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  result_box r;
  char b[3][4];
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(l->recv(sv[0], b[i], 4, bind<&result_box::on>(&r)).valid());
  EXPECT_FALSE(l->recv(sv[0], b[0], 4, bind<&result_box::on>(&r)).valid());
  l->cancel_fd(sv[0]);
  ASSERT_TRUE(run_until(*l, [&] { return r.calls == 3; }));
  EXPECT_EQ(r.res, -ECANCELED);
  EXPECT_TRUE(l->recv(sv[0], b[0], 4, bind<&result_box::on>(&r)).valid());
  l->cancel_fd(sv[0]);
  ASSERT_TRUE(run_until(*l, [&] { return r.calls == 4; }));
  close(sv[0]);
  close(sv[1]);
}

namespace {
struct timer_log {
  loop* l = nullptr;
  std::vector<int> order;
  int rearm_left = 0;
  timer* self = nullptr;
};
struct tagged_timer {
  timer t;
  timer_log* log = nullptr;
  int id = 0;
  static void fire(void* ctx) {
    auto* me = static_cast<tagged_timer*>(ctx);
    me->log->order.push_back(me->id);
    if (me->id == 100 && me->log->rearm_left-- > 0) me->log->l->arm(me->t, 1);
  }
};
}  // namespace

TEST(net_loop, timers_fire_in_deadline_order_and_disarm_works) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  timer_log log;
  log.l = l.get();
  // Deadlines spread over more than one wheel revolution (1024 ticks).
  const int delays[] = {30, 5, 1200, 0, 15, 60};
  std::vector<std::unique_ptr<tagged_timer>> ts;
  for (int i = 0; i < 6; ++i) {
    ts.push_back(std::make_unique<tagged_timer>());
    ts.back()->t.set(&tagged_timer::fire, ts.back().get());
    ts.back()->log = &log;
    ts.back()->id = delays[i];
    l->arm(ts.back()->t, uint64_t(delays[i]));
  }
  l->disarm(ts[4]->t);  // 15 never fires
  EXPECT_FALSE(ts[4]->t.armed());
  // A self re-arming timer fires 3 times.
  tagged_timer again;
  again.t.set(&tagged_timer::fire, &again);
  again.log = &log;
  again.id = 100;
  log.rearm_left = 2;
  l->arm(again.t, 2);
  ASSERT_TRUE(run_until(*l, [&] { return log.order.size() == 8; }));
  std::vector<int> fired_main;
  int again_count = 0;
  for (int v : log.order) (v == 100 ? again_count++ : (fired_main.push_back(v), 0));
  EXPECT_EQ(fired_main, (std::vector<int>{0, 5, 30, 60, 1200}));
  EXPECT_EQ(again_count, 3);
  // A destroyed armed timer unlinks itself.
  {
    timer t(&tagged_timer::fire, ts[0].get());
    l->arm(t, 10);
  }
  l->run_once(false);
}

// Expired timers fire in deadline order even when they expire in the same turn, and even
// after the loop stalled for more than a wheel revolution (two deadlines in one slot).
TEST(net_loop, timers_due_together_fire_in_deadline_order) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  timer_log log;
  log.l = l.get();
  const int delays[] = {1034, 10, 3, 10};  // 1034 and 10 share a wheel slot
  std::vector<std::unique_ptr<tagged_timer>> ts;
  for (int i = 0; i < 4; ++i) {
    ts.push_back(std::make_unique<tagged_timer>());
    ts.back()->t.set(&tagged_timer::fire, ts.back().get());
    ts.back()->log = &log;
    ts.back()->id = delays[i] * 10 + i;
    l->arm(ts.back()->t, uint64_t(delays[i]));
  }
  // Simulate a stalled shard: nothing runs the loop for longer than all the delays.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  l->run_once(false);
  EXPECT_EQ(log.order, (std::vector<int>{32, 101, 103, 10340}));
}

// A callback that arms a later timer must not hide an earlier one already armed: the
// wait's hint, reset before the callbacks ran, once took the later deadline, so an idle loop
// slept through the earlier one (a 10 s periodic timer delayed the crawler's beat to 20 s).
namespace {
struct turn_log {
  loop* l = nullptr;
  int turn = 0;
  int early_turn = -1, late_fires = 0, late_second_turn = -1;
  timer early, late;
  static void on_early(void* c) {
    static_cast<turn_log*>(c)->early_turn = static_cast<turn_log*>(c)->turn;
  }
  static void on_late(void* c) {
    auto* me = static_cast<turn_log*>(c);
    if (++me->late_fires == 1) {
      me->l->arm(me->late, 2000);  // later than `early`, armed after the hint was reset
    } else {
      me->late_second_turn = me->turn;
    }
  }
};
}  // namespace

TEST(net_loop, a_callback_arming_a_later_timer_does_not_hide_an_earlier_one) {
  auto l = make_loop();
  ASSERT_TRUE(l);
  turn_log log;
  log.l = l.get();
  log.early.set(&turn_log::on_early, &log);
  log.late.set(&turn_log::on_late, &log);
  l->arm(log.late, 5);
  l->arm(log.early, 50);
  for (; log.turn < 100000 && log.late_second_turn < 0; ++log.turn) l->run_once(true);
  ASSERT_GE(log.early_turn, 0);
  ASSERT_GE(log.late_second_turn, 0);
  // Not a timing assertion: the early timer fires in a turn of its own, before the wait
  // for the late one ends.
  EXPECT_LT(log.early_turn, log.late_second_turn);
}

namespace {
struct wake_target {
  std::unique_ptr<loop> l;
  std::atomic<int> wakes{0};
  std::atomic<bool> ready{false};
  int want = 0;
  static void on_wake(void* ctx) {
    auto* me = static_cast<wake_target*>(ctx);
    if (me->wakes.fetch_add(1) + 1 >= me->want) me->l->stop();
  }
};
}  // namespace

void cross_shard_wake(bool force_eventfd) {
  wake_target tgt;
  tgt.want = 1;
  std::string err;
  std::thread th([&] {
    tgt.l = loop::create(tiny(), &err);
    if (tgt.l) {
      if (force_eventfd) tgt.l->disable_msg_ring();
      tgt.l->set_wake_handler(&wake_target::on_wake, &tgt);
    }
    // Set on failure too: the main thread must not wait for a loop that never came.
    tgt.ready.store(true);
    if (tgt.l) {
      EXPECT_EQ(tgt.l->run(), 0);
    }
  });
  while (!tgt.ready.load()) std::this_thread::yield();
  if (!tgt.l) {
    th.join();
    FAIL() << err;
  }
  auto src = make_loop();
  ASSERT_TRUE(src);
  if (force_eventfd) src->disable_msg_ring();
  src->wake(*tgt.l);
  src->run_once(false);  // the MSG_RING goes out with this turn's submit
  th.join();
  EXPECT_GE(tgt.wakes.load(), 1);
}

TEST(net_loop, cross_shard_wake_msg_ring) {
  auto probe = make_loop();
  ASSERT_TRUE(probe);
  if (!probe->has_msg_ring()) GTEST_SKIP() << "kernel lacks IORING_OP_MSG_RING";
  cross_shard_wake(false);
}

TEST(net_loop, cross_shard_wake_eventfd_fallback) { cross_shard_wake(true); }

// request_stop() from another thread ends run() on a loop that has finished a turn and is
// waiting for completions: run() stays in its loop until then, and returns 0 after. (A lost
// wake-up hangs in join(); ctest's timeout fails the test.)
TEST(net_loop, request_stop_from_another_thread) {
  std::unique_ptr<loop> l;
  std::string err;
  std::atomic<int> state{0};  // 1 running, 2 run() returned, -1 no loop
  std::atomic<uint64_t> turns{0};
  int rc = -1;
  std::thread th([&] {
    l = loop::create(tiny(), &err);
    if (!l) {
      state.store(-1);
      return;
    }
    l->set_turn_hook(
        [](void* ctx) {
          static_cast<std::atomic<uint64_t>*>(ctx)->fetch_add(1);
          return false;  // nothing pending: the turn waits
        },
        &turns);
    state.store(1);
    rc = l->run();
    state.store(2);
  });
  while (state.load() == 0) std::this_thread::yield();
  if (state.load() < 0) {
    th.join();
    FAIL() << err;
  }
  while (turns.load() == 0) std::this_thread::yield();  // it is in (or entering) its wait
  EXPECT_EQ(state.load(), 1) << "run() returned before anyone stopped it";
  l->request_stop();
  th.join();
  EXPECT_EQ(state.load(), 2);
  EXPECT_EQ(rc, 0);
}

namespace {

// A loop whose waits gather completions: loop_options' wait_batch and min_wait_us.
std::unique_ptr<loop> make_batching_loop(uint32_t batch, uint32_t min_wait_us) {
  loop_options o = tiny();
  o.ring_entries = 64;
  o.buffer_count = 64;
  o.wait_batch = batch;
  o.min_wait_us = min_wait_us;
  return make_loop(o);
}

struct gathered_peer {
  loop* l = nullptr;
  int fd[2] = {-1, -1};
  int got = 0;
  void arm() { ASSERT_TRUE(l->recv_provided(fd[0], bind<&gathered_peer::on>(this)).valid()); }
  void on(const completion& c) {
    ASSERT_GT(c.res, 0) << strerror(-c.res);
    ++got;
  }
};

}  // namespace

// With wait_batch = 4 a waiting turn sleeps until four completions are ready (or half a
// second passed with one): four messages written 1 ms apart while the loop waits come back
// in the same turn. Woken per completion, the first turn returns the first message alone.
TEST(net_loop, a_batching_wait_gathers_completions) {
  auto l = make_batching_loop(4, 500'000);
  ASSERT_TRUE(l);
  if (!l->batches_waits()) GTEST_SKIP() << "kernel lacks IORING_FEAT_MIN_TIMEOUT (6.12)";
  std::vector<gathered_peer> peers(4);
  for (gathered_peer& p : peers) {
    p.l = l.get();
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.fd), 0);
    p.arm();
  }
  // seq_cst (the default): a test flag read in a spin, no ordering argument to make.
  std::atomic<bool> waiting{false};
  l->set_turn_hook(
      [](void* ctx) {
        static_cast<std::atomic<bool>*>(ctx)->store(true);
        return false;
      },
      &waiting);
  std::thread writer([&] {
    while (!waiting.load()) std::this_thread::yield();
    for (gathered_peer& p : peers) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(write(p.fd[1], "x", 1), 1);
    }
  });
  int first = 0;
  while (first == 0) {
    first = l->run_once(true);
    ASSERT_GE(first, 0);
  }
  writer.join();
  EXPECT_EQ(first, 4) << "the first turn with a completion returned " << first;
  for (const gathered_peer& p : peers) EXPECT_EQ(p.got, 1);
  l->set_turn_hook(nullptr, nullptr);
  for (gathered_peer& p : peers) {
    close(p.fd[0]);
    close(p.fd[1]);
  }
}

// Fewer completions than the batch still return once min_wait_us has passed, and a timer
// due with no completion at all still fires: a batching loop never waits forever.
TEST(net_loop, a_batching_wait_returns_with_fewer_and_for_timers) {
  auto l = make_batching_loop(32, 1'000);
  ASSERT_TRUE(l);
  if (!l->batches_waits()) GTEST_SKIP() << "kernel lacks IORING_FEAT_MIN_TIMEOUT (6.12)";
  gathered_peer p;
  p.l = l.get();
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.fd), 0);
  p.arm();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(write(p.fd[1], "x", 1), 1);
  });
  ASSERT_TRUE(run_until(
      *l, [&] { return p.got == 1; }, 1000));
  writer.join();
  bool fired = false;
  timer t([](void* ctx) { *static_cast<bool*>(ctx) = true; }, &fired);
  l->arm(t, 20);
  ASSERT_TRUE(run_until(
      *l, [&] { return fired; }, 1000));
  close(p.fd[0]);
  close(p.fd[1]);
}
