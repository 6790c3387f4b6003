// HTTP client: fetches per client CPU-second against nginx serving an 8 KB feed, for 200,
// 304 revalidation and gzip, feedplane's io_uring client against a libcurl multi client
// with the same concurrency (64 transfers by default, --concurrency=N; keep-alive) in the
// same run, alternated in --rounds=N rounds (default 4) of 80,000 / N fetches each, pinned
// to CPUs with --pin=apart|together (below); and absolute fetches per wall second beside
// wrk's (-t1 -cN) against the same nginx (one worker, worker_connections above 2N).
//
// Over HTTPS: https_200 on kept-alive connections; https_new_conn on a new connection per
// fetch with session resumption (both clients resume: feedplane from its ticket cache,
// libcurl from its session cache); https_new_full on a new connection per fetch with
// resumption off in both (a full handshake each).
//
// --verify-only: checks both clients' responses (each case's full-bytes fetch, then one
// checked batch of N fetches at concurrency N) and exits without timing anything.
//
// CPU is this process's CPU time (CLOCK_PROCESS_CPUTIME_ID: user + system, io_uring task
// work and any io-wq workers included); nginx and wrk are other processes. Every body is
// checked (status and decoded length, and the full bytes once before timing).
//
// --crawl=OPML --resolve-file=PINS [--seconds=S] [--warmup-seconds=W] [--interval-ms=MS]
// [--max-in-flight=N] [--per-host-connections=N]: no nginx, no Google Benchmark: the bare
// client as the peer of the crawler throughput benchmark (bench/crawler_throughput.sh,
// issue 10), crawling a farm the way feedplane's crawler does (crawl_peer below).
#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../tests/nginx_fixture.h"
#include "feedplane/net/http_client.h"

namespace {

int k_concurrency = 64;  // --concurrency=N
// Each client makes 80,000 fetches per case, in k_rounds rounds alternated with the other
// client's (--rounds=N, default 4): more, shorter rounds let a slow spell of the machine
// fall on both clients alike.
constexpr int k_total_fetches = 80000;
int k_rounds = 4;
// --wait-batch=N --min-wait-us=US: the client loop's min-wait (loop_options), by default
// feedplane serve's (`[net] wait_batch` and `min_wait_us`); --wait-batch=0 wakes per completion.
uint32_t k_wait_batch = 32;
uint32_t k_min_wait_us = 100;
// --pin=apart: the clients on the first allowed CPU, nginx on the last; --pin=together: all
// on the first. Unpinned, where the scheduler puts nginx beside the client moves the ratio
// from run to run; on a VM a wake-up of the other CPU is a costly exit, paid more often by
// libcurl (a system call per socket operation) than by io_uring (one enter per turn).
enum class pin_mode { none, apart, together };
pin_mode k_pin = pin_mode::none;

std::vector<int> pin_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) std::perror("sched_setaffinity");
}

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double wall_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string feed_8k() {
  std::string s = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>bench</title>";
  for (int i = 0; s.size() < 8192 - 200; ++i)
    s += "<item><title>entry number " + std::to_string(i) +
         "</title><guid>urn:bench:" + std::to_string(i) + "</guid></item>";
  s += "</channel></rss>";
  s.resize(8192, ' ');
  return s;
}

// https_new: every fetch on a new connection (the request says Connection: close), as a
// crawler's fetch of a host it last saw minutes ago: a resumed TLS 1.3 handshake (a
// ticket). https_new_full: the same with resumption off, a full handshake each.
enum class mode { ok200, not_modified, gzip, https, https_new, https_new_full };

bool new_conn_mode(mode m) { return m == mode::https_new || m == mode::https_new_full; }

struct env_t {
  feedplane::test::nginx_server nginx;
  uint16_t port = 0;
  uint16_t tls_port = 0;
  std::string ca_file;
  std::string body = feed_8k();
  std::string etag;
  std::string url(mode m) const {
    if (m == mode::https || new_conn_mode(m))
      return "https://localhost:" + std::to_string(tls_port) + "/feed.xml";
    return "http://127.0.0.1:" + std::to_string(port) +
           (m == mode::gzip ? "/gz/feed.xml" : "/feed.xml");
  }
  std::map<std::string, double> cpu_rate;   // name -> fetches per CPU-second
  std::map<std::string, double> wall_rate;  // name -> fetches per wall second
};
env_t* g_env = nullptr;

bool start_env(std::string* err) {
  g_env = new env_t();
  g_env->port = feedplane::test::free_port();
  do g_env->tls_port = feedplane::test::free_port();
  while (g_env->tls_port == g_env->port);
  std::ofstream(g_env->nginx.dir() / "www" / "feed.xml") << g_env->body;
  // A CA and a localhost certificate for the HTTPS case, made with the openssl CLI.
  std::string d = g_env->nginx.dir().string();
  std::string cmd =
      "cd " + d +
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key"
      " -out ca.pem -days 2 -subj /CN=bench-ca 2>/dev/null && openssl req -newkey ec -pkeyopt"
      " ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=localhost"
      " 2>/dev/null && printf 'subjectAltName=DNS:localhost\\n' > ext.cnf && openssl x509 -req"
      " -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2"
      " -extfile ext.cnf 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    *err = "openssl could not make the bench certificates";
    return false;
  }
  g_env->ca_file = d + "/ca.pem";
  std::string conf =
      "  server {\n    listen 127.0.0.1:" + std::to_string(g_env->port) +
      " backlog=8192;\n    root @DIR@/www;\n"
      "    location /gz/ { alias @DIR@/www/; gzip on; gzip_types application/rss+xml;"
      " gzip_min_length 0; gzip_comp_level 1; }\n  }\n"
      "  server {\n    listen 127.0.0.1:" +
      std::to_string(g_env->tls_port) +
      " ssl backlog=8192;\n    root @DIR@/www;\n    ssl_certificate @DIR@/leaf.pem;\n"
      "    ssl_certificate_key @DIR@/leaf.key;\n  }\n";
  // nginx inherits the CPU this thread is on when it starts.
  const std::vector<int> cpus = pin_cpus();
  if (k_pin != pin_mode::none) pin_to(k_pin == pin_mode::apart ? cpus.back() : cpus.front());
  *err = g_env->nginx.start(conf, g_env->port, 1, std::max(4096, 2 * k_concurrency + 64));
  if (k_pin != pin_mode::none) pin_to(cpus.front());
  return err->empty();
}

// ---------------------------------------------------------------- feedplane

struct batch_result {
  double cpu = 0;
  double wall = 0;
  int bad = 0;
  uint64_t bytes = 0;
};

// feedplane's client with its loop; connections persist across batches (keep-alive).
class fp_runner {
 public:
  std::string init(mode m) {
    m_ = m;
    std::string err;
    feedplane::net::loop_options lo;
    lo.ring_entries = 256;
    lo.buffer_size = 16384;  // as feedplane serve's shards (an 8 KB feed in one receive)
    lo.wait_batch = k_wait_batch;
    lo.min_wait_us = k_min_wait_us;
    l_ = feedplane::net::loop::create(lo, &err);
    if (!l_) return err;
    feedplane::net::client_options o;
    o.per_host_connections = uint32_t(k_concurrency);
    o.ca_file = g_env->ca_file;
    if (m == mode::https_new_full) o.tls_session_hosts = 0;
    client_ = feedplane::net::http_client::create(*l_, o, &err);
    if (!client_) return err;
    req_.url = g_env->url(m);
    req_.accept_compressed = m == mode::gzip;
    if (m == mode::not_modified) req_.if_none_match = g_env->etag;
    if (new_conn_mode(m)) req_.headers.emplace_back("Connection", "close");
    // Verify once before timing: the full bytes.
    bool got = false;
    feedplane::net::fetch_result copy;
    struct ctx_t {
      bool* got;
      feedplane::net::fetch_result* out;
    } c{&got, &copy};
    client_->fetch(
        req_,
        [](void* x, uint64_t, feedplane::net::fetch_result& r) {
          auto* cc = static_cast<ctx_t*>(x);
          *cc->out = std::move(r);
          *cc->got = true;
        },
        &c);
    while (!got) l_->run_once(true);
    bool ok = copy.error == feedplane::net::fetch_error::ok &&
              (m == mode::not_modified ? copy.status == 304 && copy.body.empty()
                                       : copy.status == 200 && copy.body == g_env->body) &&
              (m != mode::gzip || copy.content_encoding == "gzip");
    return ok ? "" : "feedplane client: verification fetch returned the wrong response";
  }
  ~fp_runner() {
    if (client_) {
      client_->shutdown();
      while (!client_->quiescent()) l_->run_once(true);
    }
  }
  batch_result run(int n) {
    started_ = done_ = bad_ = 0;
    bytes_ = 0;
    total_ = n;
    double c0 = cpu_now();
    double w0 = wall_now();
    for (; started_ < k_concurrency && started_ < total_; ++started_)
      client_->fetch(req_, &fp_runner::on_done, this);
    // Completions are reaped in batches; each callback starts the next fetch on the
    // connection it just released, so the 64 transfers stay in flight.
    while (done_ < total_) l_->run_once(true);
    return {cpu_now() - c0, wall_now() - w0, bad_, bytes_};
  }
  const feedplane::net::http_client::counters& stats() const { return client_->stats(); }
  const feedplane::net::loop_stats& loop_stats() const { return l_->stats(); }

 private:
  static void on_done(void* ctx, uint64_t, feedplane::net::fetch_result& r) {
    auto* s = static_cast<fp_runner*>(ctx);
    ++s->done_;
    int want = s->m_ == mode::not_modified ? 304 : 200;
    size_t want_len = s->m_ == mode::not_modified ? 0 : 8192;
    if (r.error != feedplane::net::fetch_error::ok || r.status != want || r.body.size() != want_len)
      ++s->bad_;
    s->bytes_ += r.body.size();
    if (s->started_ < s->total_) {
      ++s->started_;
      s->client_->fetch(s->req_, &fp_runner::on_done, s);
    }
  }
  mode m_ = mode::ok200;
  std::unique_ptr<feedplane::net::loop> l_;
  std::unique_ptr<feedplane::net::http_client> client_;
  feedplane::net::fetch_request req_;
  int started_ = 0, done_ = 0, bad_ = 0, total_ = 0;
  uint64_t bytes_ = 0;
};

// ---------------------------------------------------------------- libcurl multi

struct curl_xfer {
  CURL* easy = nullptr;
  std::string body;
  curl_slist* headers = nullptr;
  static size_t write(char* p, size_t sz, size_t n, void* ud) {
    static_cast<curl_xfer*>(ud)->body.append(p, sz * n);
    return sz * n;
  }
};

// A libcurl multi client with 64 easy handles; its connection cache persists across batches.
class curl_runner {
 public:
  std::string init(mode m) {
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(k_concurrency * 2));
    x_.resize(size_t(k_concurrency));
    url_ = g_env->url(m);
    inm_ = "If-None-Match: " + g_env->etag;
    for (auto& t : x_) {
      t.easy = curl_easy_init();
      curl_easy_setopt(t.easy, CURLOPT_URL, url_.c_str());
      curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, &curl_xfer::write);
      curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
      curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(t.easy, CURLOPT_TCP_NODELAY, 1L);
      if (m == mode::gzip) curl_easy_setopt(t.easy, CURLOPT_ACCEPT_ENCODING, "gzip");
      if (m == mode::https || new_conn_mode(m))
        curl_easy_setopt(t.easy, CURLOPT_CAINFO, g_env->ca_file.c_str());
      if (m == mode::https_new_full) curl_easy_setopt(t.easy, CURLOPT_SSL_SESSIONID_CACHE, 0L);
      if (m == mode::not_modified) {
        t.headers = curl_slist_append(nullptr, inm_.c_str());
        curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, t.headers);
      }
      if (new_conn_mode(m)) {
        t.headers = curl_slist_append(nullptr, "Connection: close");
        curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, t.headers);
      }
      curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
    }
    want_ = m == mode::not_modified ? 304 : 200;
    want_body_ = m == mode::not_modified ? std::string() : g_env->body;
    x_[0].body.clear();
    curl_easy_perform(x_[0].easy);
    long code = 0;
    curl_easy_getinfo(x_[0].easy, CURLINFO_RESPONSE_CODE, &code);
    if (code != want_ || x_[0].body != want_body_)
      return "libcurl: verification fetch returned the wrong response";
    return "";
  }
  ~curl_runner() {
    for (auto& t : x_) {
      curl_easy_cleanup(t.easy);
      curl_slist_free_all(t.headers);
    }
    if (multi_) curl_multi_cleanup(multi_);
  }
  batch_result run(int n) {
    batch_result br;
    int started = 0;
    int done = 0;
    double c0 = cpu_now();
    double w0 = wall_now();
    for (auto& t : x_) {
      if (started == n) break;
      t.body.clear();
      curl_multi_add_handle(multi_, t.easy);
      ++started;
    }
    while (done < n) {
      int running = 0;
      curl_multi_perform(multi_, &running);
      int q = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &q)) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* e = msg->easy_handle;
        curl_xfer* t = nullptr;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
        long code = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
        if (msg->data.result != CURLE_OK || code != want_ || t->body.size() != want_body_.size())
          ++br.bad;
        br.bytes += t->body.size();
        ++done;
        curl_multi_remove_handle(multi_, e);
        if (started < n) {
          t->body.clear();
          curl_multi_add_handle(multi_, e);
          ++started;
        }
      }
      if (done < n) curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    br.cpu = cpu_now() - c0;
    br.wall = wall_now() - w0;
    return br;
  }

 private:
  CURLM* multi_ = nullptr;
  std::vector<curl_xfer> x_;
  std::string url_, inm_, want_body_;
  long want_ = 200;
};

// One benchmark per case: rounds alternate feedplane and libcurl batches (ABAB...), so a
// disturbance on the shared machine hits both clients alike. The manual time is
// feedplane's CPU time; the ratio counter is the figure that matters.
void bm_case(benchmark::State& state, mode m, const std::string& name) {
  fp_runner fp;
  curl_runner cu;
  if (auto e = fp.init(m); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  if (auto e = cu.init(m); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  batch_result fsum, csum;
  int64_t fetches = 0;
  // A full handshake costs both ends far more than a fetch: fewer per round.
  const int per_round = (new_conn_mode(m) ? k_total_fetches / 10 : k_total_fetches) / k_rounds;
  for (auto _ : state) {
    auto f = fp.run(per_round);
    auto c = cu.run(per_round);
    if (f.bad || c.bad) {
      state.SkipWithError(f.bad ? "feedplane client: bad response during timing"
                                : "libcurl: bad response during timing");
      return;
    }
    state.SetIterationTime(f.cpu);
    fsum.cpu += f.cpu;
    fsum.wall += f.wall;
    fsum.bytes += f.bytes;
    csum.cpu += c.cpu;
    csum.wall += c.wall;
    fetches += per_round;
  }
  auto n = static_cast<double>(fetches);
  state.SetItemsProcessed(fetches);
  state.SetBytesProcessed(static_cast<int64_t>(fsum.bytes));
  state.counters["fp_cpu_us_per_fetch"] = fsum.cpu * 1e6 / n;
  state.counters["curl_cpu_us_per_fetch"] = csum.cpu * 1e6 / n;
  state.counters["curl_fetches_per_cpu_s"] = n / csum.cpu;
  state.counters["ratio_vs_curl"] = csum.cpu / fsum.cpu;
  state.counters["fp_wall_fetches_per_s"] = n / fsum.wall;
  state.counters["curl_wall_fetches_per_s"] = n / csum.wall;
  state.counters["recvs_per_fetch"] =
      static_cast<double>(fp.stats().recv_completions) / static_cast<double>(fetches + 1);
  state.counters["waits_per_fetch"] =
      static_cast<double>(fp.loop_stats().waits) / static_cast<double>(fetches + 1);
  g_env->cpu_rate["feedplane/" + name] = n / fsum.cpu;
  g_env->cpu_rate["libcurl_multi/" + name] = n / csum.cpu;
  g_env->wall_rate["feedplane/" + name] = n / fsum.wall;
  g_env->wall_rate["libcurl_multi/" + name] = n / csum.wall;
}

// ---------------------------------------------------------------- wrk

double run_wrk(mode m) {
  std::string cmd = "wrk -t1 -c" + std::to_string(k_concurrency) + " -d3s";
  if (m == mode::gzip) cmd += " -H 'Accept-Encoding: gzip'";
  if (m == mode::not_modified) cmd += " -H 'If-None-Match: " + g_env->etag + "'";
  if (new_conn_mode(m)) cmd += " -H 'Connection: close'";
  cmd += " " + g_env->url(m) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  char line[512];
  double rps = 0;
  bool non2xx = false;
  while (fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "Requests/sec: %lf", &rps) == 1) continue;
    if (std::string(line).find("Non-2xx") != std::string::npos) non2xx = true;
  }
  pclose(p);
  (void)non2xx;  // 304 answers are counted as non-2xx by wrk; expected for that mode
  return rps;
}

void register_all() {
  struct item {
    const char* name;
    mode m;
  };
  for (auto [name, m] :
       {item{"200", mode::ok200}, item{"304", mode::not_modified}, item{"gzip", mode::gzip},
        item{"https_200", mode::https}, item{"https_new_conn", mode::https_new},
        item{"https_new_full", mode::https_new_full}}) {
    std::string n = name;
    benchmark::RegisterBenchmark(("feedplane_vs_libcurl_multi/" + n).c_str(),
                                 [m, n](benchmark::State& st) { bm_case(st, m, n); })
        ->UseManualTime()
        ->Iterations(k_rounds)
        ->Unit(benchmark::kMillisecond);
  }
}

bool fetch_etag() {
  // The ETag nginx gives the feed, for the 304 runs (obtained with libcurl, checked later).
  CURL* e = curl_easy_init();
  std::string headers;
  curl_easy_setopt(e, CURLOPT_URL, g_env->url(mode::ok200).c_str());
  curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(
      e, CURLOPT_HEADERFUNCTION, +[](char* p, size_t sz, size_t n, void* ud) -> size_t {
        static_cast<std::string*>(ud)->append(p, sz * n);
        return sz * n;
      });
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &headers);
  CURLcode rc = curl_easy_perform(e);
  curl_easy_cleanup(e);
  auto pos = headers.find("ETag: ");
  if (rc != CURLE_OK || pos == std::string::npos) return false;
  auto end = headers.find("\r\n", pos);
  g_env->etag = headers.substr(pos + 6, end - pos - 6);
  return true;
}

// ---------------------------------------------------------------- crawl (a farm)

// The peer of bench/crawler_throughput.sh: the bare client fetching every feed of a farm's
// OPML (its host names pinned from the farm's --pins file) as feedplane serve's crawler
// does with [crawler] min_interval_s = max_interval_s = 1: each feed again interval_ms
// after its last fetch finished, conditionally (If-None-Match and If-Modified-Since from
// its last 200), at most max_in_flight at once, with serve's shard loop and client options.
// No parsing, no store, no politeness: what fetching alone costs. The crawl's first pass
// (every feed fetched once) and warmup_s more are not counted; then `seconds` of fetches
// and this process's CPU time (all threads) are, and one line is printed:
//   crawl_peer feeds=N fetches=N changed=N not_modified=N other=N errors=N new_connections=N
//              cpu_s=X wall_s=X
// changed = 200s (the farm's --change-share gives every feed validators, so a 200 to a
// conditional GET is a changed feed). Every answer is checked (a 200 with a body, a 304
// without): a wrong one makes the exit status 1.
struct crawl_options {
  std::string opml, pins;
  double seconds = 10;
  double warmup_s = 2;
  uint32_t interval_ms = 1000;
  uint32_t max_in_flight = 256;
  uint32_t per_host_connections = 2;
};

class crawl_peer {
 public:
  std::string init(const crawl_options& o) {
    o_ = o;
    std::string err;
    std::ifstream in(o.opml);
    if (!in) return "cannot read " + o.opml;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string opml = ss.str();
    // The farm's OPML: one outline a line, xmlUrl="URL" (URLs with nothing to escape).
    for (size_t at = opml.find("xmlUrl=\""); at != std::string::npos;
         at = opml.find("xmlUrl=\"", at)) {
      at += 8;
      const size_t end = opml.find('"', at);
      if (end == std::string::npos) break;
      feeds_.push_back(std::make_unique<feed>());
      feeds_.back()->owner = this;
      feeds_.back()->index = static_cast<uint32_t>(feeds_.size() - 1);
      feeds_.back()->url = opml.substr(at, end - at);
    }
    if (feeds_.empty()) return "no xmlUrl in " + o.opml;
    feedplane::net::client_options co;
    co.per_host_connections = o.per_host_connections;
    co.user_agent = "feedplane/0.1 (+https://github.com/feedplane)";  // serve's default
    std::ifstream pins(o.pins);
    if (!pins) return "cannot read " + o.pins;
    for (std::string line; std::getline(pins, line);) {
      if (line.empty()) continue;
      feedplane::net::resolve_pin p;
      if (!feedplane::net::parse_resolve_pin(line, p, &err)) return o.pins + ": " + err;
      co.pins.push_back(std::move(p));
    }
    feedplane::net::loop_options lo;  // as a shard of feedplane serve (cmd_serve.cc)
    lo.ring_entries = 4096;
    lo.buffer_count = 1024;
    lo.buffer_size = 16384;
    lo.wait_batch = k_wait_batch;
    lo.min_wait_us = k_min_wait_us;
    l_ = feedplane::net::loop::create(lo, &err);
    if (!l_) return err;
    client_ = feedplane::net::http_client::create(*l_, co, &err);
    if (!client_) return err;
    tick_.set([](void*) {}, nullptr);  // only wakes run_once; the loop below pumps
    for (uint32_t i = 0; i < feeds_.size(); ++i) due_.emplace_back(0, i);
    return "";
  }

  ~crawl_peer() {
    if (client_) {
      client_->shutdown();
      while (!client_->quiescent()) l_->run_once(true);
    }
    if (l_) l_->disarm(tick_);
  }

  int run() {
    const double t0 = wall_now();
    double window_at = 0, c0 = 0, w0 = 0;
    counts at_start;
    uint64_t opened0 = 0;
    for (;;) {
      const double now = wall_now();
      if (window_at == 0 && first_done_ == feeds_.size()) window_at = now + o_.warmup_s;
      if (w0 == 0 && window_at != 0 && now >= window_at) {
        c0 = cpu_now();
        w0 = now;
        at_start = n_;
        opened0 = client_->stats().connections_opened;
      }
      if (w0 != 0 && now >= w0 + o_.seconds) break;
      if (window_at == 0 && now - t0 > 600) {
        std::fprintf(stderr, "crawl_peer: the first pass took over 10 minutes\n");
        return 1;
      }
      pump();
      l_->run_once(true);
    }
    const double cpu = cpu_now() - c0, wall = wall_now() - w0;
    const counts d = n_ - at_start;
    std::printf(
        "crawl_peer feeds=%zu fetches=%llu changed=%llu not_modified=%llu other=%llu errors=%llu "
        "new_connections=%llu cpu_s=%.3f wall_s=%.3f\n",
        feeds_.size(), static_cast<unsigned long long>(d.fetches),
        static_cast<unsigned long long>(d.changed), static_cast<unsigned long long>(d.not_modified),
        static_cast<unsigned long long>(d.other), static_cast<unsigned long long>(d.errors),
        static_cast<unsigned long long>(client_->stats().connections_opened - opened0), cpu, wall);
    if (n_.bad != 0) {
      std::fprintf(stderr,
                   "crawl_peer: %llu wrong answers (a 200 without a body or a 304 with one)\n",
                   static_cast<unsigned long long>(n_.bad));
      return 1;
    }
    return 0;
  }

 private:
  struct feed {
    crawl_peer* owner = nullptr;
    uint32_t index = 0;
    std::string url, etag, last_modified;
    bool fetched = false;
  };
  struct counts {
    uint64_t fetches = 0, changed = 0, not_modified = 0, other = 0, errors = 0, bad = 0;
    counts operator-(const counts& o) const {
      return {fetches - o.fetches, changed - o.changed, not_modified - o.not_modified,
              other - o.other,     errors - o.errors,   bad - o.bad};
    }
  };

  // Starts every due fetch while under max_in_flight; arms the tick for the next due one.
  void pump() {
    const uint64_t now = l_->refresh_now();
    while (in_flight_ < o_.max_in_flight && !due_.empty() && due_.front().first <= now) {
      feed& f = *feeds_[due_.front().second];
      due_.pop_front();
      req_.url = f.url;
      req_.if_none_match = f.etag;
      req_.if_modified_since = f.last_modified;
      ++in_flight_;
      client_->fetch(req_, &crawl_peer::on_done, &f);
    }
    if (in_flight_ < o_.max_in_flight && !due_.empty() && !tick_.armed())
      l_->arm(tick_, due_.front().first - now);
  }

  static void on_done(void* ctx, uint64_t, feedplane::net::fetch_result& r) {
    feed& f = *static_cast<feed*>(ctx);
    crawl_peer& p = *f.owner;
    --p.in_flight_;
    ++p.n_.fetches;
    if (r.error != feedplane::net::fetch_error::ok) {
      ++p.n_.errors;
    } else if (r.status == 200) {
      ++p.n_.changed;
      if (r.body.empty()) ++p.n_.bad;
      f.etag = std::move(r.etag);
      f.last_modified = std::move(r.last_modified);
    } else if (r.status == 304) {
      ++p.n_.not_modified;
      if (!r.body.empty()) ++p.n_.bad;
    } else {
      ++p.n_.other;
    }
    if (!f.fetched) {
      f.fetched = true;
      ++p.first_done_;
    }
    // Completion times only grow, so the queue stays in due order.
    p.due_.emplace_back(p.l_->now_ms() + p.o_.interval_ms, f.index);
  }

  crawl_options o_;
  std::unique_ptr<feedplane::net::loop> l_;
  std::unique_ptr<feedplane::net::http_client> client_;
  std::vector<std::unique_ptr<feed>> feeds_;
  std::deque<std::pair<uint64_t, uint32_t>> due_;  // (loop ms, feed), earliest first
  feedplane::net::fetch_request req_;
  feedplane::net::timer tick_;
  uint32_t in_flight_ = 0;
  size_t first_done_ = 0;
  counts n_;
};

}  // namespace

// Every case's verification without timing: the full-bytes fetch in init(), then one batch
// of N fetches per client, each response checked.
int verify_only() {
  int failures = 0;
  for (auto [name, m] : {std::pair{"200", mode::ok200}, std::pair{"304", mode::not_modified},
                         std::pair{"gzip", mode::gzip}, std::pair{"https_200", mode::https},
                         std::pair{"https_new_conn", mode::https_new},
                         std::pair{"https_new_full", mode::https_new_full}}) {
    fp_runner fp;
    curl_runner cu;
    std::string e = fp.init(m);
    if (e.empty()) e = cu.init(m);
    int bad = -1;
    if (e.empty()) {
      const int n = new_conn_mode(m) ? std::min(k_concurrency, 500) : k_concurrency;
      bad = fp.run(n).bad + cu.run(n).bad;
      if (bad != 0) e = std::to_string(bad) + " bad responses";
      if (m == mode::https_new && fp.stats().tls_resumed == 0) e = "feedplane never resumed";
      if (m == mode::https_new_full && fp.stats().tls_resumed != 0) e = "feedplane resumed";
    }
    std::printf("verify %-15s concurrency %d: %s\n", name, k_concurrency,
                e.empty() ? "ok" : e.c_str());
    failures += e.empty() ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  bool verify = false;
  crawl_options crawl;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // "--name=value": key "--name=", v the value.
    const size_t eq = a.find('=');
    const std::string key = eq == std::string::npos ? a : a.substr(0, eq + 1);
    const char* v = eq == std::string::npos ? "" : a.c_str() + eq + 1;
    if (key == "--concurrency=") {
      k_concurrency = std::max(1, std::atoi(v));
    } else if (key == "--pin=") {
      const std::string m = v;
      if (m != "apart" && m != "together") {
        std::fprintf(stderr, "--pin=apart or --pin=together\n");
        return 2;
      }
      k_pin = m == "apart" ? pin_mode::apart : pin_mode::together;
    } else if (key == "--wait-batch=") {
      k_wait_batch = uint32_t(std::max(0, std::atoi(v)));
    } else if (key == "--min-wait-us=") {
      k_min_wait_us = uint32_t(std::max(0, std::atoi(v)));
    } else if (key == "--rounds=") {
      k_rounds = std::clamp(std::atoi(v), 1, 800);
    } else if (a == "--verify-only") {
      verify = true;
    } else if (key == "--crawl=") {
      crawl.opml = v;
    } else if (key == "--resolve-file=") {
      crawl.pins = v;
    } else if (key == "--seconds=") {
      crawl.seconds = std::atof(v);
    } else if (key == "--warmup-seconds=") {
      crawl.warmup_s = std::atof(v);
    } else if (key == "--interval-ms=") {
      crawl.interval_ms = static_cast<uint32_t>(std::max(0, std::atoi(v)));
    } else if (key == "--max-in-flight=") {
      crawl.max_in_flight = static_cast<uint32_t>(std::max(1, std::atoi(v)));
    } else if (key == "--per-host-connections=") {
      crawl.per_host_connections = static_cast<uint32_t>(std::max(1, std::atoi(v)));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!crawl.opml.empty()) {
    // The crawler throughput benchmark's peer (crawl_peer): no nginx, no Google Benchmark.
    int rc = 1;
    {
      crawl_peer peer;
      if (const std::string e = peer.init(crawl); !e.empty()) {
        std::fprintf(stderr, "http_client_bench --crawl: %s\n", e.c_str());
      } else {
        rc = peer.run();
      }
    }
    curl_global_cleanup();
    return rc;
  }
  benchmark::Initialize(&argc, argv);
  std::string err;
  if (!start_env(&err) || !fetch_etag()) {
    std::fprintf(stderr, "http_client_bench: cannot start nginx: %s\n", err.c_str());
    return 1;
  }
  if (verify) {
    const int rc = verify_only();
    delete g_env;
    curl_global_cleanup();
    return rc;
  }
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\nSummary (fetches per client CPU-second; concurrency %d; nginx 1 worker):\n",
              k_concurrency);
  std::printf("%-9s %14s %14s %7s %16s %16s %12s\n", "case", "feedplane", "libcurl_multi", "ratio",
              "feedplane wall/s", "curl wall/s", "wrk req/s");
  for (auto [name, m] : {std::pair{"200", mode::ok200}, std::pair{"304", mode::not_modified},
                         std::pair{"gzip", mode::gzip}, std::pair{"https_200", mode::https},
                         std::pair{"https_new_conn", mode::https_new},
                         std::pair{"https_new_full", mode::https_new_full}}) {
    double fp = g_env->cpu_rate[std::string("feedplane/") + name];
    double cu = g_env->cpu_rate[std::string("libcurl_multi/") + name];
    double fw = g_env->wall_rate[std::string("feedplane/") + name];
    double cw = g_env->wall_rate[std::string("libcurl_multi/") + name];
    double wrk = run_wrk(m);
    std::printf("%-9s %14.0f %14.0f %6.2fx %16.0f %16.0f %12.0f\n", name, fp, cu,
                cu > 0 ? fp / cu : 0.0, fw, cw, wrk);
  }
  delete g_env;
  benchmark::Shutdown();
  curl_global_cleanup();
  return 0;
}
