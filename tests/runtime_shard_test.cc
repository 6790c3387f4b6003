// Shards on real io_uring loops joined by the mesh: cross-shard tasks with backpressure,
// article broadcast from a store-like thread to every shard (each drops each article
// once, the last frees it), and shards that sleep between messages.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/loop.h"
#include "feedplane/runtime/shard.h"

namespace rt = feedplane::runtime;
namespace net = feedplane::net;

namespace {

std::unique_ptr<net::loop> make_loop() {
  net::loop_options o;
  o.ring_entries = 64;
  o.buffer_count = 8;
  o.buffer_size = 1024;
  std::string err;
  auto l = net::loop::create(o, &err);
  if (!l) ADD_FAILURE() << err;
  return l;
}

// State a shard owns: tasks touch it only on the owner's thread.
struct shard_state {
  uint64_t sum_run_here = 0;  // values of tasks run here for others
  uint64_t returned = 0;      // own tasks that came home
  uint64_t returned_sum = 0;  // their answers
  uint64_t articles = 0;      // articles seen
  uint64_t last_seq = 0;      // sequence order check
  bool in_order = true;
  std::thread::id thread;
};

struct add_task : rt::task {
  uint64_t value = 0;
  uint64_t answer = 0;
  std::vector<shard_state>* states = nullptr;
  bool wrong_thread = false;
  void run(rt::shard& target) override {
    shard_state& s = (*states)[target.index()];
    wrong_thread |= s.thread != std::this_thread::get_id();
    s.sum_run_here += value;
    answer = value * 2;
  }
  void done(rt::shard& origin) override {
    shard_state& s = (*states)[origin.index()];
    EXPECT_FALSE(wrong_thread);
    EXPECT_EQ(s.thread, std::this_thread::get_id());
    s.returned += 1;
    s.returned_sum += answer;
  }
};

struct counting_listener : rt::shard_listener {
  shard_state* st = nullptr;
  void on_article(rt::shard&, const rt::article_ref& a) override {
    if (a->seq() != st->last_seq + 1) st->in_order = false;
    st->last_seq = a->seq();
    ++st->articles;
  }
  void on_record(rt::shard&, rt::kind, std::string_view, std::string_view) override {}
  void on_streamed(rt::shard&) override {}
};

// n shards; each sends `per_shard` tasks to random peers (at most a few outstanding per
// pair, so backpressure is hit constantly), while a broadcaster thread sends `articles`
// sequenced articles to every shard.
void run_mesh(uint32_t n, uint64_t per_shard, uint64_t articles, bool msg_ring) {
  rt::mesh_options mo;
  mo.max_outstanding = 4;
  mo.article_ring = 16;
  mo.batch = 8;
  rt::mesh m(n, mo);
  std::vector<shard_state> states(n);
  std::atomic<uint32_t> ready{0}, finished{0};
  std::atomic<bool> stop{false}, release{false};
  std::atomic<uint64_t> refusals{0};
  const int64_t alive_before = rt::article::alive();

  auto shard_main = [&](uint32_t i) {
    auto l = make_loop();
    if (!msg_ring) l->disable_msg_ring();
    rt::shard s(m, i, *l);
    counting_listener lis;
    lis.st = &states[i];
    s.set_listener(&lis);
    states[i].thread = std::this_thread::get_id();
    ready.fetch_add(1);
    while (ready.load() < n) std::this_thread::yield();
    std::mt19937_64 rng(i + 1);
    uint64_t sent = 0;
    bool counted = false;
    while (!stop.load(std::memory_order_relaxed)) {
      // Send a burst; a refusal is backpressure: retry in a later turn.
      for (int k = 0; k < 16 && sent < per_shard; ++k) {
        const auto target = uint32_t(rng() % n);
        auto t = std::make_unique<add_task>();
        t->value = sent + 1;
        t->states = &states;
        rt::task_ptr tp = std::move(t);
        if (!s.send(target, tp)) {
          EXPECT_TRUE(tp) << "a refused task stays with the caller";
          refusals.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        ++sent;
      }
      if (!counted && sent == per_shard && states[i].returned == per_shard &&
          states[i].articles == articles) {
        counted = true;
        finished.fetch_add(1);
      }
      l->run_once(sent == per_shard);  // sleep only when this shard has nothing to send
    }
    // Drain what is left so every task has come home before the mesh goes.
    for (int k = 0; k < 100; ++k) l->run_once(false);
    // The loop outlives every wake the main thread may still send it.
    while (!release.load()) std::this_thread::yield();
  };

  std::vector<std::thread> ts;
  for (uint32_t i = 0; i < n; ++i) ts.emplace_back(shard_main, i);
  while (ready.load() < n) std::this_thread::yield();
  // The broadcaster: the store thread's role. One reference per shard, then its own drops.
  std::thread caster([&] {
    rt::article_builder b;
    for (uint64_t seq = 1; seq <= articles; ++seq) {
      b.clear();
      b.title = "article " + std::to_string(seq);
      b.guid = std::to_string(seq);
      rt::article_ref a = b.freeze();
      a.mutable_get()->set_seq(seq);
      for (uint32_t i = 0; i < n; ++i) {
        while (!m.articles(i).try_push(a)) std::this_thread::yield();  // full: wait
        m.wake_shard(i);
      }
    }
  });
  caster.join();
  while (finished.load() < n) {
    for (uint32_t i = 0; i < n; ++i) {
      if (net::loop* l = m.loop(i)) l->wake_from_any_thread();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop.store(true);
  for (uint32_t i = 0; i < n; ++i) {
    if (net::loop* l = m.loop(i)) l->wake_from_any_thread();
  }
  release.store(true);
  for (auto& t : ts) t.join();

  uint64_t run_total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const shard_state& s = states[i];
    EXPECT_EQ(s.returned, per_shard) << "shard " << i;
    EXPECT_EQ(s.returned_sum, per_shard * (per_shard + 1)) << "shard " << i;
    EXPECT_EQ(s.articles, articles) << "shard " << i;
    EXPECT_TRUE(s.in_order) << "shard " << i;
    run_total += s.sum_run_here;
  }
  EXPECT_EQ(run_total, uint64_t{n} * per_shard * (per_shard + 1) / 2);
  EXPECT_GT(refusals.load(), 0u) << "backpressure was never exercised";
  EXPECT_EQ(rt::article::alive(), alive_before) << "every article freed by its last holder";
}

TEST(runtime_shard, tasks_and_broadcast_two_shards) { run_mesh(2, 20'000, 5'000, true); }
TEST(runtime_shard, tasks_and_broadcast_four_shards) { run_mesh(4, 5'000, 2'000, true); }
TEST(runtime_shard, tasks_and_broadcast_eventfd_wakeups) { run_mesh(3, 5'000, 2'000, false); }

TEST(runtime_metrics, registry_sums_and_renders) {
  rt::metrics_registry a, b;
  a.add_counter("x_total", "x things").add(3);
  b.add_counter("x_total", "x things").add(4);
  a.add_gauge("g", "a gauge", "ring=\"control\"").set(2);
  a.add_histogram("lat_us", "latency").observe(5);
  b.add_histogram("lat_us", "latency").observe(1);
  std::vector<rt::metric_sample> s;
  a.snapshot(s);
  b.snapshot(s);
  const std::string text = rt::render_prometheus(s);
  EXPECT_NE(text.find("# TYPE x_total counter\nx_total 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{ring=\"control\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_us_bucket{le=\"1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_us_bucket{le=\"8\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_us_count 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_us_sum 6\n"), std::string::npos) << text;
}

}  // namespace
