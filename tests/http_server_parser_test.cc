// The HTTP/1.1 request parser: framing, limits, smuggling defences, incremental input.
#include <string>
#include <vector>

#include "feedplane/net/http_request.h"
#include "gtest/gtest.h"

using namespace feedplane::net;

namespace {

struct outcome {
  parse_status st;
  int status = 0;
  size_t consumed = 0;
  std::string method, path, query, body;
  bool keep_alive = false;
};

outcome parse_all(const std::string& in, request_limits lim = {}) {
  request_parser p(lim);
  http_request r;
  outcome o;
  o.st = p.parse(in, r);
  o.status = p.error_status();
  o.consumed = p.consumed();
  if (o.st == parse_status::complete) {
    o.method = r.method;
    o.path = r.path;
    o.query = r.query;
    o.body = r.body;
    o.keep_alive = r.keep_alive;
  }
  return o;
}

// Feeds `in` one byte at a time (the buffer grows like a connection's input buffer).
outcome parse_bytewise(const std::string& in, request_limits lim = {}) {
  request_parser p(lim);
  http_request r;
  std::string buf;
  outcome o;
  o.st = parse_status::incomplete;
  for (char c : in) {
    buf.push_back(c);
    o.st = p.parse(buf, r);
    if (o.st != parse_status::incomplete) break;
  }
  o.status = p.error_status();
  o.consumed = p.consumed();
  if (o.st == parse_status::complete) {
    o.method = r.method;
    o.path = r.path;
    o.body = r.body;
    o.keep_alive = r.keep_alive;
  }
  return o;
}

}  // namespace

TEST(http_server_parser, simple_get) {
  auto o = parse_all("GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\nGET /next");
  ASSERT_EQ(o.st, parse_status::complete);
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.path, "/a/b");
  EXPECT_EQ(o.query, "x=1");
  EXPECT_TRUE(o.keep_alive);
  EXPECT_EQ(o.consumed,
            std::string("GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n").size());
}

TEST(http_server_parser, headers_and_lookup) {
  request_parser p;
  http_request r;
  std::string in =
      "GET / HTTP/1.1\r\nHost: example\r\nIf-None-Match: \"x\"\r\nX-Thing:   v  \r\n"
      "Accept-Encoding: gzip\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n";
  ASSERT_EQ(p.parse(in, r), parse_status::complete);
  EXPECT_EQ(r.host, "example");
  EXPECT_EQ(r.if_none_match, "\"x\"");
  EXPECT_EQ(r.header("x-thing"), "v");
  EXPECT_EQ(r.accept_encoding, "gzip");
  EXPECT_EQ(r.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(r.header("absent"), "");
}

TEST(http_server_parser, bytewise_equals_whole) {
  const std::vector<std::string> cases = {
      "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
      "\r\nGET /x HTTP/1.0\r\n\r\n",
      "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
      "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\n\n",
  };
  for (const auto& c : cases) {
    auto a = parse_all(c), b = parse_bytewise(c);
    ASSERT_EQ(a.st, parse_status::complete) << c;
    ASSERT_EQ(b.st, parse_status::complete) << c;
    EXPECT_EQ(a.body, b.body);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.consumed, c.size());
    EXPECT_EQ(b.consumed, c.size());
  }
  EXPECT_EQ(parse_all(cases[3]).body, "hello world");
  EXPECT_FALSE(parse_all(cases[1]).keep_alive);
}

// Trailer fields that fill max_header_bytes exactly are accepted, also when the final
// empty line arrives a byte at a time (the lone CR must not count against the limit).
// Found by fuzz_http_request: the incremental parse answered 431 where the whole one
// completed.
TEST(http_server_parser, trailer_at_the_limit_bytewise_equals_whole) {
  request_limits lim;
  lim.max_header_bytes = 1024;
  const std::string head =
      "POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\n";
  // One field of exactly max_header_bytes with its CRLF.
  const std::string field = "T: " + std::string(1024 - 5, 'v') + "\r\n";
  const std::string ok = head + field + "\r\n";
  auto a = parse_all(ok, lim), b = parse_bytewise(ok, lim);
  ASSERT_EQ(a.st, parse_status::complete);
  ASSERT_EQ(b.st, parse_status::complete) << b.status;
  EXPECT_EQ(a.body, "abc");
  EXPECT_EQ(b.body, "abc");
  EXPECT_EQ(b.consumed, ok.size());
  // One byte more is refused both ways, the incremental parse no later than the whole one.
  const std::string big = head + "T: " + std::string(1024 - 4, 'v') + "\r\n\r\n";
  a = parse_all(big, lim);
  b = parse_bytewise(big, lim);
  EXPECT_EQ(a.st, parse_status::error);
  EXPECT_EQ(a.status, 431);
  EXPECT_EQ(b.st, parse_status::error);
  EXPECT_EQ(b.status, 431);
}

TEST(http_server_parser, errors_and_statuses) {
  struct c {
    std::string in;
    int status;
  };
  const std::vector<c> cases = {
      {"GET\r\n\r\n", 400},
      {"GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/1.1\nHost: h\r\n\r\n", 400},          // bare LF request line
      {"GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", 400},  // bare LF header line
      {"GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\n\r\n", 400},                           // missing Host
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},     // duplicate Host
      {"GET / HTTP/1.1\r\nHost: h\r\n X: folded\r\n\r\n", 400},  // obs-fold
      {"GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX : v\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n", 400},
      {"GET noslash HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", 400},
  };
  for (const auto& k : cases) {
    auto a = parse_all(k.in);
    EXPECT_EQ(a.st, parse_status::error) << k.in;
    EXPECT_EQ(a.status, k.status) << k.in;
    auto b = parse_bytewise(k.in);
    EXPECT_EQ(b.st, parse_status::error) << k.in;
    EXPECT_EQ(b.status, k.status) << k.in;
  }
}

TEST(http_server_parser, limits) {
  request_limits lim;
  lim.max_request_line = 100;
  lim.max_header_bytes = 200;
  lim.max_headers = 3;
  lim.max_body = 10;
  // Request line over the limit, whether or not its end has arrived.
  std::string longline = "GET /" + std::string(200, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n";
  EXPECT_EQ(parse_all(longline, lim).status, 414);
  EXPECT_EQ(parse_all(longline.substr(0, 150), lim).status, 414);
  EXPECT_EQ(parse_bytewise(longline, lim).status, 414);
  // Header block over the limit (complete or still arriving).
  std::string bighead = "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(300, 'b') + "\r\n\r\n";
  EXPECT_EQ(parse_all(bighead, lim).status, 431);
  EXPECT_EQ(parse_all(bighead.substr(0, 280), lim).status, 431);
  // Too many header fields.
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", lim).status,
            431);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", lim).st,
            parse_status::complete);
  // Body over the limit: refused from the header, before the body arrives.
  EXPECT_EQ(parse_all("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", lim).status, 413);
  EXPECT_EQ(parse_all("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n",
                      lim)
                .status,
            413);
  // Chunk framing counts too: 1-byte chunks with long extensions cannot make the buffered
  // request grow without bound while the decoded body stays small.
  {
    std::string r = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 200; ++i) r += "1;ext=" + std::string(1000, 'e') + "\r\nx\r\n";
    r += "0\r\n\r\n";
    request_limits big = lim;
    big.max_body = 1000;  // 200 decoded bytes fit; 200 KB of framing does not
    auto o = parse_all(r, big);
    EXPECT_EQ(o.st, parse_status::error);
    EXPECT_EQ(o.status, 413);
    EXPECT_EQ(parse_bytewise(r, big).status, 413);
    big.max_body = 200000;  // with room for the framing, the same request is fine
    EXPECT_EQ(parse_all(r, big).st, parse_status::complete);
  }
  // Trailers count against the header limit.
  EXPECT_EQ(parse_all("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " +
                          std::string(300, 't') + "\r\n\r\n",
                      lim)
                .status,
            431);
}

TEST(http_server_parser, incomplete_until_complete_and_reset) {
  request_parser p;
  http_request r;
  std::string in = "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab";
  EXPECT_EQ(p.parse(in, r), parse_status::incomplete);
  EXPECT_TRUE(p.started());
  in += "cdGET /2 HTTP/1.1\r\nHost: h\r\n\r\n";
  ASSERT_EQ(p.parse(in, r), parse_status::complete);
  EXPECT_EQ(r.body, "abcd");
  size_t used = p.consumed();
  p.reset();
  EXPECT_FALSE(p.started());
  ASSERT_EQ(p.parse(std::string_view(in).substr(used), r), parse_status::complete);
  EXPECT_EQ(r.path, "/2");
}

TEST(http_server_parser, absolute_form_and_asterisk) {
  EXPECT_EQ(parse_all("GET http://h.example/x?y HTTP/1.1\r\nHost: h\r\n\r\n").path, "/x");
  EXPECT_EQ(parse_all("GET http://h.example HTTP/1.1\r\nHost: h\r\n\r\n").path, "/");
  EXPECT_EQ(parse_all("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").st, parse_status::complete);
  EXPECT_EQ(parse_all("GET * HTTP/1.1\r\nHost: h\r\n\r\n").status, 400);
}

TEST(http_server_parser, http_dates) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  char b[32];
  EXPECT_EQ(format_http_date(784111777, b), "Sun, 06 Nov 1994 08:49:37 GMT");
  // The two obsolete forms recipients must accept (RFC 9110 5.6.7).
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_EQ(parse_http_date("Wednesday, 15-Nov-23 00:00:00 GMT"), 1700006400);
  EXPECT_EQ(parse_http_date("Sun Nov 16 08:49:37 1994"), 784111777 + 10 * 86400);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"), -1);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), -1);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 19x4"), -1);
  EXPECT_EQ(parse_http_date("Sun, 06 Xyz 1994 08:49:37 GMT"), -1);
  EXPECT_EQ(parse_http_date(""), -1);
  for (int64_t t : {0LL, 951782400LL, 1700000000LL, 4102444800LL}) {
    EXPECT_EQ(parse_http_date(format_http_date(t, b)), t);
  }
}
