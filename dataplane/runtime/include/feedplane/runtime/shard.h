// The shard: one pinned thread that owns an io_uring loop and, through it, everything the
// shard serves; joined to every other shard and to the store thread by the mesh's
// bounded SPSC rings (messages.h says what travels on each and who owns it).
//
// Each loop turn (net::loop's turn hook, after timers and before the wait) the shard:
//   1. drains its inbound rings in a fixed order, a bounded batch from each: control from
//      every peer first (replies never wait behind articles), then store events, then
//      articles. Draining never needs space in another ring: a task returning to its
//      origin always fits (below), and articles and events are consumed unconditionally.
//   2. publishes every outbound ring it staged into this turn (one release store per ring)
//      and wakes each consumer that may be asleep (sleeper.h), once per flush;
//   3. goes to sleep only when a seq_cst re-check finds every inbound ring empty.
//
// Backpressure: a shard has at most `max_outstanding` tasks out at each peer; the control
// ring of a pair holds twice that, so both the peer's own requests and its replies to ours
// always fit and a reply never waits. This holds because a shard publishes only in
// flush(), at the end of its turn, after consume() released the slots of the replies it
// took: nothing may publish a control ring mid-turn (try_push, or a flush from a
// callback), or the abort() on a full ring in shard.cc could be reached. send() refuses beyond the
// limit, write() refuses when the write ring is full: the caller pauses its source of work (the API
// answers 503 with Retry-After, the crawler stops starting fetches) and retries when space returns;
// nothing is dropped, nothing grows without bound. Refusals are counted as stalls.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "feedplane/net/loop.h"
#include "feedplane/runtime/messages.h"
#include "feedplane/runtime/metrics.h"
#include "feedplane/runtime/sleeper.h"

namespace feedplane::runtime {

// Debug builds: an object owned by one thread checks every use is on that thread
// (Redpanda's oncore). Release builds: empty, no cost.
class owner_check {
 public:
#ifndef NDEBUG
  void bind() { owner_ = std::this_thread::get_id(); }
  void check() const {
    if (owner_ != std::thread::id() && owner_ != std::this_thread::get_id()) fail();
  }

 private:
  [[noreturn]] static void fail();
  std::thread::id owner_;
#else
  void bind() {}
  void check() const {}
#endif
};

struct mesh_options {
  uint32_t max_outstanding = 512;  // tasks in flight from one shard to one peer
  uint32_t write_ring = 4096;      // shard -> store (a group holds up to this per shard)
  uint32_t api_write_ring = 1024;  // shard -> store, write_lane::api (messages.h)
  uint32_t event_ring = 8192;      // store -> shard (acks and start-up records)
  uint32_t article_ring = 4096;    // store -> shard
  uint32_t batch = 256;            // items drained from one ring per turn
};

class shard;

// Every ring and sleeper of a process, created before any thread starts and destroyed
// after all have stopped. Loops register as their shards start.
class mesh {
 public:
  mesh(uint32_t shards, const mesh_options& opt);
  ~mesh();
  mesh(const mesh&) = delete;
  mesh& operator=(const mesh&) = delete;

  uint32_t size() const { return n_; }
  const mesh_options& options() const { return opt_; }
  control_ring& control(uint32_t from, uint32_t to) { return *control_[from * n_ + to]; }
  write_ring& writes(uint32_t s) { return *writes_[s]; }
  write_ring& api_writes(uint32_t s) { return *api_writes_[s]; }
  event_ring& events(uint32_t s) { return *events_[s]; }
  article_ring& articles(uint32_t s) { return *articles_[s]; }
  sleeper& shard_sleeper(uint32_t s) { return *sleepers_[s]; }

  // The shard's loop, once it runs (any thread: acquire pairs with set_loop's release).
  net::loop* loop(uint32_t s) const { return loops_[s].load(std::memory_order_acquire); }
  // release: pairs with loop()'s acquire, so a thread that finds the loop sees it built.
  void set_loop(uint32_t s, net::loop* l) { loops_[s].store(l, std::memory_order_release); }
  // The slot holding shard s's loop (for wake-up callbacks that outlive a lookup).
  std::atomic<net::loop*>* loop_slot(uint32_t s) { return &loops_[s]; }

  // The store thread's notification, called by a shard after it published writes (api:
  // some on the api lane). The store does its own sleeper check. Null until a store is
  // attached (writes then wait).
  void set_store_notify(void (*fn)(void*, bool api), void* ctx) {
    store_notify_ = fn;
    store_ctx_ = ctx;
  }
  void notify_store(bool api) const {
    if (store_notify_ != nullptr) store_notify_(store_ctx_, api);
  }
  // Wakes shard s from any thread if it may be asleep (the store's side of the protocol).
  void wake_shard(uint32_t s);

  // The lowest article sequence shard s needs replayed at start (UINT64_MAX: none), which
  // it lowers while it applies the start-up records. The store reads it once every shard
  // has applied them all.
  //
  // Memory ordering: the shard stores with relaxed order while it runs the callbacks of a
  // records event, before its release store of the event ring's head. The store reads the
  // head (relaxed) until the ring is empty, then issues an acquire fence, then loads this
  // (relaxed): the fence makes the head's release synchronize with it, so every store the
  // shard made before consuming its last records event is visible.
  std::atomic<uint64_t>& replay_need(uint32_t s) { return replay_need_[s]; }

 private:
  uint32_t n_;
  mesh_options opt_;
  std::vector<std::unique_ptr<control_ring>> control_;
  std::vector<std::unique_ptr<write_ring>> writes_, api_writes_;
  std::vector<std::unique_ptr<event_ring>> events_;
  std::vector<std::unique_ptr<article_ring>> articles_;
  std::vector<std::unique_ptr<sleeper>> sleepers_;
  std::unique_ptr<std::atomic<net::loop*>[]> loops_;
  std::unique_ptr<std::atomic<uint64_t>[]> replay_need_;
  void (*store_notify_)(void*, bool) = nullptr;
  void* store_ctx_ = nullptr;
};

// What a shard's components receive from the store. All run on the shard's thread.
class shard_listener {
 public:
  virtual ~shard_listener() = default;
  // A sequenced article (in sequence order). Keep the reference only as long as needed.
  virtual void on_article(shard& s, const article_ref& a) = 0;
  // A start-up record this shard owns.
  virtual void on_record(shard& s, kind k, std::string_view key, std::string_view value) = 0;
  // A hint that on_record(k, key, ...) comes soon: start loading what it will touch. The
  // shard calls it for a block's records before applying them, so that the cache misses
  // of many records (at millions, each record's map slots are one) overlap.
  virtual void prefetch_record(kind /*k*/, std::string_view /*key*/, std::string_view /*value*/) {}
  // After a block's prefetch_record calls, before its on_record calls (the block's bytes
  // stay valid across both): a second stage of hints, for loads that need the first
  // stage's lines (the index's word entries need their vocabulary slots).
  virtual void prefetch_end() {}
  // Start-up streaming is over.
  virtual void on_streamed(shard& s) = 0;
};

class shard {
 public:
  // Call on the shard's own thread, after its loop was created there.
  shard(mesh& m, uint32_t index, net::loop& l);
  ~shard();
  shard(const shard&) = delete;
  shard& operator=(const shard&) = delete;

  uint32_t index() const { return index_; }
  uint32_t count() const { return mesh_.size(); }
  net::loop& loop() { return loop_; }
  metrics_registry& metrics() { return metrics_; }
  mesh& peers() { return mesh_; }
  void check_owner() const { owner_.check(); }

  // ---- cross-shard tasks ----
  // Sends t to run on `target`. False, and t is left with the caller, when the pair is at
  // its outstanding limit: backpressure. Never runs t before returning: a task for this
  // shard itself waits in a local queue for the next turn, like any other, so a caller
  // may send and then finish what it was doing (an HTTP handler deferring its answer).
  bool send(uint32_t target, task_ptr& t);
  bool can_send(uint32_t target) const;

  // ---- the store ----
  // Queues a durable write on a lane (messages.h: write_lane). False, w left with the
  // caller, when that lane's ring is full.
  bool write(write_ptr& w, write_lane lane = write_lane::crawl);
  bool can_write(write_lane lane = write_lane::crawl);
  bool store_streamed() const { return streamed_; }

  // Memory pressure (the reflector's, DESIGN.md 9): while paused the shard leaves sequenced
  // articles on its ring. Once it is full the store holds the broadcast and the crawl
  // lane's writes wait behind it: backpressure, nothing dropped; api-lane writes go on.
  // Owner thread only.
  void pause_articles(bool paused) { articles_paused_ = paused; }
  bool articles_paused() const { return articles_paused_; }

  void set_listener(shard_listener* l) { listener_ = l; }
  // An opaque pointer for the application (dataplane's per-shard context); tasks reach
  // the target shard's state through it.
  void set_context(void* c) { context_ = c; }
  void* context() const { return context_; }

  // The loop's turn hook (installed by the constructor): drain, flush, sleep or not.
  bool turn();

 private:
  static bool turn_hook(void* self) { return static_cast<shard*>(self)->turn(); }
  void flush();
  bool inbound_pending();

  mesh& mesh_;
  uint32_t index_;
  net::loop& loop_;
  owner_check owner_;
  metrics_registry metrics_;
  shard_listener* listener_ = nullptr;
  void* context_ = nullptr;
  std::vector<uint32_t> outstanding_;        // tasks out at each peer (origin side)
  std::vector<task_ptr> local_, local_run_;  // tasks for this shard itself, next turn
  std::vector<uint8_t> dirty_;               // control rings staged into this turn
  bool writes_dirty_ = false, api_writes_dirty_ = false;
  bool streamed_ = false;
  bool articles_paused_ = false;

  // Metrics (owner thread).
  counter* turns_;
  counter* tasks_run_;
  counter* stall_send_;
  counter* stall_write_;
  counter* wakes_sent_;
  counter* articles_in_;
  gauge* occupancy_control_;
  gauge* occupancy_articles_;
  gauge* occupancy_events_;
  gauge* outstanding_gauge_;
};

}  // namespace feedplane::runtime
