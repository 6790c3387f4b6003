#include "feedplane/net/http_response.h"

#include <gtest/gtest.h>

#include <string>

using feedplane::net::body_framing;
using feedplane::net::fetch_error;
using feedplane::net::response_limits;
using feedplane::net::response_parser;
using st = response_parser::status;

namespace {

// Feeds `wire` in pieces of `step` bytes; returns the final status and the bytes consumed.
st feed_all(response_parser& p, const std::string& wire, size_t step, size_t* consumed) {
  size_t pos = 0;
  while (pos < wire.size()) {
    size_t n = std::min(step, wire.size() - pos);
    size_t used = 0;
    auto s = p.feed(wire.data() + pos, n, &used);
    pos += used;
    if (s != st::need_more) {
      *consumed = pos;
      return s;
    }
  }
  *consumed = pos;
  return st::need_more;
}

// Every split size must give the same result: the parser is incremental.
void expect_parse(const std::string& wire, int code, const std::string& body, body_framing framing,
                  bool keep_alive) {
  for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, wire.size()}) {
    response_parser p;
    size_t used = 0;
    auto s = feed_all(p, wire, step, &used);
    if (framing == body_framing::close) {
      ASSERT_EQ(s, st::need_more) << "step " << step;
      ASSERT_EQ(p.feed_eof(), st::done);
    } else {
      ASSERT_EQ(s, st::done) << "step " << step << " error "
                             << feedplane::net::fetch_error_name(p.error());
      EXPECT_EQ(used, wire.size());
    }
    EXPECT_EQ(p.status_code(), code);
    EXPECT_EQ(p.body(), body) << "step " << step;
    EXPECT_EQ(p.framing(), framing);
    EXPECT_EQ(p.keep_alive(), keep_alive);
    EXPECT_EQ(p.wire_bytes(), wire.size());
  }
}

fetch_error parse_error(const std::string& wire, response_limits limits = {}, bool eof = false) {
  fetch_error first = fetch_error::ok;
  for (size_t step : {size_t{1}, size_t{5}, wire.size()}) {
    response_parser p(limits);
    size_t used = 0;
    auto s = feed_all(p, wire, step, &used);
    if (s == st::need_more && eof) s = p.feed_eof();
    EXPECT_EQ(s, st::error) << "step " << step;
    if (step == 1) first = p.error();
    EXPECT_EQ(p.error(), first) << "step " << step;
  }
  return first;
}

}  // namespace

TEST(HttpResponse, ContentLength) {
  expect_parse(
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"abc\"\r\nContent-Type: "
      "text/xml\r\n\r\nhello",
      200, "hello", body_framing::length, true);
  response_parser p;
  std::string w = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag:  \"abc\" \r\n\r\nhello";
  size_t used;
  ASSERT_EQ(p.feed(w.data(), w.size(), &used), st::done);
  EXPECT_EQ(p.header("etag"), "\"abc\"");
  EXPECT_EQ(p.header("ETAG"), "\"abc\"");
  EXPECT_EQ(p.header("missing"), "");
  EXPECT_EQ(p.reason(), "OK");
  EXPECT_EQ(p.headers().size(), 2u);
}

TEST(HttpResponse, LeavesTheNextResponseUnconsumed) {
  std::string w = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 304 Not Modified\r\n\r\n";
  response_parser p;
  size_t used = 0;
  ASSERT_EQ(p.feed(w.data(), w.size(), &used), st::done);
  EXPECT_EQ(used, w.find("HTTP/1.1 304"));
  p.reset();
  size_t used2 = 0;
  ASSERT_EQ(p.feed(w.data() + used, w.size() - used, &used2), st::done);
  EXPECT_EQ(p.status_code(), 304);
  EXPECT_EQ(used + used2, w.size());
}

TEST(HttpResponse, NoBodyStatuses) {
  expect_parse("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 100\r\n\r\n", 304, "",
               body_framing::none, true);
  expect_parse("HTTP/1.1 204 No Content\r\n\r\n", 204, "", body_framing::none, true);
  response_parser p;
  p.reset(/*no_body=*/true);
  std::string w = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  size_t used;
  EXPECT_EQ(p.feed(w.data(), w.size(), &used), st::done);
}

TEST(HttpResponse, Chunked) {
  expect_parse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6;ext=1\r\n world\r\nA \r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
      200, "hello world0123456789", body_framing::chunked, true);
  // Bare LF line ends are tolerated.
  expect_parse("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", 200, "abc",
               body_framing::chunked, true);
  // Content-Length with chunked: chunked wins, but the connection is not reused.
  expect_parse(
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
      "1\r\na\r\n0\r\n\r\n",
      200, "a", body_framing::chunked, false);
}

TEST(HttpResponse, BadChunks) {
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(parse_error(head + "zz\r\n"), fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "\r\n"), fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "-5\r\nhello\r\n"), fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "1234567890abcdef0\r\n"), fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "5\rhello"), fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "3\r\nabcX\r\n"), fetch_error::bad_chunk_framing);
  EXPECT_EQ(parse_error(head + "5;" + std::string(5000, 'e') + "\r\n"),
            fetch_error::bad_chunk_size);
  EXPECT_EQ(parse_error(head + "5\r\nhel", {}, /*eof=*/true), fetch_error::closed_mid_body);
}

TEST(HttpResponse, CloseDelimited) {
  expect_parse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", 200, "all of it",
               body_framing::close, false);
  expect_parse("HTTP/1.0 200 OK\r\n\r\nold", 200, "old", body_framing::close, false);
}

TEST(HttpResponse, KeepAliveRules) {
  expect_parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 200, "",
               body_framing::none, false);
  expect_parse("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", body_framing::length,
               false);
  expect_parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", 200, "x",
               body_framing::length, true);
}

TEST(HttpResponse, SkipsInterimResponses) {
  std::string w =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  expect_parse(w, 200, "ok", body_framing::length, true);
  response_parser p;
  size_t used;
  ASSERT_EQ(p.feed(w.data(), w.size(), &used), st::done);
  EXPECT_EQ(p.interim_responses(), 2u);
  EXPECT_FALSE(p.has_header("link"));
  EXPECT_EQ(parse_error("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"),
            fetch_error::unexpected_upgrade);
}

TEST(HttpResponse, ObsFoldBecomesSpace) {
  response_parser p;
  std::string w = "HTTP/1.1 200 OK\r\nX-Long: a\r\n  b\r\nContent-Length: 0\r\n\r\n";
  size_t used;
  ASSERT_EQ(p.feed(w.data(), w.size(), &used), st::done);
  EXPECT_EQ(p.header("x-long"), "a    b");  // CR, LF and the two folding spaces
}

TEST(HttpResponse, MalformedHeads) {
  EXPECT_EQ(parse_error("HTTP/2 200 OK\r\n\r\n"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("HTTP/1.1 20 OK\r\n\r\n"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("HTTP/1.1 999 OK\r\n\r\n"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("HTTP/1.1 200OK\r\n\r\n"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("<html>hello</html>\r\n\r\n"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("SSH-2.0-OpenSSH"), fetch_error::bad_status_line);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n"), fetch_error::bad_header);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n"), fetch_error::bad_header);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n"), fetch_error::bad_header);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n"),
            fetch_error::bad_content_length);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            fetch_error::bad_content_length);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            fetch_error::bad_content_length);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
            fetch_error::bad_transfer_encoding);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nContent-Le", {}, true),
            fetch_error::closed_mid_headers);
  response_parser p;
  EXPECT_EQ(p.feed_eof(), st::error);
  EXPECT_EQ(p.error(), fetch_error::closed_before_response);
}

TEST(HttpResponse, Limits) {
  response_limits small;
  small.max_header_bytes = 256;
  small.max_headers = 3;
  small.max_body = 10;
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nX: " + std::string(300, 'a') + "\r\n\r\n", small),
            fetch_error::headers_too_large);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", small),
            fetch_error::too_many_headers);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", small),
            fetch_error::body_too_large);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n"
                        "5\r\nabcde\r\n",
                        small),
            fetch_error::body_too_large);
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\n\r\n" + std::string(11, 'x'), small),
            fetch_error::body_too_large);
  // Trailers count against the header limit.
  EXPECT_EQ(parse_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " +
                            std::string(400, 't') + "\r\n\r\n",
                        small),
            fetch_error::headers_too_large);
  // Exactly at the body cap is fine.
  expect_parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 200, "0123456789",
               body_framing::length, true);
}
