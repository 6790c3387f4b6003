#include "feedplane/runtime/shard.h"

#include <cstdio>
#include <cstdlib>

namespace feedplane::runtime {

#ifndef NDEBUG
void owner_check::fail() {
  std::fprintf(stderr, "feedplane: shard-owned object used off its owner thread\n");
  std::abort();
}
#endif

// ---- mesh ----

mesh::mesh(uint32_t shards, const mesh_options& opt)
    : n_(shards),
      opt_(opt),
      loops_(new std::atomic<net::loop*>[shards]),
      replay_need_(new std::atomic<uint64_t>[shards]) {
  // Capacity 2 x max_outstanding: a peer's requests and its replies to ours both fit.
  control_.resize(size_t{n_} * n_);
  for (uint32_t i = 0; i < n_; ++i) {
    for (uint32_t j = 0; j < n_; ++j) {
      if (i != j) control_[i * n_ + j] = std::make_unique<control_ring>(2 * opt.max_outstanding);
    }
    writes_.push_back(std::make_unique<write_ring>(opt.write_ring));
    api_writes_.push_back(std::make_unique<write_ring>(opt.api_write_ring));
    events_.push_back(std::make_unique<event_ring>(opt.event_ring));
    articles_.push_back(std::make_unique<article_ring>(opt.article_ring));
    sleepers_.push_back(std::make_unique<sleeper>());
    loops_[i].store(nullptr, std::memory_order_relaxed);  // published by thread start
    // Relaxed: before any thread that reads it starts (thread creation orders it).
    replay_need_[i].store(UINT64_MAX, std::memory_order_relaxed);
  }
}

mesh::~mesh() = default;

void mesh::wake_shard(uint32_t s) {
  if (!sleepers_[s]->must_wake()) return;
  if (net::loop* l = loop(s)) l->wake_from_any_thread();
}

// ---- shard ----

shard::shard(mesh& m, uint32_t index, net::loop& l)
    : mesh_(m), index_(index), loop_(l), outstanding_(m.size(), 0), dirty_(m.size(), 0) {
  owner_.bind();
  turns_ = &metrics_.add_counter("feedplane_loop_turns_total", "Event loop turns (turn hook runs)");
  tasks_run_ = &metrics_.add_counter("feedplane_tasks_run_total",
                                     "Cross-shard tasks run on this shard for another");
  stall_send_ = &metrics_.add_counter(
      "feedplane_ring_stalls_total",
      "Refusals because a ring or a pair's outstanding limit was full (backpressure)",
      "ring=\"control\"");
  stall_write_ = &metrics_.add_counter(
      "feedplane_ring_stalls_total",
      "Refusals because a ring or a pair's outstanding limit was full (backpressure)",
      "ring=\"write\"");
  wakes_sent_ = &metrics_.add_counter(
      "feedplane_ring_wakeups_total",
      "Wake-ups sent to a consumer that may have been asleep (MSG_RING or eventfd)");
  articles_in_ =
      &metrics_.add_counter("feedplane_articles_received_total", "Sequenced articles consumed");
  occupancy_control_ = &metrics_.add_gauge(
      "feedplane_ring_occupancy", "Items waiting in a shard's inbound rings", "ring=\"control\"");
  occupancy_events_ = &metrics_.add_gauge(
      "feedplane_ring_occupancy", "Items waiting in a shard's inbound rings", "ring=\"event\"");
  occupancy_articles_ = &metrics_.add_gauge(
      "feedplane_ring_occupancy", "Items waiting in a shard's inbound rings", "ring=\"article\"");
  outstanding_gauge_ = &metrics_.add_gauge("feedplane_tasks_outstanding",
                                           "Cross-shard tasks sent and not yet returned");
  loop_.set_turn_hook(&shard::turn_hook, this);
  mesh_.set_loop(index_, &loop_);
}

shard::~shard() {
  loop_.set_turn_hook(nullptr, nullptr);
  mesh_.set_loop(index_, nullptr);
}

bool shard::can_send(uint32_t target) const {
  return outstanding_[target] < mesh_.options().max_outstanding;
}

bool shard::send(uint32_t target, task_ptr& t) {
  check_owner();
  t->from = index_;
  t->to = target;
  if (!can_send(target)) {
    stall_send_->add();
    return false;
  }
  if (target == index_) {
    ++outstanding_[target];
    local_.push_back(std::move(t));  // bounded by max_outstanding
    return true;
  }
  t->returning = false;
  // Cannot fail: outstanding < max_outstanding and the ring holds twice that.
  if (!mesh_.control(index_, target).try_stage(std::move(t))) std::abort();
  ++outstanding_[target];
  dirty_[target] = 1;
  return true;
}

bool shard::can_write(write_lane lane) {
  write_ring& r = lane == write_lane::api ? mesh_.api_writes(index_) : mesh_.writes(index_);
  return r.free_slots() > 0;
}

bool shard::write(write_ptr& w, write_lane lane) {
  check_owner();
  w->origin_shard = index_;
  w->lane = lane;
  const bool api = lane == write_lane::api;
  if (!(api ? mesh_.api_writes(index_) : mesh_.writes(index_)).try_stage(std::move(w))) {
    stall_write_->add();
    return false;
  }
  (api ? api_writes_dirty_ : writes_dirty_) = true;
  return true;
}

void shard::flush() {
  for (uint32_t j = 0; j < mesh_.size(); ++j) {
    if (dirty_[j] == 0) continue;
    dirty_[j] = 0;
    if (mesh_.control(index_, j).publish() == 0) continue;
    if (mesh_.shard_sleeper(j).must_wake()) {
      if (net::loop* l = mesh_.loop(j)) {
        loop_.wake(*l);
        wakes_sent_->add();
      }
    }
  }
  if (writes_dirty_ || api_writes_dirty_) {
    uint32_t n = 0, api = 0;
    if (writes_dirty_) n += mesh_.writes(index_).publish();
    if (api_writes_dirty_) api = mesh_.api_writes(index_).publish();
    writes_dirty_ = api_writes_dirty_ = false;
    if (n + api != 0) mesh_.notify_store(api != 0);
  }
}

bool shard::inbound_pending() {
  if (!local_.empty()) return true;
  for (uint32_t j = 0; j < mesh_.size(); ++j) {
    if (j != index_ && mesh_.control(j, index_).has_published()) return true;
  }
  return mesh_.events(index_).has_published() ||
         (!articles_paused_ && mesh_.articles(index_).has_published());
}

bool shard::turn() {
  check_owner();
  sleeper& sl = mesh_.shard_sleeper(index_);
  // Awake: producers need not wake us until we prepare to sleep again. Stored only when
  // set, so the line producers read in must_wake() stays shared in the common case.
  if (sl.word().load(std::memory_order_relaxed) != 0) sl.cancel();
  turns_->add();
  const uint32_t batch = mesh_.options().batch;
  const uint32_t n = mesh_.size();
  int64_t occ_control = 0;
  // 0. Tasks this shard sent itself last turn (run and done here, in order).
  if (!local_.empty()) {
    local_run_.swap(local_);
    for (task_ptr& t : local_run_) {
      task_ptr mine = std::move(t);
      --outstanding_[index_];
      mine->run(*this);
      tasks_run_->add();
      mine->done(*this);
    }
    local_run_.clear();
  }
  // 1. Control first: requests from peers run here and go back; our tasks come home.
  for (uint32_t j = 0; j < n; ++j) {
    if (j == index_) continue;
    control_ring& in = mesh_.control(j, index_);
    occ_control += in.occupancy();
    in.consume(
        [&](task_ptr& t) {
          if (t->returning) {
            --outstanding_[t->to];
            task_ptr mine = std::move(t);
            mine->done(*this);
            return;
          }
          t->run(*this);
          tasks_run_->add();
          t->returning = true;
          // Cannot fail: the origin has at most max_outstanding tasks here, and the ring
          // holds twice that (see shard.h).
          if (!mesh_.control(index_, t->from).try_stage(std::move(t))) std::abort();
          dirty_[j] = 1;
        },
        batch);
  }
  // 2. Store events: acks (the write comes home), start-up records, end of streaming.
  event_ring& ev = mesh_.events(index_);
  occupancy_events_->set(ev.occupancy());
  ev.consume(
      [&](store_event& e) {
        switch (e.type) {
          case store_event::ack: {
            write_ptr w = std::move(e.write);
            w->on_durable(*this);
            break;
          }
          case store_event::records:
            if (listener_ != nullptr) {
              // A block at a time: hint every record first, then apply them.
              for_each_record(e.block, [&](kind k, std::string_view key, std::string_view v) {
                listener_->prefetch_record(k, key, v);
              });
              listener_->prefetch_end();
              for_each_record(e.block, [&](kind k, std::string_view key, std::string_view v) {
                listener_->on_record(*this, k, key, v);
              });
            }
            break;
          case store_event::streamed:
            streamed_ = true;
            if (listener_ != nullptr) listener_->on_streamed(*this);
            break;
        }
      },
      batch);
  // 3. Articles, in sequence order. The reference is dropped right after the listener.
  article_ring& ar = mesh_.articles(index_);
  occupancy_articles_->set(ar.occupancy());
  if (!articles_paused_) {
    articles_in_->add(ar.consume(
        [&](article_ref& a) {
          if (listener_ != nullptr) listener_->on_article(*this, a);
        },
        batch));
  }
  occupancy_control_->set(occ_control);
  int64_t out = 0;
  for (uint32_t v : outstanding_) out += v;
  outstanding_gauge_->set(out);

  flush();
  if (inbound_pending()) return true;
  // Going to sleep: announce it, then re-check (sleeper.h: the Dekker pattern).
  sl.prepare();
  if (inbound_pending()) {
    sl.cancel();
    return true;
  }
  return false;
}

}  // namespace feedplane::runtime
