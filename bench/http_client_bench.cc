// HTTP client: fetches per client CPU-second against nginx serving an 8 KB feed, for 200,
// 304 revalidation and gzip, feedplane's io_uring client against a libcurl multi client
// with the same concurrency (64 transfers, keep-alive) in the same run; and absolute
// fetches per wall second beside wrk's (-t1 -c64) against the same nginx.
//
// CPU is this process's CPU time (CLOCK_PROCESS_CPUTIME_ID: user + system, io_uring task
// work and any io-wq workers included); nginx and wrk are other processes. Every body is
// checked (status and decoded length, and the full bytes once before timing).
#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <time.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "../tests/nginx_fixture.h"
#include "feedplane/net/http_client.h"

namespace {

constexpr int k_concurrency = 64;
constexpr int k_fetches = 20000;  // per iteration

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

enum class mode { ok200, not_modified, gzip };

struct env_t {
  feedplane::test::nginx_server nginx;
  uint16_t port = 0;
  std::string body = feed_8k();
  std::string etag;
  std::string url(mode m) const {
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
  std::ofstream(g_env->nginx.dir() / "www" / "feed.xml") << g_env->body;
  std::string conf =
      "  server {\n    listen 127.0.0.1:" + std::to_string(g_env->port) +
      " backlog=1024;\n    root @DIR@/www;\n"
      "    location /gz/ { alias @DIR@/www/; gzip on; gzip_types application/rss+xml;"
      " gzip_min_length 0; gzip_comp_level 1; }\n  }\n";
  *err = g_env->nginx.start(conf, g_env->port, 1);
  return err->empty();
}

// ---------------------------------------------------------------- feedplane

struct fp_run {
  feedplane::net::http_client* client;
  feedplane::net::fetch_request req;
  mode m;
  int started = 0;
  int done = 0;
  int bad = 0;
  int total = 0;
  uint64_t bytes = 0;
  static void on_done(void* ctx, uint64_t, feedplane::net::fetch_result& r) {
    auto* s = static_cast<fp_run*>(ctx);
    ++s->done;
    int want = s->m == mode::not_modified ? 304 : 200;
    size_t want_len = s->m == mode::not_modified ? 0 : 8192;
    if (r.error != feedplane::net::fetch_error::ok || r.status != want || r.body.size() != want_len)
      ++s->bad;
    s->bytes += r.body.size();
    if (s->started < s->total) {
      ++s->started;
      s->client->fetch(s->req, &fp_run::on_done, s);
    }
  }
};

void bm_feedplane(benchmark::State& state, mode m, const char* name) {
  std::string err;
  feedplane::net::loop_options lo;
  lo.ring_entries = 256;
  auto l = feedplane::net::loop::create(lo, &err);
  if (!l) {
    state.SkipWithError(err.c_str());
    return;
  }
  feedplane::net::client_options o;
  o.per_host_connections = k_concurrency;
  auto client = feedplane::net::http_client::create(*l, o, &err);
  if (!client) {
    state.SkipWithError(err.c_str());
    return;
  }
  fp_run run;
  run.client = client.get();
  run.m = m;
  run.req.url = g_env->url(m);
  run.req.accept_compressed = m == mode::gzip;
  if (m == mode::not_modified) run.req.if_none_match = g_env->etag;
  // Verify once before timing: full bytes.
  {
    bool got = false;
    feedplane::net::fetch_result copy;
    struct ctx_t {
      bool* got;
      feedplane::net::fetch_result* out;
    } c{&got, &copy};
    client->fetch(
        run.req,
        [](void* x, uint64_t, feedplane::net::fetch_result& r) {
          auto* cc = static_cast<ctx_t*>(x);
          *cc->out = std::move(r);
          *cc->got = true;
        },
        &c);
    while (!got) l->run_once(true);
    bool ok = copy.error == feedplane::net::fetch_error::ok &&
              (m == mode::not_modified ? copy.status == 304 && copy.body.empty()
                                       : copy.status == 200 && copy.body == g_env->body) &&
              (m != mode::gzip || copy.content_encoding == "gzip");
    if (!ok) {
      state.SkipWithError("feedplane client: verification fetch returned the wrong response");
      return;
    }
  }
  double cpu_total = 0;
  double wall_total = 0;
  int64_t fetches = 0;
  for (auto _ : state) {
    run.started = run.done = run.bad = 0;
    run.total = k_fetches;
    double c0 = cpu_now();
    double w0 = wall_now();
    for (; run.started < k_concurrency; ++run.started)
      client->fetch(run.req, &fp_run::on_done, &run);
    // Completions are reaped in batches; each callback starts the next fetch on the
    // connection it just released, so the 64 transfers stay in flight.
    while (run.done < run.total) l->run_once(true);
    double c1 = cpu_now();
    double w1 = wall_now();
    if (run.bad) {
      state.SkipWithError("feedplane client: bad response during timing");
      return;
    }
    state.SetIterationTime(c1 - c0);
    cpu_total += c1 - c0;
    wall_total += w1 - w0;
    fetches += run.total;
  }
  state.SetItemsProcessed(fetches);
  state.SetBytesProcessed(static_cast<int64_t>(run.bytes));
  state.counters["wall_fetches_per_s"] = static_cast<double>(fetches) / wall_total;
  state.counters["cpu_us_per_fetch"] = cpu_total * 1e6 / static_cast<double>(fetches);
  state.counters["connections"] = static_cast<double>(client->stats().connections_opened);
  state.counters["recvs_per_fetch"] =
      static_cast<double>(client->stats().recv_completions) / static_cast<double>(fetches + 1);
  g_env->cpu_rate[name] = static_cast<double>(fetches) / cpu_total;
  g_env->wall_rate[name] = static_cast<double>(fetches) / wall_total;
  client->shutdown();
  while (!client->quiescent()) l->run_once(true);
}

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

void bm_curl(benchmark::State& state, mode m, const char* name) {
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(k_concurrency * 2));
  std::vector<curl_xfer> x(k_concurrency);
  std::string url = g_env->url(m);
  std::string inm = "If-None-Match: " + g_env->etag;
  for (auto& t : x) {
    t.easy = curl_easy_init();
    curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, &curl_xfer::write);
    curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t.easy, CURLOPT_TCP_NODELAY, 1L);
    if (m == mode::gzip) curl_easy_setopt(t.easy, CURLOPT_ACCEPT_ENCODING, "gzip");
    if (m == mode::not_modified) {
      t.headers = curl_slist_append(nullptr, inm.c_str());
      curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, t.headers);
    }
    curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
  }
  int want = m == mode::not_modified ? 304 : 200;
  std::string want_body = m == mode::not_modified ? std::string() : g_env->body;
  // Verify once before timing.
  {
    x[0].body.clear();
    curl_easy_perform(x[0].easy);
    long code = 0;
    curl_easy_getinfo(x[0].easy, CURLINFO_RESPONSE_CODE, &code);
    if (code != want || x[0].body != want_body) {
      state.SkipWithError("libcurl: verification fetch returned the wrong response");
      return;
    }
  }
  double cpu_total = 0;
  double wall_total = 0;
  int64_t fetches = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    int started = 0;
    int done = 0;
    int bad = 0;
    double c0 = cpu_now();
    double w0 = wall_now();
    for (auto& t : x) {
      t.body.clear();
      curl_multi_add_handle(multi, t.easy);
      ++started;
    }
    while (done < k_fetches) {
      int running = 0;
      curl_multi_perform(multi, &running);
      int q = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &q)) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* e = msg->easy_handle;
        curl_xfer* t = nullptr;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
        long code = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
        if (msg->data.result != CURLE_OK || code != want || t->body.size() != want_body.size())
          ++bad;
        bytes += t->body.size();
        ++done;
        curl_multi_remove_handle(multi, e);
        if (started < k_fetches) {
          t->body.clear();
          curl_multi_add_handle(multi, e);
          ++started;
        }
      }
      if (done < k_fetches) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    double c1 = cpu_now();
    double w1 = wall_now();
    if (bad) {
      state.SkipWithError("libcurl: bad response during timing");
      break;
    }
    state.SetIterationTime(c1 - c0);
    cpu_total += c1 - c0;
    wall_total += w1 - w0;
    fetches += k_fetches;
  }
  for (auto& t : x) {
    curl_easy_cleanup(t.easy);
    curl_slist_free_all(t.headers);
  }
  curl_multi_cleanup(multi);
  if (fetches == 0) return;
  state.SetItemsProcessed(fetches);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["wall_fetches_per_s"] = static_cast<double>(fetches) / wall_total;
  state.counters["cpu_us_per_fetch"] = cpu_total * 1e6 / static_cast<double>(fetches);
  g_env->cpu_rate[name] = static_cast<double>(fetches) / cpu_total;
  g_env->wall_rate[name] = static_cast<double>(fetches) / wall_total;
}

// ---------------------------------------------------------------- wrk

double run_wrk(mode m) {
  std::string cmd = "wrk -t1 -c" + std::to_string(k_concurrency) + " -d3s";
  if (m == mode::gzip) cmd += " -H 'Accept-Encoding: gzip'";
  if (m == mode::not_modified) cmd += " -H 'If-None-Match: " + g_env->etag + "'";
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
       {item{"200", mode::ok200}, item{"304", mode::not_modified}, item{"gzip", mode::gzip}}) {
    std::string fp = std::string("feedplane/") + name;
    std::string cu = std::string("libcurl_multi/") + name;
    benchmark::RegisterBenchmark(fp.c_str(),
                                 [m, fp](benchmark::State& s) { bm_feedplane(s, m, fp.c_str()); })
        ->UseManualTime()
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(cu.c_str(),
                                 [m, cu](benchmark::State& s) { bm_curl(s, m, cu.c_str()); })
        ->UseManualTime()
        ->Iterations(3)
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

}  // namespace

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  benchmark::Initialize(&argc, argv);
  std::string err;
  if (!start_env(&err) || !fetch_etag()) {
    std::fprintf(stderr, "http_client_bench: cannot start nginx: %s\n", err.c_str());
    return 1;
  }
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\nSummary (fetches per client CPU-second; concurrency %d; nginx 1 worker):\n",
              k_concurrency);
  std::printf("%-6s %14s %14s %7s %16s %16s %12s\n", "case", "feedplane", "libcurl_multi", "ratio",
              "feedplane wall/s", "curl wall/s", "wrk req/s");
  for (auto [name, m] : {std::pair{"200", mode::ok200}, std::pair{"304", mode::not_modified},
                         std::pair{"gzip", mode::gzip}}) {
    double fp = g_env->cpu_rate[std::string("feedplane/") + name];
    double cu = g_env->cpu_rate[std::string("libcurl_multi/") + name];
    double fw = g_env->wall_rate[std::string("feedplane/") + name];
    double cw = g_env->wall_rate[std::string("libcurl_multi/") + name];
    double wrk = run_wrk(m);
    std::printf("%-6s %14.0f %14.0f %6.2fx %16.0f %16.0f %12.0f\n", name, fp, cu,
                cu > 0 ? fp / cu : 0.0, fw, cw, wrk);
  }
  delete g_env;
  benchmark::Shutdown();
  curl_global_cleanup();
  return 0;
}
