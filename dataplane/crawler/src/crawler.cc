#include "feedplane/crawler/crawler.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/node_hash_map.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/crawler/opml.h"
#include "feedplane/crawler/placement.h"
#include "feedplane/crawler/records.h"
#include "feedplane/crawler/schedule.h"
#include "feedplane/crawler/scheduler.h"
#include "feedplane/crawler/source.h"
#include "feedplane/dataplane/auth.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/feed/dedup.h"
#include "feedplane/feed/parser.h"
#include "feedplane/net/http_client.h"
#include "feedplane/net/http_server.h"
#include "feedplane/runtime/article.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"

namespace feedplane::crawler {

namespace {

namespace rt = runtime;
using dataplane::shard_services;

static_assert(simdjson::SIMDJSON_PADDING <= net::body_padding);

// Articles one write may carry (DESIGN.md 9 "Credits"): a fetch that finds more commits
// these with exactly their seen identities and fetches the document again.
constexpr size_t k_credit = 32;
constexpr uint32_t k_max_list = 1000;
constexpr size_t k_max_url = 4096;

enum class outcome : uint8_t { none, new_entries, no_new_entries, not_modified, unchanged, error };
constexpr const char* k_outcome_names[] = {"none",         "new_entries", "no_new_entries",
                                           "not_modified", "unchanged",   "error"};
constexpr size_t k_outcomes = std::size(k_outcome_names);

// Why the next fetch is when it is (shown in a source's status).
enum class reason : uint8_t {
  new_source,
  adaptive,
  error_backoff,
  restart,
  store_busy,
  credit,
  politeness,
  retry_after,
  publisher_hint,
  gone,
  allocation,
  // The feed's own hints (feed::fetch_hints); appended: records store these numbers.
  feed_ttl,
  feed_update_period,
  feed_skip,
};
constexpr const char* k_reason_text[] = {
    "new source: fetched at once",
    "adaptive interval (FeedEx: halved when mostly new, doubled when mostly old)",
    "back-off after consecutive errors",
    "schedule resumed after a restart",
    "retry: the previous write to the store is still in flight",
    "more new entries than one write carries: the rest are fetched again at once",
    "politeness: the domain's rate cap",
    "the server asked to retry after (429/503 Retry-After)",
    "the response is fresh until then (Cache-Control max-age / Expires)",
    "disabled: the feed answered 410 Gone",
    "fetch budget: its share for sqrt(weight x posting rate), placed on its weekly profile",
    "the feed's <ttl>: not sooner than that many minutes after the last fetch (at most "
    "max_interval_s)",
    "the feed's sy:updatePeriod / sy:updateFrequency: not sooner than it updates (at most "
    "max_interval_s)",
    "the feed's skipHours / skipDays: moved to the first UTC hour it allows (at most "
    "max_interval_s)",
};
static_assert(std::size(k_reason_text) == size_t(reason::feed_skip) + 1);

reason hint_reason(feed_hint_rule r) {
  return r == feed_hint_rule::ttl             ? reason::feed_ttl
         : r == feed_hint_rule::update_period ? reason::feed_update_period
                                              : reason::feed_skip;
}

uint32_t saturating_add(uint32_t a, size_t b) {
  return uint32_t(std::min<uint64_t>(uint64_t{a} + b, UINT32_MAX));
}

int64_t wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// Politeness state of one politeness key (the id's high 32 bits), on its owner shard. Only
// keys with something to remember have one: rebalance() drops idle ones once a minute (a
// million feeds on a million hosts would otherwise keep a state per host for ever).
//
// Its due sources that cannot start (the rate cap's next slot not come, the connections all
// taken, a pause) wait in one queue, in the order they fell due, and start from its head:
// first due, first fetched, whatever holds them back. (Sources put back on the schedule at
// a pause's end would follow the heap's tie-break, the id, and the same few would go first
// after every pause, starving the rest of a host that pauses often.)
struct domain_state {
  uint32_t in_flight = 0;
  uint32_t waiting_head = 0;    // waiting[waiting_head..] are still waiting
  int64_t next_start_ms = 0;    // the rate cap's next free start slot
  int64_t paused_until_ms = 0;  // Retry-After from one of its hosts
  int64_t wake_ms = 0;          // the queue's pending wake-up (0: none)
  // (due ms, id): the due time tells a source rescheduled meanwhile (stale) from a live one.
  std::vector<std::pair<int64_t, uint64_t>> waiting;

  bool idle(int64_t now) const {
    return in_flight == 0 && waiting_head == waiting.size() && next_start_ms <= now &&
           paused_until_ms <= now;
  }
};

constexpr uint64_t k_starting = ~uint64_t{0};  // fetch_id while client.fetch() runs

enum class change_kind : uint8_t { add_one, import, remove };

struct change_item {
  uint64_t id = 0;  // the id the URL hashes to (the owner probes from it)
  std::string url, title;
};

struct source_summary {
  uint64_t id = 0;
  std::string url, title;
  int64_t last_fetch_ms = 0;
  uint32_t last_status = 0;
  uint8_t last_outcome = 0;
  uint32_t consecutive_errors = 0;
};

class crawler;

// Origin -> owner: add sources or remove one. Answers come back in done(); the durable
// result comes later as a reply_task.
struct change_task : rt::task {
  uint64_t request = 0;  // the origin's pending_ key
  change_kind kind = change_kind::add_one;
  std::vector<change_item> items;
  uint64_t remove_id = 0;
  // Filled on the owner.
  uint32_t duplicates = 0;
  uint64_t first_id = 0;  // add_one: the source's id (new or existing)
  bool written = false;   // a write went to the store: a reply_task follows
  bool busy = false;      // the write ring was full: nothing changed
  bool not_found = false;
  void run(rt::shard& target) override;
  void done(rt::shard& origin) override;
};

// Owner -> origin, after the change was durable and installed.
struct reply_task : rt::task {
  uint64_t request = 0;
  uint32_t added = 0;
  int32_t status = 0;  // store_errc
  void run(rt::shard& target) override;
  void done(rt::shard&) override {}
};

struct change_write : rt::store_write {
  uint32_t requester = 0;
  uint64_t request = 0;
  change_kind kind = change_kind::add_one;
  std::vector<uint64_t> ids;
  void on_durable(rt::shard& s) override;
};

struct crawl_write : rt::store_write {
  uint64_t source_id = 0;
  void on_durable(rt::shard& s) override;
};

// A bound on the last run's fetches (kind::crawl, a key no source has: 8 bytes big-endian
// unix ms): no fetch of it began later. Shard 0 writes now + 2 periods every period (a
// beat late by up to a period still bounds), and now when it stops (no fetch starts after
// a stop).
constexpr std::string_view k_alive_key = "alive";
constexpr int64_t k_alive_period_ms = 10'000;
struct alive_write : rt::store_write {
  void on_durable(rt::shard& s) override;
};

// A shard's sum of sqrt(weight x rate) over its feeds with history, to every peer: each
// shard's share of the fetch budget is its share of the sum (DESIGN.md 9).
struct share_task : rt::task {
  double sum = 0;
  void run(rt::shard& target) override;
  void done(rt::shard&) override {}
};

// Origin-side state of a scatter-gather read (list, export).
struct gather_state {
  uint32_t waiting = 0;
  bool export_opml = false;
  uint64_t after = 0;
  uint32_t limit = 0;
  std::vector<source_summary> all;
  net::deferred_response later;
};

struct list_task : rt::task {
  std::shared_ptr<gather_state> state;  // origin only; never touched on the target
  uint64_t after = 0;
  uint32_t limit = 0;
  std::vector<source_summary> out;
  void run(rt::shard& target) override;
  void done(rt::shard& origin) override;
};

struct status_task : rt::task {
  uint64_t id = 0;
  net::deferred_response later;  // used on the origin only
  bool found = false;
  std::string body;
  void run(rt::shard& target) override;
  void done(rt::shard& origin) override;
};

// Origin-side state of a change.
struct pending_change {
  change_kind kind = change_kind::add_one;
  net::deferred_response later;
  uint32_t remaining = 0;  // tasks out + replies expected
  uint32_t added = 0, duplicates = 0;
  int32_t store_status = 0;
  bool busy = false, not_found = false;
  uint64_t id = 0;
  std::string url;
  std::vector<std::string> invalid;
};

class crawler final : public dataplane::component {
 public:
  static constexpr dataplane::component_id id = dataplane::component_id::crawler;

  explicit crawler(shard_services& s)
      : s_(s),
        cfg_(s.cfg->crawler),
        tick_(&crawler::on_tick, this),
        alive_(&crawler::on_alive, this) {
    bounds_.floor_s = cfg_.min_interval_s;
    read_alive();
    bounds_.ceiling_s = std::max(cfg_.max_interval_s, cfg_.min_interval_s);
    rt::metrics_registry& m = s.rt->metrics();
    for (size_t i = 1; i < k_outcomes; ++i) {
      fetches_[i] = &m.add_counter("feedplane_crawler_fetches_total", "Fetches finished, by result",
                                   fmt::format("result=\"{}\"", k_outcome_names[i]));
      bytes_[i] = &m.add_counter("feedplane_crawler_bytes_total",
                                 "Bytes received on the wire for fetches, by result",
                                 fmt::format("result=\"{}\"", k_outcome_names[i]));
    }
    article_bytes_ = &m.add_counter("feedplane_crawler_article_bytes_total",
                                    "Bytes of the articles handed to the store (frozen size)");
    entry_bytes_ = &m.add_counter("feedplane_crawler_entry_bytes_total",
                                  "Text bytes of the entries handed to the store (guid, title, "
                                  "link, author, summary, content)");
    ingest_cpu_ = &m.add_histogram("feedplane_crawler_ingest_cpu_seconds",
                                   "Thread CPU to ingest one 2xx document: hash, parse, dedup, "
                                   "freeze its articles",
                                   {}, 1e-6);
    articles_ = &m.add_counter("feedplane_crawler_articles_total",
                               "New and updated entries handed to the store, durable");
    articles_dropped_ = &m.add_counter("feedplane_crawler_articles_dropped_total",
                                       "Entries too large to freeze into an article");
    credit_stalls_ = &m.add_counter(
        "feedplane_crawler_credit_stalls_total",
        "Turns in which due fetches waited for space in the write ring (backpressure)");
    in_flight_gauge_ =
        &m.add_gauge("feedplane_crawler_fetches_in_flight", "Fetches in flight on the client");
    sources_gauge_ = &m.add_gauge("feedplane_crawler_sources", "Sources owned, durable");
    due_gauge_ = &m.add_gauge("feedplane_crawler_schedule_entries",
                              "Entries in the fetch schedule (one per source, plus stale ones)");
    weight_updates_ = &m.add_counter(
        "feedplane_crawler_weight_updates_total",
        "Reflector reports of a source's matched subscriptions applied to its weight");
    weight_unknown_ = &m.add_counter(
        "feedplane_crawler_weight_updates_unknown_total",
        "Reflector reports for sources this shard no longer has (deleted meanwhile)");
    state_writes_ = &m.add_counter(
        "feedplane_crawler_state_writes_total",
        "Writes of a source's record that carry no article (its schedule, validators, a "
        "redirect's observations, its weight, an error or the end of its errors moved)");
  }

  ~crawler() override {
    s_.rt->loop().disarm(tick_);
    s_.rt->loop().disarm(alive_);
  }

  static crawler& of(rt::shard& sh) { return shard_services::of(sh).get<crawler>(); }
  shard_services& services() { return s_; }
  simdjson::ondemand::parser& json() { return json_; }
  uint64_t new_request(pending_change p) {
    const uint64_t r = next_request_++;
    pending_.emplace(r, std::move(p));
    return r;
  }
  void forget_request(uint64_t r) { pending_.erase(r); }

  // ---- component ----
  void on_record(rt::shard&, rt::kind k, std::string_view key, std::string_view value) override;
  void on_streamed(rt::shard&) override;
  // Stopping drains: no fetch starts, but those in flight finish and their results are
  // written (serve waits a bounded time for quiescent() before it cancels the rest). A
  // fetch the server answered and we dropped would be asked again at once after the
  // restart, under the feed's hints (e2e_crawler_caps saw one 1.2 s after the last).
  void stop() override {
    stopping_ = true;
    s_.rt->loop().disarm(tick_);
    s_.rt->loop().disarm(alive_);
    if (streamed_ && s_.rt->index() == 0) write_alive(wall_ms());
    if (!backlog_.empty()) wake_at(wall_ms() + 5);
  }
  bool quiescent() const override { return in_flight_ == 0 && writes_pending_ == 0; }
  void on_source_matches(rt::shard&, std::span<const dataplane::source_matches> batch) override;

  // ---- changes (owner side) ----
  void change_on_owner(change_task& t);
  void change_durable(change_write& w);
  // ---- changes (origin side) ----
  void change_returned(change_task& t);
  void change_replied(uint64_t request, uint32_t added, int32_t status);
  // ---- reads (owner side) ----
  void list_on_owner(list_task& t) const;
  void status_on_owner(status_task& t) const;
  // ---- fetching ----
  void crawl_durable(crawl_write& w);
  void alive_durable() { --writes_pending_; }
  // ---- the budget ----
  void peer_share(uint32_t from, double sum) {
    if (from < peer_sums_.size()) peer_sums_[from] = sum;
  }

 private:
  void finish_change(uint64_t request, pending_change& p);
  void schedule(source& s, int64_t at_ms, reason why);
  void wake_at(int64_t at_ms);
  static void on_tick(void* self) { static_cast<crawler*>(self)->pump(); }
  void pump();
  static void on_alive(void* self) { static_cast<crawler*>(self)->beat(); }
  void beat();
  void write_alive(int64_t bound_ms);
  void read_alive();
  void flush_backlog();
  void start_fetch(source& s);
  static void on_fetched(void* self, uint64_t fetch_id, net::fetch_result& r) {
    static_cast<crawler*>(self)->fetched(fetch_id, r);
  }
  void fetched(uint64_t fetch_id, net::fetch_result& r);
  // Recomputes this shard's allocation constant from its feeds' learnt rates and its share
  // of the budget, and tells the peers its sum. Once a minute: O(feeds).
  void rebalance(int64_t now);
  bool budgeted(const source& s, int64_t now_s) const {
    return cfg_.fetch_budget_per_hour != 0 && s.rec.history.enough(now_s, hist_params_);
  }
  double demand(const source& s, int64_t now_s) const {
    return std::sqrt(double(s.weight()) * s.rec.history.rate(now_s, hist_params_));
  }
  // Fetches per second the allocation gives s (budgeted(s) holds).
  double allocated_rate(const source& s, int64_t now_s) const {
    return std::clamp(alloc_k_ * demand(s, now_s), 1.0 / cfg_.budget_max_interval_s,
                      1.0 / std::max<uint32_t>(1, bounds_.floor_s));
  }

  void fail(source& s, std::string_view error_name, int64_t now, int64_t not_before_ms = 0);
  void release_domain(uint64_t sid);
  void pause_domain(uint32_t key, int64_t until_ms);
  // Puts the source at the head of its domain's queue, due at at_ms (a Retry-After pause).
  void requeue_first(source& s, int64_t at_ms);
  void wake_domain(uint32_t key, domain_state& d, int64_t at_ms);
  bool can_start(const domain_state& d, int64_t now) const;
  bool credits_allow(rt::write_ring& ring);
  void start_in(domain_state& d, source& s, int64_t now);
  bool drain(domain_state& d, uint32_t key, int64_t now, rt::write_ring& ring);
  // Schedules the next fetch after a success: the interval, bounded by the response's
  // freshness (never later than the ceiling).
  void schedule_after_success(source& s, const net::fetch_result& r, int64_t now);
  void note_redirects(source& s, const net::fetch_result& r);
  // A fetch that found nothing new (a 304, or the same document): the interval adapts, the
  // next fetch is scheduled, and the record is written only if the interval or (record_moved)
  // what a restart needs changed.
  void nothing_new(source& s, const net::fetch_result& r, int64_t now, outcome o,
                   bool record_moved);
  // record_moved: the record changed in ways a fetch with nothing new must persist.
  void ingest(source& s, net::fetch_result& r, int64_t now, int64_t previous_fetch_ms,
              bool record_moved);
  void commit(source& s, std::vector<rt::article_ref> articles);
  void count(outcome o) { fetches_[size_t(o)]->add(); }
  void send_reply(uint32_t to, uint64_t request, uint32_t added, int32_t status);
  // Fast: one probe of a flat table (a fetch's completion and the pump each look a source
  // up; the ordered map's walk was 3% of a crawl's CPU at 10,000 sources, its tree's depth
  // in dependent cache misses at a million).
  source* find(uint64_t sid) {
    auto it = by_id_.find(sid);
    return it == by_id_.end() ? nullptr : it->second;
  }
  const source* find(uint64_t sid) const {
    auto it = by_id_.find(sid);
    return it == by_id_.end() ? nullptr : it->second;
  }
  // Adds the source to both maps (or finds it); added is false when it was there.
  source& emplace_source(uint64_t sid, bool* added) {
    auto [it, fresh] = sources_.try_emplace(sid);
    if (fresh) {
      by_id_.emplace(sid, &it->second);
      // As if its weight had just been written: a start-up that loads a million sources,
      // or an import, does not make each write its weight at its next 304 (within about
      // two epochs, as for any other).
      it->second.weight_epoch = weight_epoch(wall_ms());
    }
    *added = fresh;
    return it->second;
  }
  // Weight epochs: [crawler] weight_persist_interval_s long, numbered mod 4. A weight that
  // moved is written by a fetch that brought nothing new only if no write carried the
  // weight in the current epoch, so at most once per source per epoch (the reflectors
  // report matches every few seconds; a third of the store's writes in the crawler
  // benchmark were a 304 persisting a weight). Two bits: a write exactly 4 epochs ago reads
  // as "this epoch", which delays the next by one; so a crash or a stop loses at most about
  // two epochs of a weight's updates, never its articles' count.
  uint8_t weight_epoch(int64_t now_ms) const {
    const int64_t len = int64_t(cfg_.weight_persist_interval_s) * 1000;
    return len == 0 ? 0 : uint8_t((now_ms / len) & 3);
  }
  bool weight_due(const source& s, int64_t now_ms) const {
    return s.weight_changed &&
           (cfg_.weight_persist_interval_s == 0 || s.weight_epoch != weight_epoch(now_ms));
  }
  void erase_source(uint64_t sid) {
    by_id_.erase(sid);
    sources_.erase(sid);
  }
  void update_gauges() {
    sources_gauge_->set(int64_t(durable_sources_));
    in_flight_gauge_->set(int64_t(in_flight_));
    due_gauge_->set(int64_t(heap_.size()));
  }

  shard_services& s_;
  const dataplane::crawler_config& cfg_;
  interval_bounds bounds_;
  history_params hist_params_;
  double alloc_k_ = 0;  // fetches per second per unit of sqrt(weight x rate)
  int64_t next_rebalance_ms_ = 0;
  std::vector<double> peer_sums_;  // each shard's last reported sum (own slot: ours)
  std::vector<double> demands_;    // rebalance() scratch
  bool stopping_ = false;
  bool streamed_ = false;

  // Sources this shard owns, by id (ordered: listing pages in id order).
  // The source lives in the map's node (stable: found by id from callbacks and the schedule).
  // Only emplace_source and erase_source change it, keeping by_id_, its index, in step.
  std::map<uint64_t, source> sources_;
  absl::flat_hash_map<uint64_t, source*> by_id_;
  uint64_t durable_sources_ = 0;
  // The schedule: (due unix ms, id), earliest first. Stale entries (the source moved or
  // went) are skipped when popped: a push per reschedule, no search.
  using due_entry = std::pair<int64_t, uint64_t>;
  std::priority_queue<due_entry, std::vector<due_entry>, std::greater<>> heap_;
  void start_due(const due_entry& e, source* s, int64_t now);
  static constexpr size_t k_due_batch = 16;  // pump(): sources whose loads overlap
  std::vector<due_entry> due_batch_;
  std::vector<source*> due_sources_;
  net::timer tick_;
  int64_t tick_at_ = 0;   // unix ms the tick is armed for (0: not armed)
  net::timer alive_;      // shard 0: writes k_alive_key every k_alive_period_ms
  int64_t alive_ms_ = 0;  // the bound the last run left (k_alive_key), read at start; 0: none

  // By politeness key hash; nodes, so a domain_state& stays valid while others are added.
  absl::node_hash_map<uint32_t, domain_state> domains_;
  // (ms, key): when a domain's queue may move (a rate slot, a pause's end, a fetch ended).
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      domain_wakes_;
  absl::flat_hash_map<uint64_t, uint64_t> fetches_in_;  // fetch id -> source id
  source* starting_ = nullptr;  // the source whose client.fetch() call is running
  uint32_t in_flight_ = 0;
  uint32_t writes_pending_ = 0;                       // crawl writes not yet acknowledged
  std::vector<rt::write_ptr> backlog_;                // writes the ring refused, in order
  std::vector<std::unique_ptr<reply_task>> replies_;  // replies send() refused, in order

  // Per-shard scratch, reused from one fetch to the next.
  net::fetch_request req_;
  feed::parser parser_;
  feed::feed feed_, trimmed_;
  std::vector<feed::verdict> verdicts_;
  feed::dedup_scratch dedup_;                   // keys, repeats and merge buffers of classify()
  std::vector<feed::entry_key> keys_;           // the fetched document's keys
  std::vector<feed::seen_record> seen_before_;  // a feed's records before an overflowing fetch
  crawl_record record_;                         // commit()'s durable form of a source
  std::vector<size_t> picks_;
  std::vector<int64_t> postings_;
  rt::article_builder builder_;
  std::string value_;
  simdjson::ondemand::parser json_;

  std::unordered_map<uint64_t, pending_change> pending_;
  uint64_t next_request_ = 1;

  rt::counter* fetches_[k_outcomes] = {};
  rt::counter* bytes_[k_outcomes] = {};
  rt::counter* article_bytes_ = nullptr;
  rt::counter* entry_bytes_ = nullptr;
  rt::histogram* ingest_cpu_ = nullptr;
  rt::counter* articles_;
  rt::counter* articles_dropped_;
  rt::counter* credit_stalls_;
  rt::gauge* in_flight_gauge_;
  rt::gauge* sources_gauge_;
  rt::gauge* due_gauge_;
  rt::counter* weight_updates_;
  rt::counter* state_writes_;
  rt::counter* weight_unknown_;
};

// ---------------------------------------------------------------- tasks and writes

void change_task::run(rt::shard& target) { crawler::of(target).change_on_owner(*this); }
void change_task::done(rt::shard& origin) { crawler::of(origin).change_returned(*this); }
void reply_task::run(rt::shard& target) {
  crawler::of(target).change_replied(request, added, status);
}
void change_write::on_durable(rt::shard& s) { crawler::of(s).change_durable(*this); }
void crawl_write::on_durable(rt::shard& s) { crawler::of(s).crawl_durable(*this); }
void alive_write::on_durable(rt::shard& s) { crawler::of(s).alive_durable(); }
void list_task::run(rt::shard& target) { crawler::of(target).list_on_owner(*this); }
void status_task::run(rt::shard& target) { crawler::of(target).status_on_owner(*this); }
void share_task::run(rt::shard& target) { crawler::of(target).peer_share(from, sum); }

void append_summary_json(const source_summary& s, std::string& out) {
  out += "{\"id\": \"";
  out += format_id(s.id);
  out += "\", \"url\": ";
  base::append_json_string(s.url, out);
  out += ", \"title\": ";
  base::append_json_string(s.title, out);
  out += fmt::format(
      ", \"last_fetch_ms\": {}, \"last_status\": {}, \"last_result\": \"{}\", "
      "\"consecutive_errors\": {}}}",
      s.last_fetch_ms, s.last_status,
      k_outcome_names[std::min<size_t>(s.last_outcome, k_outcomes - 1)], s.consecutive_errors);
}

void list_task::done(rt::shard&) {
  gather_state& st = *state;
  for (auto& s : out) st.all.push_back(std::move(s));
  if (--st.waiting != 0) return;
  std::sort(st.all.begin(), st.all.end(),
            [](const source_summary& a, const source_summary& b) { return a.id < b.id; });
  net::http_response r;
  r.cache_control = "no-store";
  if (st.export_opml) {
    std::vector<opml_feed> feeds;
    feeds.reserve(st.all.size());
    for (auto& s : st.all) feeds.push_back({std::move(s.url), std::move(s.title)});
    r.storage = render_opml(feeds, "feedplane sources");
    r.content_type = "text/x-opml; charset=utf-8";
  } else {
    const bool more = st.all.size() > st.limit;
    if (more) st.all.resize(st.limit);
    r.storage = "{\"sources\": [";
    for (size_t i = 0; i < st.all.size(); ++i) {
      if (i != 0) r.storage += ", ";
      append_summary_json(st.all[i], r.storage);
    }
    r.storage += "], \"next\": ";
    if (more && !st.all.empty()) {
      r.storage += '"' + format_id(st.all.back().id) + '"';
    } else {
      r.storage += "null";
    }
    r.storage += "}\n";
    r.content_type = "application/json";
  }
  r.body = r.storage;
  st.later.complete(r);
}

void status_task::done(rt::shard&) {
  net::http_response r;
  if (!found) {
    net::set_json_error(r, 404, "not_found", fmt::format("no source {}", format_id(id)));
  } else {
    r.storage = std::move(body);
    r.body = r.storage;
    r.content_type = "application/json";
    r.cache_control = "no-store";
  }
  later.complete(r);
}

// ---------------------------------------------------------------- changes

void crawler::change_on_owner(change_task& t) {
  auto w = std::make_unique<change_write>();
  w->requester = t.from;
  w->request = t.request;
  w->kind = t.kind;
  if (!s_.rt->can_write()) {
    t.busy = true;
    return;
  }
  if (t.kind == change_kind::remove) {
    source* s = find(t.remove_id);
    if (s == nullptr || !s->durable) {
      t.not_found = true;
      return;
    }
    const std::string key = store_key(s->id);
    w->ops.push_back({rt::kind::sources, true, key, {}});
    w->ops.push_back({rt::kind::crawl, true, key, {}});
    w->ids.push_back(s->id);
  } else {
    for (change_item& it : t.items) {
      uint64_t sid = it.id;
      bool dup = false;
      // Probe from the URL's id: same URL = duplicate; another URL = a collision, next id.
      for (source* s = find(sid); s != nullptr; s = find(sid)) {
        if (s->url() == it.url) {
          dup = true;
          break;
        }
        sid = next_id_candidate(sid);
      }
      if (t.first_id == 0) t.first_id = sid;
      if (dup) {
        ++t.duplicates;
        continue;
      }
      // Reserved now (so a concurrent add sees it), installed once durable.
      bool added = false;
      source& s = emplace_source(sid, &added);
      s.id = sid;
      s.text.set(source_text::url, it.url);
      s.text.set(source_text::title, it.title);
      s.rec.interval_s = initial_interval(bounds_);
      source_record sr{it.url, it.title};
      encode(sr, value_);
      w->ops.push_back({rt::kind::sources, false, store_key(sid), value_});
      w->ids.push_back(sid);
    }
    if (w->ids.empty()) return;
  }
  rt::write_ptr wp = std::move(w);
  // Cannot fail: can_write() was checked above, on this thread, in this turn.
  t.written = s_.rt->write(wp);
}

void crawler::change_durable(change_write& w) {
  uint32_t added = 0;
  for (uint64_t sid : w.ids) {
    source* s = find(sid);
    if (s == nullptr) continue;
    if (w.kind == change_kind::remove) {
      if (w.status != 0) continue;
      const uint64_t fid = s->fetch_id;
      if (s->durable) --durable_sources_;
      erase_source(sid);  // first, so the cancelled fetch's callback finds nothing
      if (fid != 0 && fid != k_starting) s_.client->cancel(fid);
      ++added;
    } else if (w.status != 0) {
      erase_source(sid);  // not durable: the reservation goes
    } else {
      s->durable = true;
      ++durable_sources_;
      ++added;
      schedule(*s, wall_ms(), reason::new_source);
    }
  }
  update_gauges();
  send_reply(w.requester, w.request, added, w.status);
}

void crawler::send_reply(uint32_t to, uint64_t request, uint32_t added, int32_t status) {
  if (to == s_.rt->index()) {
    change_replied(request, added, status);
    return;
  }
  auto t = std::make_unique<reply_task>();
  t->request = request;
  t->added = added;
  t->status = status;
  rt::task_ptr tp = std::move(t);
  if (!replies_.empty() || !s_.rt->send(to, tp)) {
    replies_.emplace_back(static_cast<reply_task*>(tp.release()));
    replies_.back()->to = to;
    wake_at(wall_ms() + 5);
  }
}

void crawler::change_returned(change_task& t) {
  auto it = pending_.find(t.request);
  if (it == pending_.end()) return;
  pending_change& p = it->second;
  p.duplicates += t.duplicates;
  p.busy |= t.busy;
  p.not_found |= t.not_found;
  if (p.kind == change_kind::add_one) p.id = t.first_id;
  --p.remaining;
  if (t.written) ++p.remaining;  // the reply comes after this return (same ring, FIFO)
  if (p.remaining == 0) finish_change(it->first, p);
}

void crawler::change_replied(uint64_t request, uint32_t added, int32_t status) {
  auto it = pending_.find(request);
  if (it == pending_.end()) return;
  pending_change& p = it->second;
  p.added += added;
  if (status != 0) p.store_status = status;
  if (--p.remaining == 0) finish_change(it->first, p);
}

// The answer to a change, from what its parts reported.
void render_change(const pending_change& p, net::http_response& r) {
  r.cache_control = "no-store";
  r.content_type = "application/json";
  if (p.store_status != 0) {
    net::set_json_error(r, 503, store::store_errc_name(store::store_errc(p.store_status)),
                        store::store_errc_message(store::store_errc(p.store_status)));
    return;
  }
  if (p.busy) {
    net::set_unavailable(r, "the store's write ring is full; retry (nothing is added twice)");
    return;
  }
  if (p.kind == change_kind::remove) {
    if (p.not_found) {
      net::set_json_error(r, 404, "not_found", fmt::format("no source {}", format_id(p.id)));
      return;
    }
    r.storage = fmt::format("{{\"deleted\": \"{}\"}}\n", format_id(p.id));
  } else if (p.kind == change_kind::add_one) {
    r.status = p.added != 0 ? 201 : 200;
    r.storage = fmt::format("{{\"id\": \"{}\", \"url\": ", format_id(p.id));
    base::append_json_string(p.url, r.storage);
    r.storage += "}\n";
  } else {
    r.storage =
        fmt::format("{{\"added\": {}, \"duplicates\": {}, \"invalid\": [", p.added, p.duplicates);
    for (size_t i = 0; i < p.invalid.size(); ++i) {
      if (i != 0) r.storage += ", ";
      base::append_json_string(p.invalid[i], r.storage);
    }
    r.storage += "]}\n";
  }
  r.body = r.storage;
}

void crawler::finish_change(uint64_t request, pending_change& p) {
  net::http_response r;
  render_change(p, r);
  p.later.complete(r);
  pending_.erase(request);
}

// ---------------------------------------------------------------- reads

source_summary summarize(const source& s) {
  source_summary o;
  o.id = s.id;
  o.url = s.url();
  o.title = s.title();
  o.last_fetch_ms = s.rec.last_fetch_ms;
  o.last_status = s.rec.last_status;
  o.last_outcome = s.rec.last_outcome;
  o.consecutive_errors = s.rec.consecutive_errors;
  return o;
}

void crawler::list_on_owner(list_task& t) const {
  for (auto it = sources_.upper_bound(t.after); it != sources_.end() && t.out.size() < t.limit;
       ++it) {
    if (it->second.durable) t.out.push_back(summarize(it->second));
  }
}

void crawler::status_on_owner(status_task& t) const {
  const source* found = find(t.id);
  if (found == nullptr || !found->durable) return;
  const source& s = *found;
  const crawl_fields& c = s.rec;
  t.found = true;
  std::string& b = t.body;
  b = fmt::format("{{\"id\": \"{}\", \"shard\": {}, \"url\": ", format_id(s.id), s_.rt->index());
  base::append_json_string(s.url(), b);
  b += ", \"title\": ";
  base::append_json_string(s.title(), b);
  b += fmt::format(", \"fetches\": {}, \"articles\": {}, \"in_flight\": {}, ", c.fetches,
                   c.articles, s.fetch_id != 0 ? "true" : "false");
  if (c.last_fetch_ms != 0) {
    b += fmt::format(
        "\"last_fetch\": {{\"time_ms\": {}, \"result\": \"{}\", \"status\": {}, \"bytes\": {}, "
        "\"new_entries\": {}}}, ",
        c.last_fetch_ms, k_outcome_names[std::min<size_t>(c.last_outcome, k_outcomes - 1)],
        c.last_status, c.last_bytes, c.last_new);
  } else {
    b += "\"last_fetch\": null, ";
  }
  b += fmt::format("\"next_fetch\": {{\"time_ms\": {}, \"reason\": ", c.next_fetch_ms);
  base::append_json_string(
      k_reason_text[std::min<size_t>(c.next_reason, std::size(k_reason_text) - 1)], b);
  b += fmt::format("}}, \"interval_s\": {}, ", c.interval_s);
  // The allocation's weight: 1 + the subscriptions a recent article matched (the decayed
  // matches over the decayed articles).
  b += fmt::format(
      "\"weight\": {:.6g}, \"weight_basis\": {{\"matches\": {:.6g}, \"articles\": {:.6g}}}, ",
      s.weight(), c.matched.matches, c.matched.articles);
  // Which rule sets the next success's fetch, and what the scheduler learnt.
  const int64_t now_s = wall_ms() / 1000;
  const bool planned = budgeted(s, now_s);
  b += fmt::format(
      "\"schedule\": {{\"rule\": \"{}\", \"enough_history\": {}, \"postings_per_day\": {:.3f}, "
      "\"history_since_ms\": {}, \"budget_interval_s\": ",
      planned ? "allocation" : "adaptive", c.history.enough(now_s, hist_params_) ? "true" : "false",
      c.history.rate(now_s, hist_params_) * 86'400, c.history.since_s() * 1000);
  if (planned) {
    b += fmt::format("{:.0f}}}, ", 1 / allocated_rate(s, now_s));
  } else {
    b += "null}, ";
  }
  // The publisher's own hints from its last document (0 and []: not said).
  const feed::fetch_hints hints = c.hints.get();
  b += fmt::format("\"feed_hints\": {{\"ttl_s\": {}, \"update_s\": {}, \"skip_hours\": [",
                   hints.ttl_s, hints.update_s);
  for (int h = 0, n = 0; h < 24; ++h) {
    if ((hints.skip_hours >> h & 1u) != 0) b += fmt::format("{}{}", n++ != 0 ? ", " : "", h);
  }
  b += "], \"skip_days\": [";
  static constexpr const char* k_days[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                            "Thursday", "Friday", "Saturday"};
  for (int d = 0, n = 0; d < 7; ++d) {
    if ((hints.skip_days >> d & 1u) != 0)
      b += fmt::format("{}\"{}\"", n++ != 0 ? ", " : "", k_days[d]);
  }
  b += "]}, ";
  b += fmt::format("\"consecutive_errors\": {}, \"last_error\": ", c.consecutive_errors);
  if (const std::string_view e = s.text.get(source_text::last_error); e.empty()) {
    b += "null";
  } else {
    base::append_json_string(e, b);
  }
  b += fmt::format(", \"disabled\": {}, \"moving_to\": ",
                   (c.flags & crawl_gone) != 0 ? "\"gone (410)\"" : "null");
  if (const std::string_view m = s.text.get(source_text::moved_to); m.empty()) {
    b += "null";
  } else {
    base::append_json_string(m, b);
  }
  b += fmt::format(", \"moved_observations\": {}", c.moved_count);
  b += ", \"validators\": {\"etag\": ";
  base::append_json_string(s.text.get(source_text::etag), b);
  b += ", \"last_modified\": ";
  base::append_json_string(s.text.get(source_text::last_modified), b);
  b += fmt::format(", \"document_hash\": \"{:016x}\"}}, \"seen_entries\": {}}}\n",
                   s.state.document_hash(), s.state.seen().size());
}

// ---------------------------------------------------------------- start-up

void crawler::on_record(rt::shard&, rt::kind k, std::string_view key, std::string_view value) {
  uint64_t sid = 0;
  if (!parse_store_key(key, &sid)) return;
  auto bad = [&](record_errc e) {
    fmt::print(stderr, "feedplane: crawler: shard {}: {} record {:?} skipped: {}\n", s_.rt->index(),
               rt::kind_name(k), key, record_errc_name(e));
  };
  if (k == rt::kind::sources) {
    source_record sr;
    if (const record_errc e = decode(value, sr); e != record_errc::ok) return bad(e);
    bool added = false;
    source& s = emplace_source(sid, &added);
    if (!added) return;
    s.id = sid;
    s.text.set(source_text::url, sr.url);
    s.text.set(source_text::title, sr.title);
    s.durable = true;
    s.rec.interval_s = initial_interval(bounds_);
    ++durable_sources_;
  } else if (k == rt::kind::crawl) {
    // The store streams kind::sources before kind::crawl: the source is here already.
    source* s = find(sid);
    if (s == nullptr) return;
    // A refused record leaves the source as new: fetched at once, only entries within the
    // recent window delivered (DESIGN.md 9), rather than a guess at a garbled state.
    if (const record_errc e = decode(value, record_); e != record_errc::ok) return bad(e);
    s->from_record(record_);
    s->fetched = true;
  }
}

void crawler::on_streamed(rt::shard&) {
  streamed_ = true;
  const int64_t now = wall_ms();
  const int64_t since = alive_ms_;  // no fetch of the last run began later
  if (s_.rt->index() == 0) s_.rt->loop().arm(alive_, uint64_t(k_alive_period_ms));
  for (auto& [sid, s] : sources_) {
    if (!s.durable) continue;
    if ((s.rec.flags & crawl_gone) != 0) continue;
    if (s.fetched && s.rec.next_reason == uint8_t(reason::retry_after) &&
        s.rec.next_fetch_ms > now) {
      // A host's Retry-After pauses its whole domain, also across a restart: the pause is
      // kept only in the records of the sources that were answered 429 or 503.
      pause_domain(uint32_t(sid >> 32), s.rec.next_fetch_ms);
      schedule(s, s.rec.next_fetch_ms, reason::retry_after);
    } else if (s.fetched && alive_ms_ != 0 && s.rec.next_fetch_ms <= since) {
      // Due before the last run ended: it may have been fetched after its record was
      // written (a 304 that moved nothing is not persisted), as late as `since`. Not again
      // sooner than the floor and the feed's own hints ask, counted from then.
      feed_hint_rule rule = feed_hint_rule::none;
      const int64_t at =
          bound_by_feed_hints(s.rec.hints.get(), since, since + int64_t(bounds_.floor_s) * 1000,
                              bounds_.ceiling_s, &rule);
      s.wave = true;  // many come due together: spread the next
      schedule(s, std::max(now, at), reason::restart);
    } else if (s.fetched) {
      s.wave = s.rec.next_fetch_ms <= now;  // every overdue source is due now: one wave
      schedule(s, std::max(now, s.rec.next_fetch_ms), reason::restart);
    } else {
      schedule(s, now, reason::new_source);
    }
  }
  update_gauges();
  pump();
}

// ---------------------------------------------------------------- the last run's bound

// Read before start-up streaming, so before any shard's first beat of this run.
void crawler::read_alive() {
  if (s_.db == nullptr) return;
  std::string v, err;
  if (!s_.db->get(rt::kind::crawl, k_alive_key, &v, &err) || v.size() != 8) return;
  uint64_t ms = 0;
  for (char c : v) ms = (ms << 8) | uint8_t(c);
  alive_ms_ = int64_t(std::min<uint64_t>(ms, uint64_t(INT64_MAX) / 2));
}

void crawler::beat() {
  write_alive(wall_ms() + 2 * k_alive_period_ms);
  if (!stopping_) s_.rt->loop().arm(alive_, uint64_t(k_alive_period_ms));
}

void crawler::write_alive(int64_t bound_ms) {
  if (!s_.rt->can_write()) return;  // the next beat, or the stop's
  auto w = std::make_unique<alive_write>();
  const uint64_t ms = uint64_t(bound_ms);
  std::string v(8, '\0');
  for (int i = 0; i < 8; ++i) v[size_t(i)] = char(uint8_t(ms >> (56 - 8 * i)));
  w->ops.push_back({rt::kind::crawl, false, std::string(k_alive_key), std::move(v)});
  ++writes_pending_;  // a stop waits for it (quiescent)
  rt::write_ptr wp = std::move(w);
  if (!s_.rt->write(wp)) --writes_pending_;  // cannot happen: can_write() above
}

// ---------------------------------------------------------------- the schedule

void crawler::schedule(source& s, int64_t at_ms, reason why) {
  s.rec.next_fetch_ms = at_ms;
  s.rec.next_reason = uint8_t(why);
  heap_.emplace(at_ms, s.id);
  wake_at(at_ms);
}

void crawler::wake_at(int64_t at_ms) {
  if (!streamed_ || (stopping_ && backlog_.empty())) return;
  if (tick_.armed() && tick_at_ <= at_ms) return;
  net::loop& l = s_.rt->loop();
  l.disarm(tick_);
  tick_at_ = at_ms;
  l.arm(tick_, uint64_t(std::max<int64_t>(0, at_ms - wall_ms())));
}

void crawler::flush_backlog() {
  size_t i = 0;
  for (; i < backlog_.size(); ++i) {
    if (!s_.rt->write(backlog_[i])) break;
  }
  backlog_.erase(backlog_.begin(), backlog_.begin() + ptrdiff_t(i));
  size_t j = 0;
  for (; j < replies_.size(); ++j) {
    rt::task_ptr tp = std::move(replies_[j]);
    const uint32_t to = tp->to;
    if (!s_.rt->send(to, tp)) {
      replies_[j].reset(static_cast<reply_task*>(tp.release()));
      break;
    }
  }
  replies_.erase(replies_.begin(), replies_.begin() + ptrdiff_t(j));
}

// Starts every due fetch the credits allow. Why it is cheap: a heap pop per due source,
// nothing per idle source.
void crawler::pump() {
  tick_at_ = 0;
  flush_backlog();
  if (stopping_) {
    if (!backlog_.empty()) wake_at(wall_ms() + 5);  // draining (stop())
    return;
  }
  const int64_t now = wall_ms();
  if (now >= next_rebalance_ms_) rebalance(now);
  rt::write_ring& ring = s_.rt->peers().writes(s_.rt->index());
  bool blocked = !backlog_.empty() || !replies_.empty();
  // Domain queues that may move first: they hold sources due before any in the heap.
  while (!blocked && !domain_wakes_.empty() && domain_wakes_.top().first <= now) {
    const auto [at, key] = domain_wakes_.top();
    domain_wakes_.pop();
    auto it = domains_.find(key);
    if (it == domains_.end() || it->second.wake_ms != at) continue;  // stale
    it->second.wake_ms = 0;
    if (!drain(it->second, key, now, ring)) {
      wake_domain(key, it->second, now);  // the credits ran out: resumes with them
      blocked = true;
    }
  }
  // Fast: due sources are taken in batches whose loads start before any is used (the id
  // table's slot; then the source's node and the politeness key's slot; then its text and
  // the key's node). Each is a cache miss (sources fall due in completion order, scattered
  // in memory), and a batch overlaps them instead of queueing them one source at a time.
  while (!blocked && !heap_.empty() && heap_.top().first <= now) {
    due_batch_.clear();
    while (due_batch_.size() < k_due_batch && !heap_.empty() && heap_.top().first <= now) {
      due_batch_.push_back(heap_.top());
      heap_.pop();
    }
    for (const due_entry& e : due_batch_) by_id_.prefetch(e.second);
    due_sources_.clear();
    for (const due_entry& e : due_batch_) {
      source* s = find(e.second);
      due_sources_.push_back(s);
      if (s == nullptr) continue;
      for (size_t line = 0; line < sizeof(source); line += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(s) + line, 1);
      domains_.prefetch(uint32_t(e.second >> 32));
    }
    for (size_t i = 0; i < due_batch_.size(); ++i) {
      if (due_sources_[i] == nullptr) continue;
      due_sources_[i]->text.prefetch();
      if (auto it = domains_.find(uint32_t(due_batch_[i].second >> 32)); it != domains_.end())
        __builtin_prefetch(&it->second, 1);  // the node (a second miss behind the slot)
    }
    for (size_t i = 0; i < due_batch_.size(); ++i) {
      if (!blocked && !credits_allow(ring)) blocked = true;
      if (blocked) {
        heap_.push(due_batch_[i]);  // not started: due again at the next pump
        continue;
      }
      start_due(due_batch_[i], due_sources_[i], now);
    }
  }
  update_gauges();
  if (blocked) {
    wake_at(now + 5);
  } else if (!heap_.empty()) {
    wake_at(std::min(heap_.top().first, now + 60'000));
  }
  if (!domain_wakes_.empty()) wake_at(domain_wakes_.top().first);
}

// One entry popped from the schedule: started, queued behind its domain, or dropped as
// stale (the source moved or went).
void crawler::start_due(const due_entry& e, source* s, int64_t now) {
  const auto [at, sid] = e;
  if (s == nullptr || !s->durable || s->rec.next_fetch_ms != at || s->fetch_id != 0) return;
  if (s->writing) {
    schedule(*s, now + 1000, reason::store_busy);
    return;
  }
  if ((s->rec.flags & crawl_gone) != 0) return;
  const uint32_t key = uint32_t(sid >> 32);
  domain_state& d = domains_[key];
  if (d.waiting_head == d.waiting.size() && can_start(d, now)) {
    start_in(d, *s, now);
    return;
  }
  // Behind the domain's queue, its due time kept (the status shows what holds it).
  s->rec.next_reason = uint8_t(d.paused_until_ms > now ? reason::retry_after : reason::politeness);
  d.waiting.emplace_back(at, sid);
  if (d.paused_until_ms > now) {
    wake_domain(key, d, d.paused_until_ms);
  } else if (cfg_.per_domain_rate != 0 && d.next_start_ms > now) {
    wake_domain(key, d, d.next_start_ms);
  }  // else the connections are all taken: release_domain wakes it
}

void crawler::rebalance(int64_t now) {
  next_rebalance_ms_ = now + 60'000;
  // Forget politeness keys with nothing to remember (no fetch, no queue, no pause, no
  // reserved start slot ahead): O(keys) once a minute.
  absl::erase_if(domains_, [now](const auto& kv) { return kv.second.idle(now); });
  if (cfg_.fetch_budget_per_hour == 0) return;
  const int64_t now_s = now / 1000;
  demands_.clear();
  double sum = 0;
  for (const auto& [sid, s] : sources_) {
    if (!s.durable || (s.rec.flags & crawl_gone) != 0 || !budgeted(s, now_s)) continue;
    demands_.push_back(demand(s, now_s));
    sum += demands_.back();
  }
  rt::shard& sh = *s_.rt;
  const uint32_t n = sh.count();
  if (peer_sums_.size() != n) peer_sums_.assign(n, -1.0);
  peer_sums_[sh.index()] = sum;
  double total = 0;
  for (double v : peer_sums_) total += v < 0 ? sum : v;  // a peer not heard from yet: like us
  const double budget = total > 0 ? cfg_.fetch_budget_per_hour / 3600.0 * sum / total : 0;
  alloc_k_ = allocation_constant(demands_, budget, 1.0 / cfg_.budget_max_interval_s,
                                 1.0 / std::max<uint32_t>(1, bounds_.floor_s));
  for (uint32_t j = 0; j < n; ++j) {
    if (j == sh.index() || !sh.can_send(j)) continue;  // a busy peer hears next minute
    auto t = std::make_unique<share_task>();
    t->sum = sum;
    rt::task_ptr tp = std::move(t);
    sh.send(j, tp);
  }
}

void crawler::start_fetch(source& s) {
  const auto text = s.text.all();
  req_.url = text[source_text::url];
  req_.if_none_match = text[source_text::etag];
  req_.if_modified_since = text[source_text::last_modified];
  s.fetch_id = k_starting;
  ++in_flight_;
  starting_ = &s;
  const uint64_t fid = s_.client->fetch(req_, &crawler::on_fetched, this);
  starting_ = nullptr;
  // A fetch that failed inside fetch() (a bad URL) already ran its callback.
  if (s.fetch_id == k_starting) {
    s.fetch_id = fid;
    fetches_in_.emplace(fid, s.id);
  }
}

void crawler::fetched(uint64_t fetch_id, net::fetch_result& r) {
  --in_flight_;
  uint64_t sid = 0;
  if (starting_ != nullptr && starting_->fetch_id == k_starting) {
    sid = starting_->id;
  } else {
    auto it = fetches_in_.find(fetch_id);
    if (it == fetches_in_.end()) return;
    sid = it->second;
    fetches_in_.erase(it);
  }
  release_domain(sid);
  source* s = find(sid);
  if (s == nullptr) return;  // deleted meanwhile
  s->fetch_id = 0;
  if (r.error == net::fetch_error::cancelled) return;  // nothing learnt
  const int64_t now = wall_ms();
  if (r.error == net::fetch_error::too_many_in_flight) {
    // The client refused at once (backpressure, checked by pump first): not an error of
    // the source; it is fetched again as soon as the pump runs.
    schedule(*s, now, reason::credit);
    return;
  }
  crawl_fields& c = s->rec;
  const int64_t previous_fetch_ms = c.last_fetch_ms;
  c.last_fetch_ms = now;
  // The weight is kept as of the last fetch (its articles' time; matches reported later
  // are of them): age it to this one.
  if (previous_fetch_ms != 0)
    c.matched.decay(double(now - previous_fetch_ms) / 1000, cfg_.weight_half_life_s);
  c.last_status = uint16_t(std::clamp(r.status, 0, int(UINT16_MAX)));
  c.last_bytes = uint32_t(std::min<uint64_t>(r.wire_bytes, UINT32_MAX));
  c.last_new = 0;
  if (c.fetches != UINT32_MAX) ++c.fetches;
  const uint8_t observed_before = c.moved_count;
  const bool had_errors = c.consecutive_errors != 0;
  note_redirects(*s, r);
  // What a fetch that brought nothing new must still persist (a restart resumes it): a
  // redirect's observations (a 301 is adopted after 3, not 3 since the start), the weight,
  // the end of a run of errors.
  const bool record_moved =
      s->moved || c.moved_count != observed_before || weight_due(*s, now) || had_errors;
  if (r.error != net::fetch_error::ok) {
    fail(*s, net::fetch_error_name(r.error), now);
  } else if (r.status == 304) {
    nothing_new(*s, r, now, outcome::not_modified, record_moved);
  } else if (r.status == 410) {
    c.flags |= crawl_gone;
    c.consecutive_errors = 0;
    s->text.set(source_text::last_error, "http_410");
    c.last_outcome = uint8_t(outcome::error);
    count(outcome::error);
    c.next_fetch_ms = 0;
    c.next_reason = uint8_t(reason::gone);
    commit(*s, {});
  } else if (r.status == 429 || r.status == 503) {
    // The host asks for a pause: honour Retry-After for the whole domain (at most a week).
    const int64_t ra = retry_after_s(r.retry_after, now / 1000);
    int64_t until = 0;
    if (ra > 0) {
      until = now + std::min<int64_t>(ra, int64_t{7} * 86'400) * 1000;
      pause_domain(uint32_t(s->id >> 32), until);
    }
    fail(*s, fmt::format("http_{}", r.status), now, until);
  } else if (r.status < 200 || r.status > 299) {
    fail(*s, fmt::format("http_{}", r.status), now);
  } else {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    ingest(*s, r, now, previous_fetch_ms, record_moved);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    ingest_cpu_->observe(
        uint64_t((t1.tv_sec - t0.tv_sec) * 1'000'000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
  }
  if (c.last_outcome < k_outcomes && bytes_[c.last_outcome] != nullptr)
    bytes_[c.last_outcome]->add(r.wire_bytes);
  update_gauges();
}

void crawler::fail(source& s, std::string_view error_name, int64_t now, int64_t not_before_ms) {
  crawl_fields& c = s.rec;
  ++c.consecutive_errors;
  s.text.set(source_text::last_error, error_name);
  c.last_outcome = uint8_t(outcome::error);
  count(outcome::error);
  // The feed's own hints (its last parsed document's ttl, update period, skipped hours)
  // bound a retry as they bound a success: an error never makes us fetch sooner.
  feed_hint_rule rule = feed_hint_rule::none;
  const int64_t at = error_retry_ms(c.hints.get(), c.consecutive_errors, now, bounds_, &rule);
  if (not_before_ms > 0 && not_before_ms >= at) {
    // The domain's pause, not this feed, holds it back: it keeps its place at the head of
    // the domain's queue (it was due before everything queued behind it) and starts when
    // the pause ends. At the back it waited the whole queue again after every 429, which
    // on a domain that pauses often is longer than the feeds around it take to come round.
    requeue_first(s, not_before_ms);
  } else if (not_before_ms > 0) {
    // Named retry_after even when a hint placed it later: a restart restores the domain's
    // pause from the sources with that reason (on_streamed).
    schedule(s, at, reason::retry_after);
  } else {
    schedule(s, at, rule == feed_hint_rule::none ? reason::error_backoff : hint_reason(rule));
  }
  commit(s, {});
}

void crawler::release_domain(uint64_t sid) {
  const uint32_t key = uint32_t(sid >> 32);
  auto it = domains_.find(key);
  if (it == domains_.end()) return;
  domain_state& d = it->second;
  if (d.in_flight > 0) --d.in_flight;
  // A connection is free: the queue's head may start (from the pump, not from inside the
  // client's callback).
  if (d.waiting_head < d.waiting.size()) wake_domain(key, d, wall_ms());
}

void crawler::requeue_first(source& s, int64_t at_ms) {
  s.rec.next_fetch_ms = at_ms;
  s.rec.next_reason = uint8_t(reason::retry_after);
  const uint32_t key = uint32_t(s.id >> 32);
  domain_state& d = domains_[key];
  if (d.waiting_head > 0) {
    d.waiting[--d.waiting_head] = {at_ms, s.id};
  } else {
    d.waiting.insert(d.waiting.begin(), {at_ms, s.id});  // once per 429: O(queue) is fine
  }
  wake_domain(key, d, std::max(at_ms, d.paused_until_ms));
}

void crawler::pause_domain(uint32_t key, int64_t until_ms) {
  domain_state& d = domains_[key];
  d.paused_until_ms = std::max(d.paused_until_ms, until_ms);
}

void crawler::wake_domain(uint32_t key, domain_state& d, int64_t at_ms) {
  if (d.wake_ms != 0 && d.wake_ms <= at_ms) return;  // an earlier wake-up is pending
  d.wake_ms = at_ms;
  domain_wakes_.emplace(at_ms, key);
  wake_at(at_ms);
}

bool crawler::can_start(const domain_state& d, int64_t now) const {
  return d.paused_until_ms <= now && (cfg_.per_domain_rate == 0 || d.next_start_ms <= now) &&
         d.in_flight < cfg_.per_domain_connections;
}

// Credits: each fetch in flight holds one write slot (its articles and state travel in one
// write), so a finished fetch always finds room; a full ring starts nothing. The client's
// own cap (client_options::max_in_flight, when it is shared) too.
bool crawler::credits_allow(rt::write_ring& ring) {
  if (in_flight_ >= cfg_.max_in_flight || in_flight_ + 1 > ring.free_slots() ||
      !s_.client->can_fetch()) {
    credit_stalls_->add();
    return false;
  }
  return true;
}

void crawler::start_in(domain_state& d, source& s, int64_t now) {
  if (cfg_.per_domain_rate != 0)
    d.next_start_ms = now + std::max<int64_t>(1, 1000 / int64_t(cfg_.per_domain_rate));
  ++d.in_flight;
  start_fetch(s);
}

// Starts the domain's queue from its head while its caps and the credits allow; false when
// the credits ran out. Arms the next wake-up when a rate slot or a pause holds the head.
bool crawler::drain(domain_state& d, uint32_t key, int64_t now, rt::write_ring& ring) {
  while (d.waiting_head < d.waiting.size()) {
    if (d.paused_until_ms > now) {
      wake_domain(key, d, d.paused_until_ms);
      return true;
    }
    if (cfg_.per_domain_rate != 0 && d.next_start_ms > now) {
      wake_domain(key, d, d.next_start_ms);
      return true;
    }
    if (d.in_flight >= cfg_.per_domain_connections) return true;  // release_domain wakes it
    if (!credits_allow(ring)) return false;
    const auto [at, sid] = d.waiting[d.waiting_head++];
    if (d.waiting_head == d.waiting.size()) {
      d.waiting.clear();  // keeps its capacity while the domain is busy; the sweep frees it
      d.waiting_head = 0;
    } else if (d.waiting_head >= 64 && size_t{d.waiting_head} * 2 >= d.waiting.size()) {
      // A queue that never drains: drop the served front now and then (amortised O(1)).
      d.waiting.erase(d.waiting.begin(), d.waiting.begin() + d.waiting_head);
      d.waiting_head = 0;
    }
    source* s = find(sid);
    if (s == nullptr || !s->durable || s->rec.next_fetch_ms != at || s->fetch_id != 0 ||
        (s->rec.flags & crawl_gone) != 0)
      continue;  // gone or rescheduled meanwhile
    if (s->writing) {
      schedule(*s, now + 1000, reason::store_busy);
      continue;
    }
    start_in(d, *s, now);
  }
  return true;
}

void crawler::schedule_after_success(source& s, const net::fetch_result& r, int64_t now) {
  // A first fetch (an import's) or one overdue at a restart came in a wave: spread the next.
  const bool wave = s.rec.fetches == 1 || s.wave;
  s.wave = false;
  int64_t at = now + spread_interval_ms(s.rec.interval_s, s.id, s.rec.fetches, wave, bounds_);
  reason why = reason::adaptive;
  const int64_t now_s = now / 1000;
  if (budgeted(s, now_s)) {
    // The first feed with history since the last rebalance found none: share out now.
    if (alloc_k_ == 0) rebalance(now);
    // Its share of the budget, placed on its weekly profile; never sooner than the floor.
    const double per_week = allocated_rate(s, now_s) * double(k_week_s);
    const fetch_plan plan = make_plan(s.rec.history, per_week, now_s, hist_params_);
    at = std::max(next_in_plan(plan, now_s) * 1000, now + int64_t(bounds_.floor_s) * 1000);
    why = reason::allocation;
  }
  const int64_t fresh = freshness_s(r.cache_control, r.expires, now / 1000);
  const int64_t hint = now + std::min<int64_t>(fresh, bounds_.ceiling_s) * 1000;
  if (fresh > 0 && hint > at) {
    at = hint;
    why = reason::publisher_hint;
  }
  // The feed's own hints, from its last parsed document (a 304 or an unchanged document
  // keeps them): the same ceiling bounds them.
  feed_hint_rule rule = feed_hint_rule::none;
  at = bound_by_feed_hints(s.rec.hints.get(), now, at, bounds_.ceiling_s, &rule);
  if (rule != feed_hint_rule::none) why = hint_reason(rule);
  schedule(s, at, why);
}

// A 301/308 becomes the stored URL only after 3 consistent observations in a row.
void crawler::note_redirects(source& s, const net::fetch_result& r) {
  crawl_fields& c = s.rec;
  const std::string_view to = r.permanent_url();
  if (to.empty() || to == s.url()) {
    s.text.set(source_text::moved_to, {});
    c.moved_count = 0;
    return;
  }
  if (s.text.get(source_text::moved_to) == to) {
    c.moved_count = uint8_t(std::min(c.moved_count + 1, 3));
  } else {
    s.text.set(source_text::moved_to, to);
    c.moved_count = 1;
  }
  if (c.moved_count >= 3) {
    s.text.set(source_text::url, to);
    s.moved = true;
    s.text.set(source_text::moved_to, {});
    c.moved_count = 0;
  }
}

// Why it is cheap: an unchanged document stops at one hash; otherwise the shard's parser,
// feed, verdict and key scratch are reused, so a fetch allocates only its articles and record.
void crawler::nothing_new(source& s, const net::fetch_result& r, int64_t now, outcome o,
                          bool record_moved) {
  crawl_fields& c = s.rec;
  c.consecutive_errors = 0;
  c.last_outcome = uint8_t(o);
  count(o);
  const uint32_t before = c.interval_s;
  c.interval_s = adapt_interval(c.interval_s, 0, 0, bounds_);
  schedule_after_success(s, r, now);
  // Persisted only when something a restart needs moved, not once per fetch (a store
  // write each, for feeds that mostly do not change).
  if (c.interval_s != before || record_moved) commit(s, {});
}

void crawler::ingest(source& s, net::fetch_result& r, int64_t now, int64_t previous_fetch_ms,
                     bool record_moved) {
  crawl_fields& c = s.rec;
  const uint64_t old_hash = s.state.document_hash();
  if (s.state.same_document(r.body)) {
    // The same document again (a feed without validators, or one whose server ignores
    // them): like a 304, but the server may have sent new validators with it.
    const bool validators_moved = s.text.get(source_text::etag) != r.etag ||
                                  s.text.get(source_text::last_modified) != r.last_modified;
    if (validators_moved)
      s.text.set(source_text::etag, r.etag, source_text::last_modified, r.last_modified);
    nothing_new(s, r, now, outcome::unchanged, record_moved || validators_moved);
    return;
  }
  feed::parse_options po;
  po.base_url = r.final_url;
  po.content_type = r.content_type;
  const feed::parse_errc pe = parser_.parse(r.body, po, feed_);
  if (pe != feed::parse_errc::ok && feed_.entries.empty()) {
    // Forget this document's hash: the same bytes next time are the same error, not
    // "unchanged".
    s.state.set_document_hash(old_hash);
    fail(s, feed::errc_name(pe), now);
    return;
  }
  c.hints = feed_.hints;  // what the publisher says now bounds the schedule from here on
  // A document longer than one write's credit may have to be classified again, trimmed,
  // against the records as they were.
  const size_t seen_limit = s.state.seen().capacity();
  if (feed_.entries.size() > k_credit) {
    const auto before = s.state.seen().records();
    seen_before_.assign(before.begin(), before.end());
  }
  s.state.classify(feed_, dedup_, verdicts_);
  keys_.swap(dedup_.keys);  // feed_'s keys (a trimmed classify below reuses the scratch)
  // New on a first fetch only when published within the recent window (DESIGN.md 9).
  const int64_t now_s = now / 1000;
  const int64_t window_start = now_s - int64_t(cfg_.recent_window_s);
  picks_.clear();
  uint32_t fresh = 0;
  for (size_t i = 0; i < verdicts_.size(); ++i) {
    if (verdicts_[i] != feed::verdict::fresh && verdicts_[i] != feed::verdict::updated) continue;
    ++fresh;
    const feed::entry& e = feed_.entries[i];
    const int64_t published = e.has_published ? e.published : e.has_updated ? e.updated : now_s;
    if (!s.fetched && published < window_start) continue;
    picks_.push_back(i);
  }
  // The scheduler's postings: the new entries this write commits (an update is not a
  // posting); the first document's dated entries, which show how the feed posted so far.
  postings_.clear();
  if (!s.fetched) {
    for (const feed::entry& e : feed_.entries) {
      if (e.has_published) postings_.push_back(posting_time(true, e.published, 0, now_s));
    }
  } else {
    for (size_t j = 0; j < picks_.size() && j < k_credit; ++j) {
      const feed::entry& e = feed_.entries[picks_[j]];
      if (verdicts_[picks_[j]] != feed::verdict::fresh) continue;
      postings_.push_back(
          posting_time(e.has_published, e.published, previous_fetch_ms / 1000, now_s));
    }
  }
  for (int64_t t : postings_) c.history.observe(t, hist_params_);
  c.history.watch_from(now_s);
  const bool overflow = picks_.size() > k_credit;
  if (overflow) {
    // Commit the first k_credit picks with exactly their identities; the rest stay unseen
    // and the validators and document hash stay old, so the next fetch gets them again.
    s.state.restore(old_hash, seen_before_, seen_limit);
    std::vector<bool> drop(feed_.entries.size(), false);
    for (size_t j = k_credit; j < picks_.size(); ++j) drop[picks_[j]] = true;
    trimmed_.entries.clear();
    for (size_t i = 0; i < feed_.entries.size(); ++i) {
      if (!drop[i]) trimmed_.entries.push_back(feed_.entries[i]);
    }
    s.state.classify(trimmed_, dedup_, verdicts_);
    picks_.resize(k_credit);
    schedule(s, now + 1000, reason::credit);
  } else {
    s.text.set(source_text::etag, r.etag, source_text::last_modified, r.last_modified);
    // The first document says nothing about the rate (everything in it is unseen).
    if (s.fetched)
      c.interval_s = adapt_interval(c.interval_s, fresh, uint32_t(verdicts_.size()), bounds_);
    schedule_after_success(s, r, now);
  }
  std::vector<rt::article_ref> articles;
  articles.reserve(picks_.size());
  for (size_t i : picks_) {
    const feed::entry& e = feed_.entries[i];
    builder_.clear();
    builder_.meta.source_id = s.id;
    builder_.meta.identity_hash = keys_[i].identity;
    builder_.meta.content_hash = keys_[i].content;
    builder_.meta.published = e.has_published ? e.published : e.has_updated ? e.updated : now_s;
    builder_.meta.fetched_ms = now;
    builder_.source_url = s.url();
    builder_.guid = e.id;
    builder_.title = e.title;
    builder_.link = e.link;
    if (!e.authors.empty()) builder_.author = e.authors.front().name;
    builder_.summary = e.summary;
    builder_.content = e.content;
    rt::article_ref a = builder_.freeze();
    if (a) {
      article_bytes_->add(a->bytes());
      entry_bytes_->add(e.id.size() + e.title.size() + e.link.size() + e.summary.size() +
                        e.content.size() + builder_.author.size());
      articles.push_back(std::move(a));
    } else {
      articles_dropped_->add();
    }
  }
  c.consecutive_errors = 0;
  c.last_new = uint16_t(articles.size());  // at most k_credit
  c.last_outcome = uint8_t(articles.empty() ? outcome::no_new_entries : outcome::new_entries);
  count(outcome(c.last_outcome));
  s.fetched = true;
  commit(s, std::move(articles));
}

// One write: the feed's state and its new articles, all or nothing (DESIGN.md 9).
void crawler::commit(source& s, std::vector<rt::article_ref> articles) {
  auto w = std::make_unique<crawl_write>();
  w->source_id = s.id;
  // Counted now, in memory too (not on the ack, as `articles` is): the matches reported
  // for these articles then never meet a count without them. A failed write (the store
  // then refuses every write until restart) over-counts a few articles: a lower weight.
  s.rec.matched.add_articles(articles.size());
  if (articles.empty()) state_writes_->add();
  if (s.weight_changed) s.weight_epoch = weight_epoch(wall_ms());
  s.weight_changed = false;
  s.to_record(record_);
  record_.articles = saturating_add(record_.articles, articles.size());
  encode(record_, value_);
  w->ops.push_back({rt::kind::crawl, false, store_key(s.id), value_});
  if (s.moved) {
    s.moved = false;
    source_record sr{std::string(s.url()), std::string(s.title())};
    encode(sr, value_);
    w->ops.push_back({rt::kind::sources, false, store_key(s.id), value_});
  }
  w->articles = std::move(articles);
  s.writing = true;
  ++writes_pending_;
  rt::write_ptr wp = std::move(w);
  if (!backlog_.empty() || !s_.rt->write(wp)) {
    backlog_.push_back(std::move(wp));
    wake_at(wall_ms() + 5);
  }
}

// Why it is cheap: one map lookup per source that had matches in a reflector's period
// (its batch is at most a few thousand), nothing per article or per match.
void crawler::on_source_matches(rt::shard&, std::span<const dataplane::source_matches> batch) {
  for (const dataplane::source_matches& m : batch) {
    source* s = find(m.source_id);
    if (s == nullptr || !s->durable) {
      weight_unknown_->add();
      continue;
    }
    s->rec.matched.add_matches(m.matched);
    s->weight_changed = true;  // persisted with a crawl write (weight_due)
    weight_updates_->add();
  }
}

void crawler::crawl_durable(crawl_write& w) {
  --writes_pending_;
  source* s = find(w.source_id);
  if (s == nullptr) return;
  s->writing = false;
  if (w.status != 0) {
    s->text.set(source_text::last_error, store::store_errc_name(store::store_errc(w.status)));
    return;
  }
  s->rec.articles = saturating_add(s->rec.articles, w.articles.size());
  articles_->add(w.articles.size());
}

// ---------------------------------------------------------------- routes

crawler& crawler_of(net::request_context& ctx) {
  return ctx.context_as<shard_services>().get<crawler>();
}

// Sends one change_task per owner shard; answers once every part is durable.
void send_changes(net::request_context& ctx, net::http_response& r, pending_change p,
                  std::vector<change_item> items, uint64_t remove_id) {
  auto& sv = ctx.context_as<shard_services>();
  rt::shard& sh = *sv.rt;
  const uint32_t n = sh.count();
  std::vector<std::vector<change_item>> by_owner(n);
  for (auto& it : items) by_owner[owner_of(it.id, n)].push_back(std::move(it));
  std::vector<uint32_t> targets;
  for (uint32_t j = 0; j < n; ++j) {
    const bool wanted =
        p.kind == change_kind::remove ? j == owner_of(remove_id, n) : !by_owner[j].empty();
    if (!wanted) continue;
    if (!sh.can_send(j)) {
      net::set_unavailable(r, fmt::format("shard {} is busy; retry", j));
      return;
    }
    targets.push_back(j);
  }
  crawler& c = crawler_of(ctx);
  if (targets.empty()) {  // an import with nothing valid in it: answered at once
    render_change(p, r);
    return;
  }
  p.later = r.later;
  p.remaining = uint32_t(targets.size());
  const change_kind kind = p.kind;
  const uint64_t req = c.new_request(std::move(p));
  r.defer = true;
  sv.requests_deferred->add();
  for (uint32_t j : targets) {
    auto t = std::make_unique<change_task>();
    t->request = req;
    t->kind = kind;
    t->items = std::move(by_owner[j]);
    t->remove_id = remove_id;
    rt::task_ptr tp = std::move(t);
    sh.send(j, tp);  // cannot refuse: can_send checked above, on this thread
  }
}

bool parse_source_url(std::string_view text, const dataplane::config& cfg, change_item& out,
                      std::string* why) {
  net::url u;
  bool unsupported = false;
  if (text.size() > k_max_url) {
    *why = fmt::format("the URL is longer than {} bytes", k_max_url);
    return false;
  }
  if (!net::parse_url(base::ascii_trim(text), u, &unsupported)) {
    *why = unsupported ? "only http and https URLs can be crawled" : "not an absolute URL";
    return false;
  }
  out.url = u.str();
  out.id = source_id(politeness_key(u.host, cfg.crawler.shared_domains), out.url);
  return true;
}

void add_source_route(net::request_context& ctx, net::http_response& r,
                      const dataplane::config& cfg) {
  if (!dataplane::require_admin(ctx, cfg, r)) return;
  crawler& c = crawler_of(ctx);
  const std::string_view b = ctx.padded_body();
  simdjson::padded_string_view ps(b.data(), b.size(), b.size() + net::body_padding);
  simdjson::ondemand::document doc;
  std::string_view url, title;
  if (c.json().iterate(ps).get(doc) != simdjson::SUCCESS) {
    net::set_json_error(r, 400, "invalid_json", "the body is not JSON");
    return;
  }
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS ||
      obj["url"].get_string().get(url) != simdjson::SUCCESS) {
    net::set_json_error(r, 400, "invalid_json", "expected {\"url\": \"https://...\"}");
    return;
  }
  std::string url_copy(url);
  if (obj["title"].get_string().get(title) != simdjson::SUCCESS) title = {};
  change_item it;
  std::string why;
  if (!parse_source_url(url_copy, cfg, it, &why)) {
    net::set_json_error(r, 400, "invalid_url", why);
    return;
  }
  it.title.assign(title);
  pending_change p;
  p.kind = change_kind::add_one;
  p.url = it.url;
  std::vector<change_item> items;
  items.push_back(std::move(it));
  send_changes(ctx, r, std::move(p), std::move(items), 0);
}

void import_route(net::request_context& ctx, net::http_response& r, const dataplane::config& cfg) {
  if (!dataplane::require_admin(ctx, cfg, r)) return;
  opml_import doc;
  std::string why;
  if (!parse_opml(ctx.request().body, doc, &why)) {
    net::set_json_error(r, 400, "invalid_opml", why);
    return;
  }
  pending_change p;
  p.kind = change_kind::import;
  p.duplicates = doc.duplicates;
  p.invalid = std::move(doc.invalid);
  std::vector<change_item> items;
  items.reserve(doc.feeds.size());
  for (opml_feed& f : doc.feeds) {
    change_item it;
    if (!parse_source_url(f.url, cfg, it, &why)) {
      p.invalid.push_back(std::move(f.url));
      continue;
    }
    it.title = std::move(f.title);
    items.push_back(std::move(it));
  }
  send_changes(ctx, r, std::move(p), std::move(items), 0);
}

bool id_param(net::request_context& ctx, net::http_response& r, uint64_t* id) {
  if (parse_id(ctx.param("id"), id)) return true;
  net::set_json_error(r, 404, "not_found",
                      fmt::format("no source {:?}: ids are 16 hex digits", ctx.param("id")));
  return false;
}

void delete_route(net::request_context& ctx, net::http_response& r, const dataplane::config& cfg) {
  if (!dataplane::require_admin(ctx, cfg, r)) return;
  uint64_t id = 0;
  if (!id_param(ctx, r, &id)) return;
  pending_change p;
  p.kind = change_kind::remove;
  p.id = id;
  send_changes(ctx, r, std::move(p), {}, id);
}

void status_route(net::request_context& ctx, net::http_response& r, const dataplane::config& cfg) {
  if (!dataplane::require_admin(ctx, cfg, r)) return;
  uint64_t id = 0;
  if (!id_param(ctx, r, &id)) return;
  auto& sv = ctx.context_as<shard_services>();
  const uint32_t owner = owner_of(id, sv.rt->count());
  if (!sv.rt->can_send(owner)) {
    net::set_unavailable(r, fmt::format("shard {} is busy; retry", owner));
    return;
  }
  auto t = std::make_unique<status_task>();
  t->id = id;
  t->later = r.later;
  r.defer = true;
  sv.requests_deferred->add();
  rt::task_ptr tp = std::move(t);
  sv.rt->send(owner, tp);
}

void gather_route(net::request_context& ctx, net::http_response& r, const dataplane::config& cfg,
                  bool export_opml) {
  if (!dataplane::require_admin(ctx, cfg, r)) return;
  auto& sv = ctx.context_as<shard_services>();
  rt::shard& sh = *sv.rt;
  auto st = std::make_shared<gather_state>();
  st->export_opml = export_opml;
  st->limit = export_opml ? UINT32_MAX : 100;
  if (!export_opml) {
    const net::query_string& q = ctx.query();
    if (q.has("after") && !parse_id(q.get("after"), &st->after)) {
      net::set_json_error(r, 400, "invalid_query", "after: a source id (16 hex digits)");
      return;
    }
    if (q.has("limit")) {
      const std::string_view l = q.get("limit");
      uint32_t v = 0;
      const auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
      if (ec != std::errc() || end != l.data() + l.size() || v == 0 || v > k_max_list) {
        net::set_json_error(r, 400, "invalid_query", fmt::format("limit: 1..{}", k_max_list));
        return;
      }
      st->limit = v;
    }
  }
  for (uint32_t j = 0; j < sh.count(); ++j) {
    if (!sh.can_send(j)) {
      net::set_unavailable(r, fmt::format("shard {} is busy; retry", j));
      return;
    }
  }
  st->waiting = sh.count();
  st->later = r.later;
  r.defer = true;
  sv.requests_deferred->add();
  for (uint32_t j = 0; j < sh.count(); ++j) {
    auto t = std::make_unique<list_task>();
    t->state = st;
    t->after = st->after;
    // One more than the page, so the merge knows whether a next page exists.
    t->limit = st->limit == UINT32_MAX ? UINT32_MAX : st->limit + 1;
    rt::task_ptr tp = std::move(t);
    sh.send(j, tp);  // cannot refuse: can_send checked above, on this thread
  }
}

void add_routes(net::router& routes, const dataplane::config& cfg) {
  const dataplane::config* c = &cfg;  // outlives the router (run_serve's)
  routes.add("POST", "/api/sources", [c](net::request_context& ctx, net::http_response& r) {
    add_source_route(ctx, r, *c);
  });
  routes.add("GET", "/api/sources", [c](net::request_context& ctx, net::http_response& r) {
    gather_route(ctx, r, *c, false);
  });
  routes.add("GET", "/api/sources/{id}",
             [c](net::request_context& ctx, net::http_response& r) { status_route(ctx, r, *c); });
  routes.add("DELETE", "/api/sources/{id}",
             [c](net::request_context& ctx, net::http_response& r) { delete_route(ctx, r, *c); });
  routes.add("POST", "/api/sources:import",
             [c](net::request_context& ctx, net::http_response& r) { import_route(ctx, r, *c); });
  routes.add("GET", "/api/sources:export", [c](net::request_context& ctx, net::http_response& r) {
    gather_route(ctx, r, *c, true);
  });
}

uint32_t owner(rt::kind, std::string_view key, uint32_t shards) {
  uint64_t id = 0;
  return parse_store_key(key, &id) ? owner_of(id, shards) : 0;
}

std::unique_ptr<dataplane::component> create(shard_services& s) {
  return std::make_unique<crawler>(s);
}

}  // namespace

const dataplane::component_def def = {
    "crawler",
    dataplane::component_id::crawler,
    {rt::kind::sources, rt::kind::crawl},
    &owner,
    &add_routes,
    &create,
};

}  // namespace feedplane::crawler
