// `feedplane serve [--config FILE] [--listen ADDR:PORT] [--data DIR] [--shards N] [--no-pin]
// [--tls-cert FILE --tls-key FILE]`:
// runs the data plane. N shards (runtime::shard: a thread pinned to a core with its own
// io_uring loop and SO_REUSEPORT listener) joined by the mesh's SPSC rings, and the store
// thread (RocksDB in DIR/db) behind its rings. Answers:
//   GET /healthz  200 "ok", or 503 with the reason when durable writes are refused
//   GET /readyz   200 once start-up streaming from the store reached this shard, else 503
//   GET /metrics  Prometheus text: every shard's registry summed (a task to each shard),
//                 the store's and the process's figures
//   GET /api/shards/{n}  one shard's own figures, answered by shard n (a cross-shard
//                 request: the connection's shard defers, shard n answers, the answer
//                 comes back on the ring)
//   GET /api/articles?after=SEQ&limit=N  the sequenced articles (admin token), in order
//   GET /static/*  files in DIR/public/, read once at start-up
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "feedplane/base/json.h"
#include "feedplane/crawler/crawler.h"
#include "feedplane/dataplane/auth.h"
#include "feedplane/dataplane/backup.h"
#include "feedplane/dataplane/component.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/dataplane/json_body.h"
#include "feedplane/net/http_client.h"
#include "feedplane/net/http_server.h"
#include "feedplane/net/http_static.h"
#include "feedplane/net/loop.h"
#include "feedplane/net/tls_server.h"
#include "feedplane/reflector/reflector.h"
#include "feedplane/runtime/article.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"

namespace feedplane::dataplane {

namespace {

struct serve_flags {
  std::string config_path;
  std::string admin_token;
  std::string listen;
  std::string data;
  uint32_t shards = 0;
  bool shards_set = false;
  bool no_pin = false;
  std::vector<std::string> resolve;
  std::string resolve_file;
  std::string tls_cert;
  std::string tls_key;
};

using shard_context = shard_services;

// The components every shard runs, in component_id order (component.h).
const std::vector<const component_def*>& components() {
  static const std::vector<const component_def*> all = {&crawler::def, &reflector::component()};
  return all;
}

// Delivers what the store sends a shard to its components: articles and the end of
// streaming to all, a start-up record to the component that owns its kind.
class listener_mux final : public runtime::shard_listener {
 public:
  explicit listener_mux(shard_services& s) : s_(s) {}
  void on_article(runtime::shard& sh, const runtime::article_ref& a) override {
    for (component* c : s_.parts) {
      if (c != nullptr) c->on_article(sh, a);
    }
  }
  void on_record(runtime::shard& sh, runtime::kind k, std::string_view key,
                 std::string_view value) override {
    if (component* c = owner_of_kind(k)) c->on_record(sh, k, key, value);
  }
  void prefetch_record(runtime::kind k, std::string_view key, std::string_view value) override {
    if (component* c = owner_of_kind(k)) c->prefetch_record(k, key, value);
  }
  void prefetch_end() override {
    for (component* c : s_.parts) {
      if (c != nullptr) c->prefetch_end();
    }
  }
  void on_streamed(runtime::shard& sh) override {
    for (component* c : s_.parts) {
      if (c != nullptr) c->on_streamed(sh);
    }
  }

 private:
  component* owner_of_kind(runtime::kind k) const {
    for (const component_def* d : components()) {
      for (runtime::kind owned : d->kinds) {
        if (owned == k) return s_.parts[size_t(d->id)];
      }
    }
    return nullptr;
  }
  shard_services& s_;
};

// One shard's thread and what main needs to reach it.
struct shard_thread {
  uint32_t index = 0;
  int cpu = -1;
  int listen_fd = -1;
  const net::tls_server_context* tls = nullptr;  // HTTPS (shared by every shard) or null
  std::thread thread;
  // Owned here, not by the shard thread: main may still be inside request_stop() when the
  // thread leaves run(), so the loop is destroyed only after the thread was joined.
  std::unique_ptr<net::loop> loop;
  // 0 starting, 1 running, -1 failed. The shard thread stores with release after writing
  // `error` and registering its loop; main loads with acquire before reading either.
  std::atomic<int> state{0};
  std::string error;
};

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

int mkdir_p(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
    }
    if (i < dir.size()) cur.push_back(dir[i]);
  }
  return 0;
}

// ---- /metrics: a task to every shard; each snapshots its own registry ----

void refresh_runtime_gauges(shard_context& c) {
  runtime::metrics_registry& m = c.rt->metrics();
  const net::loop_stats& ls = c.rt->loop().stats();
  m.add_counter("feedplane_loop_completions_total", "io_uring completions handled")
      .mirror(ls.completions);
  m.add_counter("feedplane_loop_waits_total",
                "io_uring_enter calls that waited (completions per wait = batching)")
      .mirror(ls.waits);
  m.add_counter("feedplane_loop_wakeups_received_total", "Cross-shard wake-ups handled by the loop")
      .mirror(ls.wakes);
  m.add_gauge("feedplane_loop_ops_in_flight", "io_uring operations in flight")
      .set(int64_t(c.rt->loop().ops_in_flight()));
  const net::server_stats& ss = c.srv->stats();
  m.add_counter("feedplane_http_requests_total", "HTTP requests handled").mirror(ss.requests);
  m.add_gauge("feedplane_http_connections_open", "HTTP connections open").set(int64_t(ss.open));
  m.add_counter("feedplane_http_bytes_received_total", "Bytes the HTTP server received")
      .mirror(ss.bytes_in);
  m.add_counter("feedplane_http_bytes_sent_total", "Bytes the HTTP server sent (polls, API)")
      .mirror(ss.bytes_out);
  m.add_counter("feedplane_http_errors_total", "HTTP 4xx and 5xx answers").mirror(ss.errors_4xx);
  m.add_counter("feedplane_http_deferred_timeouts_total",
                "Deferred answers that did not come in time (503 sent)")
      .mirror(ss.deferred_timeouts);
}

struct scrape_state {
  uint32_t waiting = 0;
  std::vector<runtime::metric_sample> samples;
  net::deferred_response later;
};

struct scrape_task : runtime::task {
  std::shared_ptr<scrape_state> state;  // lives on the origin shard; never touched on the target
  std::vector<runtime::metric_sample> samples;
  void run(runtime::shard& target) override;
  void done(runtime::shard& origin) override;
};

void store_samples(const store::store& db, std::vector<runtime::metric_sample>& out);

void finish_scrape(shard_context& c, scrape_state& st) {
  store_samples(*c.db, st.samples);
  auto add = [&](const char* name, const char* help, double v,
                 runtime::metric_type type = runtime::metric_type::gauge) {
    runtime::metric_sample s;
    s.name = name;
    s.help = help;
    s.type = type;
    s.value = v;
    st.samples.push_back(std::move(s));
  };
  add("feedplane_articles_alive", "Frozen articles alive in the process",
      double(runtime::article::alive()));
  add("feedplane_articles_alive_bytes", "Bytes of frozen articles alive in the process",
      double(runtime::article::alive_bytes()));
  add("feedplane_shards", "Shards in this process", double(c.rt->count()));
  const backup_manager::counts b = c.backups->stats();
  add("feedplane_backup_running", "1 while an online backup (POST /api/backups) runs",
      b.running ? 1 : 0);
  add("feedplane_backup_last_complete_timestamp_seconds",
      "When the newest complete backup in backup_dir completed, this process's or an "
      "earlier one's (0: none; alert on its age)",
      double(b.last_complete_ms) / 1000);
  add("feedplane_backup_last_duration_seconds", "How long that backup took",
      double(b.last_duration_ms) / 1000);
  add("feedplane_backups_completed_total", "Backups this process completed", double(b.completed),
      runtime::metric_type::counter);
  add("feedplane_backups_failed_total", "Backups this process failed (see the log)",
      double(b.failed), runtime::metric_type::counter);
  net::http_response r;
  r.storage = runtime::render_prometheus(st.samples);
  r.body = r.storage;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.cache_control = "no-store";
  st.later.complete(r);
}

void scrape_task::run(runtime::shard& target) {
  auto& c = *static_cast<shard_context*>(target.context());
  refresh_runtime_gauges(c);
  target.metrics().snapshot(samples);
}

void scrape_task::done(runtime::shard& origin) {
  auto& c = *static_cast<shard_context*>(origin.context());
  for (auto& s : samples) state->samples.push_back(std::move(s));
  if (--state->waiting == 0) finish_scrape(c, *state);
}

void store_samples(const store::store& db, std::vector<runtime::metric_sample>& out) {
  const store::store_stats& s = db.stats();
  auto add = [&](const char* name, const char* help, runtime::metric_type t, double v) {
    runtime::metric_sample m;
    m.name = name;
    m.help = help;
    m.type = t;
    m.value = v;
    out.push_back(std::move(m));
  };
  auto hist = [&](const char* name, const char* help, const store::histogram& h) {
    // The store's buckets hold bit_width(v) == i; re-bucket into the registry's le=2^i.
    runtime::metric_sample m;
    m.name = name;
    m.help = help;
    m.type = runtime::metric_type::histogram;
    for (size_t b = 0; b < store::histogram_buckets; ++b) {
      const uint64_t n = h.buckets[b].load(std::memory_order_relaxed);
      // Upper bound 2^b - 1 <= 2^b: counted in bucket b (le = 2^b) of the rendering.
      const size_t to =
          b < size_t(runtime::histogram::buckets) ? b : runtime::histogram::buckets - 1;
      m.hist.count[to] += n;
      m.hist.n += n;
    }
    m.hist.sum = h.sum.load(std::memory_order_relaxed);
    out.push_back(std::move(m));
  };
  using runtime::metric_type;
  // Relaxed loads throughout: independent gauges and counters (store.h).
  add("feedplane_store_writes_acked_total", "Durable writes acknowledged", metric_type::counter,
      double(s.writes_acked.load(std::memory_order_relaxed)));
  add("feedplane_store_writes_refused_total", "Writes sent back with an error",
      metric_type::counter, double(s.writes_refused.load(std::memory_order_relaxed)));
  add("feedplane_store_articles_sequenced_total", "Articles given a sequence number",
      metric_type::counter, double(s.articles_sequenced.load(std::memory_order_relaxed)));
  add("feedplane_store_groups_total", "Group commits (one synced write each)", metric_type::counter,
      double(s.groups.load(std::memory_order_relaxed)));
  add("feedplane_store_queue_depth", "Writes waiting in the shards' write rings",
      metric_type::gauge, double(db.queue_depth()));
  add("feedplane_store_memtable_bytes", "Bytes in the store's memtables (every family)",
      metric_type::gauge, double(db.memtable_bytes()));
  add("feedplane_store_background_jobs", "RocksDB flushes and compactions running now",
      metric_type::gauge, double(s.background_jobs.load(std::memory_order_relaxed)));
  add("feedplane_store_flushes_total", "RocksDB memtable flushes done since start",
      metric_type::counter, double(s.flushes.load(std::memory_order_relaxed)));
  add("feedplane_store_compactions_total", "RocksDB compactions done since start",
      metric_type::counter, double(s.compactions.load(std::memory_order_relaxed)));
  add("feedplane_store_ring_full_waits_total",
      "Times the store waited for space in a shard's event or article ring", metric_type::counter,
      double(s.ring_full_waits.load(std::memory_order_relaxed)));
  add("feedplane_store_writes_past_stall_total",
      "API writes (accounts, subscriptions) acknowledged while the article broadcast waited "
      "for a shard",
      metric_type::counter, double(s.writes_past_stall.load(std::memory_order_relaxed)));
  add("feedplane_store_replay_first_seq",
      "The first article sequence the start-up replay read (the lists' snapshots and the "
      "recent window needed none before it)",
      metric_type::gauge, double(s.replay_first.load(std::memory_order_relaxed)));
  add("feedplane_store_articles_replayed_total", "Articles the start-up replay broadcast",
      metric_type::counter, double(s.articles_replayed.load(std::memory_order_relaxed)));
  const uint64_t next = s.next_seq.load(std::memory_order_relaxed);
  const uint64_t base = s.gc_base.load(std::memory_order_relaxed);
  const uint64_t kept = s.articles_kept.load(std::memory_order_relaxed);
  add("feedplane_store_articles_stored",
      "Articles in the log: those not yet collected and those lists hold", metric_type::gauge,
      double(next - std::min(next, base) + kept));
  add("feedplane_store_article_bytes",
      "Bytes of the article log's files on disk (deletions free them as compactions pass)",
      metric_type::gauge, double(db.article_file_bytes()));
  add("feedplane_store_gc_runs_total", "Collections of the article log (store.h)",
      metric_type::counter, double(s.gc_runs.load(std::memory_order_relaxed)));
  add("feedplane_store_articles_deleted_total",
      "Articles the collections deleted (past the recent window, in no list)", metric_type::counter,
      double(s.articles_deleted.load(std::memory_order_relaxed)));
  add("feedplane_store_articles_kept", "Articles below the collected range that lists hold",
      metric_type::gauge, double(kept));
  add("feedplane_store_failed", "1 when the store refuses durable writes until restart",
      metric_type::gauge, s.failed.load(std::memory_order_relaxed) ? 1 : 0);
  hist("feedplane_store_group_writes", "Writes per group commit", s.group_writes);
  hist("feedplane_store_fsync_seconds", "Duration of each synced group write", s.fsync_us);
  out.back().unit = 1e-6;  // the store counts microseconds
}

void metrics_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  runtime::shard& sh = *c.rt;
  for (uint32_t j = 0; j < sh.count(); ++j) {
    if (!sh.can_send(j)) {
      net::set_unavailable(r, fmt::format("shard {} is busy; retry", j));
      return;
    }
  }
  auto st = std::make_shared<scrape_state>();
  st->waiting = sh.count();
  st->later = r.later;
  r.defer = true;
  c.requests_deferred->add();
  for (uint32_t j = 0; j < sh.count(); ++j) {
    auto t = std::make_unique<scrape_task>();
    t->state = st;
    runtime::task_ptr tp = std::move(t);
    sh.send(j, tp);  // cannot refuse: can_send checked above, on this thread
  }
}

// ---- /api/shards/{n}: answered by shard n ----

struct shard_info_task : runtime::task {
  net::deferred_response later;  // the origin's connection; used on the origin only
  std::string body;
  void run(runtime::shard& target) override {
    auto& c = *static_cast<shard_context*>(target.context());
    const net::loop_stats& ls = target.loop().stats();
    body = fmt::format(
        "{{\"shard\": {}, \"answered_on_thread_of_shard\": {}, \"loop_completions\": {}, "
        "\"loop_waits\": {}, \"http_requests\": {}, \"connections_open\": {}, "
        "\"store_streamed\": {}}}\n",
        target.index(), target.index(), ls.completions, ls.waits, c.srv->stats().requests,
        c.srv->stats().open, target.store_streamed() ? "true" : "false");
  }
  void done(runtime::shard&) override {
    net::http_response r;
    r.body = body;
    r.content_type = "application/json";
    r.cache_control = "no-store";
    later.complete(r);  // false (and nothing) when the client went away meanwhile
  }
};

void shard_info_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  uint32_t n = 0;
  const std::string_view p = ctx.param("n");
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
  if (ec != std::errc() || end != p.data() + p.size() || n >= c.rt->count()) {
    net::set_json_error(r, 404, "not_found",
                        fmt::format("no shard {:?}: shards are 0..{}", p, c.rt->count() - 1));
    return;
  }
  if (!c.rt->can_send(n)) {
    net::set_unavailable(r, fmt::format("shard {} is busy; retry", n));
    return;
  }
  auto t = std::make_unique<shard_info_task>();
  t->later = r.later;
  r.defer = true;
  c.requests_deferred->add();
  runtime::task_ptr tp = std::move(t);
  c.rt->send(n, tp);
}

// ---- /api/articles?after=SEQ&limit=N: the sequenced article log (admin) ----
// What an operator (and the load harness's delivery check) reads to see which entries
// feedplane sequenced and when: one object per article, in sequence order. Read from the
// store on the connection's shard (RocksDB reads are thread-safe); the limit bounds the
// work per request. Collected articles (past the recent window, in no list) are absent.

bool parse_u64(std::string_view s, uint64_t* v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

void articles_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  if (!require_admin(ctx, *c.cfg, r)) return;
  uint64_t after = 0, limit = 1000;
  const std::string_view a = ctx.query().get("after", "0");
  const std::string_view l = ctx.query().get("limit", "1000");
  if (!parse_u64(a, &after)) {
    net::set_json_error(r, 400, "invalid_query", "after: a sequence number");
    return;
  }
  if (!parse_u64(l, &limit) || limit == 0 || limit > 10'000) {
    net::set_json_error(r, 400, "invalid_query", "limit: 1..10000");
    return;
  }
  // Relaxed: a gauge; an article below it is durable (sequenced after its group's sync).
  const uint64_t next = c.db->stats().next_seq.load(std::memory_order_relaxed);
  std::string& out = r.storage;
  out = "{\"articles\": [";
  std::string err;
  // The log has gaps where articles were collected (store.h): the next `limit` stored.
  const std::vector<runtime::article_ref> arts = c.db->read_articles(after + 1, limit, &err);
  if (!err.empty()) {
    net::set_json_error(r, 500, "store_read_failed", err);
    return;
  }
  uint64_t last = after, n = 0;
  for (const runtime::article_ref& art : arts) {
    if (art->seq() >= next) break;  // sequenced after `next` was read: the next page's
    out += n++ == 0 ? "\n" : ",\n";
    last = art->seq();
    fmt::format_to(std::back_inserter(out), "{{\"seq\": {}, \"guid\": ", last);
    base::append_json_string(art->guid(), out);
    out += ", \"link\": ";
    base::append_json_string(art->link(), out);
    out += ", \"source\": ";
    base::append_json_string(art->source_url(), out);
    fmt::format_to(std::back_inserter(out),
                   ", \"source_id\": {}, \"published\": {}, \"fetched_ms\": {}, "
                   "\"sequenced_ms\": {}, \"replaces\": {}}}",
                   art->meta().source_id, art->meta().published, art->meta().fetched_ms,
                   art->sequenced_ms(), art->meta().replaces);
  }
  // A short page read to the end of the log: the next starts after everything sequenced.
  if (n < limit) last = std::max(last, next - 1);
  fmt::format_to(std::back_inserter(out), "\n], \"next_after\": {}, \"sequenced\": {}}}\n", last,
                 next - 1);
  r.body = out;
  r.content_type = "application/json";
  r.cache_control = "no-store";
}

// ---- /api/backups (admin): online backups (dataplane/backup.h) ----
// POST starts one (body optional: {"name": "..."}) and answers 202 at once with its state
// and a Location to poll: a backup of millions of subscriptions takes seconds, longer than
// a deferred answer may wait. GET lists them; GET /api/backups/{name} is one.

// A JSON answer from r.storage (which holds the body), never cached.
void answer_json(net::http_response& r) {
  r.body = r.storage;
  r.content_type = "application/json";
  r.cache_control = "no-store";
}

void backup_start_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  if (!require_admin(ctx, *c.cfg, r)) return;
  std::string name;
  const std::string_view body = ctx.padded_body();
  if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    simdjson::ondemand::parser parser;
    const bool ok =
        read_json_object(parser, body, r, "a JSON object, e.g. {\"name\": \"nightly\"}",
                         [&](std::string_view key, simdjson::ondemand::value v) {
                           std::string_view s;
                           if (key != "name") {
                             std::string msg = "unknown field ";
                             base::append_json_string(key, msg);
                             net::set_json_error(r, 400, "unknown_field", msg + " (fields: name)");
                             return false;
                           }
                           if (v.get_string().get(s)) {
                             net::set_json_error(r, 400, "bad_value", "\"name\" must be a string");
                             return false;
                           }
                           name = std::string(s);
                           return true;
                         });
    if (!ok) return;
  }
  backup_info info;
  std::string why;
  switch (c.backups->start(std::move(name), &info, &why)) {
    case backup_start::started:
      r.status = 202;
      r.storage = info.to_json();
      r.storage += "\n";
      answer_json(r);
      r.extra_headers = fmt::format("Location: /api/backups/{}\r\n", info.name);
      return;
    case backup_start::running:
      net::set_json_error(r, 409, "backup_running", why);
      return;
    case backup_start::exists:
      net::set_json_error(r, 409, "exists", why);
      return;
    case backup_start::bad_name:
      net::set_json_error(r, 400, "invalid_name", why);
      return;
    case backup_start::bad_dir:
      net::set_json_error(r, 500, "backup_dir", why);
      return;
  }
}

void backup_list_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  if (!require_admin(ctx, *c.cfg, r)) return;
  std::string& out = r.storage;
  out = "{\"backup_dir\": ";
  base::append_json_string(c.backups->dir(), out);
  out += ", \"backups\": [";
  size_t n = 0;
  for (const backup_info& b : c.backups->list()) {
    out += n++ == 0 ? "\n" : ",\n";
    out += b.to_json();
  }
  out += "\n]}\n";
  answer_json(r);
}

void backup_get_route(net::request_context& ctx, net::http_response& r) {
  auto& c = ctx.context_as<shard_context>();
  if (!require_admin(ctx, *c.cfg, r)) return;
  backup_info info;
  if (!c.backups->find(ctx.param("name"), &info)) {
    net::set_json_error(r, 404, "not_found",
                        fmt::format("no backup {:?} in {}", ctx.param("name"), c.backups->dir()));
    return;
  }
  r.storage = info.to_json();
  r.storage += "\n";
  answer_json(r);
}

// ---- the shard thread ----

// Tells main the shard's start-up ended: 1 running, -1 failed (its `error` set first).
void publish_state(shard_thread& s, int v) {
  // release: pairs with main's acquire load and wait on state; `error` and the registered
  // loop, written before it, are visible to main once it reads v.
  s.state.store(v, std::memory_order_release);
  s.state.notify_all();  // wakes main's wait below (the store above is what it reads)
}

void run_shard(shard_thread& s, const config& cfg, const net::router& routes, runtime::mesh& m,
               store::store& db, backup_manager& backups, std::atomic<bool>& go) {
  // Named for ps, top and the load harness's CPU per tier ("shard-0", ...; at most 15).
  pthread_setname_np(pthread_self(), fmt::format("shard-{}", s.index).c_str());
  if (s.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  net::loop_options lo;
  lo.ring_entries = 4096;
  // 16 MiB per shard, whatever the number of connections: a feed of the median size (7.6
  // KB) and its headers arrive in one receive (the client's fetches per CPU-second rose
  // about 10% from 8 KiB buffers in http_client_bench).
  lo.buffer_count = 1024;
  lo.buffer_size = 16384;
  lo.wait_batch = cfg.net.wait_batch;
  lo.min_wait_us = cfg.net.min_wait_us;
  std::string err;
  // The ring is created on the shard thread: SINGLE_ISSUER binds it to this task.
  s.loop = net::loop::create(lo, &err);
  net::loop* l = s.loop.get();
  if (l == nullptr) {
    s.error = fmt::format("shard {}: {}", s.index, err);
    close(s.listen_fd);
    publish_state(s, -1);  // `error` is written before it
    return;
  }
  {
    runtime::shard rt(m, s.index, *l);
    shard_context ctx;
    ctx.rt = &rt;
    ctx.db = &db;
    ctx.backups = &backups;
    ctx.cfg = &cfg;
    ctx.requests_deferred = &rt.metrics().add_counter(
        "feedplane_http_deferred_total", "Requests answered later (by another shard or the store)");
    std::unique_ptr<net::http_client> client =
        net::http_client::create(*l, client_options_from(cfg), &err);
    if (!client) {
      s.error = fmt::format("shard {}: HTTP client: {}", s.index, err);
      close(s.listen_fd);
      publish_state(s, -1);  // `error` is written before it
      return;
    }
    ctx.client = client.get();
    net::server_options sopt = server_options_from(cfg.server);
    sopt.tls = s.tls;
    net::http_server srv(*l, routes, sopt, &ctx);
    ctx.srv = &srv;
    rt.set_context(&ctx);
    std::vector<std::unique_ptr<component>> parts;
    for (const component_def* d : components()) {
      parts.push_back(d->create(ctx));
      ctx.parts[size_t(d->id)] = parts.back().get();
    }
    listener_mux mux(ctx);
    rt.set_listener(&mux);
    if (!srv.start(s.listen_fd)) {
      s.error = fmt::format("shard {}: cannot start accepting", s.index);
      close(s.listen_fd);
      publish_state(s, -1);  // `error` is written before it
      return;
    }
    publish_state(s, 1);  // the loop is registered before it
    // Every shard registered its loop with the mesh before the store starts sending. The
    // acquire pairs with main's release of `go` after db->start().
    while (!go.load(std::memory_order_acquire) && !l->stopping()) std::this_thread::yield();
    int r = l->run();
    if (r < 0) {
      // A shard that cannot run stops the process: the store and the other shards would
      // otherwise wait on its rings for ever.
      fmt::print(stderr, "feedplane: shard {}: io_uring: {}; stopping\n", s.index, strerror(-r));
      kill(getpid(), SIGTERM);
    }
    // Publish what the last turn's completions staged (writes, tasks): the store still runs.
    rt.turn();
    // Components start nothing new and connections close; fetches in flight get up to 1 s
    // to finish and write what they learnt (a request the server answered and we dropped
    // would be repeated at once after the restart), then the rest are cancelled. Then wait
    // (bounded, 2 s by the clock, not by a count of turns) until each has seen its
    // operations' last completions and was released: a buffer the kernel still holds must
    // not be freed.
    for (auto& p : parts) p->stop();
    srv.shutdown();
    auto parts_busy = [&] {
      for (auto& p : parts) {
        if (!p->quiescent()) return true;
      }
      return false;
    };
    const uint64_t drain_deadline = l->refresh_now() + 1000;
    while (parts_busy() && l->refresh_now() < drain_deadline) {
      if (l->run_once(false) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    client->shutdown();
    auto busy = [&] {
      if (srv.stats().open > 0 || !client->quiescent()) return true;
      for (auto& p : parts) {
        if (!p->quiescent()) return true;
      }
      return false;
    };
    const uint64_t deadline = l->refresh_now() + 2000;
    while (busy() && l->refresh_now() < deadline) {
      if (l->run_once(false) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rt.turn();
    rt.set_listener(nullptr);
    while (!parts.empty()) parts.pop_back();  // reverse order of creation
    const net::loop_stats& ls = l->stats();
    fmt::print(stderr,
               "feedplane: shard {}: {} requests, {} connections; {} completions in {} waits "
               "({:.1f} per wait), {} SQEs submitted\n",
               s.index, srv.stats().requests, srv.stats().accepted, ls.completions, ls.waits,
               ls.waits != 0 ? double(ls.completions) / double(ls.waits) : 0.0, ls.submitted);
  }
  close(s.listen_fd);
}

int run_serve(const serve_flags& f) {
  // Signals first: a SIGINT/SIGTERM during start-up waits for sigwait below (and a clean
  // exit) instead of killing the process half set up. Threads inherit this mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  config cfg;
  if (!f.config_path.empty()) {
    if (auto err = load_config_file(f.config_path, cfg); !err.empty()) {
      fmt::print(stderr, "feedplane: {}\n", err);
      return 2;
    }
  }
  // Flags override the file.
  if (!f.listen.empty()) cfg.server.listen = f.listen;
  if (!f.data.empty()) cfg.server.data_dir = f.data;
  if (f.shards_set) cfg.server.shards = f.shards;
  if (const char* t = std::getenv("FEEDPLANE_ADMIN_TOKEN"); t != nullptr && *t != 0)
    cfg.api.admin_token = t;
  if (!f.admin_token.empty()) cfg.api.admin_token = f.admin_token;
  if (auto e = add_resolve_pins(cfg, f.resolve, f.resolve_file); !e.empty()) {
    fmt::print(stderr, "feedplane: {}\n", e);
    return 2;
  }
  if (!f.tls_cert.empty()) cfg.server.tls_cert = f.tls_cert;
  if (!f.tls_key.empty()) cfg.server.tls_key = f.tls_key;
  // One TLS context for every shard: its session-ticket keys are shared, so a client that
  // resumes on another shard's listener still resumes.
  std::unique_ptr<net::tls_server_context> tls;
  if (!cfg.server.tls_cert.empty() || !cfg.server.tls_key.empty()) {
    if (cfg.server.tls_cert.empty() || cfg.server.tls_key.empty()) {
      fmt::print(stderr,
                 "feedplane: HTTPS needs both --tls-cert and --tls-key "
                 "(server.tls_cert and server.tls_key)\n");
      return 2;
    }
    std::string terr;
    auto id = net::tls_identity::load(cfg.server.tls_cert, cfg.server.tls_key, &terr);
    if (id) tls = net::tls_server_context::create(std::move(id), nullptr, &terr);
    if (!tls) {
      fmt::print(stderr, "feedplane: TLS: {}\n", terr);
      return 2;
    }
  }

  std::vector<int> cpus;
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
      }
    }
    if (cpus.empty()) cpus.push_back(-1);
  }
  const uint32_t nshards = cfg.server.shards != 0 ? cfg.server.shards : uint32_t(cpus.size());
  raise_fd_limit();

  if (int r = mkdir_p(cfg.server.data_dir); r < 0) {
    fmt::print(stderr, "feedplane: cannot create data directory {}: {}\n", cfg.server.data_dir,
               strerror(-r));
    return 1;
  }
  net::static_files statics;
  const std::string public_dir = cfg.server.data_dir + "/public";
  if (auto err = statics.load(public_dir); !err.empty()) {
    fmt::print(stderr, "feedplane: static files: {}\n", err);
    return 1;
  }

  // The mesh first (every ring), then the store on its rings, then the shards.
  runtime::mesh mesh(nshards, runtime::mesh_options{});
  std::vector<store::store_port> ports = store::ports_from_mesh(mesh);
  store::store_options so;
  so.dir = cfg.server.data_dir + "/db";
  so.group_commit_us = cfg.server.group_commit_us;
  so.crawl_commit_us = cfg.server.crawl_commit_us;
  so.memtable_bytes = uint64_t{cfg.server.memtable_mb} << 20;
  // Reflector lists are derived from the article log (DESIGN.md 9): until list snapshots
  // exist, every start re-matches the whole log (after the records, before `streamed`).
  so.replay_from = 1;
  // With snapshots the replay starts where the lists need it, and at the latest at the
  // recent index's window (the reflector's backfill window).
  so.replay_window_s = cfg.reflector.backfill_window_s;
  std::string err;
  // A record goes to the shard its component's owner() names (the crawler by politeness
  // key, the reflector by partition: DESIGN.md 9); kinds no component owns by hash(key).
  auto db = store::store::open(
      so, std::move(ports),
      [nshards](runtime::kind k, std::string_view key) {
        for (const component_def* d : components()) {
          for (runtime::kind owned : d->kinds) {
            if (owned == k) return d->owner(k, key, nshards) % nshards;
          }
        }
        return uint32_t(XXH3_64bits(key.data(), key.size()) % nshards);
      },
      &err);
  if (!db) {
    fmt::print(stderr, "feedplane: store: {}\n", err);
    return 1;
  }
  // Backups read the store and the lists' snapshots; the shards only start them.
  backup_options bo;
  bo.data_dir = cfg.server.data_dir;
  bo.backup_dir =
      cfg.server.backup_dir.empty() ? cfg.server.data_dir + "/backups" : cfg.server.backup_dir;
  auto backups = std::make_unique<backup_manager>(*db, bo);
  mesh.set_store_notify([](void* d, bool api) { static_cast<store::store*>(d)->notify(api); },
                        db.get());

  net::router routes;
  routes.add("GET", "/healthz", [](net::request_context& ctx, net::http_response& r) {
    auto& c = ctx.context_as<shard_context>();
    r.compressible = false;
    r.cache_control = "no-store";
    if (const char* why = c.db->failed_reason()) {
      net::set_json_error(r, 503, "store_failed",
                          fmt::format("durable writes are refused until restart: {}", why));
      return;
    }
    r.body = "ok\n";
  });
  routes.add("GET", "/readyz", [](net::request_context& ctx, net::http_response& r) {
    auto& c = ctx.context_as<shard_context>();
    r.compressible = false;
    r.cache_control = "no-store";
    if (!c.rt->store_streamed()) {
      net::set_unavailable(r, "start-up streaming from the store is not finished", 1, "starting");
      return;
    }
    for (const component_def* d : components()) {
      if (!c.parts[size_t(d->id)]->ready()) {
        net::set_unavailable(r, fmt::format("the {} is starting", d->name), 1, "starting");
        return;
      }
    }
    r.body = "ready\n";
  });
  routes.add("GET", "/metrics", metrics_route);
  routes.add("GET", "/api/shards/{n}", shard_info_route);
  routes.add("GET", "/api/articles", articles_route);
  routes.add("POST", "/api/backups", backup_start_route);
  routes.add("GET", "/api/backups", backup_list_route);
  routes.add("GET", "/api/backups/{name}", backup_get_route);
  statics.add_routes(routes, "/static/");
  for (const component_def* d : components()) d->add_routes(routes, cfg);

  // Listeners are opened here, in order, so that port 0 resolves once and every shard's
  // SO_REUSEPORT socket binds the same port; errors surface before any thread starts.
  std::vector<std::unique_ptr<shard_thread>> shards;
  std::string listen = cfg.server.listen;
  for (uint32_t i = 0; i < nshards; ++i) {
    int fd = net::listen_tcp(listen, true, &err);
    if (fd < 0) {
      fmt::print(stderr, "feedplane: {}\n", err);
      for (auto& s : shards) close(s->listen_fd);
      return 1;
    }
    if (i == 0) {
      const size_t colon = listen.rfind(':');
      listen = listen.substr(0, colon + 1) + std::to_string(net::bound_port(fd));
    }
    auto s = std::make_unique<shard_thread>();
    s->index = i;
    s->cpu = f.no_pin ? -1 : cpus[i % cpus.size()];
    s->listen_fd = fd;
    s->tls = tls.get();
    shards.push_back(std::move(s));
  }

  // Signals are taken by sigwait on this thread only (blocked above, in every thread).
  std::atomic<bool> go{false};
  for (auto& s : shards) {
    shard_thread* sp = s.get();
    s->thread = std::thread([sp, &cfg, &routes, &mesh, &db, &backups, &go] {
      run_shard(*sp, cfg, routes, mesh, *db, *backups, go);
    });
  }
  bool failed = false;
  for (auto& s : shards) {
    int st;
    // Blocks (a futex), where a yield loop took CPU from the shards it waits for (~2% of a
    // restart's samples on 2 vCPUs).
    // acquire (load and wait): pairs with publish_state's release store; s->error, written
    // before it, is visible here once the state is non-zero.
    while ((st = s->state.load(std::memory_order_acquire)) == 0)
      s->state.wait(0, std::memory_order_acquire);  // acquire: as the load above
    if (st < 0) {
      fmt::print(stderr, "feedplane: {}\n", s->error);
      failed = true;
    }
  }
  if (!failed) {
    db->start();  // streams start-up records to the shards, then commits writes
    go.store(true, std::memory_order_release);  // pairs with the shards' acquire of `go`
    fmt::print(
        "feedplane: listening on {}://{} with {} shard(s) and a store in {}, {} static "
        "file(s) from {}; GET /healthz /readyz /metrics\n",
        tls ? "https" : "http", listen, nshards, so.dir, statics.count(), public_dir);
    std::fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
  }
  // Stop order: shards stop producing (their loops end), then the store, then the rest.
  for (auto& s : shards) {
    if (net::loop* l = mesh.loop(s->index)) l->request_stop();
  }
  go.store(true, std::memory_order_release);  // a shard still waiting to start leaves at once
  for (auto& s : shards) s->thread.join();
  backups.reset();  // waits for a backup still running (it reads the store)
  db->stop();
  db.reset();
  shards.clear();  // loops are destroyed here, after every thread is gone
  return failed ? 1 : 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int* rc) {
  auto* cmd = app.add_subcommand(
      "serve",
      "run the data plane: shards joined by rings, the store thread, an HTTP server on every "
      "shard (GET /healthz, /readyz, /metrics, /static/*)");
  // Option storage is owned by the callback, which the app owns.
  auto f = std::make_shared<serve_flags>();
  cmd->add_option("--config,-c", f->config_path, "TOML configuration file");
  cmd->add_option("--listen", f->listen, "ADDR:PORT to listen on (overrides server.listen)");
  cmd->add_option("--data", f->data, "data directory (overrides server.data_dir)");
  auto* shards_opt = cmd->add_option("--shards", f->shards,
                                     "shards = threads pinned to cores; 0 = one per core "
                                     "(overrides server.shards)")
                         ->check(CLI::Range(0u, 1024u));
  cmd->add_option("--admin-token", f->admin_token,
                  "bearer token of the admin API (overrides api.admin_token and "
                  "FEEDPLANE_ADMIN_TOKEN; prefer the environment variable, which ps does not "
                  "show)");
  cmd->add_option("--resolve", f->resolve,
                  "HOST:PORT:ADDR: connect to ADDR for HOST (or * for "
                  "every name) on PORT, as curl's --resolve; repeatable (adds to net.resolve)");
  cmd->add_option("--resolve-file", f->resolve_file, "a file of HOST:PORT:ADDR pins, one a line");
  cmd->add_option("--tls-cert", f->tls_cert,
                  "PEM certificate chain (leaf first): serve HTTPS on every shard (overrides "
                  "server.tls_cert; needs --tls-key)");
  cmd->add_option("--tls-key", f->tls_key,
                  "PEM private key of --tls-cert (overrides server.tls_key)");
  cmd->add_flag("--no-pin", f->no_pin,
                "do not pin shard threads to cores (hosts shared with other services)");
  cmd->callback([f, rc, shards_opt] {
    f->shards_set = shards_opt->count() > 0;
    *rc = run_serve(*f);
  });
}

}  // namespace feedplane::dataplane
