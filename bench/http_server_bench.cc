// The server's request parser and response path on one core, without the kernel
// (bench/RESULTS.md, "## net: HTTP server"): requests/s and bytes/s for the request wrk
// sends and for a browser-sized request. Each input is parsed and checked once before timing.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "feedplane/net/http_request.h"

using namespace feedplane::net;

namespace {

const std::string wrk_req = "GET /static/feed.xml HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const std::string browser_req =
    "GET /static/feed.xml?x=1 HTTP/1.1\r\nHost: feeds.example.org\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
    "Accept: application/rss+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n"
    "If-None-Match: \"6560f2c8-2000\"\r\nIf-Modified-Since: Fri, 24 Nov 2023 19:00:24 GMT\r\n"
    "Connection: keep-alive\r\nCookie: session=0123456789abcdef0123456789abcdef\r\n"
    "Sec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Site: none\r\n\r\n";

void check(const std::string& in) {
  request_parser p;
  http_request r;
  if (p.parse(in, r) != parse_status::complete || p.consumed() != in.size() ||
      r.path != "/static/feed.xml") {
    std::abort();  // the benchmark would time the wrong thing
  }
}

void bm_parse(benchmark::State& st, const std::string& in) {
  check(in);
  request_parser p;
  http_request r;
  // One parser and one request view reused, as on a shard: no allocation per request.
  for (auto _ : st) {
    p.reset();
    benchmark::DoNotOptimize(p.parse(in, r));
    benchmark::DoNotOptimize(r.header_count);
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
  st.SetBytesProcessed(int64_t(st.iterations() * in.size()));
}

}  // namespace

BENCHMARK_CAPTURE(bm_parse, wrk_request, wrk_req);
BENCHMARK_CAPTURE(bm_parse, browser_request, browser_req);
BENCHMARK_MAIN();
