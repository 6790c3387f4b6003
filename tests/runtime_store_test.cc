// Real shards (io_uring loops, runtime::shard) and the real store thread (RocksDB) joined
// by the mesh, as `feedplane serve` joins them: a shard's write comes back to it through
// on_durable() only once durable; its articles are sequenced densely and reach every
// shard in order; a restart streams each record to the shard that owns it, then
// `streamed`, with another shard count.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/loop.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"
#include "temp_dir.h"

namespace rt = feedplane::runtime;
namespace net = feedplane::net;
namespace st = feedplane::store;

namespace {

using feedplane::test::temp_dir;

// Per-shard state, touched on the shard's thread only.
struct shard_state {
  uint64_t acked = 0, refused = 0;
  uint64_t articles = 0, last_seq = 0;
  bool in_order = true;
  std::map<std::string, std::string> records;  // streamed at start-up
  bool streamed = false;
  std::thread::id thread;
  bool wrong_thread = false;
};

struct my_write : rt::store_write {
  shard_state* state = nullptr;
  void on_durable(rt::shard& origin) override {
    state->wrong_thread |= state->thread != std::this_thread::get_id();
    (void)origin;
    if (status == 0) {
      ++state->acked;
    } else {
      ++state->refused;
    }
  }
};

struct listener : rt::shard_listener {
  shard_state* s = nullptr;
  void on_article(rt::shard&, const rt::article_ref& a) override {
    if (a->seq() != s->last_seq + 1) s->in_order = false;
    s->last_seq = a->seq();
    ++s->articles;
  }
  void on_record(rt::shard&, rt::kind k, std::string_view key, std::string_view value) override {
    if (k == rt::kind::test) s->records.emplace(key, value);
  }
  void on_streamed(rt::shard&) override { s->streamed = true; }
};

uint32_t owner_of(std::string_view key, uint32_t n) {
  // "k<shard>-<i>": the writer's own shard at n = 2, modulo for other shard counts.
  return uint32_t(key[1] - '0') % n;
}

// Runs n shards and a store in dir; each shard writes `writes` writes of one key and
// `per_write` articles (0 = writes nothing), then everything stops cleanly.
std::vector<shard_state> run(const std::string& dir, uint32_t n, uint64_t writes,
                             uint64_t per_write) {
  rt::mesh_options mo;
  mo.write_ring = 8;  // small: the writer meets backpressure
  rt::mesh m(n, mo);
  std::vector<shard_state> states(n);
  std::vector<st::store_port> ports = st::ports_from_mesh(m);
  st::store_options so;
  so.dir = dir;
  std::string err;
  auto db = st::store::open(
      so, ports, [n](rt::kind, std::string_view key) { return owner_of(key, n); }, &err);
  EXPECT_TRUE(db) << err;
  if (!db) return states;
  m.set_store_notify([](void* d, bool api) { static_cast<st::store*>(d)->notify(api); }, db.get());

  std::atomic<uint32_t> registered{0}, finished{0}, drained{0};
  std::atomic<bool> stop{false}, release{false}, started{false};
  const uint64_t total_articles = uint64_t{n} * writes * per_write;
  auto shard_main = [&](uint32_t i) {
    std::string e;
    net::loop_options lo;
    lo.ring_entries = 64;
    lo.buffer_count = 8;
    lo.buffer_size = 1024;
    auto l = net::loop::create(lo, &e);
    if (!l) {  // no ASSERT in a thread: count it as done so the test fails, not hangs
      ADD_FAILURE() << e;
      registered.fetch_add(1);
      finished.fetch_add(1);
      drained.fetch_add(1);
      return;
    }
    rt::shard s(m, i, *l);
    listener lis;
    lis.s = &states[i];
    s.set_listener(&lis);
    states[i].thread = std::this_thread::get_id();
    registered.fetch_add(1);
    while (!started.load()) std::this_thread::yield();
    rt::article_builder b;
    uint64_t sent = 0;
    bool counted = false;
    while (!stop.load()) {
      while (sent < writes && s.can_write()) {
        auto w = std::make_unique<my_write>();
        w->state = &states[i];
        w->ops.push_back({rt::kind::test, false,
                          "k" + std::to_string(i) + "-" + std::to_string(sent),
                          "v" + std::to_string(sent)});
        for (uint64_t a = 0; a < per_write; ++a) {
          b.clear();
          b.title = "shard " + std::to_string(i) + " write " + std::to_string(sent);
          b.guid = std::to_string(i) + "/" + std::to_string(sent) + "/" + std::to_string(a);
          w->articles.push_back(b.freeze());
        }
        rt::write_ptr wp = std::move(w);
        EXPECT_TRUE(s.write(wp)) << "can_write() said there was room";
        ++sent;
      }
      const shard_state& me = states[i];
      if (!counted && me.streamed && me.acked + me.refused == writes &&
          me.articles == total_articles) {
        counted = true;
        finished.fetch_add(1);
      }
      l->run_once(sent == writes);
    }
    for (int k = 0; k < 50; ++k) l->run_once(false);
    drained.fetch_add(1);
    // The loop outlives the store thread, which may still wake it (as in serve).
    while (!release.load()) std::this_thread::yield();
  };
  std::vector<std::thread> ts;
  for (uint32_t i = 0; i < n; ++i) ts.emplace_back(shard_main, i);
  while (registered.load() < n) std::this_thread::yield();
  db->start();
  started.store(true);
  // A shard handles what arrives in its turn hook, just before it sleeps: wake the loops
  // now and then so that each gets to look at its counts after the hook.
  for (int k = 0; finished.load() < n && k < 30000; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (uint32_t i = 0; i < n; ++i) {
      if (net::loop* l = m.loop(i)) l->wake_from_any_thread();
    }
  }
  EXPECT_EQ(finished.load(), n) << "shards did not finish (a stall): store acked "
                                << db->stats().writes_acked.load() << ", groups "
                                << db->stats().groups.load() << ", streamed "
                                << db->stats().streamed.load() << ", queue " << db->queue_depth();
  stop.store(true);
  for (uint32_t i = 0; i < n; ++i) {
    if (net::loop* l = m.loop(i)) l->wake_from_any_thread();
  }
  while (drained.load() < n) std::this_thread::yield();
  db->stop();
  release.store(true);
  for (auto& t : ts) t.join();
  for (auto& s : states) EXPECT_FALSE(s.wrong_thread) << "on_durable ran off the origin shard";
  return states;
}

TEST(runtime_store, writes_come_home_durable_and_articles_reach_every_shard_in_order) {
  temp_dir d;
  const int64_t alive = rt::article::alive();
  auto s = run(d.path, 2, 300, 2);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s[i].acked, 300u) << i;
    EXPECT_EQ(s[i].refused, 0u) << i;
    EXPECT_EQ(s[i].articles, 2u * 300 * 2) << i;
    EXPECT_EQ(s[i].last_seq, 2u * 300 * 2) << i << ": sequences dense from 1";
    EXPECT_TRUE(s[i].in_order) << i;
    EXPECT_TRUE(s[i].streamed) << i;
  }
  EXPECT_EQ(rt::article::alive(), alive) << "every article freed by its last holder";

  // Restart with three shards: every record reaches its owner under the new count.
  auto r = run(d.path, 3, 0, 0);
  size_t total = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(r[i].streamed);
    for (const auto& [k, v] : r[i].records) {
      EXPECT_EQ(owner_of(k, 3), i) << k;
      ++total;
    }
  }
  EXPECT_EQ(total, 600u);
  EXPECT_EQ(
      r[0].records.count("k1-299") + r[1].records.count("k1-299") + r[2].records.count("k1-299"),
      1u);
}

}  // namespace
