// The reflector live, as `feedplane serve` runs it but in one process the test drives:
// real shards (io_uring loops, runtime::shard, an http_server each on one SO_REUSEPORT
// port), the real store thread (RocksDB) and the reflector component on every shard.
// Subscriptions are made through the admin bulk route; articles are written while the
// shards serve, by shard 0 as a crawler would (one durable write, sequenced by the store,
// broadcast to every shard); polls over loopback see them arrive, with new ETags, 304s,
// an updated entry swapped in place and the newest k kept.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../bench/proc_stats.h"
#include "feedplane/dataplane/component.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/net/http_server.h"
#include "feedplane/net/loop.h"
#include "feedplane/reflector/reflector.h"
#include "feedplane/reflector/snapshot.h"
#include "feedplane/reflector/token.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"
#include "http_test_client.h"
#include "temp_dir.h"

namespace rt = feedplane::runtime;
namespace net = feedplane::net;
namespace st = feedplane::store;
namespace dp = feedplane::dataplane;

namespace {

using feedplane::test::temp_dir;

// Articles the test hands to shard 0, which writes them to the store on its own thread.
struct inbox {
  std::mutex mu;
  std::vector<rt::article_ref> articles;
  std::atomic<uint64_t> last_first_seq{0};  // first_seq of the last acknowledged write
  std::atomic<uint32_t> acked{0};
};

struct ack : rt::store_write {
  inbox* box = nullptr;
  void on_durable(rt::shard&) override {
    EXPECT_EQ(status, 0);
    // The count's release pairs with the test's acquire load of it, after which it reads
    // first_seq (relaxed is enough behind that edge).
    box->last_first_seq.store(first_seq, std::memory_order_relaxed);
    // Release: pairs with the test's acquire loads of acked in write_and_wait.
    box->acked.fetch_add(1, std::memory_order_release);
  }
};

class live_server {
 public:
  // data_dir: the store's and the snapshots' directory, to start again on what an earlier
  // server left (default: a directory of its own, removed with it); tweak: config changes.
  explicit live_server(uint32_t n, uint32_t memory_limit_mb = 0,
                       const rt::mesh_options& mo = rt::mesh_options{},
                       const std::string& data_dir = {},
                       const std::function<void(dp::config&)>& tweak = {})
      : n_(n), mesh_(n, mo) {
    cfg_.api.admin_token = "live-admin";
    cfg_.reflector.memory_limit_mb = memory_limit_mb;
    // The list snapshots go beside the store, not in the cwd.
    cfg_.server.data_dir = data_dir.empty() ? dir_.path : data_dir;
    if (tweak) tweak(cfg_);
    const dp::component_def& def = feedplane::reflector::component();
    st::store_options so;  // as `feedplane serve` sets them
    so.dir = cfg_.server.data_dir;
    so.replay_from = 1;
    so.replay_window_s = cfg_.reflector.backfill_window_s;
    std::string err;
    db_ = st::store::open(
        so, st::ports_from_mesh(mesh_),
        [&def, n](rt::kind k, std::string_view key) { return def.owner(k, key, n) % n; }, &err);
    EXPECT_TRUE(db_) << err;
    mesh_.set_store_notify([](void* d, bool api) { static_cast<st::store*>(d)->notify(api); },
                           db_.get());
    def.add_routes(routes_, cfg_);
    std::string listen = "127.0.0.1:0";
    for (uint32_t i = 0; i < n; ++i) {
      fds_.push_back(net::listen_tcp(listen, true, &err));
      EXPECT_GE(fds_.back(), 0) << err;
      if (i == 0) {
        port_ = net::bound_port(fds_[0]);
        listen = "127.0.0.1:" + std::to_string(port_);
      }
    }
    for (uint32_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { run(i); });
    while (registered_.load() < n) std::this_thread::yield();
    db_->start();
    go_.store(true);
  }

  ~live_server() {
    stop_.store(true);
    wake_all();
    while (drained_.load() < n_) {
      wake_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    db_->stop();
    release_.store(true);
    for (auto& t : threads_) t.join();
  }

  int port() const { return port_; }
  inbox& box() { return box_; }
  const st::store_stats& store_stats() const { return db_->stats(); }
  const st::store& store() const { return *db_; }
  // Hands articles to shard 0 and waits for their durable write; returns the first seq.
  uint64_t write(std::vector<rt::article_ref> as) { return wait_acked(write_async(std::move(as))); }
  // Hands articles to shard 0; returns the count of acks to pass to wait_acked.
  uint32_t write_async(std::vector<rt::article_ref> as) {
    // Acquire pairs with on_durable's release fetch_add: after it, last_first_seq is the
    // value that write stored.
    const uint32_t before = box_.acked.load(std::memory_order_acquire);
    {
      std::lock_guard<std::mutex> g(box_.mu);
      for (auto& a : as) box_.articles.push_back(std::move(a));
    }
    wake_all();
    return before;
  }
  // Acquire: pairs with on_durable's release increment (as in wait_acked).
  uint32_t acked() const { return box_.acked.load(std::memory_order_acquire); }
  uint64_t wait_acked(uint32_t before) {
    // Acquire: pairs with on_durable's release increment, so first_seq is visible after it.
    for (int i = 0; i < 20000 && box_.acked.load(std::memory_order_acquire) == before; ++i) {
      wake_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Acquire as above; then relaxed is enough for first_seq, written before the release.
    EXPECT_NE(box_.acked.load(std::memory_order_acquire), before) << "the write never came back";
    return box_.last_first_seq.load(std::memory_order_relaxed);  // ordered by the acquire above
  }

 private:
  void wake_all() {
    for (uint32_t i = 0; i < n_; ++i) {
      if (net::loop* l = mesh_.loop(i)) l->wake_from_any_thread();
    }
  }

  void run(uint32_t i) {
    net::loop_options lo;
    lo.ring_entries = 256;
    lo.buffer_count = 64;
    lo.buffer_size = 4096;
    std::string err;
    auto l = net::loop::create(lo, &err);
    if (!l) {
      ADD_FAILURE() << err;
      registered_.fetch_add(1);
      drained_.fetch_add(1);
      return;
    }
    {
      rt::shard s(mesh_, i, *l);
      dp::shard_services ctx;
      ctx.rt = &s;
      ctx.db = db_.get();
      ctx.cfg = &cfg_;
      ctx.requests_deferred = &s.metrics().add_counter("deferred", "deferred requests");
      net::http_server srv(*l, routes_, dp::server_options_from(cfg_.server), &ctx);
      ctx.srv = &srv;
      s.set_context(&ctx);
      std::unique_ptr<dp::component> part = feedplane::reflector::component().create(ctx);
      ctx.parts[size_t(dp::component_id::reflector)] = part.get();
      s.set_listener(part.get());
      EXPECT_TRUE(srv.start(fds_[i]));
      registered_.fetch_add(1);
      while (!go_.load()) std::this_thread::yield();
      while (!stop_.load()) {
        l->run_once(true);
        if (i != 0) continue;
        std::vector<rt::article_ref> mine;
        {
          std::lock_guard<std::mutex> g(box_.mu);
          mine.swap(box_.articles);
        }
        if (mine.empty()) continue;
        auto w = std::make_unique<ack>();
        w->box = &box_;
        w->articles = std::move(mine);
        rt::write_ptr wp = std::move(w);
        EXPECT_TRUE(s.write(wp));
        s.turn();  // publish the write now (the loop would at the end of its next turn)
      }
      part->stop();
      srv.shutdown();
      for (int k = 0; k < 100 && (srv.stats().open > 0 || !part->quiescent()); ++k)
        l->run_once(false);
      s.set_listener(nullptr);
      part.reset();
    }
    drained_.fetch_add(1);
    // The loop outlives the store thread, which may still wake it.
    while (!release_.load()) std::this_thread::yield();
    close(fds_[i]);
  }

  temp_dir dir_;
  uint32_t n_;
  rt::mesh mesh_;
  dp::config cfg_;
  std::unique_ptr<st::store> db_;
  net::router routes_;
  std::vector<int> fds_;
  int port_ = 0;
  inbox box_;
  std::vector<std::thread> threads_;
  // Start-up and shutdown handshakes between the test and the shard threads: seq_cst
  // (the default), a few operations per test, nothing to gain from weaker orders.
  std::atomic<uint32_t> registered_{0}, drained_{0};
  std::atomic<bool> go_{false}, stop_{false}, release_{false};
};

http_test::response request(int port, const std::string& method, const std::string& path,
                            const std::string& body = {}, const std::string& extra = {}) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + extra;
  if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  return http_test::one_shot(port, req);
}

// Moves each article into the vector: an initializer list would keep a copy of every
// reference alive until the write returned, and the store may set an article's sequence only
// while it holds the sole reference (article::set_seq asserts it in debug builds).
template <class... A>
std::vector<rt::article_ref> refs(A&&... a) {
  std::vector<rt::article_ref> v;
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

rt::article_ref article(const std::string& title, const std::string& guid, uint64_t replaces) {
  rt::article_builder b;
  b.title = title;
  b.guid = guid;
  b.link = "https://live.example/" + guid;
  b.summary = "<p>" + title + "</p>";
  b.source_url = "https://live.example/feed";
  b.meta.published = 1'700'000'000;
  b.meta.replaces = replaces;
  return b.freeze();
}

struct feed_state {
  int status = 0;
  std::string etag;
  std::vector<std::string> titles;
  std::vector<uint64_t> seqs;
};

feed_state poll(int port, const std::string& feed) {
  auto r = request(port, "GET", feed + ".json");
  feed_state f;
  f.status = r.status;
  f.etag = r.headers["etag"];
  if (r.status != 200) return f;
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  EXPECT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS) << r.body;
  for (simdjson::dom::element it : doc["items"].get_array()) {
    f.titles.emplace_back(std::string_view(it["title"]));
    f.seqs.push_back(uint64_t(it["_feedplane"]["seq"]));
  }
  return f;
}

// Polls until the feed holds `n` items, the newest titled `first` and the second `second`
// when given (shards apply the broadcast at their own pace).
// POST /api/subscriptions:bulk with the admin token, again while a shard answers 503 (busy
// at start-up).
http_test::response bulk_create(int port, const std::string& bulk) {
  http_test::response r;
  for (int i = 0; i < 5000; ++i) {
    r = request(port, "POST", "/api/subscriptions:bulk", bulk,
                "Authorization: Bearer live-admin\r\n");
    if (r.status != 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return r;
}

feed_state poll_until(int port, const std::string& feed, size_t n, const std::string& first,
                      const std::string& second = {}) {
  feed_state f;
  for (int i = 0; i < 5000; ++i) {
    f = poll(port, feed);
    if (f.status == 200 && f.titles.size() == n && (first.empty() || f.titles[0] == first) &&
        (second.empty() || (n > 1 && f.titles[1] == second)))
      return f;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ADD_FAILURE() << "the feed never reached " << n << " items; it has " << f.titles.size();
  return f;
}

// Ready once every shard re-matched the (empty) log: a poll of no feed in a partition of
// each shard answers 404, not 503 starting.
void wait_ready(int port, uint32_t shards) {
  for (uint32_t p = 0; p < shards; ++p) {
    feedplane::reflector::feed_token t;
    t.partition = p;
    t.slot = 12345;
    int status = 0;
    for (int i = 0; i < 5000 && status != 404; ++i) {
      status = request(port, "GET", "/f/" + feedplane::reflector::encode_token(t)).status;
      if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(status, 404) << "shard " << p << " never became ready";
  }
}

// The values of every `"key": "` in body, in order.
std::vector<std::string> string_fields(const std::string& body, const std::string& key) {
  std::vector<std::string> out;
  const std::string open = "\"" + key + "\": \"";
  for (size_t at = 0; (at = body.find(open, at)) != std::string::npos;) {
    at += open.size();
    out.push_back(body.substr(at, body.find('"', at) - at));
  }
  return out;
}

// One subscription through the bulk route: its feed's path ("" after a failure).
std::string create_one(int port, const std::string& line) {
  const http_test::response r = bulk_create(port, line);
  EXPECT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> feeds = string_fields(r.body, "feed");
  EXPECT_EQ(feeds.size(), 1u) << r.body;
  return feeds.size() == 1 ? feeds[0] : std::string();
}

TEST(reflector_live, articles_written_while_serving_reach_the_feeds) {
  live_server srv(3);
  const int port = srv.port();
  wait_ready(port, 3);
  http_test::response r;
  const std::string bulk =
      "{\"account\": \"live\", \"query\": \"rust tokio\", \"k\": 3, \"backfill\": false}\n"
      "{\"account\": \"live\", \"query\": \"linux -windows\", \"backfill\": false}\n";
  r = bulk_create(port, bulk);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> feeds;
  for (size_t at = 0; (at = r.body.find("\"feed\": \"", at)) != std::string::npos;) {
    at += 9;
    feeds.push_back(r.body.substr(at, r.body.find('"', at) - at));
  }
  ASSERT_EQ(feeds.size(), 2u) << r.body;
  const std::string rust = feeds[0], linux_feed = feeds[1];

  feed_state empty = poll(port, rust);
  ASSERT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.titles.empty());

  const uint64_t s1 =
      srv.write(refs(article("Rust and Tokio one", "r1", 0), article("Linux kernel", "l1", 0),
                     article("Linux and Windows", "l2", 0)));
  feed_state f = poll_until(port, rust, 1, "Rust and Tokio one");
  EXPECT_EQ(f.seqs, std::vector<uint64_t>{s1});
  EXPECT_NE(f.etag, empty.etag) << "new content, new tag";
  feed_state l = poll_until(port, linux_feed, 1, "Linux kernel");
  EXPECT_EQ(l.seqs, std::vector<uint64_t>{s1 + 1}) << "-windows kept the third out";

  // Revalidation: the current tag is 304 (on whichever shard the connection lands), the
  // old one gets the new content.
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(request(port, "GET", rust + ".json", {}, "If-None-Match: " + f.etag + "\r\n").status,
              304);
    EXPECT_EQ(
        request(port, "GET", rust + ".json", {}, "If-None-Match: " + empty.etag + "\r\n").status,
        200);
  }

  // More matches than k = 3: the newest three, newest first; an update of the first entry
  // (which left the list) comes back as new, an update of a listed one swaps in place.
  const uint64_t s2 = srv.write(refs(article("Rust and Tokio two", "r2", 0),
                                     article("Rust and Tokio three", "r3", 0),
                                     article("Rust and Tokio four", "r4", 0)));
  f = poll_until(port, rust, 3, "Rust and Tokio four");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s2 + 2, s2 + 1, s2}));
  const uint64_t s3 = srv.write(refs(article("Rust and Tokio three, updated", "r3", s2 + 1)));
  f = poll_until(port, rust, 3, "Rust and Tokio four", "Rust and Tokio three, updated");
  EXPECT_EQ(f.titles,
            (std::vector<std::string>{"Rust and Tokio four", "Rust and Tokio three, updated",
                                      "Rust and Tokio two"}));
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s2 + 2, s3, s2}));
}

}  // namespace

namespace {

// An article crawled just now from the feed at feed_url, source `source_id`: inside the
// recent window, so backfill and preview see it.
rt::article_ref sourced(const std::string& title, const std::string& guid,
                        const std::string& feed_url, uint64_t source_id) {
  rt::article_builder b;
  b.title = title;
  b.guid = guid;
  b.link = feed_url + "#" + guid;
  b.summary = "<p>" + title + "</p>";
  b.source_url = feed_url;
  b.meta.source_id = source_id;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  b.meta.published = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  b.meta.fetched_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  return b.freeze();
}

// source:HOST and source:ID through the whole path: the reflector adds each article's
// source tokens (its feed URL's host, its source id) when it matches, so a scoped
// subscription receives only its source's matching articles, live, in a preview and in
// a backfill; a word that spells a host is no scope.
TEST(reflector_live, source_scoped_subscriptions_receive_only_their_sources_articles) {
  live_server srv(2);
  const int port = srv.port();
  wait_ready(port, 2);
  http_test::response r;
  const std::string bulk =
      "{\"account\": \"scoped\", \"query\": \"source:apple.com ios\", \"backfill\": false}\n"
      "{\"account\": \"scoped\", \"query\": \"ios -source:apple.com\", \"backfill\": false}\n"
      "{\"account\": \"scoped\", \"query\": \"source:00000000000000aa\", \"backfill\": false}\n"
      "{\"account\": \"scoped\", \"query\": \"source:developer.apple.com OR source:b.example\", "
      "\"backfill\": false}\n";
  r = bulk_create(port, bulk);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> feeds = string_fields(r.body, "feed");
  ASSERT_EQ(feeds.size(), 4u) << r.body;

  const uint64_t s1 = srv.write(
      refs(sourced("iOS 18 released", "a1", "https://developer.apple.com/news/rss/news.rss", 0xaa),
           sourced("iOS tips", "a2", "https://www.notapple.com/feed", 0xbb),
           sourced("macOS news", "a3", "https://apple.com/newsroom/rss", 0xcc),
           sourced("iOS in the newsroom", "a4", "https://apple.com/newsroom/rss", 0xcc),
           sourced("Why apple.com ships iOS", "a5", "https://b.example/feed", 0xdd)));
  // Shards apply the broadcast at their own pace: poll until each feed has its count.
  feed_state f = poll_until(port, feeds[0], 2, "iOS in the newsroom");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 3, s1})) << "apple.com and under it";
  f = poll_until(port, feeds[1], 2, "Why apple.com ships iOS");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 4, s1 + 1})) << "notapple.com is not apple.com";
  f = poll_until(port, feeds[2], 1, "iOS 18 released");
  EXPECT_EQ(f.seqs, std::vector<uint64_t>{s1}) << "source 00000000000000aa only";
  f = poll_until(port, feeds[3], 2, "Why apple.com ships iOS");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 4, s1}));

  // Preview and backfill search the recent articles: the scope holds there too.
  r = request(port, "POST", "/api/accounts");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::vector<std::string> secret = string_fields(r.body, "secret");
  ASSERT_EQ(secret.size(), 1u) << r.body;
  const std::string auth = "Authorization: Bearer " + secret[0] + "\r\n";
  r = request(port, "POST", "/api/preview", "{\"query\": \"source:apple.com\", \"k\": 10}", auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(string_fields(r.body, "title"),
            (std::vector<std::string>{"iOS in the newsroom", "macOS news", "iOS 18 released"}));
  r = request(port, "POST", "/api/preview", "{\"query\": \"ios -source:apple.com\"}", auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(string_fields(r.body, "title"),
            (std::vector<std::string>{"Why apple.com ships iOS", "iOS tips"}));
  r = request(port, "POST", "/api/preview", "{\"query\": \"source:apple\"}", auth);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("bad_source"), std::string::npos) << r.body;
  r = request(port, "POST", "/api/subscriptions", "{\"query\": \"source:apple.com ios\"}", auth);
  ASSERT_EQ(r.status, 201) << r.body;
  const std::vector<std::string> created = string_fields(r.body, "rss");
  ASSERT_EQ(created.size(), 1u) << r.body;
  f = poll_until(port, created[0], 2, "iOS in the newsroom");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 3, s1})) << "backfilled from the recent window";
}

// POST /api/match-time (admin): every shard matches the probe, or a pool of probes in
// turn, against what it holds and answers its subscriptions and how many matched; bad
// bodies and a missing token are refused.
TEST(reflector_live, match_time_probes_every_shard) {
  live_server srv(2);
  const int port = srv.port();
  wait_ready(port, 2);
  http_test::response r;
  std::string bulk;
  for (int i = 0; i < 40; ++i)
    bulk += fmt::format("{{\"account\": \"probe\", \"query\": \"{}\", \"backfill\": false}}\n",
                        i % 2 == 0 ? "rust" : "golang tokio");
  r = bulk_create(port, bulk);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string admin = "Authorization: Bearer live-admin\r\n";
  r = request(port, "POST", "/api/match-time",
              "{\"title\": \"Rust news\", \"text\": \"rust and tokio\", \"repeat\": 5}", admin);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"words\": 5"), std::string::npos) << r.body;
  // Twenty "rust" subscriptions match, split over the shards; the others need golang.
  uint64_t held = 0, matched = 0;
  for (size_t at = 0; (at = r.body.find("\"subscriptions\": ", at)) != std::string::npos;) {
    at += 17;
    held += std::stoull(r.body.substr(at));
    const size_t m = r.body.find("\"matched\": ", at) + 11;
    matched += std::stoull(r.body.substr(m));
  }
  EXPECT_EQ(held, 40u) << r.body;
  EXPECT_EQ(matched, 20u) << r.body;
  EXPECT_EQ(request(port, "POST", "/api/match-time", "{\"text\": \"x\"}").status, 401);
  EXPECT_EQ(request(port, "POST", "/api/match-time", "{\"text\": 3}", admin).status, 400);
  EXPECT_EQ(request(port, "POST", "/api/match-time", "{\"repeat\": 0}", admin).status, 400);
  EXPECT_EQ(request(port, "POST", "/api/match-time", "{\"other\": 1}", admin).status, 400);
  EXPECT_EQ(request(port, "POST", "/api/match-time", "[1", admin).status, 400);
  // A pool matched in turn: the answer names it, its default passes fill 1,000 matches, and
  // "matched" is the last article's (all 40 subscriptions; the first article matches 20).
  r = request(port, "POST", "/api/match-time",
              "{\"articles\": [{\"title\": \"Rust\", \"text\": \"rust news\"}, "
              "{\"title\": \"Go\", \"text\": \"golang, tokio and rust\"}]}",
              admin);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"articles\": 2, \"repeat\": 500"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"mean_us\": "), std::string::npos) << r.body;
  matched = 0;
  for (size_t at = 0; (at = r.body.find("\"matched\": ", at)) != std::string::npos;) {
    at += 11;
    matched += std::stoull(r.body.substr(at));
  }
  EXPECT_EQ(matched, 40u) << r.body;
  const auto refused = [&](const std::string& body, std::string_view why) {
    const auto got = request(port, "POST", "/api/match-time", body, admin);
    EXPECT_EQ(got.status, 400) << body;
    EXPECT_NE(got.body.find(why), std::string::npos) << got.body;
  };
  refused("{\"text\": \"x\", \"articles\": [{\"text\": \"y\"}]}", "either");
  refused("{\"articles\": []}", "either");
  refused("{\"articles\": [1]}", "array of");
  refused("{\"articles\": [{\"text\": \"y\", \"link\": \"z\"}]}", "nothing else");
  refused("{\"articles\": [{\"text\": 3}]}", "nothing else");
  refused("{\"articles\": [{\"text\": \"a\"}, {\"text\": \"b\"}], \"repeat\": 501}",
          "at most 1000 matches");
  std::string many = "{\"articles\": [";
  for (int i = 0; i < 257; ++i) many += i == 0 ? "{\"text\": \"a\"}" : ", {\"text\": \"a\"}";
  refused(many + "], \"repeat\": 1}", "at most 256");
}

// GET /api/match-stats (admin): exact quantiles over the live articles each shard matched,
// filtered by the article's word count; every shard matches every article.
TEST(reflector_live, match_stats_count_the_live_articles_by_length) {
  live_server srv(2);
  const int port = srv.port();
  wait_ready(port, 2);
  std::string bulk;
  for (int i = 0; i < 40; ++i)
    bulk += fmt::format("{{\"account\": \"tail\", \"query\": \"{}\", \"backfill\": false}}\n",
                        i % 2 == 0 ? "rust" : "linux kernel");
  http_test::response r = bulk_create(port, bulk);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string admin = "Authorization: Bearer live-admin\r\n";
  r = request(port, "GET", "/api/match-stats", "", admin);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"articles\": 0,"), std::string::npos) << r.body;
  srv.write(refs(article("Rust and Tokio one", "t1", 0), article("Linux kernel", "t2", 0),
                 article("Nothing to see", "t3", 0)));
  // Three articles on each of two shards, once both have matched them.
  for (int i = 0; i < 200; ++i) {
    r = request(port, "GET", "/api/match-stats", "", admin);
    if (r.body.find("\"articles\": 6,") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"articles\": 6,"), std::string::npos) << r.body;
  for (const char* part :
       {"\"index_us\": {\"p50\": ", "\"total_us\": {\"p50\": ", "\"index_cpu_us\": {\"p50\": ",
        "\"p99_over_p50\": ", "\"shard\": 1, \"articles\": 3,"})
    EXPECT_NE(r.body.find(part), std::string::npos) << part << "\n" << r.body;
  // samples=1: each shard's samples themselves, oldest first, eight fields each; their
  // work per article sums to the means the same answer gives.
  r = request(port, "GET", "/api/match-stats?samples=1", "", admin);
  ASSERT_EQ(r.status, 200) << r.body;
  {
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    ASSERT_EQ(p.parse(r.body).get(doc), simdjson::SUCCESS) << r.body;
    simdjson::dom::array fields, shards;
    ASSERT_EQ(doc["sample_fields"].get_array().get(fields), simdjson::SUCCESS) << r.body;
    EXPECT_EQ(fields.size(), 8u);
    ASSERT_EQ(doc["shards"].get_array().get(shards), simdjson::SUCCESS);
    for (simdjson::dom::element sh : shards) {
      simdjson::dom::array samples;
      ASSERT_EQ(sh["samples"].get_array().get(samples), simdjson::SUCCESS) << r.body;
      ASSERT_EQ(samples.size(), 3u) << r.body;
      uint64_t last_at = 0, postings = 0;
      for (simdjson::dom::element one : samples) {
        simdjson::dom::array f;
        ASSERT_EQ(one.get_array().get(f), simdjson::SUCCESS);
        ASSERT_EQ(f.size(), 8u);
        const uint64_t at = f.at(0).get_uint64().value_unsafe();
        EXPECT_GE(at, last_at) << "oldest first";
        last_at = at;
        EXPECT_GT(f.at(1).get_uint64().value_unsafe(), 0u) << "words";
        EXPECT_GE(f.at(4).get_uint64().value_unsafe(), f.at(2).get_uint64().value_unsafe())
            << "the whole match includes the index's";
        postings += f.at(5).get_uint64().value_unsafe();
      }
      double mean = 0;
      ASSERT_EQ(sh["postings"].get_double().get(mean), simdjson::SUCCESS);
      EXPECT_NEAR(mean * 3, double(postings), 0.2) << r.body;
      EXPECT_GT(postings, 0u) << "the articles' words have postings";
    }
  }
  EXPECT_EQ(request(port, "GET", "/api/match-stats?samples=2", "", admin).status, 400);
  r = request(port, "GET", "/api/match-stats?min_words=100000", "", admin);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"articles\": 0,"), std::string::npos) << "no article that long";
  EXPECT_EQ(r.body.find("\"samples\""), std::string::npos) << "only when asked";
  EXPECT_EQ(request(port, "GET", "/api/match-stats").status, 401);
  EXPECT_EQ(request(port, "GET", "/api/match-stats?min_words=x", "", admin).status, 400);
  EXPECT_EQ(request(port, "GET", "/api/match-stats?other=1", "", admin).status, 400);
}

// The sum over shards of a numeric field of each shard's line in a match-stats answer.
double shards_sum(const std::string& body, const char* key) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (p.parse(body).get(doc) != simdjson::SUCCESS) return -1;
  double sum = 0;
  for (simdjson::dom::element sh : doc["shards"].get_array()) {
    double v = 0;
    if (sh[key].get_double().get(v) != simdjson::SUCCESS) {
      uint64_t u = 0;
      if (sh[key].get_uint64().get(u) != simdjson::SUCCESS) return -1;
      v = double(u);
    }
    sum += v;
  }
  return sum;
}

// GET path (a match-stats query) until both shards counted one article in its range.
http_test::response stats_of_one_article_each(int port, const std::string& path) {
  http_test::response r;
  for (int i = 0; i < 400; ++i) {
    r = request(port, "GET", path, "", "Authorization: Bearer live-admin\r\n");
    if (r.body.find("\"articles\": 2,") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(r.body.find("\"articles\": 2,"), std::string::npos) << r.body;
  return r;
}

// 320 articles "everywhereword N" (N = 0..319), 40 a write: match() counts one in eight of
// them into the word counts, as does a shard with no subscription.
void write_everywhereword_articles(live_server& srv, const std::string& guid_prefix) {
  for (int b = 0; b < 8; ++b) {
    std::vector<rt::article_ref> batch;
    for (int i = 0; i < 40; ++i)
      batch.push_back(article(fmt::format("everywhereword {}", b * 40 + i),
                              fmt::format("{}-{}-{}", guid_prefix, b, i), 0));
    srv.write(std::move(batch));
  }
}

// The index's upkeep on the shards: subscriptions made before the shards saw any article
// are filed with every word count at zero, under the longer word ("everywhereword", which
// every article then carries, not "tokio", which none does), so each article reads all of
// them. Once articles have been counted, an upkeep pass re-files them under "tokio", and an
// article with "everywhereword" alone reads nothing: the index's work per article
// (GET /api/match-stats, "postings") falls from the subscriptions' count to zero.
TEST(reflector_live, the_index_upkeep_refiles_subscriptions_made_before_any_article) {
  live_server srv(2);
  const int port = srv.port();
  wait_ready(port, 2);
  std::string bulk;
  for (int i = 0; i < 40; ++i)
    bulk += "{\"account\": \"upkeep\", \"query\": \"everywhereword tokio\", \"backfill\": false}\n";
  http_test::response r = bulk_create(port, bulk);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string admin = "Authorization: Bearer live-admin\r\n";
  std::string filler;
  for (int i = 0; i < 20; ++i) filler += fmt::format(" filler{}", i);
  // Before: the first article any shard matches, 20-odd words.
  srv.write(refs(article("everywhereword" + filler, "before", 0)));
  r = stats_of_one_article_each(port, "/api/match-stats?min_words=15&max_words=60");
  EXPECT_EQ(shards_sum(r.body, "postings"), 40.0) << "each shard read all of its own\n" << r.body;
  write_everywhereword_articles(srv, "warm");
  // The next pass re-files all 40 (it starts once the shard counted 8 of these articles).
  double refiled = 0;
  for (int i = 0; i < 600 && refiled < 40; ++i) {
    r = request(port, "GET", "/api/match-stats", "", admin);
    refiled = shards_sum(r.body, "refiled");
    if (refiled < 40) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(refiled, 40.0) << r.body;
  EXPECT_GE(shards_sum(r.body, "upkeep_passes"), 2.0) << r.body;
  // After: a longer article with "everywhereword" reads nothing; one with both words still
  // matches every subscription (its feed shows it).
  std::string longer;
  for (int i = 0; i < 100; ++i) longer += fmt::format(" other{}", i);
  srv.write(refs(article("everywhereword" + longer, "after", 0)));
  r = stats_of_one_article_each(port, "/api/match-stats?min_words=80&max_words=1000");
  EXPECT_EQ(shards_sum(r.body, "postings"), 0.0) << r.body;
  const std::string feed = create_one(
      port,
      "{\"account\": \"upkeep\", \"query\": \"everywhereword tokio\", \"backfill\": false}\n");
  ASSERT_FALSE(feed.empty());
  srv.write(refs(article("tokio everywhereword both", "both", 0)));
  poll_until(port, feed, 1, "tokio everywhereword both");
}

// The word counts behind the filing survive a restart, and are kept before any
// subscription exists. First run: 320 articles with "everywhereword" come before any
// subscription (a shard with none still counts one in eight), so 40 subscriptions
// "everywhereword tokio" made after them are filed under "tokio" at once: an article with
// "everywhereword" alone reads nothing, and the upkeep re-files nothing. Second run on the
// same data: the subscriptions are added before the replay counts anything, but the words
// file (reflector/snapshot.h) gave the shards the first run's counts, so again nothing is
// read and nothing re-filed (without it the first pass re-files all 40).
TEST(reflector_live, a_restart_files_subscriptions_by_the_last_runs_word_counts) {
  temp_dir dir("feedplane-live-words");
  const auto tweak = [](dp::config& c) { c.reflector.snapshot_interval_s = 1; };
  const std::string admin = "Authorization: Bearer live-admin\r\n";
  std::string longer;
  for (int i = 0; i < 100; ++i) longer += fmt::format(" other{}", i);
  // Both shards past their first upkeep pass: its passes counted, nothing re-filed, and an
  // article with "everywhereword" alone read nothing.
  const auto nothing_read_nothing_refiled = [&](live_server& srv, const std::string& title) {
    const int port = srv.port();
    http_test::response r;
    // A pass over an empty index counts for none, and the wait after it doubles from 2 s.
    for (int i = 0; i < 2000; ++i) {
      r = request(port, "GET", "/api/match-stats", "", admin);
      if (shards_sum(r.body, "upkeep_passes") >= 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GE(shards_sum(r.body, "upkeep_passes"), 2.0) << r.body;
    EXPECT_EQ(shards_sum(r.body, "refiled"), 0.0) << r.body;
    srv.write(refs(article("everywhereword" + longer, title, 0)));
    r = stats_of_one_article_each(port, "/api/match-stats?min_words=80&max_words=1000");
    EXPECT_EQ(shards_sum(r.body, "postings"), 0.0) << r.body;
  };
  std::string feed;
  {
    live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
    const int port = srv.port();
    wait_ready(port, 2);
    write_everywhereword_articles(srv, "early");
    std::string bulk;
    for (int i = 0; i < 39; ++i)
      bulk +=
          "{\"account\": \"words\", \"query\": \"everywhereword tokio\", \"backfill\": false}\n";
    ASSERT_EQ(bulk_create(port, bulk).status, 200);
    feed = create_one(
        port,
        "{\"account\": \"words\", \"query\": \"everywhereword tokio\", \"backfill\": false}\n");
    ASSERT_FALSE(feed.empty());
    nothing_read_nothing_refiled(srv, "first run");
  }
  ASSERT_EQ(
      ::access(feedplane::reflector::word_frequencies_path(dir.path + "/lists", 0).c_str(), F_OK),
      0);
  live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
  wait_ready(srv.port(), 2);
  nothing_read_nothing_refiled(srv, "second run");
  // The subscriptions still match what they should.
  srv.write(refs(article("tokio everywhereword both", "both", 0)));
  poll_until(srv.port(), feed, 1, "tokio everywhereword both");
}

}  // namespace

namespace {

// The one reader of a process's resident memory (bench/proc_stats.h).
uint64_t resident_bytes() { return uint64_t(feedplane::bench::rss_bytes(getpid())); }

// GET /api/memory until every one of `shards` has answered `state` (connections land on
// either shard; each answers for itself).
bool every_shard_says(int port, uint32_t shards, const std::string& state) {
  std::vector<bool> seen(shards, false);
  uint32_t left = shards;
  std::string last;
  for (int i = 0; i < 10000 && left > 0; ++i) {
    const auto r = request(port, "GET", "/api/memory", {}, "Authorization: Bearer live-admin\r\n");
    last = r.body;
    const size_t at = r.body.find("\"shard\": ");
    if (r.status == 200 && at != std::string::npos &&
        r.body.find("\"state\": \"" + state + "\"") != std::string::npos) {
      const uint32_t shard = uint32_t(std::stoul(r.body.substr(at + 9)));
      if (shard < shards && !seen[shard]) {
        seen[shard] = true;
        --left;
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(left, 0u) << "not every shard reached " << state << "; last answer: " << last;
  return left == 0;
}

// Memory pressure (issue 11; DESIGN.md 9): with the process above reflector.memory_limit_mb
// every shard pauses the article stream, so articles sequenced meanwhile wait on the rings;
// once memory returns the shards resume and the articles reach the feeds: nothing lost.
// The test moves the process's resident memory itself (a block it touches, then unmaps).
// Raises the process's resident memory 64 MiB above limit_mb (an anonymous mapping with
// every page touched) until release() or destruction.
class resident_block {
 public:
  explicit resident_block(uint32_t limit_mb) {
    const uint64_t limit = uint64_t(limit_mb) << 20, now = resident_bytes();
    size_ = size_t((limit > now ? limit - now : 0) + (uint64_t{64} << 20));
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    block_ = p;
    memset(block_, 1, size_);  // every page resident
  }
  ~resident_block() { release(); }
  resident_block(const resident_block&) = delete;
  resident_block& operator=(const resident_block&) = delete;
  bool ok() const { return block_ != nullptr; }
  void release() {
    if (block_ != nullptr) munmap(block_, size_);
    block_ = nullptr;
  }

 private:
  void* block_ = nullptr;
  size_t size_ = 0;
};

TEST(reflector_live, memory_pressure_pauses_the_article_stream_and_loses_nothing) {
  const uint32_t limit_mb = uint32_t(resident_bytes() >> 20) + 384;
  live_server srv(2, limit_mb);
  const int port = srv.port();
  wait_ready(port, 2);
  ASSERT_TRUE(every_shard_says(port, 2, "normal"));
  const std::string feed =
      create_one(port, "{\"account\": \"mem\", \"query\": \"pressure\", \"backfill\": false}\n");
  ASSERT_FALSE(feed.empty());

  resident_block block(limit_mb);
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(every_shard_says(port, 2, "paused"));
  const uint64_t s1 =
      srv.write(refs(article("pressure one", "m1", 0), article("pressure two", "m2", 0)));
  // Sequenced and durable, but on the rings: no shard has matched them.
  const feed_state held = poll(port, feed);
  EXPECT_EQ(held.status, 200);
  EXPECT_TRUE(held.titles.empty()) << held.titles.size() << " items while paused";

  block.release();
  ASSERT_TRUE(every_shard_says(port, 2, "normal"));
  const feed_state f = poll_until(port, feed, 2, "pressure two");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 1, s1}));
  EXPECT_EQ(request(port, "GET", "/api/memory").status, 401) << "admin only";
}

// While a shard is paused and its article ring is full, the store holds the broadcast and
// the crawl lane; accounts and subscriptions are still created and acknowledged at once
// (they travel on the api lane), and the held articles arrive when memory is back.
TEST(reflector_live, api_writes_pass_an_article_stream_paused_by_memory_pressure) {
  const uint32_t limit_mb = uint32_t(resident_bytes() >> 20) + 384;
  rt::mesh_options mo;
  mo.article_ring = 8;
  live_server srv(2, limit_mb, mo);
  const int port = srv.port();
  wait_ready(port, 2);
  const std::string feed =
      create_one(port, "{\"account\": \"mem\", \"query\": \"stalled\", \"backfill\": false}\n");
  ASSERT_FALSE(feed.empty());

  resident_block block(limit_mb);
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(every_shard_says(port, 2, "paused"));
  // 20 matching articles, more than a ring of 8 holds: the broadcast waits.
  std::vector<rt::article_ref> as;
  for (int i = 0; i < 20; ++i)
    as.push_back(article("stalled number " + std::to_string(i), "s" + std::to_string(i), 0));
  const uint32_t before = srv.write_async(std::move(as));

  // One request each, no retry: answered at once, not 503 after the defer timeout.
  http_test::response r = request(port, "POST", "/api/accounts");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::vector<std::string> secret = string_fields(r.body, "secret");
  ASSERT_EQ(secret.size(), 1u) << r.body;
  const std::string auth = "Authorization: Bearer " + secret[0] + "\r\n";
  r = request(port, "POST", "/api/subscriptions", "{\"query\": \"stalled\"}", auth);
  ASSERT_EQ(r.status, 201) << r.body;
  const std::vector<std::string> second = string_fields(r.body, "rss");
  ASSERT_EQ(second.size(), 1u) << r.body;
  r = request(port, "GET", "/api/subscriptions", {}, auth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(srv.acked(), before) << "the articles' write was acknowledged while held";
  const feed_state held = poll(port, feed);
  EXPECT_EQ(held.status, 200);
  EXPECT_TRUE(held.titles.empty()) << held.titles.size() << " items while paused";

  block.release();
  ASSERT_TRUE(every_shard_says(port, 2, "normal"));
  const uint64_t s1 = srv.wait_acked(before);
  const feed_state f = poll_until(port, feed, 10, "stalled number 19");
  ASSERT_EQ(f.seqs.size(), 10u);
  EXPECT_EQ(f.seqs.front(), s1 + 19);
  EXPECT_EQ(f.seqs.back(), s1 + 10);
}

}  // namespace

namespace {

// Polls the partition's snapshot file until it holds everything up to `applied`; the last
// file read (its `applied` below the mark after about 20 s when no round wrote it).
feedplane::reflector::partition_snapshot wait_snapshot(const std::string& path, uint32_t partition,
                                                       uint64_t applied) {
  feedplane::reflector::partition_snapshot snap;
  for (int i = 0; i < 2000; ++i) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string err;
    if (!feedplane::reflector::decode_partition_snapshot(bytes, partition, snap, &err)) snap = {};
    if (snap.applied >= applied) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return snap;
}

// A quiet partition (its lists match nothing new) keeps no old snapshot behind the recent
// window: a snapshot round writes it again, so the next start replays none of the articles
// that passed it by. Without that, the start would seek the log back to the partition's old
// snapshot and replay every article since, however old.
TEST(reflector_live, a_quiet_partitions_snapshot_follows_the_recent_window) {
  temp_dir dir("feedplane-live-quiet");
  const auto tweak = [](dp::config& c) {
    c.reflector.snapshot_interval_s = 1;
    c.reflector.backfill_window_s = 1;
  };
  std::string feed, snapshot;
  uint64_t s1 = 0, next = 0;
  {
    live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
    const int port = srv.port();
    wait_ready(port, 2);
    feed = create_one(port,
                      "{\"account\": \"quiet\", \"query\": \"rust tokio\", \"backfill\": false}\n");
    ASSERT_FALSE(feed.empty());
    feedplane::reflector::feed_token t;
    ASSERT_TRUE(feedplane::reflector::decode_token(feed.substr(feed.rfind('/') + 1), &t)) << feed;
    snapshot = feedplane::reflector::snapshot_path(dir.path + "/lists", t.partition);

    // The match makes the partition dirty; a round writes it.
    s1 = srv.write(refs(article("Rust and Tokio", "q1", 0)));
    poll_until(port, feed, 1, "Rust and Tokio");
    auto snap = wait_snapshot(snapshot, t.partition, s1);
    ASSERT_EQ(snap.applied, s1) << "no snapshot of " << snapshot << " after the match";
    ASSERT_EQ(snap.lists.size(), 1u);
    EXPECT_EQ(snap.lists[0].seqs, std::vector<uint64_t>{s1});

    // Then articles that match nothing here, published long ago: each one moves the recent
    // window past itself, so the partition's file falls behind it and is written again.
    std::vector<rt::article_ref> others;
    for (int i = 0; i < 10; ++i)
      others.push_back(article("Go and Linux " + std::to_string(i), "o" + std::to_string(i), 0));
    const uint64_t s2 = srv.write(std::move(others));
    EXPECT_EQ(s2, s1 + 1);
    next = s2 + 10;
    snap = wait_snapshot(snapshot, t.partition, next - 1);
    EXPECT_EQ(snap.applied, next - 1) << "the quiet partition's snapshot was not written again";
    ASSERT_EQ(snap.lists.size(), 1u);
    EXPECT_EQ(snap.lists[0].seqs, std::vector<uint64_t>{s1});
  }
  // The store's window (1 s of sequencing time) must be past the articles too.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
  wait_ready(srv.port(), 2);
  // Relaxed loads: the store thread wrote both before it published `streamed`, which
  // wait_ready waited on through the shards (their feeds answer only after it).
  EXPECT_EQ(srv.store_stats().replay_first.load(std::memory_order_relaxed), next);
  EXPECT_EQ(srv.store_stats().articles_replayed.load(std::memory_order_relaxed), 0u);
  const feed_state f = poll_until(srv.port(), feed, 1, "Rust and Tokio");
  EXPECT_EQ(f.seqs, std::vector<uint64_t>{s1});
}

// The article log's collection end to end: articles past the recent window that no list
// holds leave the store, those a list holds stay, and the feeds and a restart (whose
// replay, with no article cache yet, renders from the store) serve the same lists.
TEST(reflector_live, the_collection_keeps_only_the_old_articles_lists_hold) {
  temp_dir dir("feedplane-live-gc");
  const auto tweak = [](dp::config& c) {
    c.reflector.snapshot_interval_s = 1;
    c.reflector.backfill_window_s = 1;
    c.reflector.article_gc_interval_s = 1;
  };
  std::string feed;
  uint64_t s1 = 0;
  {
    live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
    const int port = srv.port();
    wait_ready(port, 2);
    feed = create_one(
        port, "{\"account\": \"gc\", \"query\": \"rust tokio\", \"k\": 2, \"backfill\": false}\n");
    ASSERT_FALSE(feed.empty());
    // Published long ago, so past the window at once; the list keeps the newest two
    // matches, and the first match and ten others are in no list.
    std::vector<rt::article_ref> as;
    for (int i = 1; i <= 3; ++i)
      as.push_back(article("Rust and Tokio " + std::to_string(i), "t" + std::to_string(i), 0));
    for (int i = 0; i < 10; ++i)
      as.push_back(article("Go and Linux " + std::to_string(i), "o" + std::to_string(i), 0));
    s1 = srv.write(std::move(as));
    poll_until(port, feed, 2, "Rust and Tokio 3", "Rust and Tokio 2");
    // The store's own window (1 s of sequencing time) lets them go a second later. The
    // stats are read seq_cst (the default) here and below: a test's polls of counters.
    for (int i = 0; i < 2000 && srv.store_stats().articles_deleted.load() < 11; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(srv.store_stats().articles_deleted.load(), 11u);
    std::string err;
    std::vector<uint64_t> stored;
    for (const rt::article_ref& a : srv.store().read_articles(1, 100, &err))
      stored.push_back(a->seq());
    EXPECT_EQ(err, "");
    EXPECT_EQ(stored, (std::vector<uint64_t>{s1 + 1, s1 + 2}));
    const feed_state f = poll(port, feed);
    EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 2, s1 + 1}));
  }
  live_server srv(2, 0, rt::mesh_options{}, dir.path, tweak);
  wait_ready(srv.port(), 2);
  EXPECT_EQ(srv.store_stats().articles_kept.load(), 2u);
  const feed_state f = poll_until(srv.port(), feed, 2, "Rust and Tokio 3", "Rust and Tokio 2");
  EXPECT_EQ(f.seqs, (std::vector<uint64_t>{s1 + 2, s1 + 1}));
}

}  // namespace
