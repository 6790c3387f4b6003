#include "feedplane/reflector/reflector.h"

#include <absl/container/flat_hash_map.h>
#include <absl/strings/string_view.h>
#include <fmt/compile.h>
#include <fmt/format.h>
#include <libdeflate.h>
#include <openssl/sha.h>
#include <simdjson.h>
#include <xxhash.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "feedplane/base/ascii.h"
#include "feedplane/base/base64.h"
#include "feedplane/base/json.h"
#include "feedplane/dataplane/auth.h"
#include "feedplane/dataplane/config.h"
#include "feedplane/dataplane/file.h"
#include "feedplane/dataplane/json_body.h"
#include "feedplane/feed/text.h"
#include "feedplane/matcher/index.h"
#include "feedplane/matcher/query.h"
#include "feedplane/matcher/source.h"
#include "feedplane/matcher/text.h"
#include "feedplane/net/http_server.h"
#include "feedplane/reflector/last_k.h"
#include "feedplane/reflector/render.h"
#include "feedplane/reflector/render_cache.h"
#include "feedplane/reflector/sanitize.h"
#include "feedplane/reflector/seq_list.h"
#include "feedplane/reflector/snapshot.h"
#include "feedplane/reflector/token.h"
#include "feedplane/runtime/article.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/store/store.h"
#include "web_files.h"

static_assert(simdjson::SIMDJSON_PADDING <= feedplane::net::body_padding);

namespace feedplane::reflector {

namespace {

namespace rt = runtime;
using dataplane::shard_services;

// Per-shard article cache (reflector.article_cache_mb): what a feed renders, copied while
// the broadcast article is alive. Beyond the budget the oldest entries go (a miss reads the
// article back from the store).
constexpr uint32_t search_budget = 1000;    // candidates verified per query and shard
constexpr uint32_t sweep_every = 4096;      // articles between sweeps of expired postings
constexpr size_t summary_max_bytes = 1000;  // plain text kept per article
constexpr size_t summary_html_max_bytes = size_t{8}
                                          << 10;  // HTML kept per article (then sanitized)
constexpr size_t title_max_bytes = 400;           // of a subscription's title
constexpr uint32_t slot_chunk = 1024;             // slots per chunk of a partition's slot array

// An article's plain-text summary: its HTML as text, trimmed, cut at summary_max_bytes on a
// character boundary with an ellipsis (also when the HTML itself was cut: text is missing).
std::string plain_summary(std::string_view html, bool html_cut) {
  std::string text;
  matcher::html_to_text(html, text);
  std::string_view t = base::ascii_trim(text);
  std::string out;
  if (t.size() > summary_max_bytes) {
    size_t cut = summary_max_bytes;
    while (cut > 0 && (uint8_t(t[cut]) & 0xC0) == 0x80) --cut;  // a UTF-8 boundary
    out.assign(t.substr(0, cut));
    out += "\xE2\x80\xA6";  // …
  } else {
    out.assign(t);
    if (html_cut && !out.empty()) out += "\xE2\x80\xA6";
  }
  return out;
}
// Weight feedback (issue 10): sources counted per shard between reports (beyond it a new
// source's matches are dropped and counted; at 16 bytes a slot, 16 MiB at most), entries
// per task (a task's run stays well under a millisecond on the crawler's shard), and tasks
// per peer per report (the rest waits a period: polls and API calls keep their share of
// the pair's max_outstanding).
constexpr size_t weight_max_sources = size_t{1} << 20;
constexpr size_t weight_batch = 4096;
constexpr uint32_t weight_tasks_per_peer = 8;

int64_t wall_now() { return int64_t(std::time(nullptr)); }

// Debian's absl has its own string_view: the one its string maps look up without a copy.
absl::string_view absl_view(std::string_view v) { return {v.data(), v.size()}; }

// A feed rendered once per change, immutable once made: the owner shard keeps it until the
// next change, and a poll from another shard holds a reference while it sends the body.
struct rendered {
  std::string body, gzip, etag;
  int64_t last_modified = 0;
  feed_format format = feed_format::rss;
};
using rendered_ptr = std::shared_ptr<const rendered>;

struct cached_article {
  std::string title, link, guid, source_url, summary;
  // As the source gave it until a feed first renders the article, then sanitized (once per
  // article and shard, not per render: the HTML5 parse dominated rendering), unmarked.
  std::string summary_html;
  bool html_sanitized = false;  // implies summary_ready
  // `summary` is made from summary_html at the article's first render here (most articles
  // a shard caches are never rendered there); shedding memory evicts an article whose
  // summary was not made. html_cut: summary_html holds only the first
  // summary_html_max_bytes of the source's HTML.
  bool summary_ready = false;
  bool html_cut = false;
  int64_t published = 0;
  // The article's distinct word hashes (matcher::word_hash), sorted at the first matched():
  // the matched words of a subscription are its positive words found here, whether the
  // match was in the title, the summary or the content (which the cache does not keep).
  // Most cached articles are never rendered on this shard: they never pay the sort.
  mutable std::vector<uint64_t> words;
  mutable bool words_sorted = false;
  size_t bytes() const {
    return sizeof(*this) + title.size() + link.size() + guid.size() + source_url.size() +
           summary.size() + summary_html.size() + words.capacity() * sizeof(uint64_t);
  }
  std::vector<std::string> matched(const std::vector<std::string>& positive) const {
    std::vector<std::string> out;
    if (!words_sorted) {
      std::sort(words.begin(), words.end());
      words_sorted = true;
    }
    for (const std::string& w : positive) {
      if (std::binary_search(words.begin(), words.end(), matcher::word_hash(w))) out.push_back(w);
    }
    return out;
  }
};

// Fills a.summary from its (unsanitized) HTML, once; the caller keeps cache_bytes_.
void make_summary(cached_article& a) {
  if (a.summary_ready) return;
  a.summary = plain_summary(a.summary_html, a.html_cut);
  a.summary_ready = true;
}

// A subscription's id, account, query and title back to back in one heap block: 24 bytes in
// the subscription and one allocation, where four std::strings took 128 bytes and up to
// four allocations (an id or an account is 21 characters, past the 15 a string keeps inline).
// At a million subscriptions, 100 MiB less resident after a restart (880 MiB at 10M).
// Immutable once set: assign() makes a new block, so a view into it (the id map's key)
// lives until the next assign.
class sub_text {
 public:
  std::string_view id() const { return {p_.get(), id_n_}; }
  // The block's first line (the id, and most queries): ahead of a read of id().
  void prefetch() const { __builtin_prefetch(p_.get()); }
  std::string_view account() const { return {p_.get() + id_n_, account_n_}; }
  std::string_view query() const { return {p_.get() + id_n_ + account_n_, query_n_}; }
  std::string_view title() const {
    return {p_.get() + size_t{id_n_} + account_n_ + query_n_, title_n_};
  }
  void assign(std::string_view id, std::string_view account, std::string_view query,
              std::string_view title) {
    const size_t n = id.size() + account.size() + query.size() + title.size();
    // A record or request larger than 4 GiB never gets here (the store's and the server's
    // limits are far below), so the lengths fit their 32 bits.
    auto p = std::make_unique_for_overwrite<char[]>(n == 0 ? 1 : n);
    char* at = p.get();
    for (std::string_view v : {id, account, query, title}) {
      if (!v.empty()) std::memcpy(at, v.data(), v.size());
      at += v.size();
    }
    p_ = std::move(p);
    id_n_ = uint32_t(id.size());
    account_n_ = uint32_t(account.size());
    query_n_ = uint32_t(query.size());
    title_n_ = uint32_t(title.size());
  }

 private:
  std::unique_ptr<char[]> p_;
  uint32_t id_n_ = 0, account_n_ = 0, query_n_ = 0, title_n_ = 0;
};

struct subscription {
  // What a match reads and writes comes first, in the two cache lines the match loop
  // prefetches (reflector::on_article): the list, the checks and the render version.
  last_k list;
  uint64_t from_seq = 0;  // matches only articles after this sequence (its shard's then)
  // Bumped (from the shard's counter, so never reused by a later subscription in the same
  // slot) by every change of what its feeds show: the render cache's check.
  uint64_t version = 0;
  int64_t changed = 0;  // Last-Modified: wall-clock second of the last change
  uint32_t k = 10;
  uint32_t partition = 0, slot = 0;
  bool live = false;  // durable and acknowledged (pending: matching, not listed)
  // Start-up: its list came from its partition's snapshot, which holds every match up to
  // the partition's applied sequence.
  bool restored = false;
  // Backfills in flight: until they land the list lacks older matches its first sequence
  // promises, so no snapshot holds it (a restart re-matches it from that sequence).
  uint8_t backfilling = 0;
  std::array<uint8_t, 16> token_bits{};
  uint64_t generation = 1;  // bumped by every change of the query
  // Stamped by install, unique on this shard: a callback that kept it (and where the
  // subscription is filed) finds it again, and knows it is still this one, without the id.
  uint64_t serial = 0;
  int64_t created = 0;
  sub_text text;

  std::string_view id() const { return text.id(); }
  std::string_view account() const { return text.account(); }
  std::string_view query() const { return text.query(); }
  std::string_view title() const { return text.title(); }

  feed_token token_parts() const {
    feed_token t;
    t.partition = partition;
    t.slot = slot;
    t.random_bits = token_bits;
    return t;
  }
  std::string token() const { return encode_token(token_parts()); }
  void invalidate(int64_t now, uint64_t v) {
    version = v;
    changed = now;
  }
};

struct account {
  std::array<uint8_t, 32> secret_sha256{};
  bool has_secret = false;  // accounts made by bulk have none
  int64_t created = 0;
  // Derived, in memory: subscriptions (counted by their shards at start-up, then kept
  // here as they are made and deleted) and the request token bucket.
  uint32_t subs = 0;
  double tokens = -1;  // < 0: full
  int64_t refilled_ms = 0;
};

// The id of the subscription an account creates with an Idempotency-Key: the same for
// every retry, so each lands on the same shard and finds the first one's result.
std::string idempotent_id(std::string_view account, std::string_view key) {
  std::string in(account);
  in += '\n';
  in += key;
  uint8_t d[32];
  SHA256(reinterpret_cast<const unsigned char*>(in.data()), in.size(), d);
  return "s_" + base::base64url(d, 12);
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The client's address (no port), or "" when the socket has none.
std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// One partition's slots: index ids + 1 (0 = free). Chunks never move.
struct partition_slots {
  std::vector<std::unique_ptr<uint32_t[]>> chunks;
  uint32_t size = 0;
  std::vector<uint32_t> free;

  uint32_t get(uint32_t slot) const {
    return slot < size ? chunks[slot / slot_chunk][slot % slot_chunk] : 0;
  }
  void set(uint32_t slot, uint32_t v) {
    while (slot >= chunks.size() * slot_chunk) {
      chunks.push_back(std::make_unique<uint32_t[]>(slot_chunk));  // zeroed
    }
    if (slot >= size) {
      for (uint32_t s = size; s < slot; ++s) free.push_back(s);
      size = slot + 1;
    }
    chunks[slot / slot_chunk][slot % slot_chunk] = v;
  }
  uint32_t allocate() {
    while (!free.empty()) {
      const uint32_t s = free.back();
      free.pop_back();
      if (get(s) == 0) return s;  // a slot a record claimed meanwhile is skipped
    }
    return size;
  }
};

// A request's answer, filled on the shard that owns the state it needs and sent by the
// shard that holds the connection (`origin`). Created on the origin; after a target set
// `async`, only the target touches it until its reply task reaches the origin.
class reflector;
struct call {
  uint32_t origin = 0;
  net::deferred_response later;  // the origin's; used on the origin only
  int status = 500;
  std::string body;                // JSON; error bodies from error_json()
  std::vector<std::string> lines;  // bulk: one result line per input line of the group
  // searches: the matches of each query; match-stats: index, total and CPU nanoseconds
  std::vector<std::vector<uint64_t>> seqs;
  std::string_view content_type = "application/json";
  std::string route;      // "POST /api/subscriptions": counted when answered
  bool replayed = false;  // an Idempotency-Key retry answered with what the first made
  bool async = false;     // the target answers later (after the store's ack), in a reply task
  // Bulk answers are mostly random ids and tokens: gzip would spend a shard's CPU (4% of a
  // bulk creation at level 1) to save little.
  bool compressible = true;
  std::function<void(reflector&, call&)> on_answer;  // origin: instead of an HTTP answer
};
using call_ptr = std::shared_ptr<call>;

// A batch of this shard's match counts, to the shard that crawls their sources: run() hands
// them to that shard's crawler through the component interface (component.h; the reflector
// does not link the crawler), and the task comes back here to be freed.
struct source_matches_task final : rt::task {
  std::vector<dataplane::source_matches> items;
  void run(rt::shard& s) override {
    if (dataplane::component* c =
            shard_services::of(s).parts[size_t(dataplane::component_id::crawler)])
      c->on_source_matches(s, items);
  }
  void done(rt::shard&) override {}
};

// A task whose halves are closures (the control path: accounts, subscriptions).
struct fn_task final : rt::task {
  std::function<void(rt::shard&)> on_target, on_origin;
  void run(rt::shard& s) override {
    if (on_target) on_target(s);
  }
  void done(rt::shard& s) override {
    if (on_origin) on_origin(s);
  }
};

// A durable write whose acknowledgement runs a closure on the writing shard.
struct fn_write final : rt::store_write {
  std::function<void(rt::shard&, fn_write&)> fn;
  void on_durable(rt::shard& s) override { fn(s, *this); }
};

std::string error_json(std::string_view code, std::string_view message) {
  std::string b = "{\"error\": ";
  base::append_json_string(code, b);
  b += ", \"message\": ";
  base::append_json_string(message, b);
  b += "}\n";
  return b;
}

void set_call_error(call& c, int status, std::string_view code, std::string_view message) {
  c.status = status;
  c.body = error_json(code, message);
}

// Fields a subscription request may carry.
struct sub_spec {
  std::optional<std::string> query, title, account;
  std::optional<uint32_t> k;
  std::optional<bool> backfill;
};

struct spec_error {
  std::string code, message;
  size_t column = 0;   // invalid_query: where
  std::string reason;  // invalid_query: the matcher's errc name
};

// Parses one JSON object of a subscription request. `bulk` allows account and backfill.
// json has simdjson::SIMDJSON_PADDING readable bytes after its end.
bool parse_spec(simdjson::ondemand::parser& p, std::string_view json, bool bulk, sub_spec& out,
                spec_error& err) {
  auto fail = [&](std::string_view code, std::string message) {
    err.code = code;
    err.message = std::move(message);
    return false;
  };
  simdjson::ondemand::document doc;
  simdjson::padded_string_view in(json.data(), json.size(),
                                  json.size() + simdjson::SIMDJSON_PADDING);
  if (auto e = p.iterate(in).get(doc); e) return fail("bad_json", simdjson::error_message(e));
  simdjson::ondemand::object obj;
  if (auto e = doc.get_object().get(obj); e) return fail("bad_json", "expected a JSON object");
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key); e)
      return fail("bad_json", simdjson::error_message(e));
    auto value = field.value();
    if (key == "query" || key == "title" || (bulk && key == "account")) {
      std::string_view s;
      if (value.get_string().get(s))
        return fail("bad_value", fmt::format("\"{}\" must be a string", key));
      (key == "query" ? out.query : key == "title" ? out.title : out.account) = std::string(s);
    } else if (key == "k") {
      uint64_t k = 0;
      if (value.get_uint64().get(k) || k < 1 || k > max_k)
        return fail("bad_value", fmt::format("\"k\" must be an integer from 1 to {}", max_k));
      out.k = uint32_t(k);
    } else if (bulk && key == "backfill") {
      bool b = false;
      if (value.get_bool().get(b)) return fail("bad_value", "\"backfill\" must be true or false");
      out.backfill = b;
    } else {
      std::string msg = "unknown field ";
      base::append_json_string(key, msg);
      return fail("unknown_field", msg + (bulk ? " (fields: account, query, k, title, backfill)"
                                               : " (fields: query, k, title)"));
    }
  }
  // current_location() is an error (out of bounds) only at the end of the document.
  if (const char* rest = nullptr; !doc.current_location().get(rest))
    return fail("bad_json", "trailing content after the JSON object");
  if (out.title && out.title->size() > title_max_bytes)
    return fail("bad_value", fmt::format("\"title\" is longer than {} bytes", title_max_bytes));
  return true;
}

std::string spec_error_json(const spec_error& e) {
  std::string b = "{\"error\": ";
  base::append_json_string(e.code, b);
  b += ", \"message\": ";
  base::append_json_string(e.message, b);
  if (!e.reason.empty()) {
    b += ", \"reason\": ";
    base::append_json_string(e.reason, b);
    b += fmt::format(", \"column\": {}", e.column);
  }
  b += "}\n";
  return b;
}

// A new subscription on its way to the shard of its partition.
struct new_sub {
  // The query was validated by the receiving shard; the owner indexes it from its text
  // (index::add's plain-word path), so no parse tree is allocated here, moved between
  // shards, and freed on another thread's heap.
  std::string id, account, query, title;
  uint32_t k = 10;
  bool account_new = false;  // bulk: write the account's record with this subscription
  bool backfill = true;      // start with the matches among recent articles
};

// One query of a search of the recent articles (backfill, preview): its matches with
// sequence in [from, upto], newest first, at most k.
struct search_query {
  std::string query;
  uint32_t k = 10;
  uint64_t from = 0;
  uint64_t upto = UINT64_MAX;  // UINT64_MAX: whatever the shard has (preview)
};

class reflector final : public dataplane::component {
 public:
  static constexpr dataplane::component_id id = dataplane::component_id::reflector;

  explicit reflector(shard_services& s);
  ~reflector() override;
  reflector(const reflector&) = delete;
  reflector& operator=(const reflector&) = delete;

  static reflector& of(rt::shard& s) { return shard_services::of(s).get<reflector>(); }
  static reflector& of(net::request_context& ctx) {
    return ctx.context_as<shard_services>().get<reflector>();
  }

  void on_article(rt::shard& s, const rt::article_ref& a) override;
  void on_record(rt::shard& s, rt::kind k, std::string_view key, std::string_view value) override;
  void on_streamed(rt::shard& s) override;
  void prefetch_record(rt::kind k, std::string_view key, std::string_view value) override;
  void prefetch_end() override;
  void stop() override { stopping_ = true; }
  bool quiescent() const override { return outbox_.empty(); }
  // For /readyz: every shard caught up (a load balancer sends to the process, and any
  // shard may own what a request needs). Each shard tells all, by message, when it is.
  bool ready() const override { return shards_caught_up_ == s_.rt->count(); }
  // This shard's own start-up is over (poll() and a poll_task on the owner ask this).
  bool caught_up() const { return caught_up_; }

  // ---- routes (on the shard that holds the connection) ----
  void create_account(net::request_context& ctx, net::http_response& r);
  // DELETE /api/account: the account and every subscription it has.
  void delete_account(net::request_context& ctx, net::http_response& r);
  // POST /api/account:rotate: a new secret; the old one stops working.
  void rotate_secret(net::request_context& ctx, net::http_response& r);
  void create_subscription(net::request_context& ctx, net::http_response& r);
  void list_subscriptions(net::request_context& ctx, net::http_response& r);
  void one_subscription(net::request_context& ctx, net::http_response& r, int verb);
  void get_subscription(net::request_context& ctx, net::http_response& r);
  void patch_subscription(net::request_context& ctx, net::http_response& r);
  void rotate_token(net::request_context& ctx, net::http_response& r);
  void delete_subscription(net::request_context& ctx, net::http_response& r);
  // API accounting: the route being handled (calls made now carry it to their answer),
  // and its answer when it was not deferred.
  void begin_api(std::string_view route) { route_ = route; }
  void end_api(const net::http_response& r) {
    if (!r.defer) count_api(route_, r.status);
    route_ = {};
  }
  void count_api(std::string_view route, int status);
  void bulk(net::request_context& ctx, net::http_response& r);
  void poll(net::request_context& ctx, net::http_response& r, feed_format f);
  void preview(net::request_context& ctx, net::http_response& r);
  void match_time(net::request_context& ctx, net::http_response& r);
  void match_stats(net::request_context& ctx, net::http_response& r);
  void memory_state(net::request_context& ctx, net::http_response& r);
  // A create's or a preview's body: JSON with a query the matcher accepts. False (and `r`
  // holds the 400) otherwise.
  bool read_query_spec(net::request_context& ctx, net::http_response& r, sub_spec& spec);

  // ---- on the owner shard ----
  rendered_ptr feed_of(const feed_token& t, feed_format f);
  // Sends a finished poll (or 404) into r.
  void fill_poll(net::http_response& r, const rendered_ptr& p, feed_format f,
                 std::string_view if_none_match);

 private:
  // ---- cross-shard plumbing ----
  // Sends t to target now, or (when the pair is at its limit) as soon as it has room.
  // For follow-ups that must not be refused (replies, later steps of an accepted request).
  void post(uint32_t target, rt::task_ptr t);
  static void on_retry(void* self);
  // Runs fn(target reflector, call) on `target`; its answer comes back here. False when
  // the pair is at its limit (the caller answers 503), unless `must` (then it queues).
  bool start_call(uint32_t target, const call_ptr& c,
                  std::function<void(reflector&, const call_ptr&)> fn, bool must = false);
  // Target: the call's answer is ready after an asynchronous step (a store ack).
  void reply_later(const call_ptr& c);
  // Origin: the answer arrived.
  void finish(call& c);
  // Checks `Authorization: Bearer SECRET` on the account's shard and runs next here with
  // the account id, or answers 401. Defers r.
  // With `reserve`, also takes one of the account's reflector.max_subscriptions (given
  // back by release_subscription when the creation fails). Answers 429 beyond
  // api.account_requests_per_s.
  void with_account(net::request_context& ctx, net::http_response& r,
                    std::function<void(reflector&, const std::string&, const call_ptr&)> next,
                    bool reserve = false);
  void release_subscription(const std::string& account);
  // Answers c over HTTP (finish() without on_answer).
  void answer_http(call& c);
  bool ready(net::http_response& r);
  // A request every shard takes part in: false (and r holds the 503) when one's ring is
  // full.
  bool every_shard_can_take(net::http_response& r) {
    for (uint32_t j = 0; j < s_.rt->count(); ++j) {
      if (!s_.rt->can_send(j)) {
        net::set_unavailable(r, fmt::format("shard {} is busy; retry", j));
        return false;
      }
    }
    return true;
  }
  // Defers r: the call that answers it later, here on the origin shard.
  call_ptr answer_later(net::http_response& r) {
    auto c = std::make_shared<call>();
    c->origin = s_.rt->index();
    c->later = r.later;
    c->route = route_;
    r.defer = true;
    s_.requests_deferred->add();
    return c;
  }
  uint32_t shard_of(std::string_view key) const {
    return shard_of_partition(partition_of(key), s_.rt->count());
  }
  std::string new_id(char prefix) const;

  // ---- subscriptions on their owner ----
  // Installs s (index, slot, maps). slot == UINT32_MAX allocates one. Null when the query
  // or the slot is refused (err says why).
  // index_id: where it is filed (subs_), for a caller that finds it again without the id map.
  subscription* install(std::unique_ptr<subscription> s, uint32_t slot, std::string* err,
                        uint32_t* index_id = nullptr);
  void uninstall(const std::string& sid);
  subscription* find(std::string_view sid) {
    auto it = by_id_.find(sid);
    return it == by_id_.end() ? nullptr : subs_[it->second].get();
  }
  std::string record_of(const subscription& s) const;
  std::string json_of(const subscription& s) const;
  // Creates subs (all of this shard) with one durable write; answers c when it is acked.
  void create_here(const call_ptr& c, std::vector<new_sub> subs, bool bulk);
  void change_here(const call_ptr& c, const std::string& account, const std::string& sid, int v,
                   const sub_spec& spec);
  rendered_ptr render(subscription& s, feed_format f);
  // Each feed rendered once per change, within render_cache_mb (render_cache.h); keyed by
  // (subscription index << 2) | format.
  static size_t bytes_of(const rendered& r) {
    return sizeof(rendered) + r.body.capacity() + r.gzip.capacity() + r.etag.capacity() +
           64;  // the shared_ptr's control block and the map slot
  }
  uint64_t next_version() { return ++versions_; }
  render_cache<rendered> renders_{0};
  uint64_t versions_ = 0;
  // ---- recent articles (backfill, preview) ----
  void index_recent(const rt::article& a);
  // Answers cp->seqs (and, with items, cp->lines: one JSON item per match) for queries on
  // this shard's slice of the recent articles, once it applied every article up to the
  // queries' `upto` (parked until then).
  void search(const call_ptr& cp, const std::vector<search_query>& qs, bool items);
  void search_now(const call_ptr& cp, const std::vector<search_query>& qs, bool items);
  // Fills the lists of newly created subscriptions from every shard's recent articles,
  // then runs done.
  void backfill(const std::vector<std::pair<std::string, uint64_t>>& subs,
                std::function<void(reflector&)> done);
  cached_article* article(uint64_t seq);
  void remember(const rt::article& a);
  // Match-time and delivery-latency metrics of one article matched since t0.
  void observe_match(const rt::article& a, std::chrono::steady_clock::time_point t0,
                     std::chrono::steady_clock::time_point t_index, uint64_t index_cpu_ns,
                     bool replaying);
  // What matching reads of a: its words and its source's tokens (the host of its feed URL
  // and its source id: matcher/source.h), which `source:` terms match. The tokens are made
  // here, at match time, into scope_, so the frozen article and its durable record carry
  // none; the view is valid until the next call.
  matcher::article_view scoped_words(const rt::article& a) {
    scope_.assign(matcher::url_host(a.source_url()), a.meta().source_id);
    return a.words().with_scope(&scope_);
  }
  void update_gauges();

  shard_services& s_;
  bool stopping_ = false;
  bool streamed_ = false;
  uint64_t last_seq_ = 0;  // the last article this shard applied
  // Start-up: the store replays the article log before `streamed`, but on another ring
  // than the event that says so: the shard is caught up once it applied the replay's last
  // article (on_streamed). Until then it answers 503 "starting".
  uint64_t replay_target_ = 0;
  uint64_t replay_end_ = 0;  // store_stats::replay_end
  bool caught_up_ = false;
  uint32_t shards_caught_up_ = 0;  // shards that said they caught up (this one included)
  void mark_caught_up() {
    caught_up_ = true;
    if (replay_end_ != 0) last_seq_ = std::max(last_seq_, replay_end_ - 1);
    // The replay of what the snapshots held is over: free its state, start writing ours.
    replay_hi_ = 0;
    restore_.clear();
    replay_index_.reset();
    replay_ids_ = {};
    if (snap_interval_ms_ != 0) s_.rt->loop().arm(snap_timer_, snap_interval_ms_);
    if (gc_interval_ms_ != 0) s_.rt->loop().arm(gc_timer_, gc_interval_ms_);
    s_.rt->loop().arm(refile_timer_, 1);
    for (uint32_t j = 0; j < s_.rt->count(); ++j) {
      auto t = std::make_unique<fn_task>();
      t->on_target = [](rt::shard& s) { ++of(s).shards_caught_up_; };
      post(j, std::move(t));
    }
  }

  matcher::index index_;
  matcher::match_result result_;
  // The last match_samples_max live articles' match times on this shard, for exact
  // quantiles (GET /api/match-stats): a ring, 32 bytes per article.
  struct match_sample {
    uint32_t words = 0;
    uint32_t index_ns = 0;      // the index's match
    uint32_t total_ns = 0;      // with the list appends
    uint32_t index_cpu_ns = 0;  // the index's match in this thread's CPU time (no preemption)
    uint32_t postings = 0;      // the index's work: posting entries read
    uint32_t candidates = 0;    // and entries checked beyond their filing word
    uint32_t at_ms = 0;         // when, in ms since the shard's reflector started
    uint32_t busy = 0;          // what else was under way (sample_upkeep, ...)
  };
  // match_sample::busy: an upkeep pass, a round of list snapshots (serializing on the loop
  // or writing on the writer thread), a scan of the article log's collection, a RocksDB
  // flush or compaction.
  static constexpr uint32_t sample_upkeep = 1, sample_snapshot = 2, sample_gc = 4, sample_store = 8;
  static constexpr size_t sample_fields = 8;  // GET /api/match-stats?samples=1, per sample
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  static constexpr size_t match_samples_max = size_t(1) << 16;
  std::vector<match_sample> match_samples_;
  size_t match_samples_next_ = 0;
  matcher::source_scope scope_;  // of the article being matched or indexed (scoped_words)
  matcher::query_parser parser_;
  simdjson::ondemand::parser json_;
  std::string record_buf_;                           // on_record's padded copy
  std::vector<std::unique_ptr<subscription>> subs_;  // by index id
  std::vector<uint32_t> free_ids_;
  uint64_t serials_ = 0;  // the last subscription::serial given
  // Subscription id -> index id. Keys view the subscription's own id (a subscription never
  // moves: subs_ holds pointers), so an entry is 24 bytes in a flat table, not a node with
  // a second copy of the id: 1M subscriptions load and look up without a cache miss per
  // node hop.
  // The snapshots' id hash (XXH3): this build's absl hashes a string_view through
  // libstdc++'s _Hash_bytes, 2% of a bulk creation's shard time.
  struct id_hash {
    size_t operator()(std::string_view v) const { return snapshot_id_hash(v); }
  };
  absl::flat_hash_map<std::string_view, uint32_t, id_hash> by_id_;
  matcher::parsed_query install_pq_;  // install's parse (start-up with a replay), reused
  matcher::parsed_query check_pq_;    // bulk's validating parse, reused
  std::vector<std::string_view> prefetch_queries_;  // a start-up block's queries (prefetch_end)
  absl::flat_hash_map<std::string, std::vector<uint32_t>> by_account_;  // flat: 10M loads at start
  std::vector<partition_slots> partitions_;
  std::unordered_map<std::string, account> accounts_;
  struct signup_window {
    int64_t start = 0;  // unix seconds
    uint32_t count = 0;
  };
  std::unordered_map<std::string, signup_window> signups_;  // client address -> this hour
  size_t list_entries_ = 0;
  size_t cache_budget_bytes_ = 0;

  // Recent articles: every shard keeps the (sequence, time) of the window's articles, and
  // a word index (word hash -> ascending sequences) of its slice of them (seq mod shards
  // == its index), so the index costs the process one copy, not one per shard.
  std::deque<std::pair<uint64_t, int64_t>> window_;
  uint64_t window_first_seq_ = 1;
  absl::flat_hash_map<uint64_t, seq_list> postings_;
  std::vector<uint64_t> word_hashes_;  // index_recent() scratch: an article's word hashes
  std::vector<seq_list*> word_lists_;  // and their postings
  size_t postings_entries_ = 0;
  uint32_t since_sweep_ = 0;
  matcher::index search_index_;  // id 0: the query being searched
  matcher::match_result search_result_;
  struct parked {
    uint64_t upto;
    std::function<void()> run;
  };
  std::vector<parked> parked_;  // searches waiting for this shard to reach their `upto`

  std::unordered_map<uint64_t, cached_article> cache_;
  std::deque<uint64_t> cache_order_;
  size_t cache_bytes_ = 0;
  libdeflate_compressor* gz_ = nullptr;

  std::deque<std::pair<uint32_t, rt::task_ptr>> outbox_;
  std::string route_;  // the API route being handled now (begin_api .. end_api)
  std::unordered_map<std::string, rt::counter*> api_counts_;  // by labels
  net::timer retry_;

  // ---- list snapshots (snapshot.h; DESIGN.md 9) ----
  // Each tick of the snapshot timer serializes a slice of this shard's changed partitions
  // (so a round never stalls the loop) and hands the bytes to the shard's writer thread,
  // which writes each file durably (fsync must not stall the loop either).
  struct snapshot_writer {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<dataplane::file_bytes> queue;
    size_t pending = 0;  // queued or being written
    bool stop = false;
    std::thread thread;
  };
  // Memory pressure (reflector.memory_limit_mb; DESIGN.md 9): every 100 ms each shard reads
  // the process's resident memory and moves between normal, tight (>= 90% of the limit:
  // cached bodies and rendered feeds dropped, new matches keep no body) and paused (>= the
  // limit: the shard leaves the article stream on its ring until memory is below 90%;
  // tight ends below 85%). Both shards read the same figure, so they act together.
  enum pressure : uint8_t { pressure_normal = 0, pressure_tight = 1, pressure_paused = 2 };
  static void on_memory_timer(void* ctx);
  void check_memory();
  void shed_memory();
  bool degraded();
  uint64_t memory_limit_ = 0;  // bytes; 0: none
  uint64_t resident_ = 0;      // at the last check
  uint8_t pressure_ = pressure_normal;
  int statm_fd_ = -1;
  net::timer memory_timer_;

  void load_snapshots();
  void load_word_frequencies();
  static void on_snapshot_timer(void* ctx);
  void snapshot_slice(size_t budget);
  void write_snapshot(uint32_t partition);
  void stop_snapshots();  // the last round, whole, then the writer drains and ends
  uint64_t list_identity(const subscription& s) const {
    const uint64_t v[3] = {s.generation, s.from_seq, uint64_t(s.created)};
    return XXH3_64bits(v, sizeof v);
  }
  std::string snap_dir_;
  uint32_t snap_interval_ms_ = 0;
  std::vector<uint8_t> dirty_;   // by partition: a list in it changed since its last file
  std::vector<uint32_t> owned_;  // this shard's partitions
  size_t snap_next_ = 0;         // the round's next index into owned_
  bool snap_round_ = false;
  // Clean partitions a round still writes because their files are behind the recent
  // window (snapshot_slice): bounded, so a round stays about as long as its dirty files.
  static constexpr uint32_t k_snap_refresh_per_round = 8;
  uint32_t snap_refresh_left_ = 0;
  net::timer snap_timer_;
  std::unique_ptr<snapshot_writer> writer_;
  // Files queued or being written; the writer holds the lock only to swap its queue and
  // count what it wrote, never across a write.
  bool writer_pending() const {
    std::lock_guard<std::mutex> g(writer_->mu);
    return writer_->pending != 0;
  }
  // The article log's collection (DESIGN.md 9; rt::gc_report): every article_gc_interval_s
  // a scan of every list, in slices, gathers the sequences below the recent window's first
  // (gc_bound_, fixed when the scan starts) that lists hold, and sends them to the store.
  static void on_gc_timer(void* ctx);
  void gc_slice(size_t budget);
  uint64_t gc_interval_ms_ = 0;
  net::timer gc_timer_;
  bool gc_scan_ = false;
  size_t gc_next_ = 0;  // the scan's next index into subs_
  uint64_t gc_bound_ = 0;
  // The highest bound a scan started with: a backfill's result below it may be collected
  // already (its list was scanned before the result landed), so it is left out.
  uint64_t gc_floor_ = 0;
  std::vector<uint64_t> gc_held_;
  size_t gc_unique_ = 0;     // gc_held_'s size after its last sort and unique
  uint64_t gc_scan_us_ = 0;  // the scan's slices so far
  std::string snap_bytes_;
  std::vector<uint64_t> snap_seqs_;
  std::vector<uint32_t> snap_idx_;  // write_snapshot's partition, in slot order
  // Start-up only (freed once caught up): each partition's restored sequence (0: no file),
  // the highest of them, the restored lists by id hash, and an index of the subscriptions
  // that need re-matching at or below replay_hi_ (local ids, replay_ids_ -> index id), so
  // the replay of what the snapshots already hold matches only those.
  std::vector<uint64_t> applied_;
  uint64_t replay_hi_ = 0;
  // The restored lists (snapshot.h): their sequences in one array for all, not a vector
  // each (half a million lists per shard at 1M subscriptions).
  restored_lists restore_;
  std::unique_ptr<matcher::index> replay_index_;
  std::vector<uint32_t> replay_ids_;

  // ---- the index's upkeep (matcher::index::maintain) ----
  // A clause is filed under its rarest word by the frequency snapshots of the moment its
  // words entered the vocabulary: subscriptions created before the shard saw articles, or
  // restored before the replay counted any, were filed with every count at zero, and read
  // ~1.5x the postings per article (bench/RESULTS.md, "the index's upkeep"). Two things
  // keep that short. A restart restores the last run's frequencies before its adds (the
  // words file, snapshot.h; written after each round of list snapshots and at a clean
  // stop), and a shard with no subscriptions still counts one article in eight, as
  // match() would. And once caught up, passes run in slices of refile_budget entries
  // (~0.1-0.5 ms), one every refile_tick_ms, or every refile_fast_ms while the pass
  // re-files more than 1% of what it examined (a pass over 5M clauses: ~3 s, not ~13); a
  // pass that re-filed more than 1% is followed by another at once, else the wait before
  // the next doubles, from 2 s up to a minute, and ends early once the sketch has counted
  // as many articles again as it had at the last pass's start (a fresh server's counts
  // grow from nothing); a pass is skipped while no article was counted since the last
  // began. A pass over 500,000 subscriptions takes 25-50 ms of CPU.
  static void on_refile_timer(void* ctx);
  // Between passes: starts the next at once if the sketch counted as many articles again
  // as it had when the last pass began (and at least 8: 64 articles).
  void wake_upkeep() {
    if (refile_waiting_ &&
        index_.frequencies().counted >= std::max<uint64_t>(8, 2 * refile_counted_at_)) {
      refile_waiting_ = false;
      s_.rt->loop().arm(refile_timer_, 1);
    }
  }
  void write_word_frequencies();
  static constexpr size_t refile_budget = 2048;
  static constexpr uint64_t refile_tick_ms = 5;
  static constexpr uint64_t refile_fast_ms = 1;
  net::timer refile_timer_;
  uint64_t refile_wait_ms_ = 1000;
  size_t refile_examined_ = 0;  // this pass's, so far
  size_t refile_moved_ = 0;
  bool refile_waiting_ = false;  // between passes
  // The sketch's articles counted when the last pass began (0 before the first: a sketch
  // that counted nothing moves nothing).
  uint64_t refile_counted_at_ = 0;
  uint64_t words_through_ = 0;  // the restored words file counted the articles to here
  uint64_t words_written_ = 0;  // last_seq_ when this run last wrote the words file

  // ---- weight feedback (issue 10) ----
  // Per source, the subscriptions of this shard its new articles matched since the last
  // report; every weight_report_interval_s the counts go to each source's crawler shard
  // (dataplane::source_shard), batched, and what a busy peer cannot take waits a period.
  static void on_weight_timer(void* ctx);
  void report_weights();
  absl::flat_hash_map<uint64_t, uint64_t> source_matches_;
  // The first sequence of this run: the store sequences nothing before the shards'
  // components exist, so anything below it is the log's replay. Its matches were counted
  // by the run that crawled it (counting them again would inflate the weights at every
  // restart), and so was its article by that run's crawler.
  uint64_t first_live_seq_ = 1;
  uint32_t weight_interval_ms_ = 0;
  net::timer weight_timer_;

  struct metrics {
    std::array<rt::counter*, feed_formats> polls{}, not_modified{};
    rt::counter* polls_remote = nullptr;
    rt::counter* polls_unknown = nullptr;
    rt::counter* matches = nullptr;
    rt::counter* renders = nullptr;
    rt::counter* cache_misses = nullptr;
    rt::counter* store_read_errors = nullptr;
    rt::counter* created = nullptr;
    rt::counter* deleted = nullptr;
    rt::gauge* subscriptions = nullptr;
    rt::gauge* accounts = nullptr;
    rt::gauge* list_entries = nullptr;
    rt::gauge* cache_articles = nullptr;
    rt::gauge* cache_bytes = nullptr;
    rt::gauge* recent_articles = nullptr;
    rt::gauge* degraded = nullptr;
    rt::counter* memory_pauses = nullptr;
    rt::gauge* recent_postings = nullptr;
    rt::counter* backfilled = nullptr;
    rt::counter* searched = nullptr;
    rt::histogram* list_size = nullptr;
    rt::histogram* match_us = nullptr;
    rt::gauge* render_bytes = nullptr;
    rt::counter* render_evicted = nullptr;
    rt::histogram* match_by_words_us[4] = {};  // <= 64, <= 256, <= 1024, more words
    rt::histogram* index_by_words_us[4] = {};  // the same, the index's match alone
    rt::histogram* delivered_us = nullptr;
    rt::counter* articles = nullptr;
    rt::counter* snapshot_files = nullptr;
    rt::counter* gc_reports = nullptr;
    rt::histogram* gc_scan_us = nullptr;
    rt::histogram* snapshot_encode_us = nullptr;
    rt::counter* refiled = nullptr;
    rt::counter* refile_passes = nullptr;
    rt::counter* snapshot_bytes = nullptr;
    rt::counter* restored_lists = nullptr;
    rt::counter* weight_sent = nullptr;
    rt::counter* weight_kept = nullptr;
    rt::counter* weight_dropped = nullptr;
  } m_;
};

reflector::reflector(shard_services& s)
    : s_(s),
      partitions_(partitions),
      cache_budget_bytes_(size_t{s.cfg->reflector.article_cache_mb} << 20),
      gz_(libdeflate_alloc_compressor(6)) {
  retry_.set(&reflector::on_retry, this);
  renders_ = render_cache<rendered>(size_t{s.cfg->reflector.render_cache_mb} << 20);
  snap_timer_.set(&reflector::on_snapshot_timer, this);
  gc_timer_.set(&reflector::on_gc_timer, this);
  refile_timer_.set(&reflector::on_refile_timer, this);
  gc_interval_ms_ = uint64_t{s.cfg->reflector.article_gc_interval_s} * 1000;
  memory_timer_.set(&reflector::on_memory_timer, this);
  weight_timer_.set(&reflector::on_weight_timer, this);
  if (s.db != nullptr) first_live_seq_ = s.db->stats().next_seq.load(std::memory_order_relaxed);
  weight_interval_ms_ = s.cfg->reflector.weight_report_interval_s * 1000;
  if (weight_interval_ms_ != 0) s.rt->loop().arm(weight_timer_, weight_interval_ms_);
  memory_limit_ = uint64_t{s.cfg->reflector.memory_limit_mb} << 20;
  if (memory_limit_ != 0) {
    statm_fd_ = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (statm_fd_ < 0) {
      fmt::print(stderr,
                 "feedplane: reflector: /proc/self/statm: {}; reflector.memory_limit_mb is not "
                 "enforced\n",
                 strerror(errno));
    } else {
      s.rt->loop().arm(memory_timer_, 100);
    }
  }
  rt::metrics_registry& reg = s.rt->metrics();
  for (size_t f = 0; f < feed_formats; ++f) {
    const std::string label = fmt::format("format=\"{}\"", format_name(feed_format(f)));
    m_.polls[f] =
        &reg.add_counter("feedplane_reflector_polls_total", "Feed polls by format", label);
    m_.not_modified[f] = &reg.add_counter("feedplane_reflector_polls_not_modified_total",
                                          "Feed polls answered 304 Not Modified", label);
  }
  m_.polls_remote = &reg.add_counter("feedplane_reflector_polls_forwarded_total",
                                     "Polls answered by the owner shard through a task");
  m_.polls_unknown =
      &reg.add_counter("feedplane_reflector_polls_unknown_total", "Polls of no feed (404)");
  m_.matches = &reg.add_counter("feedplane_reflector_matches_total",
                                "Article matches appended to subscription lists");
  m_.renders = &reg.add_counter("feedplane_reflector_renders_total",
                                "Feeds rendered (once per change and format)");
  m_.cache_misses = &reg.add_counter("feedplane_reflector_article_cache_misses_total",
                                     "Articles read back from the store to render");
  m_.store_read_errors = &reg.add_counter("feedplane_reflector_store_read_errors_total",
                                          "Listed articles the store could not give back");
  m_.created = &reg.add_counter("feedplane_reflector_subscriptions_created_total",
                                "Subscriptions created (durable)");
  m_.deleted = &reg.add_counter("feedplane_reflector_subscriptions_deleted_total",
                                "Subscriptions deleted (durable)");
  m_.subscriptions =
      &reg.add_gauge("feedplane_reflector_subscriptions", "Subscriptions owned by the shards");
  m_.accounts = &reg.add_gauge("feedplane_reflector_accounts", "Accounts owned by the shards");
  m_.list_entries = &reg.add_gauge("feedplane_reflector_list_entries",
                                   "Entries in all last-k lists (8 bytes each)");
  m_.cache_articles = &reg.add_gauge("feedplane_reflector_article_cache_entries",
                                     "Articles in the shards' render caches");
  m_.cache_bytes = &reg.add_gauge("feedplane_reflector_article_cache_bytes",
                                  "Bytes of the shards' render caches");
  m_.degraded = &reg.add_gauge(
      "feedplane_reflector_degraded",
      "Memory degradation, summed over shards: 1 while new entries keep no HTML body (the "
      "article cache above 3/4 of its budget, or the process above 90% of "
      "reflector.memory_limit_mb), 2 while the article stream is paused (above the limit)");
  m_.memory_pauses = &reg.add_counter(
      "feedplane_reflector_memory_pauses_total",
      "Times a shard paused the article stream with the process above reflector.memory_limit_mb");
  m_.recent_articles = &reg.add_gauge("feedplane_reflector_recent_articles",
                                      "Articles in the backfill window (summed: shards x)");
  m_.recent_postings =
      &reg.add_gauge("feedplane_reflector_recent_postings",
                     "Entries of the recent-article word index (8 bytes each; each shard a slice)");
  m_.backfilled = &reg.add_counter("feedplane_reflector_backfilled_total",
                                   "Matches a new subscription took from recent articles");
  m_.searched = &reg.add_counter("feedplane_reflector_search_reads_total",
                                 "Recent articles read back to verify a backfill or preview");
  m_.render_bytes =
      &reg.add_gauge("feedplane_reflector_render_cache_bytes",
                     "Bytes of rendered feeds kept between polls (summed over shards)");
  m_.render_evicted =
      &reg.add_counter("feedplane_reflector_render_evictions_total",
                       "Rendered feeds dropped to stay within reflector.render_cache_mb");
  m_.match_us = &reg.add_histogram("feedplane_reflector_match_seconds",
                                   "Matching one article against a shard's subscriptions, "
                                   "list appends included",
                                   {}, 1e-6);  // observed in microseconds
  for (size_t i = 0; i < std::size(m_.match_by_words_us); ++i) {
    static constexpr const char* classes[] = {"<=64", "<=256", "<=1024", ">1024"};
    m_.match_by_words_us[i] = &reg.add_histogram(
        "feedplane_reflector_match_by_words_seconds",
        "Matching one article against a shard's subscriptions, by the article's word count "
        "(Cobra's Figure 10)",
        fmt::format("words=\"{}\"", classes[i]), 1e-6);
    m_.index_by_words_us[i] = &reg.add_histogram(
        "feedplane_reflector_index_match_by_words_seconds",
        "The index's match of one article on a shard, list appends excluded, by the article's "
        "word count (GET /api/match-stats has exact quantiles)",
        fmt::format("words=\"{}\"", classes[i]), 1e-6);
  }
  m_.delivered_us = &reg.add_histogram(
      "feedplane_reflector_delivered_seconds",
      "From the end of the crawler's fetch to this shard's lists holding the article's matches "
      "(Cobra's intra-network latency, Figure 13; wall clock, millisecond resolution)",
      {}, 1e-6);
  m_.articles = &reg.add_counter("feedplane_reflector_articles_matched_total",
                                 "Articles matched (every shard counts each)");
  m_.list_size = &reg.add_histogram("feedplane_reflector_list_size",
                                    "Size of a list after each match appended to it");
  m_.snapshot_files = &reg.add_counter("feedplane_reflector_snapshot_files_total",
                                       "Partition list snapshots handed to the writer");
  m_.snapshot_bytes = &reg.add_counter("feedplane_reflector_snapshot_bytes_total",
                                       "Bytes of partition list snapshots handed to the writer");
  m_.gc_reports = &reg.add_counter(
      "feedplane_reflector_gc_reports_total",
      "Reports to the store of the old articles this shard's lists hold (its collection)");
  m_.snapshot_encode_us =
      &reg.add_histogram("feedplane_reflector_snapshot_encode_seconds",
                         "One partition's lists encoded into its snapshot file, on the shard", {},
                         1e-6);  // observed in microseconds
  m_.gc_scan_us = &reg.add_histogram(
      "feedplane_reflector_gc_scan_seconds",
      "One scan of this shard's lists for the article log's collection (its slices' time)", {},
      1e-6);  // observed in microseconds
  m_.refiled =
      &reg.add_counter("feedplane_reflector_index_refiled_total",
                       "Subscription clauses the shards' index upkeep re-filed under a rarer word");
  m_.refile_passes = &reg.add_counter(
      "feedplane_reflector_index_upkeep_passes_total",
      "Passes of the index upkeep over a shard's subscriptions (frequency snapshots refreshed, "
      "clauses re-filed)");
  m_.restored_lists = &reg.add_counter("feedplane_reflector_restored_lists_total",
                                       "Lists restored from snapshots at start-up");
  m_.weight_sent = &reg.add_counter(
      "feedplane_reflector_weight_reports_sent_total",
      "Per-source counts of matched subscriptions sent to the sources' crawler shards");
  m_.weight_kept = &reg.add_counter(
      "feedplane_reflector_weight_reports_kept_total",
      "Per-source counts kept back a report period because the crawler's shard was busy");
  m_.weight_dropped = &reg.add_counter(
      "feedplane_reflector_weight_reports_dropped_total",
      "Articles' match counts dropped: their source was new to a shard already holding "
      "counts of 2^20 sources");
  load_snapshots();
}

reflector::~reflector() {
  if (retry_.armed()) s_.rt->loop().disarm(retry_);
  if (snap_timer_.armed()) s_.rt->loop().disarm(snap_timer_);
  if (gc_timer_.armed()) s_.rt->loop().disarm(gc_timer_);
  if (refile_timer_.armed()) s_.rt->loop().disarm(refile_timer_);
  if (memory_timer_.armed()) s_.rt->loop().disarm(memory_timer_);
  if (weight_timer_.armed()) s_.rt->loop().disarm(weight_timer_);
  if (statm_fd_ >= 0) ::close(statm_fd_);
  stop_snapshots();
  libdeflate_free_compressor(gz_);
}

void reflector::update_gauges() {
  m_.subscriptions->set(int64_t(by_id_.size()));
  m_.accounts->set(int64_t(accounts_.size()));
  m_.list_entries->set(int64_t(list_entries_));
  m_.cache_articles->set(int64_t(cache_.size()));
  m_.cache_bytes->set(int64_t(cache_bytes_));
}

// ---- cross-shard plumbing ----

void reflector::post(uint32_t target, rt::task_ptr t) {
  if (outbox_.empty() && s_.rt->send(target, t)) return;
  outbox_.emplace_back(target, std::move(t));
  if (!retry_.armed()) s_.rt->loop().arm(retry_, 1);
}

void reflector::on_retry(void* self) {
  auto& r = *static_cast<reflector*>(self);
  while (!r.outbox_.empty()) {
    auto& [target, t] = r.outbox_.front();
    if (!r.s_.rt->send(target, t)) break;
    r.outbox_.pop_front();
  }
  if (!r.outbox_.empty()) r.s_.rt->loop().arm(r.retry_, 1);
}

bool reflector::start_call(uint32_t target, const call_ptr& c,
                           std::function<void(reflector&, const call_ptr&)> fn, bool must) {
  auto t = std::make_unique<fn_task>();
  t->on_target = [c, fn = std::move(fn)](rt::shard& s) { fn(of(s), c); };
  t->on_origin = [c](rt::shard& s) {
    if (!c->async) of(s).finish(*c);
  };
  rt::task_ptr tp = std::move(t);
  if (must) {
    post(target, std::move(tp));
    return true;
  }
  return s_.rt->send(target, tp);
}

void reflector::reply_later(const call_ptr& c) {
  auto t = std::make_unique<fn_task>();
  t->on_target = [c](rt::shard& s) { of(s).finish(*c); };
  post(c->origin, std::move(t));
}

void reflector::finish(call& c) {
  if (c.on_answer) {
    c.on_answer(*this, c);
    return;
  }
  answer_http(c);
}

void reflector::answer_http(call& c) {
  if (!c.route.empty()) count_api(c.route, c.status);
  net::http_response r;
  r.status = c.status;
  r.content_type = c.content_type;
  r.cache_control = "no-store";
  if (c.status == 503 || c.status == 429) r.extra_headers = "Retry-After: 1\r\n";
  if (c.replayed) r.extra_headers = "Idempotent-Replayed: true\r\n";
  if (c.status == 401) r.extra_headers = "WWW-Authenticate: Bearer\r\n";
  r.storage = std::move(c.body);
  r.body = r.storage;
  r.compressible = c.compressible;
  c.later.complete(r);  // false when the client went away meanwhile
}

bool reflector::ready(net::http_response& r) {
  if (!caught_up_) {
    net::set_unavailable(r, "start-up streaming from the store is not finished", 1, "starting");
    return false;
  }
  if (stopping_) {
    net::set_unavailable(r, "the server is stopping", 1, "stopping");
    return false;
  }
  return true;
}

std::string reflector::new_id(char prefix) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return time_ordered_id(prefix, uint64_t(ms.count()));
}

void reflector::with_account(
    net::request_context& ctx, net::http_response& r,
    std::function<void(reflector&, const std::string&, const call_ptr&)> next, bool reserve) {
  const std::string_view secret = dataplane::bearer_token(ctx.request());
  const size_t dot = secret.rfind('.');
  if (secret.empty() || dot == std::string_view::npos || dot == 0) {
    net::set_json_error(r, 401, "unauthenticated",
                        "this route needs the account secret: Authorization: Bearer SECRET");
    r.extra_headers += "WWW-Authenticate: Bearer\r\n";
    return;
  }
  std::string account(secret.substr(0, dot));
  std::array<uint8_t, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest.data());
  const uint32_t b = shard_of(account);
  auto c = std::make_shared<call>();
  c->origin = s_.rt->index();
  c->later = r.later;
  c->route = route_;
  auto verdict = std::make_shared<int>(401);  // written on the account's shard
  c->on_answer = [verdict, account, next = std::move(next), reserve](reflector& self, call& done) {
    auto cp = std::make_shared<call>();
    cp->origin = done.origin;
    cp->later = done.later;
    cp->route = done.route;
    switch (*verdict) {
      case 0:
        break;
      case 429:
        set_call_error(*cp, 429, "too_many_requests",
                       fmt::format("at most {} requests per second per account; retry",
                                   self.s_.cfg->api.account_requests_per_s));
        self.finish(*cp);
        return;
      case 403:
        set_call_error(*cp, 403, "subscription_limit",
                       fmt::format("an account has at most {} subscriptions",
                                   self.s_.cfg->reflector.max_subscriptions));
        self.finish(*cp);
        return;
      default:
        set_call_error(*cp, 401, "unauthenticated", "unknown account or wrong secret");
        self.finish(*cp);
        return;
    }
    if (reserve) {  // a creation that fails gives its reservation back
      cp->on_answer = [account](reflector& me, call& got) {
        if (got.status != 201 || got.replayed) me.release_subscription(account);
        me.answer_http(got);
      };
    }
    next(self, account, cp);
  };
  const double rate = s_.cfg->api.account_requests_per_s;
  const uint32_t max_subs = s_.cfg->reflector.max_subscriptions;
  const bool sent = start_call(
      b, c, [verdict, account, digest, reserve, rate, max_subs](reflector& owner, const call_ptr&) {
        auto it = owner.accounts_.find(account);
        if (it == owner.accounts_.end() || !it->second.has_secret) return;
        auto& a = it->second;
        if (!dataplane::constant_time_equal(
                std::string_view(reinterpret_cast<const char*>(a.secret_sha256.data()), 32),
                std::string_view(reinterpret_cast<const char*>(digest.data()), 32)))
          return;
        // A token bucket of one second of requests, refilled continuously.
        const int64_t now = steady_ms();
        a.tokens = a.tokens < 0
                       ? rate
                       : std::min(rate, a.tokens + double(now - a.refilled_ms) * rate / 1000);
        a.refilled_ms = now;
        if (a.tokens < 1) {
          *verdict = 429;
          return;
        }
        a.tokens -= 1;
        if (reserve) {
          if (a.subs >= max_subs) {
            *verdict = 403;
            return;
          }
          ++a.subs;
        }
        *verdict = 0;
      });
  if (!sent) {
    net::set_unavailable(r, fmt::format("shard {} is busy; retry", b));
    return;
  }
  r.defer = true;
  s_.requests_deferred->add();
}

void reflector::release_subscription(const std::string& account) {
  auto t = std::make_unique<fn_task>();
  t->on_target = [account](rt::shard& s) {
    auto& accounts = of(s).accounts_;
    if (auto it = accounts.find(account); it != accounts.end() && it->second.subs > 0)
      --it->second.subs;
  };
  post(shard_of(account), std::move(t));
}

// ---- accounts ----

void reflector::create_account(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  if (!s_.cfg->api.open_signup && !dataplane::require_admin(ctx, *s_.cfg, r)) return;
  const std::string aid = new_id('a');
  uint8_t bits[32];
  if (aid.empty() || !random_bytes(bits, sizeof(bits))) {
    net::set_json_error(r, 500, "internal", "no random bytes");
    return;
  }
  const std::string secret = aid + "." + base::base64url(bits, sizeof(bits));
  account a;
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
         a.secret_sha256.data());
  a.has_secret = true;
  a.created = wall_now();
  auto c = std::make_shared<call>();
  c->origin = s_.rt->index();
  c->later = r.later;
  c->route = route_;
  const uint32_t b = shard_of(aid);
  auto create = [aid, secret, a](reflector& owner, const call_ptr& cp) {
    if (!owner.s_.rt->can_write(rt::write_lane::api)) {
      set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
      return;
    }
    auto w = std::make_unique<fn_write>();
    w->ops.push_back({rt::kind::accounts, false, aid,
                      fmt::format("{{\"v\": 1, \"secret_sha256\": \"{}\", \"created\": {}}}",
                                  hex(a.secret_sha256.data(), 32), a.created)});
    w->fn = [aid, secret, a, cp](rt::shard& s, fn_write& done) {
      reflector& self = of(s);
      if (done.status != 0) {
        set_call_error(*cp, 503, "store_failed",
                       std::string(store::store_errc_message(store::store_errc(done.status))));
      } else {
        self.accounts_[aid] = a;
        self.update_gauges();
        cp->status = 201;
        cp->body = "{\"id\": ";
        base::append_json_string(aid, cp->body);
        cp->body += ", \"secret\": ";
        base::append_json_string(secret, cp->body);
        cp->body += "}\n";
      }
      self.reply_later(cp);
    };
    rt::write_ptr wp = std::move(w);
    if (!owner.s_.rt->write(wp, rt::write_lane::api)) {
      set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
      return;
    }
    cp->async = true;
  };
  // Signups per client address and hour, counted on the address's shard (connections
  // from one address land on any shard). The admin token is not limited.
  const std::string_view admin = s_.cfg->api.admin_token;
  const bool is_admin = !admin.empty() && dataplane::constant_time_equal(
                                              dataplane::bearer_token(ctx.request()), admin);
  const std::string addr = is_admin ? std::string() : peer_address(ctx.connection_fd());
  bool sent = false;
  if (addr.empty()) {
    sent = start_call(b, c, create);
  } else {
    const uint32_t d = shard_of("addr:" + addr);
    auto ok = std::make_shared<bool>(false);
    c->on_answer = [ok, b, create](reflector& self, call& done) {
      if (!*ok) {
        set_call_error(done, 429, "too_many_signups",
                       fmt::format("at most {} accounts per hour from one address",
                                   self.s_.cfg->api.signups_per_hour));
        self.answer_http(done);
        return;
      }
      auto next = std::make_shared<call>();
      next->origin = done.origin;
      next->later = done.later;
      next->route = done.route;
      self.start_call(b, next, create, true);
    };
    const uint32_t limit = s_.cfg->api.signups_per_hour;
    sent = start_call(d, c, [ok, addr, limit](reflector& o, const call_ptr&) {
      const int64_t now = wall_now();
      if (o.signups_.size() > 100'000) {  // bounded: forget the windows that ended
        std::erase_if(o.signups_, [now](const auto& kv) { return now - kv.second.start >= 3600; });
      }
      auto& w = o.signups_[addr];
      if (now - w.start >= 3600) w = {now, 0};
      if (w.count >= limit) return;
      ++w.count;
      *ok = true;
    });
  }
  if (!sent) {
    net::set_unavailable(r, fmt::format("shard {} is busy; retry", b));
    return;
  }
  r.defer = true;
  s_.requests_deferred->add();
}

// ---- deleting an account, rotating its secret ----

void reflector::delete_account(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  with_account(ctx, r, [](reflector& self, const std::string& acct, const call_ptr& c) {
    // First every shard deletes the account's subscriptions it holds (durably), then the
    // account's shard the account. A failure on the way answers 503: a retry finishes it.
    struct gather {
      uint32_t waiting = 0;
      bool failed = false;
      call_ptr answer;
    };
    auto g = std::make_shared<gather>();
    g->waiting = self.s_.rt->count();
    g->answer = c;
    for (uint32_t j = 0; j < self.s_.rt->count(); ++j) {
      auto part = std::make_shared<call>();
      part->origin = self.s_.rt->index();
      part->status = 204;
      part->on_answer = [g, acct](reflector& me, call& got) {
        g->failed |= got.status != 204;
        if (--g->waiting != 0) return;
        if (g->failed) {
          set_call_error(*g->answer, 503, "unavailable", "some subscriptions remain; retry");
          me.finish(*g->answer);
          return;
        }
        me.start_call(
            me.shard_of(acct), g->answer,
            [acct](reflector& o, const call_ptr& cp) {
              if (!o.s_.rt->can_write(rt::write_lane::api)) {
                set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
                return;
              }
              auto w = std::make_unique<fn_write>();
              w->ops.push_back({rt::kind::accounts, true, acct, {}});
              w->fn = [acct, cp](rt::shard& sh, fn_write& done) {
                reflector& owner = of(sh);
                if (done.status != 0) {
                  set_call_error(
                      *cp, 503, "store_failed",
                      std::string(store::store_errc_message(store::store_errc(done.status))));
                } else {
                  owner.accounts_.erase(acct);
                  owner.update_gauges();
                  cp->status = 204;
                  cp->body.clear();
                }
                owner.reply_later(cp);
              };
              rt::write_ptr wp = std::move(w);
              if (!o.s_.rt->write(wp, rt::write_lane::api)) {
                set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
                return;
              }
              cp->async = true;
            },
            true);
      };
      self.start_call(
          j, part,
          [acct](reflector& o, const call_ptr& cp) {
            auto it = o.by_account_.find(acct);
            if (it == o.by_account_.end()) return;  // 204: nothing here
            if (!o.s_.rt->can_write(rt::write_lane::api)) {
              set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
              return;
            }
            auto w = std::make_unique<fn_write>();
            std::vector<std::string> ids;
            for (uint32_t idx : it->second) ids.emplace_back(o.subs_[idx]->id());
            for (const std::string& sid : ids)
              w->ops.push_back({rt::kind::subscriptions, true, sid, {}});
            w->fn = [ids, cp](rt::shard& sh, fn_write& done) {
              reflector& owner = of(sh);
              if (done.status != 0) {
                cp->status = 503;
              } else {
                for (const std::string& sid : ids) {
                  owner.uninstall(sid);
                  owner.m_.deleted->add();
                }
              }
              owner.reply_later(cp);
            };
            rt::write_ptr wp = std::move(w);
            if (!o.s_.rt->write(wp, rt::write_lane::api)) {
              cp->status = 503;
              return;
            }
            cp->async = true;
          },
          true);
    }
  });
}

void reflector::rotate_secret(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  with_account(ctx, r, [](reflector& self, const std::string& acct, const call_ptr& c) {
    uint8_t bits[32];
    if (!random_bytes(bits, sizeof(bits))) {
      set_call_error(*c, 500, "internal", "no random bytes");
      self.finish(*c);
      return;
    }
    const std::string secret = acct + "." + base::base64url(bits, sizeof(bits));
    std::array<uint8_t, 32> hash{};
    SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), hash.data());
    self.start_call(
        self.shard_of(acct), c,
        [acct, secret, hash](reflector& o, const call_ptr& cp) {
          auto it = o.accounts_.find(acct);
          if (it == o.accounts_.end()) {
            set_call_error(*cp, 404, "not_found", "the account was deleted");
            return;
          }
          if (!o.s_.rt->can_write(rt::write_lane::api)) {
            set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
            return;
          }
          auto w = std::make_unique<fn_write>();
          w->ops.push_back({rt::kind::accounts, false, acct,
                            fmt::format("{{\"v\": 1, \"secret_sha256\": \"{}\", \"created\": {}}}",
                                        hex(hash.data(), hash.size()), it->second.created)});
          w->fn = [acct, secret, hash, cp](rt::shard& sh, fn_write& done) {
            reflector& owner = of(sh);
            auto at = owner.accounts_.find(acct);
            if (done.status != 0 || at == owner.accounts_.end()) {
              set_call_error(*cp, 503, "store_failed", "the new secret was not stored; retry");
            } else {
              at->second.secret_sha256 = hash;  // the old secret stops working now
              at->second.has_secret = true;
              cp->status = 200;
              cp->body = "{\"id\": ";
              base::append_json_string(acct, cp->body);
              cp->body += ", \"secret\": ";
              base::append_json_string(secret, cp->body);
              cp->body += "}\n";
            }
            owner.reply_later(cp);
          };
          rt::write_ptr wp = std::move(w);
          if (!o.s_.rt->write(wp, rt::write_lane::api)) {
            set_call_error(*cp, 503, "unavailable", "the store's write ring is full; retry");
            return;
          }
          cp->async = true;
        },
        true);
  });
}

// ---- subscriptions: install and records ----

subscription* reflector::install(std::unique_ptr<subscription> s, uint32_t slot, std::string* err,
                                 uint32_t* index_id) {
  // One probe of the id map (a cache miss at millions), claimed now and released on refusal.
  auto [at, fresh] = by_id_.try_emplace(s->id(), UINT32_MAX);
  if (!fresh) {
    *err = "a subscription with this id exists";
    return nullptr;
  }
  partition_slots& ps = partitions_[s->partition];
  if (slot != UINT32_MAX && ps.get(slot) != 0) {
    by_id_.erase(at);
    *err = fmt::format("slot {} of partition {} is taken", slot, s->partition);
    return nullptr;
  }
  uint32_t idx;
  if (!free_ids_.empty()) {
    idx = free_ids_.back();
    free_ids_.pop_back();
  } else {
    idx = uint32_t(subs_.size());
    subs_.emplace_back();
  }
  // Start-up with snapshots: the list the snapshot holds is taken when it is this list's,
  // and the replay below replay_hi_ re-matches the subscription only if the snapshot cannot
  // cover it. Only then is the query parsed (once, into a reused parse) for both indexes;
  // otherwise the index takes the text: a plain-word query (nearly every one) is filed
  // without building a parse tree.
  restored_lists::entry* snap = nullptr;
  bool covered = false;
  if (replay_hi_ != 0) {
    snap = restore_.find(snapshot_id_hash(s->id()));
    if (snap != nullptr && snap->identity != list_identity(*s)) snap = nullptr;
    covered = snap != nullptr && applied_[s->partition] >= replay_hi_;
  }
  const bool replay = replay_hi_ != 0 && !covered && s->from_seq < replay_hi_;
  if (auto e = replay ? parser_.parse(s->query(), install_pq_) : index_.add(idx, s->query());
      !e.ok()) {
    free_ids_.push_back(idx);  // an empty entry of subs_, reused by the next install
    by_id_.erase(at);
    *err = e.message;
    return nullptr;
  }
  if (replay) index_.add(idx, install_pq_);
  if (slot == UINT32_MAX) slot = ps.allocate();
  s->slot = slot;
  ps.set(slot, idx + 1);
  at->second = idx;
  by_account_[absl_view(s->account())].push_back(idx);
  s->version = next_version();
  s->serial = ++serials_;
  subs_[idx] = std::move(s);
  subscription* in = subs_[idx].get();
  if (index_id != nullptr) *index_id = idx;
  // A list its partition's snapshot holds, and holds up to date, leaves the file as it is:
  // a restart does not rewrite every snapshot (at the next round and again at the stop).
  // The replay marks the partition when it adds to a list.
  if (snap == nullptr || !covered) dirty_[in->partition] = 1;
  if (snap != nullptr) {
    const uint64_t* seqs = restore_.seqs(*snap);
    for (uint32_t i = 0; i < snap->n; ++i) in->list.insert(seqs[i], 0, in->k);
    list_entries_ += in->list.size();
    in->restored = true;
    m_.restored_lists->add();
    restore_.take(*snap);
  }
  if (replay) {
    replay_index_->add(uint32_t(replay_ids_.size()), install_pq_);
    replay_ids_.push_back(idx);
  }
  if (!streamed_) {
    // Start-up: the articles this list needs replayed. A restored list holds every match up
    // to its partition's snapshot; any other list is re-matched from where it starts.
    const uint64_t need = snap != nullptr ? applied_[in->partition] + 1 : in->from_seq + 1;
    // Relaxed: this shard is the only writer, and the event ring's head publishes the
    // store (runtime::mesh::replay_need).
    std::atomic<uint64_t>& lowest = s_.rt->peers().replay_need(s_.rt->index());
    if (need < lowest.load(std::memory_order_relaxed))
      lowest.store(need, std::memory_order_relaxed);
  }
  update_gauges();
  return in;
}

void reflector::uninstall(const std::string& sid) {
  auto it = by_id_.find(sid);
  if (it == by_id_.end()) return;
  const uint32_t idx = it->second;
  subscription& s = *subs_[idx];
  index_.remove(idx);
  dirty_[s.partition] = 1;
  partition_slots& ps = partitions_[s.partition];
  ps.set(s.slot, 0);
  ps.free.push_back(s.slot);
  auto& mine = by_account_[absl_view(s.account())];
  std::erase(mine, idx);
  if (mine.empty()) by_account_.erase(absl_view(s.account()));
  list_entries_ -= s.list.size();
  by_id_.erase(it);
  subs_[idx].reset();
  free_ids_.push_back(idx);
  update_gauges();
}

std::string reflector::record_of(const subscription& s) const {
  std::string v;
  v.reserve(160 + s.account().size() + s.query().size() + s.title().size());
  v += "{\"v\": 1, \"account\": ";
  base::append_json_string(s.account(), v);
  v += ", \"query\": ";
  base::append_json_string(s.query(), v);
  v += ", \"title\": ";
  base::append_json_string(s.title(), v);
  // The numbers go through a buffer on the stack: fmt writing into a std::string resizes
  // it (zero-filling) field by field, 6% of a bulk creation's shard time with the other
  // string formats.
  char num[192];
  v.append(num, fmt::format_to(num, FMT_COMPILE(", \"k\": {}, \"slot\": {}, \"token_bits\": \""),
                               s.k, s.slot));
  base::append_hex(s.token_bits.data(), s.token_bits.size(), v);
  v.append(num, fmt::format_to(
                    num, FMT_COMPILE("\", \"generation\": {}, \"from_seq\": {}, \"created\": {}}}"),
                    s.generation, s.from_seq, s.created));
  return v;
}

std::string reflector::json_of(const subscription& s) const {
  const std::string t = s.token();
  std::string v = "{\"id\": ";
  base::append_json_string(s.id(), v);
  v += ", \"query\": ";
  base::append_json_string(s.query(), v);
  v += fmt::format(", \"k\": {}, \"title\": ", s.k);
  base::append_json_string(s.title(), v);
  char created[32];
  created[feed::format_rfc3339(s.created, created)] = 0;
  v += fmt::format(
      ", \"created\": \"{}\", \"entries\": {}, \"feeds\": {{\"rss\": \"/f/{}\", \"atom\": "
      "\"/f/{}.atom\", \"json\": \"/f/{}.json\"}}}}",
      created, s.list.size(), t, t, t);
  return v;
}

namespace {
bool unhex(std::string_view h, uint8_t* out, size_t n) {
  if (h.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    const int hi = base::hex_digit(h[2 * i]), lo = base::hex_digit(h[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = uint8_t(hi << 4 | lo);
  }
  return true;
}
}  // namespace

// The fields of a subscription's record (record_of): strings up to token_bits, then numbers.
enum class sub_field : uint8_t {
  account,
  query,
  title,
  token_bits,
  k,
  slot,
  generation,
  from_seq,
  created,
  other
};

// Why it is fast: one switch on the name's length and at most two compares, where a chain
// of == tried each name against up to ten (4% of a restart's shard time).
sub_field sub_field_of(std::string_view n) {
  switch (n.size()) {
    case 1:
      return n == "k" ? sub_field::k : sub_field::other;
    case 4:
      return n == "slot" ? sub_field::slot : sub_field::other;
    case 5:
      return n == "query" ? sub_field::query : n == "title" ? sub_field::title : sub_field::other;
    case 7:
      return n == "account"   ? sub_field::account
             : n == "created" ? sub_field::created
                              : sub_field::other;
    case 8:
      return n == "from_seq" ? sub_field::from_seq : sub_field::other;
    case 10:
      return n == "token_bits"   ? sub_field::token_bits
             : n == "generation" ? sub_field::generation
                                 : sub_field::other;
    default:
      return sub_field::other;
  }
}

void reflector::on_record(rt::shard&, rt::kind k, std::string_view key, std::string_view value) {
  // One padded buffer per shard, reused: start-up reads a record per subscription.
  record_buf_.assign(value);
  record_buf_.append(simdjson::SIMDJSON_PADDING, '\0');
  const simdjson::padded_string_view padded(record_buf_.data(), value.size(), record_buf_.size());
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  auto bad = [&](std::string_view why) {
    fmt::print(stderr, "feedplane: reflector: shard {}: {} record {:?} skipped: {}\n",
               s_.rt->index(), rt::kind_name(k), key, why);
  };
  if (json_.iterate(padded).get(doc) || doc.get_object().get(obj)) return bad("not a JSON object");
  if (k == rt::kind::accounts) {
    account a;
    for (auto field : obj) {
      std::string_view name;
      if (field.unescaped_key().get(name)) return bad("bad key");
      if (name == "secret_sha256") {
        std::string_view h;
        if (field.value().get_string().get(h)) return bad("secret_sha256");
        a.has_secret = !h.empty();
        if (a.has_secret && !unhex(h, a.secret_sha256.data(), 32)) return bad("secret_sha256");
      } else if (name == "created") {
        if (field.value().get_int64().get(a.created)) return bad("created");
      }
    }
    account& slot = accounts_[std::string(key)];
    a.subs = slot.subs;  // counts may arrive from other shards before the record
    slot = a;
    update_gauges();
    return;
  }
  if (k != rt::kind::subscriptions) return;
  auto s = std::make_unique<subscription>();
  s->partition = partition_of(key);
  s->live = true;
  uint64_t slot = 0;
  // Views into the parser's buffer, copied into the subscription's block after the loop.
  std::string_view account, query, title;
  for (auto field : obj) {
    std::string_view name;
    if (field.unescaped_key().get(name)) return bad("bad key");
    const sub_field f = sub_field_of(name);
    if (f == sub_field::other) continue;  // "v", or a field of a newer version
    auto v = field.value();
    std::string_view str;
    uint64_t n = 0;
    if (f <= sub_field::token_bits) {
      if (v.get_string().get(str)) return bad(name);
    } else if (v.get_uint64().get(n)) {
      return bad(name);
    }
    switch (f) {
      case sub_field::account:
        account = str;
        break;
      case sub_field::query:
        query = str;
        break;
      case sub_field::title:
        title = str;
        break;
      case sub_field::token_bits:
        if (!unhex(str, s->token_bits.data(), s->token_bits.size())) return bad(name);
        break;
      case sub_field::k:
        s->k = uint32_t(std::clamp<uint64_t>(n, 1, max_k));
        break;
      case sub_field::slot:
        slot = n;
        break;
      case sub_field::generation:
        s->generation = n;
        break;
      case sub_field::from_seq:
        s->from_seq = n;
        break;
      case sub_field::created:
        s->created = int64_t(n);
        break;
      case sub_field::other:
        break;
    }
  }
  if (slot >= UINT32_MAX) return bad("slot");
  s->text.assign(key, account, query, title);
  s->changed = wall_now();  // a restart re-sends each feed once; never a false 304
  std::string err;
  if (install(std::move(s), uint32_t(slot), &err) == nullptr) bad(err);
}

void reflector::prefetch_record(rt::kind k, std::string_view key, std::string_view value) {
  if (k != rt::kind::subscriptions) return;
  by_id_.prefetch(key);
  if (replay_hi_ != 0) restore_.prefetch(snapshot_id_hash(key));
  // What follows reads the record's layout (record_of) without parsing it: hints only, so
  // a record laid out otherwise costs a useless load. Each field is looked for from the
  // previous one on, by the first letter of its name (a quote, what a search for `"name"`
  // stops at, comes every few bytes of JSON: those scans were 12% of a restart's shards).
  auto field = [&](std::string_view name_colon, size_t from) {
    for (size_t p = value.find(name_colon, from); p != std::string_view::npos;
         p = value.find(name_colon, p + 1)) {
      if (p > 0 && value[p - 1] == '"') return p + name_colon.size();
    }
    return std::string_view::npos;
  };
  // The query, for the index's stages in prefetch_end, when it has no escape (a plain
  // query never has one).
  size_t at = field("query\": \"", 0);
  if (at != std::string_view::npos) {
    const size_t end = value.find_first_of("\"\\", at);
    if (end != std::string_view::npos && value[end] == '"')
      prefetch_queries_.push_back(value.substr(at, end - at));
    at = end;
  }
  // The partition slot: after the query in record_of.
  if (size_t p = field("slot\": ", at == std::string_view::npos ? 0 : at);
      p != std::string_view::npos) {
    uint64_t slot = 0;
    for (; p < value.size() && value[p] >= '0' && value[p] <= '9' && slot < UINT32_MAX; ++p)
      slot = slot * 10 + uint64_t(value[p] - '0');
    const partition_slots& ps = partitions_[partition_of(key)];
    if (slot < ps.size) __builtin_prefetch(&ps.chunks[slot / slot_chunk][slot % slot_chunk]);
  }
}

// Why it helps: at a restart the index's adds were a third of the shards' time, most of it
// waiting on the vocabulary and posting blocks; the block's adds now fetch them together.
void reflector::prefetch_end() {
  if (prefetch_queries_.empty()) return;
  index_.prefetch_adds(prefetch_queries_.data(), prefetch_queries_.size());
  prefetch_queries_.clear();
}

void reflector::on_streamed(rt::shard&) {
  streamed_ = true;
  // Relaxed is enough: the store wrote these before it published `streamed` (release),
  // which this shard consumed (acquire). The replay ends at its last article (the log has
  // gaps where articles were collected); once it applied that one, the shard has applied
  // everything the store had sequenced when streaming ended.
  const store::store_stats& st = s_.db->stats();
  replay_target_ = st.replay_last.load(std::memory_order_relaxed);
  replay_end_ = st.replay_end.load(std::memory_order_relaxed);
  // The replay started at `first`: every list holds what it needs below it (the store took
  // the lowest sequence any list asked for), so this shard has applied everything before
  // it, and nothing is recent before it. Relaxed, as above.
  const uint64_t first = st.replay_first.load(std::memory_order_relaxed);
  if (first > 1) {
    last_seq_ = std::max(last_seq_, first - 1);
    if (window_.empty()) window_first_seq_ = std::max(window_first_seq_, first);
  }
  if (last_seq_ >= replay_target_) mark_caught_up();
  // Each account's shard learns how many subscriptions it has (they live on the shards
  // of their own partitions): one task per shard.
  const uint32_t n = s_.rt->count();
  std::vector<std::vector<std::pair<std::string, uint32_t>>> counts(n);
  for (const auto& [acct, idxs] : by_account_)
    counts[shard_of(acct)].emplace_back(acct, uint32_t(idxs.size()));
  for (uint32_t j = 0; j < n; ++j) {
    if (counts[j].empty()) continue;
    auto t = std::make_unique<fn_task>();
    t->on_target = [list = std::move(counts[j])](rt::shard& s) {
      auto& accounts = of(s).accounts_;
      for (const auto& [acct, k] : list) accounts[acct].subs += k;
    };
    post(j, std::move(t));
  }
  update_gauges();
}

// ---- list snapshots ----

void reflector::load_snapshots() {
  snap_interval_ms_ = s_.cfg->reflector.snapshot_interval_s * 1000;
  snap_dir_ = s_.cfg->server.data_dir + "/lists";
  dirty_.assign(partitions, 0);
  applied_.assign(partitions, 0);
  const uint32_t shards = s_.rt->count();
  for (uint32_t p = 0; p < partitions; ++p) {
    if (shard_of_partition(p, shards) == s_.rt->index()) owned_.push_back(p);
  }
  if (::mkdir(snap_dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    fmt::print(stderr, "feedplane: reflector: cannot create {}: {}; lists are not snapshotted\n",
               snap_dir_, std::strerror(errno));
    snap_interval_ms_ = 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string bytes, why;
  partition_snapshot ps;
  size_t files = 0, lists = 0;
  for (uint32_t p : owned_) {
    const std::string path = snapshot_path(snap_dir_, p);
    if (::access(path.c_str(), F_OK) != 0) continue;  // never written: re-matched from the log
    if (dataplane::read_file(path, size_t{1} << 32, bytes, &why) != dataplane::read_status::ok ||
        !decode_partition_snapshot(bytes, p, ps, &why)) {
      fmt::print(stderr,
                 "feedplane: reflector: snapshot {} unusable ({}); its lists are "
                 "re-matched from the article log\n",
                 path, why);
      continue;
    }
    applied_[p] = ps.applied;
    replay_hi_ = std::max(replay_hi_, ps.applied);
    for (const list_snapshot_entry& e : ps.lists)
      restore_.add(e.id_hash, e.identity, e.seqs.data(), e.seqs.size());
    ++files;
    lists += ps.lists.size();
  }
  restore_.build();
  load_word_frequencies();
  // The snapshots count this shard's subscriptions: size the id maps once instead of
  // rehashing them ~20 times while millions stream in.
  by_id_.reserve(lists);
  subs_.reserve(lists);
  if (replay_hi_ != 0) {
    replay_index_ = std::make_unique<matcher::index>();
    fmt::print(
        stderr,
        "feedplane: reflector: shard {}: {} lists from {} partition snapshots in {:.0f} "
        "ms; the replay matches only what they lack up to sequence {}\n",
        s_.rt->index(), lists, files,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
        replay_hi_);
  }
  if (snap_interval_ms_ == 0) return;
  writer_ = std::make_unique<snapshot_writer>();
  writer_->thread = std::thread([w = writer_.get(), shard = s_.rt->index()] {
    // Its own name, not its shard's (inherited): the load harness and the crawler benchmark
    // count CPU by thread name, and the shard's figure is its loop's.
    pthread_setname_np(pthread_self(), fmt::format("snap-{}", shard).c_str());
    std::unique_lock<std::mutex> lock(w->mu);
    for (;;) {
      w->cv.wait(lock, [w] { return w->stop || !w->queue.empty(); });
      if (w->queue.empty()) return;  // stop, and nothing left to write
      // Whatever is queued goes as one batch: the directory is fsynced once for it.
      std::vector<dataplane::file_bytes> batch;
      batch.swap(w->queue);
      lock.unlock();
      std::string failed;
      const size_t written = dataplane::write_files_durably(batch, &failed);
      if (written != batch.size())
        fmt::print(stderr, "feedplane: reflector: shard {}: {} of {} snapshots not written: {}\n",
                   shard, batch.size() - written, batch.size(), failed);
      lock.lock();
      w->pending -= batch.size();
    }
  });
}

// Before any record: the adds that follow file their clauses by these counts. Its own
// shard's file, else shard 0's after a change of --shards (every shard counts the same
// broadcast articles, so their sketches differ only by sampling).
void reflector::load_word_frequencies() {
  std::string path = word_frequencies_path(snap_dir_, s_.rt->index());
  if (::access(path.c_str(), F_OK) != 0) path = word_frequencies_path(snap_dir_, 0);
  if (::access(path.c_str(), F_OK) != 0) return;  // never written: the replay counts
  const size_t sketch = index_.frequencies().counters.size();
  std::string bytes, why;
  word_frequencies wf;
  if (dataplane::read_file(path, 64 + sketch * sizeof(uint16_t), bytes, &why) !=
          dataplane::read_status::ok ||
      !decode_word_frequencies(bytes, sketch, wf, &why) ||
      !index_.restore_frequencies({wf.counters, wf.decay_cursor, wf.counted})) {
    if (why.empty()) why = fmt::format("{} counters, not {}", wf.counters.size(), sketch);
    fmt::print(stderr,
               "feedplane: reflector: shard {}: word frequencies {} unusable ({}); the "
               "replay counts them, the index upkeep re-files\n",
               s_.rt->index(), path, why);
    return;
  }
  words_through_ = wf.through;
  words_written_ = wf.through;
}

// Every round and at a clean stop, when articles came since the last: ~0.5 MB copied.
void reflector::write_word_frequencies() {
  if (!writer_ || last_seq_ == words_written_) return;
  const matcher::index::frequency_state f = index_.frequencies();
  std::string bytes;  // moved to the writer: one copy of the sketch, not two
  encode_word_frequencies(last_seq_, f.counted, f.decay_cursor, f.counters.data(),
                          f.counters.size(), bytes);
  words_written_ = last_seq_;
  {
    std::lock_guard<std::mutex> g(writer_->mu);
    writer_->queue.push_back({word_frequencies_path(snap_dir_, s_.rt->index()), std::move(bytes)});
    ++writer_->pending;
  }
  writer_->cv.notify_one();
}

void reflector::on_memory_timer(void* ctx) {
  auto& self = *static_cast<reflector*>(ctx);
  self.check_memory();
  self.s_.rt->loop().arm(self.memory_timer_, 100);
}

void reflector::check_memory() {
  // /proc/self/statm: "size resident shared ..." in pages; one pread, no allocation.
  char buf[128];
  const ssize_t n = ::pread(statm_fd_, buf, sizeof buf, 0);
  if (n <= 0) return;
  const std::string_view statm(buf, size_t(n));
  const size_t sp = statm.find(' ');
  uint64_t pages = 0;
  if (sp == std::string_view::npos ||
      std::from_chars(statm.data() + sp + 1, statm.data() + statm.size(), pages).ec != std::errc())
    return;
  static const uint64_t page_bytes = uint64_t(sysconf(_SC_PAGESIZE));
  resident_ = pages * page_bytes;
  const uint64_t high = memory_limit_ / 10 * 9, low = memory_limit_ / 20 * 17;
  uint8_t want = pressure_normal;
  if (resident_ >= memory_limit_ || (pressure_ == pressure_paused && resident_ >= high)) {
    want = pressure_paused;
  } else if (resident_ >= high || (pressure_ != pressure_normal && resident_ >= low)) {
    want = pressure_tight;
  }
  if (want == pressure_) return;
  const uint32_t shard = s_.rt->index();
  if (want > pressure_) shed_memory();
  if (want == pressure_paused) {
    s_.rt->pause_articles(true);
    m_.memory_pauses->add();
    fmt::print(stderr,
               "feedplane: reflector: shard {}: resident memory {} MiB is above "
               "reflector.memory_limit_mb {}: the article stream is paused until it is below "
               "{} MiB (the crawlers wait; nothing is dropped)\n",
               shard, resident_ >> 20, memory_limit_ >> 20, high >> 20);
  } else if (pressure_ == pressure_paused) {
    s_.rt->pause_articles(false);
    fmt::print(stderr,
               "feedplane: reflector: shard {}: resident memory {} MiB: the article stream "
               "resumes\n",
               shard, resident_ >> 20);
  }
  pressure_ = want;
  degraded();
}

// True while new entries keep no HTML body (the article cache near its budget, or memory
// pressure); sets the gauge: 0, 1, or 2 while the article stream is paused.
bool reflector::degraded() {
  const bool tight = cache_bytes_ > cache_budget_bytes_ / 4 * 3 || pressure_ != pressure_normal;
  m_.degraded->set(std::max<int64_t>(tight ? 1 : 0, pressure_));
  return tight;
}

// Bodies first (Cobra's order): the cached articles' HTML goes (feeds then serve the
// plain-text summary, as for entries cached under pressure) and every rendered feed (each
// renders again at its next poll).
void reflector::shed_memory() {
  for (auto it = cache_.begin(); it != cache_.end();) {
    cached_article& a = it->second;
    if (a.summary_html.empty()) {
      ++it;
      continue;
    }
    cache_bytes_ -= a.bytes();
    if (!a.summary_ready) {
      // Its plain summary was never made: the article leaves the cache whole (a render
      // reads it back from the store, as after any eviction) rather than the shard
      // converting every cached body's HTML at once.
      it = cache_.erase(it);
      continue;
    }
    std::string().swap(a.summary_html);
    cache_bytes_ += a.bytes();
    ++it;
  }
  m_.cache_articles->set(int64_t(cache_.size()));
  renders_.clear();
  m_.render_bytes->set(int64_t(renders_.bytes()));
  m_.render_evicted->mirror(renders_.evictions());
  m_.cache_bytes->set(int64_t(cache_bytes_));
}

// GET /api/memory (admin): this shard's view of memory pressure.
void reflector::memory_state(net::request_context& ctx, net::http_response& r) {
  if (!dataplane::require_admin(ctx, *s_.cfg, r)) return;
  static constexpr const char* names[] = {"normal", "tight", "paused"};
  r.content_type = "application/json";
  r.cache_control = "no-store";
  r.compressible = false;
  r.set_body(fmt::format(
      "{{\"shard\": {}, \"state\": \"{}\", \"resident_bytes\": {}, \"limit_bytes\": {}, "
      "\"article_cache_bytes\": {}, \"render_cache_bytes\": {}}}\n",
      s_.rt->index(), names[pressure_], resident_, memory_limit_, cache_bytes_, renders_.bytes()));
}

void reflector::on_snapshot_timer(void* ctx) {
  auto& self = *static_cast<reflector*>(ctx);
  if (self.stopping_) return;
  if (!self.snap_round_) {
    // A new round once the last one's files are written: a slow disk slows the rounds,
    // it never queues them up.
    if (self.writer_pending()) {
      self.s_.rt->loop().arm(self.snap_timer_, 100);
      return;
    }
    self.snap_round_ = true;
    self.snap_next_ = 0;
    self.snap_refresh_left_ = k_snap_refresh_per_round;
  }
  // About 50,000 lists (a few MB copied) per tick, then the loop serves what waits.
  self.snapshot_slice(50'000);
  self.s_.rt->loop().arm(self.snap_timer_, self.snap_round_ ? 1 : self.snap_interval_ms_);
}

void reflector::on_gc_timer(void* ctx) {
  auto& self = *static_cast<reflector*>(ctx);
  if (self.stopping_) return;
  if (!self.gc_scan_) {
    // Lists gain only sequences at or above the window's first (new matches), or at or
    // above gc_floor_ (backfills, which take nothing below it), and both only move up: what
    // no list holds below the bound now, no list ever will (rt::gc_report).
    self.gc_scan_ = true;
    self.gc_next_ = 0;
    self.gc_bound_ = std::min(self.window_first_seq_, self.last_seq_ + 1);
    self.gc_floor_ = std::max(self.gc_floor_, self.gc_bound_);
    self.gc_held_.clear();
    self.gc_unique_ = 0;
  }
  // About 16,000 lists (up to k sequences each, ~1-2 ms at a cache miss or two per list)
  // per tick, then the loop serves what waits.
  const auto t0 = std::chrono::steady_clock::now();
  self.gc_slice(16'000);
  self.gc_scan_us_ += uint64_t(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  if (!self.gc_scan_) {  // sent: one scan's time
    self.m_.gc_scan_us->observe(self.gc_scan_us_);
    self.gc_scan_us_ = 0;
  }
  self.s_.rt->loop().arm(self.gc_timer_, self.gc_scan_ ? 1 : self.gc_interval_ms_);
}

void reflector::gc_slice(size_t budget) {
  auto unique = [this] {
    std::sort(gc_held_.begin(), gc_held_.end());
    gc_held_.erase(std::unique(gc_held_.begin(), gc_held_.end()), gc_held_.end());
    gc_unique_ = gc_held_.size();
  };
  for (; gc_next_ < subs_.size() && budget > 0; ++gc_next_, --budget) {
    const subscription* sub = subs_[gc_next_].get();
    if (sub == nullptr) continue;
    sub->list.for_each([this](uint64_t seq) {
      if (seq < gc_bound_) gc_held_.push_back(seq);
    });
    // Popular articles sit in many lists: unique now and then, so the vector stays about
    // the size of the distinct sequences.
    if (gc_held_.size() >= 2 * gc_unique_ + (size_t{1} << 20)) unique();
  }
  if (gc_next_ < subs_.size()) return;
  // The store's write ring is full: the report waits for the next tick, still valid.
  if (!s_.rt->can_write(rt::write_lane::api)) return;
  unique();
  auto w = std::make_unique<fn_write>();
  w->gc = std::make_unique<rt::gc_report>();
  w->gc->bound = gc_bound_;
  w->gc->held = std::move(gc_held_);
  gc_held_ = {};
  w->fn = [](rt::shard& s, fn_write& done) {
    if (done.status == 0) of(s).m_.gc_reports->add();
  };
  rt::write_ptr wp = std::move(w);
  if (s_.rt->write(wp, rt::write_lane::api)) {
    gc_scan_ = false;
  } else {
    gc_held_ = std::move(wp->gc->held);  // left with us: sent again next tick, whole
  }
}

void reflector::snapshot_slice(size_t budget) {
  while (snap_next_ < owned_.size() && budget > 0) {
    const uint32_t p = owned_[snap_next_++];
    // A clean partition is written again when its file is behind the recent window: at
    // start the store replays from the lowest sequence a list needs, and a quiet
    // partition's old file would pull the replay back past the window. A few per round.
    const bool behind = dirty_[p] == 0 && snap_refresh_left_ > 0 && partitions_[p].size != 0 &&
                        applied_[p] + 1 < window_first_seq_;
    if (dirty_[p] == 0 && !behind) continue;
    if (behind) --snap_refresh_left_;
    const size_t n = partitions_[p].size;
    write_snapshot(p);
    budget -= std::min(budget, std::max<size_t>(n, 1));
  }
  if (snap_next_ >= owned_.size()) {
    snap_round_ = false;
    write_word_frequencies();
  }
}

// Fast enough to run on the shard: a header, then per subscription 17 bytes and its
// sequences copied; the file is written by the writer thread.
// Fast: at millions of subscriptions each one's reads are four or five dependent misses
// (its pointer in subs_, the subscription's three lines, its strings' block for the id
// hash, its list's ring). A software pipeline starts each ahead of its use (pointer 3d,
// subscription 2d, strings and ring d), so the misses of many subscriptions overlap: in a
// 10M bulk creation, where every partition is dirty at every round, the walk was 16% of
// the process.
void reflector::write_snapshot(uint32_t p) {
  const auto t0 = std::chrono::steady_clock::now();
  const partition_slots& ps = partitions_[p];
  begin_partition_snapshot(p, last_seq_, snap_bytes_);
  applied_[p] = last_seq_;  // what this partition's file will hold (snapshot_slice)
  snap_idx_.clear();
  for (uint32_t slot = 0; slot < ps.size; ++slot) {
    if (const uint32_t v = ps.get(slot); v != 0) snap_idx_.push_back(v - 1);
  }
  const size_t n = snap_idx_.size();
  constexpr size_t d = 8;
  uint32_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + 3 * d < n) __builtin_prefetch(&subs_[snap_idx_[i + 3 * d]]);
    if (i + 2 * d < n) {
      const char* ahead = reinterpret_cast<const char*>(subs_[snap_idx_[i + 2 * d]].get());
      // Not line-aligned (the allocator's size class): its first and last byte's lines
      // and those between.
      for (size_t off = 0; off < sizeof(subscription); off += 64) __builtin_prefetch(ahead + off);
      __builtin_prefetch(ahead + sizeof(subscription) - 1);
    }
    if (i + d < n) {
      const subscription& ahead = *subs_[snap_idx_[i + d]];
      ahead.text.prefetch();
      ahead.list.prefetch_items();
    }
    const subscription& sub = *subs_[snap_idx_[i]];
    // Not yet durable (its backfill starts at the ack), or a backfill in flight: the list
    // lacks matches its first sequence promises. Left out (a restart re-matches it from
    // that sequence) and written again next round.
    if (!sub.live || sub.backfilling != 0) {
      dirty_[p] = 2;
      continue;
    }
    sub.list.copy_to(snap_seqs_);
    append_list_snapshot(snapshot_id_hash(sub.id()), list_identity(sub), snap_seqs_.data(),
                         snap_seqs_.size(), snap_bytes_);
    ++count;
  }
  finish_partition_snapshot(count, snap_bytes_);
  dirty_[p] = dirty_[p] == 2 ? 1 : 0;
  m_.snapshot_encode_us->observe(uint64_t(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count()));
  m_.snapshot_files->add();
  m_.snapshot_bytes->add(snap_bytes_.size());
  {
    std::lock_guard<std::mutex> g(writer_->mu);
    writer_->queue.push_back({snapshot_path(snap_dir_, p), snap_bytes_});
    ++writer_->pending;
  }
  writer_->cv.notify_one();
}

void reflector::stop_snapshots() {
  if (!writer_) return;
  // A stopping shard writes what changed since the last round, so a clean restart
  // re-matches nothing; after a crash the last round's files stand.
  if (caught_up_) {
    for (uint32_t p : owned_) {
      if (dirty_[p] != 0) write_snapshot(p);
    }
    write_word_frequencies();
  }
  {
    std::lock_guard<std::mutex> g(writer_->mu);
    writer_->stop = true;
  }
  writer_->cv.notify_one();
  writer_->thread.join();
  writer_.reset();
}

// ---- matching ----

void reflector::on_article(rt::shard&, const rt::article_ref& a) {
  const uint64_t seq = a->seq();
  last_seq_ = seq;
  if (!caught_up_ && streamed_ && seq >= replay_target_) mark_caught_up();
  index_recent(*a);
  if (!parked_.empty()) {  // searches that waited for this shard to reach their range
    std::vector<parked> ready;
    std::erase_if(parked_, [&](parked& p) {
      if (p.upto > seq) return false;
      ready.push_back(std::move(p));
      return true;
    });
    for (parked& p : ready) p.run();
  }
  if (index_.size() == 0) {
    // No subscription yet: the words are still counted, one article in eight as match()
    // does, so that the first subscriptions are filed by real counts.
    if (seq % matcher::index::count_one_in == 0 && seq > words_through_)
      index_.observe(scoped_words(*a));
    return;
  }
  // Start-up, at or below what the snapshots hold: only the subscriptions they do not
  // cover are matched (most articles of the replay touch no list at all).
  const bool replaying = seq <= replay_hi_;
  if (replaying) {
    // The filing words' frequencies, as a match counts, unless the words file has them.
    if (seq > words_through_) index_.observe(scoped_words(*a));
    if (replay_index_->size() == 0) return;
  }
  m_.articles->add();
  // Thread CPU time too (a system call, so live articles only): on a host whose cores are
  // shared the wall time includes preemption, which is not the matcher's.
  const auto thread_cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
  };
  const uint64_t cpu0 = replaying ? 0 : thread_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  // Fast: the index touches only the postings of the article's words (matcher/index.h).
  (replaying ? *replay_index_ : index_).match(scoped_words(*a), result_);
  const auto t_index = std::chrono::steady_clock::now();
  const uint64_t index_cpu_ns = replaying ? 0 : thread_cpu_ns() - cpu0;
  if (result_.ids().empty()) {
    observe_match(*a, t0, t_index, index_cpu_ns, replaying);
    wake_upkeep();
    return;
  }
  const uint64_t replaces = a->meta().replaces;
  const int64_t now = wall_now();
  bool any = false;
  uint64_t matched = 0;  // subscriptions the article matched (the weight feedback)
  // Fast: at 10M subscriptions an article appends to ~100,000 cold lists, two or three
  // dependent misses each (the pointer, the subscription, its list's slot). A software
  // pipeline starts each load ahead of its use (pointer 2d ahead, subscription d, slot
  // d / 2), so the misses of several subscriptions overlap instead of queueing.
  const std::span<const uint32_t> ids = result_.ids();
  const size_t n = ids.size();
  constexpr size_t d = 8;
  auto index_of = [&](size_t i) { return replaying ? replay_ids_[ids[i]] : ids[i]; };
  auto sub_at = [&](size_t i) -> subscription* {
    const uint32_t idx = index_of(i);
    return idx < subs_.size() ? subs_[idx].get() : nullptr;
  };
  for (size_t i = 0; i < n; ++i) {
    if (i + 2 * d < n) {
      if (const uint32_t idx = index_of(i + 2 * d); idx < subs_.size())
        __builtin_prefetch(&subs_[idx]);
    }
    if (i + d < n) {
      if (const subscription* ahead = sub_at(i + d)) {
        __builtin_prefetch(ahead, 1);
        __builtin_prefetch(reinterpret_cast<const char*>(ahead) + 64, 1);
      }
    }
    if (i + d / 2 < n) {
      if (const subscription* ahead = sub_at(i + d / 2)) ahead->list.prefetch_slot();
    }
    subscription* s = sub_at(i);
    if (s == nullptr || seq <= s->from_seq) continue;
    ++matched;
    if (s->restored && seq <= applied_[s->partition]) continue;  // the snapshot has it
    dirty_[s->partition] = 1;
    const size_t before = s->list.size();
    if (!s->list.insert(seq, replaces, s->k)) continue;
    list_entries_ += s->list.size() - before;
    s->invalidate(now, next_version());
    m_.matches->add();
    m_.list_size->observe(s->list.size());
    any = true;
  }
  if (any) remember(*a);
  // One map add per article that matched anything, none per match.
  if (matched != 0 && seq >= first_live_seq_) {
    const uint64_t sid = a->meta().source_id;
    if (source_matches_.size() < weight_max_sources) {
      source_matches_[sid] += matched;
    } else if (auto it = source_matches_.find(sid); it != source_matches_.end()) {
      it->second += matched;
    } else {
      m_.weight_dropped->add();
    }
  }
  m_.list_entries->set(int64_t(list_entries_));
  observe_match(*a, t0, t_index, index_cpu_ns, replaying);
  wake_upkeep();
}

// ---- weight feedback ----

void reflector::on_refile_timer(void* ctx) {
  auto& self = *static_cast<reflector*>(ctx);
  if (self.stopping_) return;
  if (self.refile_examined_ == 0) {  // a pass begins (nothing examined while waiting either)
    // Unless the index is empty, or no article was counted since the last began (or ever):
    // the snapshots it took are the sketch's counts still, and every clause added since
    // was filed by them, so nothing could move (a bulk creation's adds cost no passes).
    const uint64_t counted = self.index_.frequencies().counted;
    if (counted == self.refile_counted_at_ || self.index_.size() == 0) {
      self.refile_wait_ms_ = std::min<uint64_t>(self.refile_wait_ms_ * 2, 60'000);
      self.refile_waiting_ = true;
      self.s_.rt->loop().arm(self.refile_timer_, self.refile_wait_ms_);
      return;
    }
    self.refile_waiting_ = false;
    self.refile_counted_at_ = counted;
  }
  const matcher::index::maintenance m = self.index_.maintain(refile_budget);
  self.m_.refiled->add(m.moved);
  self.refile_examined_ += m.examined;
  self.refile_moved_ += m.moved;
  const bool moving = self.refile_moved_ * 100 > self.refile_examined_;
  uint64_t next = moving ? refile_fast_ms : refile_tick_ms;  // the pass goes on
  if (m.pass_done || m.examined == 0) {
    if (m.pass_done) self.m_.refile_passes->add();
    self.refile_wait_ms_ = moving ? 1000 : std::min<uint64_t>(self.refile_wait_ms_ * 2, 60'000);
    next = moving ? refile_fast_ms : self.refile_wait_ms_;
    self.refile_waiting_ = !moving;
    self.refile_examined_ = 0;
    self.refile_moved_ = 0;
  }
  self.s_.rt->loop().arm(self.refile_timer_, next);
}

void reflector::on_weight_timer(void* ctx) {
  auto& self = *static_cast<reflector*>(ctx);
  // Stopping: a peer may be tearing its components down. The counts since the last report
  // are lost (one period's: the weight is an estimate, and the articles' own count stays).
  if (self.stopping_) return;
  self.report_weights();
  self.s_.rt->loop().arm(self.weight_timer_, self.weight_interval_ms_);
}

void reflector::report_weights() {
  if (source_matches_.empty()) return;
  rt::shard& sh = *s_.rt;
  const uint32_t n = sh.count();
  // One open batch per peer; a peer is closed for this report once it refused a batch or
  // took weight_tasks_per_peer of them. Each batch is opened only after can_send() and
  // sent before any other task to that peer, so its send() cannot be refused.
  std::vector<std::unique_ptr<source_matches_task>> open(n);
  std::vector<uint32_t> tasks(n, 0);
  std::vector<uint8_t> closed(n, 0);
  auto send = [&](uint32_t j) {
    m_.weight_sent->add(open[j]->items.size());
    rt::task_ptr tp = std::move(open[j]);
    sh.send(j, tp);  // cannot refuse: can_send(j) was checked when the batch was opened
    ++tasks[j];
  };
  size_t kept = 0;
  for (auto it = source_matches_.begin(); it != source_matches_.end();) {
    const uint32_t j = dataplane::source_shard(it->first, n);
    if (open[j] == nullptr && closed[j] == 0) {
      if (tasks[j] < weight_tasks_per_peer && sh.can_send(j)) {
        open[j] = std::make_unique<source_matches_task>();
        open[j]->items.reserve(std::min(weight_batch, source_matches_.size()));
      } else {
        closed[j] = 1;
      }
    }
    if (closed[j] != 0) {
      ++kept;
      ++it;
      continue;
    }
    open[j]->items.push_back({it->first, it->second});
    source_matches_.erase(it++);
    if (open[j]->items.size() == weight_batch) send(j);
  }
  for (uint32_t j = 0; j < n; ++j) {
    if (open[j] != nullptr) send(j);
  }
  m_.weight_kept->add(kept);
}

void reflector::observe_match(const rt::article& a, std::chrono::steady_clock::time_point t0,
                              std::chrono::steady_clock::time_point t_index, uint64_t index_cpu_ns,
                              bool replaying) {
  using std::chrono::nanoseconds;
  const auto end = std::chrono::steady_clock::now();
  const auto ns = uint64_t(std::chrono::duration_cast<nanoseconds>(end - t0).count());
  const auto index_ns = uint64_t(std::chrono::duration_cast<nanoseconds>(t_index - t0).count());
  const uint64_t us = ns / 1000;
  m_.match_us->observe(us);
  const size_t words = a.words().size();
  const size_t cls = words <= 64 ? 0 : words <= 256 ? 1 : words <= 1024 ? 2 : 3;
  m_.match_by_words_us[cls]->observe(us);
  m_.index_by_words_us[cls]->observe(index_ns / 1000);
  if (!replaying) {
    if (match_samples_.size() < match_samples_max) match_samples_.emplace_back();
    match_sample& m = match_samples_[match_samples_next_];
    match_samples_next_ = (match_samples_next_ + 1) % match_samples_max;
    const auto clamp32 = [](uint64_t v) { return uint32_t(std::min<uint64_t>(v, UINT32_MAX)); };
    const matcher::match_result::counters& work = result_.stats();
    const bool writing = snap_round_ || (writer_ != nullptr && writer_pending());
    // Relaxed: a gauge read for diagnosis (store.h).
    const bool store_busy =
        s_.db != nullptr && s_.db->stats().background_jobs.load(std::memory_order_relaxed) != 0;
    const uint32_t busy = (refile_examined_ != 0 ? sample_upkeep : 0) |
                          (writing ? sample_snapshot : 0) | (gc_scan_ ? sample_gc : 0) |
                          (store_busy ? sample_store : 0);
    m = {clamp32(words),
         clamp32(index_ns),
         clamp32(ns),
         clamp32(index_cpu_ns),
         clamp32(work.postings),
         clamp32(work.candidates),
         clamp32(uint64_t(
             std::chrono::duration_cast<std::chrono::milliseconds>(end - started_).count())),
         busy};
  }
  // A replayed article was fetched by an earlier run: its latency is not this one's.
  if (replaying || a.meta().fetched_ms <= 0) return;
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  m_.delivered_us->observe(uint64_t(std::max<int64_t>(0, now_us - a.meta().fetched_ms * 1000)));
}

void reflector::remember(const rt::article& a) {
  if (cache_.count(a.seq()) != 0) return;
  cached_article c;
  c.title = a.title();
  c.link = a.link();
  c.guid = a.guid();
  c.source_url = a.source_url();
  c.published = a.meta().published;
  const matcher::article_view v = a.words();
  c.words.reserve(v.distinct());
  for (size_t d = 0; d < v.distinct(); ++d) c.words.push_back(v.hash(v.first(d)));
  const std::string_view html = a.summary().empty() ? a.content() : a.summary();
  // Memory pressure (Cobra's order): beyond 3/4 of the budget new entries keep no HTML
  // body, only the core and the plain-text summary (feeds then serve that, marked), so
  // the cache holds more articles before it evicts any.
  if (degraded()) {
    c.summary = plain_summary(html, false);
    c.summary_ready = true;
  } else {
    // Cut before sanitizing: the HTML5 parser closes whatever the cut leaves open.
    c.summary_html.assign(html.substr(0, summary_html_max_bytes));
    c.html_cut = html.size() > summary_html_max_bytes;
  }
  cache_bytes_ += c.bytes();
  cache_.emplace(a.seq(), std::move(c));
  cache_order_.push_back(a.seq());
  while (cache_bytes_ > cache_budget_bytes_ && !cache_order_.empty()) {
    auto it = cache_.find(cache_order_.front());
    cache_order_.pop_front();
    if (it == cache_.end()) continue;
    cache_bytes_ -= it->second.bytes();
    cache_.erase(it);
  }
  m_.cache_articles->set(int64_t(cache_.size()));
  m_.cache_bytes->set(int64_t(cache_bytes_));
}

cached_article* reflector::article(uint64_t seq) {
  if (auto it = cache_.find(seq); it != cache_.end()) return &it->second;
  m_.cache_misses->add();
  // A synchronous RocksDB read on the shard thread: rare (the cache holds recent matches)
  // and mostly from the block cache; a read thread behind a ring is the next step.
  std::string err;
  rt::article_ref a = s_.db->read_article(seq, &err);
  if (!a) {
    m_.store_read_errors->add();
    return nullptr;
  }
  remember(*a);
  auto it = cache_.find(seq);
  return it == cache_.end() ? nullptr : &it->second;
}

// ---- recent articles: backfill and preview ----

void reflector::index_recent(const rt::article& a) {
  const uint32_t window = s_.cfg->reflector.backfill_window_s;
  if (window == 0) {  // no backfill: nothing is recent
    window_first_seq_ = a.seq() + 1;
    return;
  }
  const int64_t now = wall_now();
  const int64_t t = a.meta().fetched_ms != 0 ? a.meta().fetched_ms / 1000 : a.meta().published;
  if (t >= now - int64_t(window)) {
    window_.emplace_back(a.seq(), t);
    if (a.seq() % s_.rt->count() == s_.rt->index()) {
      // Distinct words only: one posting per word and article; and one per source token,
      // so a scoped query's candidates can be its source's articles. Keyed by hash alone:
      // every candidate is verified by the index, which compares text.
      const matcher::article_view v = scoped_words(a);
      word_hashes_.clear();
      for (size_t d = 0; d < v.distinct(); ++d) word_hashes_.push_back(v.hash(v.first(d)));
      for (size_t k = 0; k < scope_.size(); ++k) word_hashes_.push_back(scope_.hash(k));
      // Why it is fast: each word costs two cache misses, its slot in a map of the window's
      // vocabulary and the end of its postings; each is started for all the article's
      // words before any is used. The reserve keeps the slots in place while the second
      // pass holds their addresses (no insert below rehashes).
      postings_.reserve(postings_.size() + word_hashes_.size());
      for (uint64_t h : word_hashes_) postings_.prefetch(h);
      word_lists_.clear();
      for (uint64_t h : word_hashes_) {
        seq_list& q = postings_[h];
        q.prefetch_back();
        word_lists_.push_back(&q);
      }
      for (seq_list* q : word_lists_) q->push_back(a.seq());
      postings_entries_ += word_hashes_.size();
    }
  }
  while (!window_.empty() && window_.front().second < now - int64_t(window)) window_.pop_front();
  window_first_seq_ = window_.empty() ? a.seq() + 1 : window_.front().first;
  if (++since_sweep_ >= sweep_every) {
    // Postings leave in sequence order: trim every word's head (bounded by the vocabulary,
    // once every sweep_every articles).
    since_sweep_ = 0;
    for (auto it = postings_.begin(); it != postings_.end();) {
      auto& q = it->second;
      postings_entries_ -= q.trim_below(window_first_seq_);
      if (q.empty()) {
        postings_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  m_.recent_articles->set(int64_t(window_.size()));
  m_.recent_postings->set(int64_t(postings_entries_));
}

void reflector::search(const call_ptr& cp, const std::vector<search_query>& qs, bool items) {
  uint64_t need = 0;
  for (const search_query& q : qs) {
    if (q.upto != UINT64_MAX) need = std::max(need, q.upto);
  }
  if (need <= last_seq_) {
    search_now(cp, qs, items);
    return;
  }
  // This shard has not applied the range yet (shards apply the stream at their own pace):
  // answer once it has, so that no article between its index and the range is missed.
  cp->async = true;
  parked_.push_back({need, [this, cp, qs, items] {
                       search_now(cp, qs, items);
                       reply_later(cp);
                     }});
}

void reflector::search_now(const call_ptr& cp, const std::vector<search_query>& qs, bool items) {
  cp->seqs.assign(qs.size(), {});
  std::vector<uint64_t> cand;
  for (size_t qi = 0; qi < qs.size(); ++qi) {
    const search_query& q = qs[qi];
    matcher::parsed_query pq;
    if (!parser_.parse(q.query, pq).ok()) continue;
    const uint64_t lo = std::max(q.from, window_first_seq_);
    const uint64_t hi = std::min(q.upto, last_seq_);
    // Candidates: per clause, the postings of its rarest required word.
    cand.clear();
    for (const matcher::query_clause& cl : pq.clauses) {
      const seq_list* best = nullptr;
      bool absent = false;
      for (const matcher::query_term& t : cl.must) {
        for (const std::string& w : t.words) {
          auto it = postings_.find(matcher::word_hash(w));
          if (it == postings_.end()) {
            absent = true;
            break;
          }
          if (best == nullptr || it->second.size() < best->size()) best = &it->second;
        }
        if (absent) break;
      }
      if (absent || best == nullptr) continue;
      for (auto it = best->rbegin(); it != best->rend() && *it >= lo; ++it) {
        if (*it <= hi) cand.push_back(*it);
      }
    }
    std::sort(cand.begin(), cand.end(), std::greater<>());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    // Verified newest first against the query alone, the article read back from the store
    // (a synchronous read: creations and previews only, at most search_budget each).
    search_index_.add(0, pq);
    const std::vector<std::string> words = positive_words(pq.tree);
    uint32_t reads = 0;
    for (uint64_t seq : cand) {
      if (cp->seqs[qi].size() >= q.k || reads >= search_budget) break;
      ++reads;
      std::string err;
      rt::article_ref a = s_.db->read_article(seq, &err);
      if (!a) continue;
      search_index_.match(scoped_words(*a), search_result_);
      if (search_result_.ids().empty()) continue;
      cp->seqs[qi].push_back(seq);
      if (!items) continue;
      std::string text;
      matcher::html_to_text(a->summary().empty() ? a->content() : a->summary(), text);
      const std::vector<std::string> matched = words_in(words, {a->title(), text});
      std::string html;
      const std::string_view src = a->summary().empty() ? a->content() : a->summary();
      sanitize_html(src.substr(0, summary_html_max_bytes), matched, html);
      std::string j = fmt::format("{{\"seq\": {}, \"title\": ", seq);
      base::append_json_string(a->title(), j);
      j += ", \"url\": ";
      base::append_json_string(a->link(), j);
      j += ", \"id\": ";
      base::append_json_string(a->guid().empty() ? a->link() : a->guid(), j);
      char when[32];
      when[feed::format_rfc3339(a->meta().published, when)] = 0;
      j += fmt::format(", \"date_published\": \"{}\", \"source\": ", when);
      base::append_json_string(a->source_url(), j);
      j += ", \"content_html\": ";
      base::append_json_string(html, j);
      j += ", \"matched\": [";
      for (size_t w = 0; w < matched.size(); ++w) {
        if (w != 0) j += ", ";
        base::append_json_string(matched[w], j);
      }
      j += "]}";
      cp->lines.push_back(std::move(j));
    }
    m_.searched->add(reads);
    search_index_.remove(0);
  }
}

void reflector::backfill(const std::vector<std::pair<std::string, uint64_t>>& subs,
                         std::function<void(reflector&)> done) {
  std::vector<search_query> qs;
  std::vector<std::string> ids;
  for (const auto& [sid, upto] : subs) {
    subscription* sub = find(sid);
    if (sub == nullptr || sub->from_seq >= upto) continue;
    qs.push_back({std::string(sub->query()), sub->k, sub->from_seq + 1, upto});
    ids.push_back(sid);
    ++sub->backfilling;
  }
  if (qs.empty()) {
    done(*this);
    return;
  }
  struct gather {
    uint32_t waiting = 0;
    std::vector<std::vector<uint64_t>> found;
    std::vector<std::string> ids;
    std::function<void(reflector&)> done;
  };
  auto g = std::make_shared<gather>();
  g->waiting = s_.rt->count();
  g->found.resize(qs.size());
  g->ids = std::move(ids);
  g->done = std::move(done);
  for (uint32_t j = 0; j < s_.rt->count(); ++j) {
    auto part = std::make_shared<call>();
    part->origin = s_.rt->index();
    part->on_answer = [g](reflector& self, call& got) {
      for (size_t q = 0; q < got.seqs.size() && q < g->found.size(); ++q)
        g->found[q].insert(g->found[q].end(), got.seqs[q].begin(), got.seqs[q].end());
      if (--g->waiting != 0) return;
      const int64_t now = wall_now();
      for (size_t q = 0; q < g->ids.size(); ++q) {
        subscription* sub = self.find(g->ids[q]);
        if (sub == nullptr) continue;
        if (sub->backfilling != 0) --sub->backfilling;
        auto& f = g->found[q];
        std::sort(f.begin(), f.end());  // oldest first: the list keeps the newest k
        const size_t before = sub->list.size();
        for (uint64_t seq : f) {
          // Past the window by now, and perhaps collected (gc_floor_): not recent any more.
          if (seq < self.gc_floor_) continue;
          if (sub->list.insert(seq, 0, sub->k)) {
            self.m_.backfilled->add();
            self.dirty_[sub->partition] = 1;
          }
        }
        self.list_entries_ += sub->list.size() - before;
        sub->invalidate(now, self.next_version());
      }
      self.update_gauges();
      g->done(self);
    };
    start_call(
        j, part, [qs](reflector& o, const call_ptr& cp) { o.search(cp, qs, false); }, true);
  }
}

bool reflector::read_query_spec(net::request_context& ctx, net::http_response& r, sub_spec& spec) {
  spec_error err;
  if (!parse_spec(json_, ctx.padded_body(), false, spec, err)) {
    net::set_json_error(r, 400, err.code, err.message);
    return false;
  }
  if (!spec.query) {
    net::set_json_error(r, 400, "bad_value", "\"query\" is required");
    return false;
  }
  matcher::parsed_query pq;
  if (auto e = parser_.parse(*spec.query, pq); !e.ok()) {
    err.code = "invalid_query";
    err.message = e.message;
    err.reason = matcher::errc_name(e.code);
    err.column = e.column;
    r.status = 400;
    r.content_type = "application/json";
    r.set_body(spec_error_json(err));
    return false;
  }
  return true;
}

void reflector::preview(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  sub_spec spec;
  if (!read_query_spec(ctx, r, spec)) return;
  const search_query q{*spec.query,
                       spec.k.value_or(s_.cfg->reflector.k > max_k ? max_k : s_.cfg->reflector.k),
                       0, UINT64_MAX};
  with_account(ctx, r, [q](reflector& self, const std::string&, const call_ptr& c) {
    const uint32_t n = self.s_.rt->count();
    for (uint32_t j = 0; j < n; ++j) {
      if (!self.s_.rt->can_send(j)) {
        set_call_error(*c, 503, "unavailable", fmt::format("shard {} is busy; retry", j));
        self.finish(*c);
        return;
      }
    }
    struct gather {
      uint32_t waiting = 0;
      std::vector<std::pair<uint64_t, std::string>> items;
      call_ptr answer;
    };
    auto g = std::make_shared<gather>();
    g->waiting = n;
    g->answer = c;
    for (uint32_t j = 0; j < n; ++j) {
      auto part = std::make_shared<call>();
      part->origin = self.s_.rt->index();
      part->on_answer = [g, q](reflector& me, call& got) {
        if (!got.seqs.empty()) {
          for (size_t i = 0; i < got.seqs[0].size() && i < got.lines.size(); ++i)
            g->items.emplace_back(got.seqs[0][i], std::move(got.lines[i]));
        }
        if (--g->waiting != 0) return;
        std::sort(g->items.begin(), g->items.end(),
                  [](const auto& a, const auto& b) { return a.first > b.first; });
        if (g->items.size() > q.k) g->items.resize(q.k);
        std::string body = "{\"query\": ";
        base::append_json_string(q.query, body);
        body += ", \"items\": [";
        for (size_t i = 0; i < g->items.size(); ++i) {
          body += i == 0 ? "\n  " : ",\n  ";
          body += g->items[i].second;
        }
        body += g->items.empty() ? "]}\n" : "\n]}\n";
        g->answer->status = 200;
        g->answer->body = std::move(body);
        me.finish(*g->answer);
      };
      self.start_call(j, part, [q](reflector& o, const call_ptr& cp) { o.search(cp, {q}, true); });
    }
  });
}

// POST /api/match-time (admin): {"title": T, "text": X, "repeat": N}, or a pool
// {"articles": [{"title": T, "text": X}, ...], "repeat": N}. Every shard matches the
// article N times (1-1000, default 20), or the pool's articles in turn N times over (at
// most 1,000 matches in all), against the subscriptions it owns, lists untouched, and
// answers its subscriptions and the median, mean and fastest match: Cobra's Figure 10
// measured inside a running instance (the load harness asks after each step of its bulk
// load). One article repeated is a warm match; a pool matched in turn is a stream's, each
// article finding the caches as the one before left them, as matcher_bench's rows do. The
// matches go through the index's sampling of word frequencies as an article's would (one in
// eight), so a probe is filed like the workload it is drawn from.
void reflector::match_time(net::request_context& ctx, net::http_response& r) {
  if (!dataplane::require_admin(ctx, *s_.cfg, r)) return;
  if (!ready(r)) return;
  constexpr size_t k_max_matches = 1000, k_max_articles = 256;
  std::string title, text;
  std::vector<std::pair<std::string, std::string>> pool;  // title, text
  bool have_pool = false, have_text = false, have_repeat = false;
  uint64_t repeat = 20;
  const auto bad = [&r](std::string_view msg) {
    net::set_json_error(r, 400, "bad_value", std::string(msg));
    return false;
  };
  const bool ok = dataplane::read_json_object(
      json_, ctx.padded_body(), r, "a JSON object",
      [&](std::string_view key, simdjson::ondemand::value value) {
        std::string_view v;
        if (key == "title" || key == "text") {
          if (value.get_string().get(v)) return bad(fmt::format("\"{}\" must be a string", key));
          (key == "title" ? title : text) = std::string(v);
          have_text = true;
        } else if (key == "articles") {
          simdjson::ondemand::array arr;
          if (value.get_array().get(arr))
            return bad("\"articles\" must be an array of {\"title\", \"text\"} objects");
          have_pool = true;
          for (auto item : arr) {
            simdjson::ondemand::object obj;
            if (item.get_object().get(obj))
              return bad("\"articles\" must be an array of {\"title\", \"text\"} objects");
            if (pool.size() == k_max_articles)
              return bad(fmt::format("at most {} \"articles\"", k_max_articles));
            auto& a = pool.emplace_back();
            for (auto field : obj) {
              std::string_view fk, fv;
              if (field.unescaped_key().get(fk) || (fk != "title" && fk != "text") ||
                  field.value().get_string().get(fv))
                return bad("an article has a string \"title\" and a string \"text\", nothing else");
              (fk == "title" ? a.first : a.second) = std::string(fv);
            }
          }
        } else if (key == "repeat") {
          if (value.get_uint64().get(repeat) || repeat < 1 || repeat > k_max_matches)
            return bad("\"repeat\" must be an integer from 1 to 1000");
          have_repeat = true;
        } else {
          std::string msg = "unknown field ";
          base::append_json_string(key, msg);
          net::set_json_error(r, 400, "unknown_field",
                              msg + " (fields: title, text, articles, repeat)");
          return false;
        }
        return true;
      });
  if (!ok) return;
  if (have_pool && (have_text || pool.empty())) {
    bad("give either \"title\" and \"text\", or a non-empty \"articles\"");
    return;
  }
  if (!have_pool) pool.emplace_back(std::move(title), std::move(text));
  if (!have_repeat && have_pool) repeat = std::max<uint64_t>(1, k_max_matches / pool.size());
  if (pool.size() * repeat > k_max_matches) {
    bad(fmt::format("{} articles x {} passes: at most {} matches", pool.size(), repeat,
                    k_max_matches));
    return;
  }
  const uint32_t n = s_.rt->count();
  if (!every_shard_can_take(r)) return;
  // Read-only once made: every shard matches the same tokens (the ring's hand-off orders
  // their construction before their reads).
  auto arts = std::make_shared<std::vector<matcher::article>>(pool.size());
  size_t words = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    (*arts)[i].assign_text(pool[i].first, pool[i].second);
    words += (*arts)[i].size();
  }
  words /= pool.size();
  struct gather {
    uint32_t waiting = 0;
    std::vector<std::string> shards;
    call_ptr answer;
  };
  auto g = std::make_shared<gather>();
  g->waiting = n;
  g->shards.resize(n);
  g->answer = answer_later(r);
  const size_t articles_n = pool.size();
  for (uint32_t j = 0; j < n; ++j) {
    auto part = std::make_shared<call>();
    part->origin = s_.rt->index();
    part->on_answer = [g, j, words, articles_n, repeat](reflector& me, call& got) {
      g->shards[j] = std::move(got.body);
      if (--g->waiting != 0) return;
      std::string body =
          fmt::format("{{\"words\": {}, \"articles\": {}, \"repeat\": {}, \"shards\": [", words,
                      articles_n, repeat);
      for (uint32_t i = 0; i < g->shards.size(); ++i)
        body += (i == 0 ? "\n  " : ",\n  ") + g->shards[i];
      body += "\n]}\n";
      g->answer->status = 200;
      g->answer->body = std::move(body);
      me.finish(*g->answer);
    };
    start_call(
        j, part,
        [arts, repeat](reflector& o, const call_ptr& cp) {
          std::vector<double> us;
          us.reserve(repeat * arts->size());
          for (uint64_t i = 0; i < repeat; ++i) {
            for (const matcher::article& a : *arts) {
              const auto t0 = std::chrono::steady_clock::now();
              o.index_.match(a.view(), o.result_);
              us.push_back(
                  std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                      .count());
            }
          }
          const size_t matched = o.result_.ids().size();  // the last article's
          const double mean =
              std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
          std::sort(us.begin(), us.end());
          cp->status = 200;
          cp->body = fmt::format(
              "{{\"shard\": {}, \"subscriptions\": {}, \"matched\": {}, \"median_us\": "
              "{:.1f}, \"mean_us\": {:.1f}, \"min_us\": {:.1f}}}",
              o.s_.rt->index(), o.index_.size(), matched, us[us.size() / 2], mean, us.front());
        },
        true);
  }
}

// GET /api/match-stats?min_words=A&max_words=B (admin): exact quantiles of the live
// articles' match times on the shards, over each shard's last 65,536 articles with A to B
// words (default: all): the index's match alone and with the list appends; per shard also
// the index's work per article (posting entries read, candidates checked: means) and its
// upkeep since start (passes, clauses re-filed). Histograms in
// /metrics have power-of-two buckets, too coarse to tell a tail within 3x of the median.
// samples=1 adds each shard's samples themselves, oldest first, to find what the slow
// articles have in common (their time, their work, what else the shard was doing).
void reflector::match_stats(net::request_context& ctx, net::http_response& r) {
  if (!dataplane::require_admin(ctx, *s_.cfg, r)) return;
  uint64_t lo = 0, hi = UINT32_MAX, with_samples = 0;
  for (const auto& q : ctx.query()) {
    uint64_t* into = q.name == "min_words"   ? &lo
                     : q.name == "max_words" ? &hi
                     : q.name == "samples"   ? &with_samples
                                             : nullptr;
    if (into == nullptr) {
      net::set_json_error(r, 400, "unknown_field",
                          "unknown parameter (parameters: min_words, max_words, samples)");
      return;
    }
    const auto [end, ec] = std::from_chars(q.value.data(), q.value.data() + q.value.size(), *into);
    if (ec != std::errc() || end != q.value.data() + q.value.size()) {
      net::set_json_error(r, 400, "bad_value",
                          "min_words, max_words and samples are whole numbers");
      return;
    }
  }
  if (with_samples > 1) {
    net::set_json_error(r, 400, "bad_value", "samples is 0 or 1");
    return;
  }
  const uint32_t n = s_.rt->count();
  if (!every_shard_can_take(r)) return;
  struct gather {
    uint32_t waiting = 0;
    std::vector<std::vector<uint64_t>> index_ns, total_ns, index_cpu_ns;  // by shard
    // By shard: the samples' summed postings and candidates, upkeep passes, clauses refiled.
    std::vector<std::vector<uint64_t>> work;
    std::vector<std::vector<uint64_t>> samples;  // by shard: sample_fields per sample, flat
    call_ptr answer;
  };
  auto g = std::make_shared<gather>();
  g->waiting = n;
  g->index_ns.resize(n);
  g->total_ns.resize(n);
  g->index_cpu_ns.resize(n);
  g->work.assign(n, std::vector<uint64_t>(4, 0));
  g->samples.resize(n);
  g->answer = answer_later(r);
  auto stats = [](std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end());
    auto q = [&](double f) {
      return v.empty() ? 0.0
                       : double(v[std::min(v.size() - 1, size_t(f * double(v.size())))]) / 1e3;
    };
    return fmt::format(
        "{{\"p50\": {:.2f}, \"p90\": {:.2f}, \"p99\": {:.2f}, \"p999\": {:.2f}, \"max\": "
        "{:.2f}, \"p99_over_p50\": {:.2f}}}",
        q(0.5), q(0.9), q(0.99), q(0.999), v.empty() ? 0.0 : double(v.back()) / 1e3,
        v.empty() || v[v.size() / 2] == 0 ? 0.0 : q(0.99) / q(0.5));
  };
  for (uint32_t j = 0; j < n; ++j) {
    auto part = std::make_shared<call>();
    part->origin = s_.rt->index();
    part->on_answer = [g, j, lo, hi, stats, with_samples](reflector& me, call& got) {
      if (got.seqs.size() == 5 && got.seqs[3].size() == 4) {
        g->index_ns[j] = std::move(got.seqs[0]);
        g->total_ns[j] = std::move(got.seqs[1]);
        g->index_cpu_ns[j] = std::move(got.seqs[2]);
        g->work[j] = std::move(got.seqs[3]);
        g->samples[j] = std::move(got.seqs[4]);
      }
      if (--g->waiting != 0) return;
      std::vector<uint64_t> all_index, all_total, all_cpu;
      std::string shards;
      for (size_t i = 0; i < g->index_ns.size(); ++i) {
        all_index.insert(all_index.end(), g->index_ns[i].begin(), g->index_ns[i].end());
        all_total.insert(all_total.end(), g->total_ns[i].begin(), g->total_ns[i].end());
        all_cpu.insert(all_cpu.end(), g->index_cpu_ns[i].begin(), g->index_cpu_ns[i].end());
        const size_t count = g->index_ns[i].size();
        const std::vector<uint64_t>& w = g->work[i];
        const auto per_article = [count](uint64_t sum) {
          return count == 0 ? 0.0 : double(sum) / double(count);
        };
        std::string samples;
        if (with_samples != 0) {
          samples = ",\n     \"samples\": [";
          const std::vector<uint64_t>& v = g->samples[i];
          for (size_t k = 0; k + sample_fields <= v.size(); k += sample_fields)
            fmt::format_to(
                std::back_inserter(samples), "{}[{}]", k == 0 ? "" : ",",
                fmt::join(v.begin() + ptrdiff_t(k), v.begin() + ptrdiff_t(k + sample_fields), ","));
          samples += "]";
        }
        shards += fmt::format(
            "{}\n    {{\"shard\": {}, \"articles\": {}, \"index_us\": {}, \"postings\": "
            "{:.1f}, \"candidates\": {:.1f}, \"upkeep_passes\": {}, \"refiled\": {}{}}}",
            i == 0 ? "" : ",", i, count, stats(g->index_ns[i]), per_article(w[0]),
            per_article(w[1]), w[2], w[3], samples);
      }
      const size_t count = all_index.size();
      g->answer->status = 200;
      g->answer->body = fmt::format(
          "{{\"min_words\": {}, \"max_words\": {}, \"articles\": {},\n  \"index_us\": {},\n  "
          "\"index_cpu_us\": {},\n  \"total_us\": {},{}\n  \"shards\": [{}\n  ]}}\n",
          lo, hi, count, stats(all_index), stats(all_cpu), stats(all_total),
          with_samples != 0
              ? "\n  \"sample_fields\": [\"at_ms\", \"words\", \"index_ns\", "
                "\"index_cpu_ns\", \"total_ns\", \"postings\", \"candidates\", \"busy\"],"
              : "",
          shards);
      me.finish(*g->answer);
    };
    start_call(
        j, part,
        [lo, hi, with_samples](reflector& o, const call_ptr& cp) {
          cp->seqs.assign(5, {});
          uint64_t postings = 0, candidates = 0;
          const size_t total = o.match_samples_.size();
          for (size_t k = 0; k < total; ++k) {  // oldest first
            const match_sample& m = o.match_samples_[(o.match_samples_next_ + k) % total];
            if (m.words < lo || m.words > hi) continue;
            cp->seqs[0].push_back(m.index_ns);
            cp->seqs[1].push_back(m.total_ns);
            cp->seqs[2].push_back(m.index_cpu_ns);
            postings += m.postings;
            candidates += m.candidates;
            if (with_samples != 0)
              cp->seqs[4].insert(cp->seqs[4].end(), {m.at_ms, m.words, m.index_ns, m.index_cpu_ns,
                                                     m.total_ns, m.postings, m.candidates, m.busy});
          }
          // This shard's own registry: its counters are its own since start.
          cp->seqs[3] = {postings, candidates, o.m_.refile_passes->value, o.m_.refiled->value};
          cp->status = 200;
        },
        true);
  }
}

// ---- feeds ----

rendered_ptr reflector::render(subscription& s, feed_format f) {
  m_.renders->add();
  const auto seqs = s.list.items();
  // The query's positive words, for marking: parsed again per render (a few microseconds,
  // once per change) rather than kept per subscription.
  std::vector<std::string> words;
  if (matcher::parsed_query pq; parser_.parse(s.query(), pq).ok()) words = positive_words(pq.tree);
  std::vector<feed_item> items;
  items.reserve(seqs.size());
  for (size_t i = seqs.size(); i-- > 0;) {  // newest first
    cached_article* a = article(seqs[i]);
    if (a == nullptr) continue;
    if (!a->html_sanitized) {
      cache_bytes_ -= a->bytes();
      make_summary(*a);
      std::string clean;
      if (!a->summary_html.empty()) sanitize_html(a->summary_html, clean);
      a->summary_html = std::move(clean);
      a->summary_html.shrink_to_fit();
      a->html_sanitized = true;
      cache_bytes_ += a->bytes();
    }
    feed_item it;
    it.seq = seqs[i];
    it.title = a->title;
    it.link = a->link;
    it.guid = a->guid;
    it.source_url = a->source_url;
    it.summary = a->summary;
    it.published = a->published;
    it.matched = a->matched(words);
    // Once per change of the list, not per poll; the parse was once per article (above).
    if (!a->summary_html.empty()) mark_sanitized(a->summary_html, it.matched, it.summary_html);
    items.push_back(std::move(it));
  }
  auto out = std::make_shared<rendered>();
  const std::string token = s.token();
  const std::string self = "/f/" + token;
  const std::string title =
      s.title().empty() ? fmt::format("feedplane: {}", s.query()) : std::string(s.title());
  feed_info info;
  info.title = title;
  info.id = s.id();
  info.self_path = self;
  info.query = s.query();
  info.updated = s.changed;
  render_feed(f, info, items, out->body);
  out->etag = feed_etag(seqs, s.generation, s.title(), s.k, f);
  out->last_modified = s.changed;
  out->format = f;
  out->gzip.resize(libdeflate_gzip_compress_bound(gz_, out->body.size()));
  const size_t n = libdeflate_gzip_compress(gz_, out->body.data(), out->body.size(),
                                            out->gzip.data(), out->gzip.size());
  out->gzip.resize(n);  // 0: not compressible into the bound; the server compresses itself
  return out;
}

// The poll's hot path, fast because it is a token decode (done by the caller), one index
// into the partition's slot array, a constant-time compare of 16 bytes and a reference to
// the feed rendered and gzip'd once per change: nothing is rendered or copied per poll
// (the server sends the render's bytes from where they are: fill_poll sets `keep`).
rendered_ptr reflector::feed_of(const feed_token& t, feed_format f) {
  const uint32_t v = partitions_[t.partition].get(t.slot);
  if (v == 0) return nullptr;
  subscription& s = *subs_[v - 1];
  const std::string_view want(reinterpret_cast<const char*>(s.token_bits.data()), 16);
  const std::string_view got(reinterpret_cast<const char*>(t.random_bits.data()), 16);
  if (!dataplane::constant_time_equal(want, got) || !s.live) return nullptr;
  static_assert(feed_formats <= 4);
  const uint64_t key = (uint64_t(v - 1) << 2) | uint64_t(f);
  if (rendered_ptr hit = renders_.get(key, s.version)) return hit;
  rendered_ptr out = render(s, f);  // once per change and format
  renders_.put(key, s.version, out, bytes_of(*out));
  m_.render_bytes->set(int64_t(renders_.bytes()));
  m_.render_evicted->mirror(renders_.evictions());
  return out;
}

void reflector::fill_poll(net::http_response& r, const rendered_ptr& p, feed_format f,
                          std::string_view if_none_match) {
  if (!p) {
    m_.polls_unknown->add();
    net::set_json_error(r, 404, "not_found", "no feed with this token");
    return;
  }
  // The server answers 304 itself (it compares If-None-Match); counted here.
  const std::string_view tag = std::string_view(p->etag).substr(1, p->etag.size() - 2);
  if (!if_none_match.empty() &&
      (if_none_match.find(tag) != std::string_view::npos || if_none_match == "*"))
    m_.not_modified[size_t(f)]->add();
  r.status = 200;
  r.content_type = content_type(f);
  r.body = p->body;
  r.gzip_body = p->gzip;
  r.keep = p;  // sent from the render itself, not copied (net::http_response::keep)
  r.etag = p->etag;
  r.last_modified = p->last_modified;
  r.cache_control = "private, no-cache";
}

struct poll_task final : rt::task {
  feed_token token;
  feed_format format = feed_format::rss;
  net::deferred_response later;  // the origin's
  std::string if_none_match;
  rendered_ptr out;       // filled on the owner; released on the origin after sending
  bool starting = false;  // the owner has not caught up with the article log yet
  void run(rt::shard& s) override {
    reflector& owner = reflector::of(s);
    starting = !owner.caught_up();
    if (!starting) out = owner.feed_of(token, format);
  }
  void done(rt::shard& s) override {
    net::http_response r;
    if (starting) {
      net::set_unavailable(r, "start-up: the shard is re-matching the article log", 1, "starting");
    } else {
      reflector::of(s).fill_poll(r, out, format, if_none_match);
    }
    later.complete(r);
  }
};

void reflector::poll(net::request_context& ctx, net::http_response& r, feed_format f) {
  m_.polls[size_t(f)]->add();
  feed_token t;
  if (!decode_token(ctx.param("token"), &t)) {
    m_.polls_unknown->add();
    net::set_json_error(r, 404, "not_found", "no feed with this token");
    return;
  }
  if (!caught_up_) {
    net::set_unavailable(r, "start-up: the shard is re-matching the article log", 1, "starting");
    return;
  }
  const uint32_t owner = shard_of_partition(t.partition, s_.rt->count());
  if (owner == s_.rt->index()) {
    const rendered_ptr p = feed_of(t, f);
    fill_poll(r, p, f, ctx.request().if_none_match);
    return;
  }
  if (!s_.rt->can_send(owner)) {
    net::set_unavailable(r, fmt::format("shard {} is busy; retry", owner));
    return;
  }
  auto task = std::make_unique<poll_task>();
  task->token = t;
  task->format = f;
  task->later = r.later;
  task->if_none_match = ctx.request().if_none_match;
  rt::task_ptr tp = std::move(task);
  s_.rt->send(owner, tp);  // cannot refuse: can_send checked above, on this thread
  r.defer = true;
  s_.requests_deferred->add();
  m_.polls_remote->add();
}

// ---- subscriptions: create, read, change, delete ----

void reflector::create_here(const call_ptr& c, std::vector<new_sub> subs, bool bulk) {
  c->lines.assign(subs.size(), {});
  if (!caught_up_) {  // where its list starts must be a sequence of the replayed log
    set_call_error(*c, 503, "starting", "start-up: the shard is re-matching the article log");
    return;
  }
  if (!bulk && subs.size() == 1) {
    // An id made from an Idempotency-Key: a retry finds what the first request made.
    if (const subscription* had = find(subs[0].id)) {
      const new_sub& n = subs[0];
      if (!had->live) {
        set_call_error(*c, 503, "unavailable",
                       "the first request with this Idempotency-Key is not finished; retry");
      } else if (had->account() != n.account || had->query() != n.query || had->k != n.k ||
                 had->title() != n.title) {
        set_call_error(*c, 409, "idempotency_conflict",
                       "this Idempotency-Key was used for another subscription");
      } else {
        c->status = 201;
        c->replayed = true;
        c->body = json_of(*had) + "\n";
      }
      return;
    }
  }
  if (!s_.rt->can_write(rt::write_lane::api)) {
    set_call_error(*c, 503, "unavailable", "the store's write ring is full; retry");
    return;
  }
  auto w = std::make_unique<fn_write>();
  // One allocation for the batch's records: grown by doubling, a bulk group's vector took
  // fresh (zeroed) huge pages at every step.
  w->ops.reserve(subs.size() + size_t(std::count_if(subs.begin(), subs.end(), [](const new_sub& n) {
                   return n.account_new;
                 })));
  // What the group installed, pending the ack: shared by the write's callback, the
  // backfill's and the failure path, never copied (a bulk group holds thousands).
  struct installed {
    std::vector<uint64_t> serials;                            // what was installed
    std::vector<uint32_t> index_ids;                          // and where it is filed
    std::vector<size_t> where;                                // their positions in subs
    std::vector<std::pair<std::string, uint64_t>> backfills;  // id, last sequence before it
    // Installed subscription j, if it is still there (a DELETE may have come first).
    subscription* get(reflector& r, size_t j) const {
      subscription* sub = r.subs_[index_ids[j]].get();
      return sub != nullptr && sub->serial == serials[j] ? sub : nullptr;
    }
  };
  auto group = std::make_shared<installed>();
  auto& [made, made_at, where, backfills] = *group;
  const int64_t now = wall_now();
  constexpr size_t prefetch_batch = 64;
  for (size_t i = 0; i < subs.size(); ++i) {
    if (i % prefetch_batch == 0 && subs.size() > 1) {  // the index's misses, a batch at once
      std::string_view queries[prefetch_batch];
      const size_t m = std::min(prefetch_batch, subs.size() - i);
      for (size_t j = 0; j < m; ++j) queries[j] = subs[i + j].query;
      index_.prefetch_adds(queries, m);
    }
    new_sub& n = subs[i];
    // Whether or not this subscription is made: the group's others of this account rely on
    // this one carrying the account's record (bulk: the first of each account per group).
    if (n.account_new) {
      w->ops.push_back({rt::kind::accounts, false, n.account,
                        fmt::format(FMT_COMPILE("{{\"v\": 1, \"secret_sha256\": \"\", "
                                                "\"created\": {}, \"bulk\": true}}"),
                                    now)});
    }
    auto s = std::make_unique<subscription>();
    s->text.assign(n.id, n.account, n.query, n.title);
    s->k = n.k;
    s->partition = partition_of(s->id());
    // Live matching starts now. With a backfill the subscription also takes its matches
    // among the recent articles: its record says it matches from the window's first
    // sequence, so a replay of the log gives it the same list.
    s->from_seq = n.backfill && window_first_seq_ <= last_seq_ ? window_first_seq_ - 1 : last_seq_;
    s->created = now;
    s->changed = now;
    if (!random_bytes(s->token_bits.data(), s->token_bits.size())) {
      c->lines[i] = error_json("internal", "no random bytes");
      continue;
    }
    std::string err;
    uint32_t at = 0;
    subscription* in = install(std::move(s), UINT32_MAX, &err, &at);
    if (in == nullptr) {
      c->lines[i] = error_json("invalid_query", err);
      continue;
    }
    // The request's id is the record's key: moved, not copied (the subscription has its own).
    w->ops.push_back({rt::kind::subscriptions, false, std::move(n.id), record_of(*in)});
    made.push_back(in->serial);
    made_at.push_back(at);
    where.push_back(i);
    if (in->from_seq < last_seq_) backfills.emplace_back(in->id(), last_seq_);
  }
  if (made.empty()) {
    c->status = bulk ? 200 : 400;
    if (!bulk) c->body = c->lines.empty() ? error_json("internal", "nothing") : c->lines[0];
    return;
  }
  w->fn = [c, bulk, g = group](rt::shard& s, fn_write& done) {
    reflector& self = of(s);
    if (done.status != 0) {
      const std::string msg(store::store_errc_message(store::store_errc(done.status)));
      for (size_t j = 0; j < g->serials.size(); ++j) {
        if (subscription* sub = g->get(self, j)) {
          const std::string sid(sub->id());  // uninstall frees the subscription
          self.uninstall(sid);
        }
        c->lines[g->where[j]] = error_json("store_failed", msg);
      }
      set_call_error(*c, 503, "store_failed", msg);
      self.reply_later(c);
      return;
    }
    for (size_t j = 0; j < g->serials.size(); ++j) {
      // Found where install filed it (no id-map probe, a cache miss at millions), if it is
      // still that subscription: a DELETE may have come first.
      subscription* sub = g->get(self, j);
      if (sub == nullptr) continue;
      sub->live = true;
      self.m_.created->add();
      if (bulk) {
        // One allocation, sized first (fmt grew it three times).
        std::string& line = c->lines[g->where[j]];
        line.reserve(20 + sub->id().size() + token_text_size);
        line += "\"id\": \"";
        line += sub->id();  // an id made here: base64url, nothing to escape
        line += "\", \"feed\": \"/f/";
        append_token(sub->token_parts(), line);
        line += '"';
      } else {
        c->status = 201;
        c->body = self.json_of(*sub) + "\n";
      }
    }
    if (bulk) c->status = 200;
    if (g->backfills.empty()) {
      self.reply_later(c);
      return;
    }
    self.backfill(g->backfills, [c, bulk, g](reflector& me) {
      if (!bulk) {  // the answer shows the entries the backfill found
        if (subscription* sub = g->get(me, 0)) c->body = me.json_of(*sub) + "\n";
      }
      me.reply_later(c);
    });
  };
  rt::write_ptr wp = std::move(w);
  if (!s_.rt->write(wp, rt::write_lane::api)) {
    for (const uint32_t idx : made_at) {
      const std::string sid(subs_[idx]->id());  // uninstall frees the subscription
      uninstall(sid);
    }
    set_call_error(*c, 503, "unavailable", "the store's write ring is full; retry");
    return;
  }
  c->async = true;
}

void reflector::create_subscription(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  sub_spec spec;
  if (!read_query_spec(ctx, r, spec)) return;
  new_sub n;
  n.query = *spec.query;
  n.title = spec.title.value_or("");
  n.k = spec.k.value_or(std::clamp<uint32_t>(s_.cfg->reflector.k, 1, max_k));
  const std::string key(ctx.request().header("idempotency-key"));
  if (key.size() > 255) {
    net::set_json_error(r, 400, "bad_value", "Idempotency-Key is longer than 255 bytes");
    return;
  }
  with_account(
      ctx, r,
      [n, key](reflector& self, const std::string& account, const call_ptr& c) {
        new_sub sub = n;
        sub.account = account;
        sub.id = key.empty() ? self.new_id('s') : idempotent_id(account, key);
        const uint32_t owner = self.shard_of(sub.id);
        std::vector<new_sub> one{std::move(sub)};
        if (!self.start_call(owner, c, [one](reflector& o, const call_ptr& cp) {
              o.create_here(cp, one, false);
            })) {
          set_call_error(*c, 503, "unavailable", fmt::format("shard {} is busy; retry", owner));
          self.finish(*c);
        }
      },
      /*reserve=*/true);
}

void reflector::list_subscriptions(net::request_context& ctx, net::http_response& r) {
  if (!ready(r)) return;
  with_account(ctx, r, [](reflector& self, const std::string& account, const call_ptr& c) {
    const uint32_t n = self.s_.rt->count();
    for (uint32_t j = 0; j < n; ++j) {
      if (!self.s_.rt->can_send(j)) {
        set_call_error(*c, 503, "unavailable", fmt::format("shard {} is busy; retry", j));
        self.finish(*c);
        return;
      }
    }
    struct gather {
      uint32_t waiting = 0;
      std::string items;
      call_ptr answer;
    };
    auto g = std::make_shared<gather>();
    g->waiting = n;
    g->answer = c;
    for (uint32_t j = 0; j < n; ++j) {
      auto part = std::make_shared<call>();
      part->origin = self.s_.rt->index();
      part->on_answer = [g](reflector& me, call& done) {
        if (!done.body.empty()) {
          if (!g->items.empty()) g->items += ",\n  ";
          g->items += done.body;
        }
        if (--g->waiting != 0) return;
        g->answer->status = 200;
        g->answer->body = "{\"subscriptions\": [" +
                          (g->items.empty() ? std::string() : "\n  " + g->items + "\n") + "]}\n";
        me.finish(*g->answer);
      };
      self.start_call(j, part, [account](reflector& o, const call_ptr& cp) {
        auto it = o.by_account_.find(account);
        if (it == o.by_account_.end()) return;
        for (uint32_t idx : it->second) {
          const subscription& s = *o.subs_[idx];
          if (!s.live) continue;
          if (!cp->body.empty()) cp->body += ",\n  ";
          cp->body += o.json_of(s);
        }
      });
    }
  });
}

enum verb : int { verb_get = 0, verb_patch = 1, verb_delete = 2, verb_rotate = 3 };

void reflector::change_here(const call_ptr& c, const std::string& account, const std::string& sid,
                            int v, const sub_spec& spec) {
  if (!caught_up_) {
    set_call_error(*c, 503, "starting", "start-up: the shard is re-matching the article log");
    return;
  }
  subscription* s = find(sid);
  if (s == nullptr || !s->live) {
    set_call_error(*c, 404, "not_found", "no subscription with this id");
    return;
  }
  if (s->account() != account) {
    set_call_error(*c, 403, "not_yours", "this subscription belongs to another account");
    return;
  }
  if (v == verb_get) {
    c->status = 200;
    c->body = json_of(*s) + "\n";
    return;
  }
  if (!s_.rt->can_write(rt::write_lane::api)) {
    set_call_error(*c, 503, "unavailable", "the store's write ring is full; retry");
    return;
  }
  auto w = std::make_unique<fn_write>();
  if (v == verb_delete) {
    w->ops.push_back({rt::kind::subscriptions, true, sid, {}});
    w->fn = [c, sid](rt::shard& sh, fn_write& done) {
      reflector& self = of(sh);
      if (done.status != 0) {
        set_call_error(*c, 503, "store_failed",
                       std::string(store::store_errc_message(store::store_errc(done.status))));
      } else {
        self.uninstall(sid);
        self.m_.deleted->add();
        c->status = 204;
        c->body.clear();
      }
      self.reply_later(c);
    };
  } else {
    subscription next;  // the changed settings, applied once durable
    next.text.assign(s->id(), s->account(), spec.query ? *spec.query : s->query(),
                     spec.title ? *spec.title : s->title());
    next.k = spec.k.value_or(s->k);
    next.slot = s->slot;
    next.token_bits = s->token_bits;
    if (v == verb_rotate && !random_bytes(next.token_bits.data(), next.token_bits.size())) {
      set_call_error(*c, 500, "internal", "no random bytes");
      return;
    }
    const bool new_query = next.query() != s->query();
    next.generation = s->generation + (new_query ? 1 : 0);
    // A new query starts a new list: its matches among the recent articles (backfill),
    // then live ones; the record says from where, so a replay gives the same list.
    next.from_seq = !new_query                       ? s->from_seq
                    : window_first_seq_ <= last_seq_ ? window_first_seq_ - 1
                                                     : last_seq_;
    const uint64_t upto = last_seq_;
    next.created = s->created;
    w->ops.push_back({rt::kind::subscriptions, false, sid, record_of(next)});
    w->fn = [c, sid, q = std::string(next.query()), t = std::string(next.title()), k = next.k,
             g = next.generation, from = next.from_seq, new_query, bits = next.token_bits,
             upto](rt::shard& sh, fn_write& done) {
      reflector& self = of(sh);
      subscription* cur = self.find(sid);
      if (done.status != 0 || cur == nullptr) {
        set_call_error(*c, 503, "store_failed",
                       done.status != 0
                           ? std::string(store::store_errc_message(store::store_errc(done.status)))
                           : std::string("the subscription was deleted meanwhile"));
        self.reply_later(c);
        return;
      }
      if (new_query) {
        matcher::parsed_query pq;
        if (self.parser_.parse(q, pq).ok()) {
          self.index_.add(self.by_id_.at(sid), pq);
        }
        // An edited query never mixes old and new matches: the list starts again.
        self.list_entries_ -= cur->list.size();
        cur->list.clear();
        self.dirty_[cur->partition] = 1;
      }
      // A new block: the id map's key views the old one's id until it is filed again.
      const uint32_t idx = self.by_id_.at(sid);
      self.by_id_.erase(sid);
      cur->text.assign(cur->id(), cur->account(), q, t);
      self.by_id_.emplace(cur->id(), idx);
      cur->k = k;
      cur->generation = g;
      cur->from_seq = from;
      cur->token_bits = bits;  // after a rotation the old token answers 404 from now on
      const size_t before = cur->list.size();
      cur->list.trim(k);
      self.dirty_[cur->partition] = 1;
      self.list_entries_ -= before - cur->list.size();
      cur->invalidate(wall_now(), self.next_version());
      self.update_gauges();
      c->status = 200;
      if (!new_query || from >= upto) {
        c->body = self.json_of(*cur) + "\n";
        self.reply_later(c);
        return;
      }
      self.backfill({{sid, upto}}, [c, sid](reflector& me) {
        if (subscription* got = me.find(sid)) c->body = me.json_of(*got) + "\n";
        me.reply_later(c);
      });
    };
  }
  rt::write_ptr wp = std::move(w);
  if (!s_.rt->write(wp, rt::write_lane::api)) {
    set_call_error(*c, 503, "unavailable", "the store's write ring is full; retry");
    return;
  }
  c->async = true;
}

void reflector::one_subscription(net::request_context& ctx, net::http_response& r, int v) {
  if (!ready(r)) return;
  sub_spec spec;
  if (v == verb_patch) {
    spec_error err;
    if (!parse_spec(json_, ctx.padded_body(), false, spec, err)) {
      net::set_json_error(r, 400, err.code, err.message);
      return;
    }
    if (spec.query) {
      matcher::parsed_query pq;
      if (auto e = parser_.parse(*spec.query, pq); !e.ok()) {
        err.code = "invalid_query";
        err.message = e.message;
        err.reason = matcher::errc_name(e.code);
        err.column = e.column;
        r.status = 400;
        r.content_type = "application/json";
        r.set_body(spec_error_json(err));
        return;
      }
    }
  }
  const std::string sid(ctx.param("id"));
  with_account(
      ctx, r, [sid, v, spec](reflector& self, const std::string& account, const call_ptr& c) {
        if (v == verb_delete) {  // a deleted subscription frees its place in the limit
          c->on_answer = [account](reflector& me, call& got) {
            if (got.status == 204) me.release_subscription(account);
            me.answer_http(got);
          };
        }
        const uint32_t owner = self.shard_of(sid);
        if (!self.start_call(owner, c, [account, sid, v, spec](reflector& o, const call_ptr& cp) {
              o.change_here(cp, account, sid, v, spec);
            })) {
          set_call_error(*c, 503, "unavailable", fmt::format("shard {} is busy; retry", owner));
          self.finish(*c);
        }
      });
}

void reflector::get_subscription(net::request_context& ctx, net::http_response& r) {
  one_subscription(ctx, r, verb_get);
}
void reflector::patch_subscription(net::request_context& ctx, net::http_response& r) {
  one_subscription(ctx, r, verb_patch);
}
void reflector::rotate_token(net::request_context& ctx, net::http_response& r) {
  one_subscription(ctx, r, verb_rotate);
}
void reflector::delete_subscription(net::request_context& ctx, net::http_response& r) {
  one_subscription(ctx, r, verb_delete);
}

void reflector::count_api(std::string_view route, int status) {
  std::string key = fmt::format("route=\"{}\",status=\"{}\"", route, status);
  auto it = api_counts_.find(key);
  if (it == api_counts_.end()) {
    rt::counter* c = &s_.rt->metrics().add_counter("feedplane_api_requests_total",
                                                   "API requests by route and answer status", key);
    it = api_counts_.emplace(std::move(key), c).first;
  }
  it->second->add();
}

// ---- bulk ----

void reflector::bulk(net::request_context& ctx, net::http_response& r) {
  if (!dataplane::require_admin(ctx, *s_.cfg, r)) return;
  if (!ready(r)) return;
  const std::string_view body = ctx.padded_body();
  struct bulk_state {
    std::vector<std::string> results;              // per input line: the JSON fields after "line"
    std::vector<uint32_t> line_no;                 // 1-based line number of each input line
    std::vector<std::vector<new_sub>> groups;      // by owner shard
    std::vector<std::vector<size_t>> group_lines;  // positions in results
    struct account_mark {
      bool created = false;     // created by this request
      uint32_t written_in = 0;  // the last group (+ 1) whose write carries its record
    };
    std::unordered_map<std::string, account_mark> accounts;
    uint32_t waiting = 0;
    call_ptr answer;
  };
  auto st = std::make_shared<bulk_state>();
  const uint32_t n = s_.rt->count();
  st->groups.resize(n);
  st->group_lines.resize(n);
  // Sized once for the body's lines: grown by doubling, the groups' vectors moved every
  // subscription's strings again at each step (3% of a bulk creation's shard time).
  const size_t lines = size_t(std::count(body.begin(), body.end(), '\n')) + 1;
  st->results.reserve(lines);
  st->line_no.reserve(lines);
  for (uint32_t j = 0; j < n; ++j) {
    // An owner's share is binomial: its mean and a margin of 4 standard deviations.
    const double mean = double(lines) / n;
    const size_t cap = size_t(mean + 4 * std::sqrt(mean) + 16);
    st->groups[j].reserve(cap);
    st->group_lines[j].reserve(cap);
  }
  const uint32_t default_k = std::clamp<uint32_t>(s_.cfg->reflector.k, 1, max_k);
  uint32_t line = 0;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view text = base::ascii_trim(body.substr(pos, end - pos));
    pos = end + 1;
    ++line;
    if (text.empty()) continue;
    const size_t at = st->results.size();
    st->results.emplace_back();
    st->line_no.push_back(line);
    sub_spec spec;
    spec_error err;
    // The line is followed by the rest of the body and its padding: readable bytes.
    if (!parse_spec(json_, text, true, spec, err)) {
      st->results[at] = spec_error_json(err);
      continue;
    }
    if (!spec.query || !spec.account || spec.account->empty()) {
      err.code = "bad_value";
      err.message = "\"account\" and \"query\" are required";
      st->results[at] = spec_error_json(err);
      continue;
    }
    // Validated here; the owner indexes the text. The common query (plain words) is
    // known valid from one pass over its bytes: the parse's tokenizer calls and tree were
    // 8% of a bulk creation's shard time. Anything else parses into a reused parse.
    char folded[matcher::query_parser::split_plain_max_bytes];
    std::string_view plain_words[16];  // a query of more distinct words takes the parser
    const bool plain =
        parser_.split_plain(*spec.query, folded, plain_words, std::size(plain_words)) != 0;
    if (auto e = plain ? matcher::query_error{} : parser_.parse(*spec.query, check_pq_); !e.ok()) {
      err.code = "invalid_query";
      err.message = e.message;
      err.reason = matcher::errc_name(e.code);
      err.column = e.column;
      st->results[at] = spec_error_json(err);
      continue;
    }
    new_sub s;  // the line's strings move in: spec is the line's own
    s.id = new_id('s');
    s.account = std::move(*spec.account);
    s.query = std::move(*spec.query);
    if (spec.title) s.title = std::move(*spec.title);
    s.k = spec.k.value_or(default_k);
    s.backfill = spec.backfill.value_or(true);
    const uint32_t owner = shard_of(s.id);
    st->accounts.try_emplace(s.account);
    st->groups[owner].push_back(std::move(s));
    st->group_lines[owner].push_back(at);
  }
  auto lines_of = [](const bulk_state& b) {
    std::string out;
    out.reserve(b.results.size() * 128);  // a created line is ~100 bytes
    for (size_t i = 0; i < b.results.size(); ++i) {
      std::string_view res = b.results[i];
      char head[32];
      out.append(head, fmt::format_to(head, FMT_COMPILE("{{\"line\": {}, "), b.line_no[i]));
      if (!res.empty() && res.front() == '{') {  // an error object: splice its fields
        res.remove_prefix(1);
        while (!res.empty() && (res.back() == '\n' || res.back() == '}')) res.remove_suffix(1);
      }
      out += res;
      out += "}\n";
    }
    return out;
  };
  auto respond = [lines_of](reflector& self, bulk_state& b) {
    b.answer->status = 200;
    b.answer->content_type = "application/x-ndjson";
    b.answer->compressible = false;
    b.answer->body = lines_of(b);
    self.finish(*b.answer);
  };
  if (st->accounts.empty()) {  // no line to create: answered at once
    r.content_type = "application/x-ndjson";
    r.cache_control = "no-store";
    r.set_body(lines_of(*st));
    return;
  }
  if (!every_shard_can_take(r)) return;
  st->answer = answer_later(r);
  // Step 2: each owner creates its group with one durable write.
  auto create = [st, respond](reflector& self) {
    const uint32_t shards = self.s_.rt->count();
    for (uint32_t j = 0; j < shards; ++j) {
      if (st->groups[j].empty()) continue;
      // A new account's record goes with the first of its subscriptions in each owner's
      // group (so it is durable with each group, whichever is acked), not with every one:
      // written 100 times over for Cobra's 100 subscriptions per account, it was half of
      // the bulk load's store writes.
      for (new_sub& s : st->groups[j]) {
        auto it = st->accounts.find(s.account);
        if (it == st->accounts.end() || !it->second.created || it->second.written_in == j + 1)
          continue;
        it->second.written_in = j + 1;
        s.account_new = true;
      }
      ++st->waiting;
    }
    for (uint32_t j = 0; j < shards; ++j) {
      if (st->groups[j].empty()) continue;
      auto part = std::make_shared<call>();
      part->origin = self.s_.rt->index();
      part->on_answer = [st, j, respond](reflector& me, call& done) {
        const auto& pos = st->group_lines[j];
        for (size_t i = 0; i < pos.size(); ++i) {
          std::string res = i < done.lines.size() ? std::move(done.lines[i]) : std::string();
          if (res.empty())
            res = done.body.empty() ? error_json("internal", "no answer") : done.body;
          st->results[pos[i]] = std::move(res);
        }
        if (--st->waiting == 0) respond(me, *st);
      };
      std::vector<new_sub> group = std::move(st->groups[j]);
      self.start_call(
          j, part,
          [group = std::move(group)](reflector& o, const call_ptr& cp) mutable {
            o.create_here(cp, std::move(group), true);  // runs once: the group moves
          },
          true);
    }
  };
  // Step 1: accounts are created on first use, by the shard that owns each.
  std::vector<std::vector<std::string>> names(n);
  for (const auto& [name, created] : st->accounts) names[shard_of(name)].push_back(name);
  auto pending = std::make_shared<uint32_t>(0);
  for (uint32_t j = 0; j < n; ++j) *pending += names[j].empty() ? 0 : 1;
  for (uint32_t j = 0; j < n; ++j) {
    if (names[j].empty()) continue;
    auto part = std::make_shared<call>();
    part->origin = s_.rt->index();
    auto fresh = std::make_shared<std::vector<std::string>>();
    part->on_answer = [st, fresh, pending, create](reflector& me, call&) {
      for (const std::string& name : *fresh) st->accounts[name].created = true;
      if (--*pending == 0) create(me);
    };
    start_call(j, part, [list = std::move(names[j]), fresh](reflector& o, const call_ptr&) {
      const int64_t now = wall_now();
      for (const std::string& name : list) {
        if (o.accounts_.count(name) != 0) continue;
        account a;
        a.created = now;
        o.accounts_.emplace(name, a);  // its record is written with its subscriptions
        fresh->push_back(name);
      }
      o.update_gauges();
    });
  }
}

// ---- the component ----

uint32_t owner(rt::kind, std::string_view key, uint32_t shards) {
  return shard_of_partition(partition_of(key), shards);
}

// The page at / and its script and style (web/): a strict Content-Security-Policy (no
// inline script, scripts from here only, no framing), content-derived ETags.
void add_web_routes(net::router& routes) {
  for (const web_file& f : web_files()) {
    const std::string path = f.name == "index.html" ? "/" : "/" + std::string(f.name);
    const std::string_view type = f.name.ends_with(".html") ? "text/html; charset=utf-8"
                                  : f.name.ends_with(".js") ? "text/javascript; charset=utf-8"
                                                            : "text/css; charset=utf-8";
    const std::string etag = fmt::format("\"{:016x}\"", XXH3_64bits(f.body.data(), f.body.size()));
    const std::string_view body = f.body;
    routes.add("GET", path, [body, type, etag](net::request_context&, net::http_response& r) {
      r.body = body;
      r.content_type = type;
      r.etag = etag;
      r.cache_control = "no-cache";
      r.extra_headers =
          "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
          "img-src 'self' https: data:; connect-src 'self'; base-uri 'none'; "
          "form-action 'self'; frame-ancestors 'none'\r\n"
          "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n";
    });
  }
}

void add_routes(net::router& routes, const dataplane::config&) {
  add_web_routes(routes);
  // Each API route is counted by its answer's status (feedplane_api_requests_total).
  using member = void (reflector::*)(net::request_context&, net::http_response&);
  auto api = [&routes](std::string_view method, std::string_view pattern, member fn) {
    const std::string route = fmt::format("{} {}", method, pattern);
    routes.add(method, pattern, [route, fn](net::request_context& ctx, net::http_response& r) {
      reflector& me = reflector::of(ctx);
      me.begin_api(route);
      (me.*fn)(ctx, r);
      me.end_api(r);
    });
  };
  api("POST", "/api/accounts", &reflector::create_account);
  api("DELETE", "/api/account", &reflector::delete_account);
  api("POST", "/api/account:rotate", &reflector::rotate_secret);
  api("POST", "/api/subscriptions", &reflector::create_subscription);
  api("POST", "/api/preview", &reflector::preview);
  api("POST", "/api/match-time", &reflector::match_time);
  api("GET", "/api/match-stats", &reflector::match_stats);
  api("GET", "/api/memory", &reflector::memory_state);
  api("GET", "/api/subscriptions", &reflector::list_subscriptions);
  api("POST", "/api/subscriptions:bulk", &reflector::bulk);
  api("GET", "/api/subscriptions/{id}", &reflector::get_subscription);
  api("PATCH", "/api/subscriptions/{id}", &reflector::patch_subscription);
  api("POST", "/api/subscriptions/{id}:rotate", &reflector::rotate_token);
  api("DELETE", "/api/subscriptions/{id}", &reflector::delete_subscription);
  for (size_t f = 0; f < feed_formats; ++f) {
    const auto fmt = feed_format(f);
    routes.add("GET", fmt::format("/f/{{token}}{}", path_suffix(fmt)),
               [fmt](net::request_context& ctx, net::http_response& r) {
                 reflector::of(ctx).poll(ctx, r, fmt);
               });
  }
}

std::unique_ptr<dataplane::component> create(shard_services& s) {
  return std::make_unique<reflector>(s);
}

}  // namespace

const dataplane::component_def& component() {
  static const dataplane::component_def def = [] {
    dataplane::component_def d;
    d.name = "reflector";
    d.id = dataplane::component_id::reflector;
    d.kinds = {rt::kind::accounts, rt::kind::subscriptions};
    d.owner = &owner;
    d.add_routes = &add_routes;
    d.create = &create;
    return d;
  }();
  return def;
}

}  // namespace feedplane::reflector
