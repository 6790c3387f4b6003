// Routes, request contexts and JSON errors: the router alone (precedence, parameters,
// patterns it refuses), the JSON escaper, then a server shard on real loopback sockets:
// path parameters and query strings decoded on the wire, malformed escapes, the context
// pointer, error bodies, bodies handed to simdjson, deferred answers that time out, come
// late or find their client gone.
#include <simdjson.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "feedplane/net/http_server.h"
#include "gtest/gtest.h"
#include "http_test_client.h"
#include "http_test_shard.h"
#include "http_test_sum_route.h"

using namespace feedplane::net;
using namespace http_test;

static_assert(simdjson::SIMDJSON_PADDING <= body_padding, "bodies must be padded for simdjson");

namespace {

// A handler that answers its own name, to see which route won.
route_handler named(std::string name) {
  return [name](request_context& c, http_response& r) {
    std::string b = name;
    for (uint32_t i = 0; i < c.param_count(); ++i) {
      b.append(" ").append(c.param_at(i).name).append("=").append(c.param_at(i).value);
    }
    r.set_body(b);
    r.compressible = false;
  };
}

// Which handler (by the body it writes) a lookup reaches, with raw parameter values.
struct lookup {
  int status = 0;
  std::string allow;
  std::string params;  // "name=value " per parameter
  const route_handler* h = nullptr;
};

lookup find(const router& rt, std::string_view method, std::string_view path) {
  router::match m;
  rt.find(method, path, &m);
  lookup l;
  l.h = m.handler;
  l.status = m.handler != nullptr ? 200 : m.status;
  l.allow = std::string(m.allow);
  for (uint32_t i = 0; i < m.param_count; ++i) {
    l.params.append(m.params[i].name).append("=").append(m.params[i].value).append(" ");
  }
  return l;
}

router feed_router() {
  router rt;
  rt.add("GET", "/f/{token}", named("rss"));
  rt.add("GET", "/f/{token}.atom", named("atom"));
  rt.add("GET", "/f/{token}.json", named("json"));
  rt.add("GET", "/api/subscriptions", named("list"));
  rt.add("POST", "/api/subscriptions", named("create"));
  rt.add("GET", "/api/subscriptions/{id}", named("get"));
  rt.add("PATCH", "/api/subscriptions/{id}", named("patch"));
  rt.add("DELETE", "/api/subscriptions/{id}", named("delete"));
  rt.add("POST", "/api/subscriptions:bulk", named("bulk"));
  rt.add("POST", "/api/subscriptions/{id}:rotate", named("rotate"));
  rt.add("GET", "/api/sources/{id}", named("source"));
  rt.add("POST", "/api/sources:import", named("import"));
  rt.add("GET", "/api/{collection}", named("collection"));
  rt.add("GET", "/api/{collection}/{id}", named("item"));
  rt.add_prefix("GET", "/static/", named("static"));
  rt.add_prefix("GET", "/static/img/", named("img"));
  rt.add("GET", "/static/index.html", named("index"));
  rt.add("GET", "/", named("root"));
  return rt;
}

}  // namespace

TEST(http_router, parameters_suffixes_colon_verbs_and_precedence) {
  const router rt = feed_router();
  // A parameter with a literal suffix: the longest suffix wins, the rest is the value.
  EXPECT_EQ(find(rt, "GET", "/f/abc").params, "token=abc ");
  EXPECT_EQ(find(rt, "GET", "/f/abc.atom").params, "token=abc ");
  EXPECT_EQ(find(rt, "GET", "/f/abc.json").params, "token=abc ");
  EXPECT_EQ(find(rt, "GET", "/f/abc.json.atom").params, "token=abc.json ");
  EXPECT_EQ(find(rt, "GET", "/f/.atom").params, "token=.atom ");  // empty value: no suffix
  EXPECT_EQ(find(rt, "GET", "/f/").status, 404);                  // parameters are non-empty
  EXPECT_EQ(find(rt, "GET", "/f/a/b").status, 404);               // never across '/'
  // Colon verbs are literals: they beat parameters, and /api/sources/{id} has another
  // segment count than /api/sources:import.
  router::match m;
  rt.find("POST", "/api/sources:import", &m);
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.param_count, 0u);
  EXPECT_EQ(find(rt, "GET", "/api/sources/s1").params, "id=s1 ");
  // GET /api/sources:import: the literal resource wins over /api/{collection}; it has POST
  // only, so 405 rather than the parameter route.
  lookup l = find(rt, "GET", "/api/sources:import");
  EXPECT_EQ(l.status, 405);
  EXPECT_EQ(l.allow, "POST");
  EXPECT_EQ(find(rt, "GET", "/api/things").params, "collection=things ");
  EXPECT_EQ(find(rt, "GET", "/api/things/7").params, "collection=things id=7 ");
  // Leftmost difference decides: /api/subscriptions/{id} beats /api/{collection}/{id}.
  EXPECT_EQ(find(rt, "GET", "/api/subscriptions/7").params, "id=7 ");
  EXPECT_EQ(find(rt, "POST", "/api/subscriptions/7:rotate").params, "id=7 ");
  EXPECT_EQ(find(rt, "POST", "/api/subscriptions:bulk").status, 200);
  l = find(rt, "PUT", "/api/subscriptions/7");
  EXPECT_EQ(l.status, 405);
  EXPECT_EQ(l.allow, "GET, HEAD, PATCH, DELETE");
  EXPECT_EQ(find(rt, "HEAD", "/api/subscriptions/7").status, 200);  // GET answers HEAD
  // Patterns beat prefixes; the longer prefix wins.
  EXPECT_EQ(find(rt, "GET", "/static/index.html").params, "");
  EXPECT_NE(find(rt, "GET", "/static/index.html").h, find(rt, "GET", "/static/a.css").h);
  EXPECT_NE(find(rt, "GET", "/static/img/a.png").h, find(rt, "GET", "/static/a.css").h);
  EXPECT_EQ(find(rt, "GET", "/static/img/a.png").h, find(rt, "GET", "/static/img/").h);
  EXPECT_EQ(find(rt, "GET", "/").status, 200);
  EXPECT_EQ(find(rt, "GET", "/nope").status, 404);
  EXPECT_EQ(find(rt, "GET", "").status, 404);
  EXPECT_EQ(find(rt, "GET", "*").status, 404);
  // Deeper than any pattern: only prefixes can match, and nothing overflows.
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "/x";
  EXPECT_EQ(find(rt, "GET", deep).status, 404);
  EXPECT_EQ(find(rt, "GET", "/static" + deep).status, 200);
}

TEST(http_router, registration_order_does_not_change_precedence) {
  router a, b;
  a.add("GET", "/f/{t}", named("1"));
  a.add("GET", "/f/{t}.atom", named("2"));
  a.add("GET", "/f/latest.atom", named("3"));
  b.add("GET", "/f/latest.atom", named("3"));
  b.add("GET", "/f/{t}.atom", named("2"));
  b.add("GET", "/f/{t}", named("1"));
  for (const char* p : {"/f/x", "/f/x.atom", "/f/latest.atom", "/f/latest"}) {
    EXPECT_EQ(find(a, "GET", p).params, find(b, "GET", p).params) << p;
  }
  EXPECT_EQ(find(a, "GET", "/f/latest.atom").params, "");
  EXPECT_EQ(find(a, "GET", "/f/latest").params, "t=latest ");
}

TEST(http_router, malformed_patterns_are_refused_at_setup) {
  router rt;
  rt.add("GET", "/a/{id}", named("a"));
  const std::vector<std::string> bad = {
      "",          "a/b",           "/a/{",         "/a/{}", "/a/{x-y}",
      "/a/x{id}",  "/a/{id}{more}", "/a/{id}/{id}", "/a/}",  "/a/{id}.{ext}",
      "/a/{name}",  // the shape of /a/{id} with another name
  };
  for (const std::string& p : bad) {
    EXPECT_THROW(rt.add("GET", p, named("x")), std::invalid_argument) << p;
  }
  EXPECT_THROW(rt.add("GET", "/a/{id}", named("again")), std::invalid_argument);
  EXPECT_THROW(rt.add_prefix("GET", "static/", named("x")), std::invalid_argument);
  std::string many = "";
  for (int i = 0; i < 9; ++i) many += "/{p" + std::to_string(i) + "}";
  EXPECT_THROW(rt.add("GET", many, named("x")), std::invalid_argument);
  rt.add("POST", "/a/{id}", named("b"));  // same resource, another method: fine
  EXPECT_EQ(find(rt, "DELETE", "/a/1").allow, "GET, HEAD, POST");
}

// The message of an error body is escaped so that the body is valid JSON for any bytes
// (error messages quote request bytes).
TEST(http_json, error_messages_are_valid_json_for_any_bytes) {
  auto esc = [](std::string_view s) {
    http_response r;
    set_json_error(r, 400, "x", s);
    const std::string_view prefix = "{\"error\": \"x\", \"message\": ";
    EXPECT_EQ(r.body.substr(0, prefix.size()), prefix);
    EXPECT_EQ(r.body.substr(r.body.size() - 2), "}\n");
    return std::string(r.body.substr(prefix.size(), r.body.size() - prefix.size() - 2));
  };
  EXPECT_EQ(esc("plain"), "\"plain\"");
  EXPECT_EQ(esc("a\"b\\c\n\r\t"), "\"a\\\"b\\\\c\\n\\r\\t\"");
  EXPECT_EQ(esc(std::string_view("\x01\x1f\x00", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  // Invalid UTF-8: stray continuation, truncated sequence, overlong, surrogate, > U+10FFFF.
  EXPECT_EQ(esc("a\x80z"), "\"a\\ufffdz\"");
  EXPECT_EQ(esc("a\xe2\x82"), "\"a\\ufffd\\ufffd\"");
  EXPECT_EQ(esc("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(esc("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  // Every single byte and many pairs give a document simdjson accepts.
  simdjson::dom::parser p;
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += (a < 0x80 ? 37 : 1)) {
      const char in[2] = {char(a), char(b)};
      http_response r;
      set_json_error(r, 400, "x", std::string_view(in, 2));
      simdjson::dom::element e;
      ASSERT_EQ(p.parse(r.body).get(e), simdjson::SUCCESS) << a << " " << b << " " << r.body;
    }
  }
}

TEST(http_json, error_helpers_share_one_shape) {
  http_response r;
  r.etag = "\"x\"";
  r.extra_headers = "WWW-Authenticate: Bearer\r\n";
  set_json_error(r, 401, "unauthenticated", "no \"secret\"");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, "{\"error\": \"unauthenticated\", \"message\": \"no \\\"secret\\\"\"}\n");
  EXPECT_TRUE(r.etag.empty());
  EXPECT_EQ(r.extra_headers, "WWW-Authenticate: Bearer\r\n");
  http_response u;
  set_unavailable(u, "ring full", 2);
  EXPECT_EQ(u.status, 503);
  EXPECT_EQ(u.body, "{\"error\": \"unavailable\", \"message\": \"ring full\"}\n");
  EXPECT_EQ(u.extra_headers, "Retry-After: 2\r\n");
  EXPECT_EQ(error_code(413), "payload_too_large");
  EXPECT_EQ(error_code(431), "header_fields_too_large");
}

// ---- on the wire ----

namespace {

// Held deferrals, for the tests about late and orphaned answers (shard thread only).
struct held_state {
  std::vector<deferred_response> held;
};

void add_wire_routes(router& rt, held_state* hs) {
  for (const char* f : {"rss", "atom", "json"}) {
    const std::string pat =
        std::string("/f/{token}") + (f == std::string("rss") ? "" : std::string(".") + f);
    rt.add("GET", pat, [f](request_context& c, http_response& r) {
      r.set_body(std::string(f) + ":" + std::string(c.param("token")));
      r.compressible = false;
    });
  }
  rt.add("GET", "/api/subscriptions/{id}", [](request_context& c, http_response& r) {
    r.set_body("get:" + std::string(c.param("id")));
  });
  rt.add("POST", "/api/sources:import", [](request_context&, http_response& r) {
    r.status = 202;
    r.set_body("import");
  });
  // Echoes the decoded query: "name=value;" per parameter, then get("x") and has("y").
  rt.add("GET", "/q", [](request_context& c, http_response& r) {
    std::string b;
    for (const query_param& p : c.query()) {
      b.append(p.name).append("=").append(p.value).append(";");
    }
    b.append(" x=").append(c.query().get("x", "(none)"));
    b.append(c.query().has("y") ? " y" : " no-y");
    int tags = 0;
    for (auto* p = c.query().find("tag"); p != nullptr; p = c.query().find("tag", p)) ++tags;
    b.append(" tags=").append(std::to_string(tags));
    r.set_body(b);
    r.compressible = false;
  });
  // The server's context pointer is the shard_thread: the handler reaches its server.
  rt.add("GET", "/open", [](request_context& c, http_response& r) {
    r.set_body(std::to_string(c.context_as<shard_thread>().server().stats().open));
  });
  rt.add("GET", "/busy", [](request_context&, http_response& r) {
    set_unavailable(r, "the ring to the store is full");
  });
  add_sum_route(rt);
  rt.add("GET", "/held",
         [hs](request_context&, http_response& r) { r.set_body(std::to_string(hs->held.size())); });
  rt.add("GET", "/hold", [hs](request_context&, http_response& r) {
    r.defer = true;
    hs->held.push_back(r.later);
  });
  // Completes every held deferral; answers "true"/"false" per complete() call.
  rt.add("GET", "/complete-held", [hs](request_context&, http_response& r) {
    std::string b;
    std::vector<deferred_response> now;
    now.swap(hs->held);
    for (const deferred_response& d : now) {
      http_response a;
      a.set_body("held answer");
      b.append(d.complete(a) ? "true;" : "false;");
    }
    r.set_body(b.empty() ? "none" : b);
  });
  rt.add("GET", "/a", [](request_context&, http_response& r) { r.body = "/a"; });
}

std::string get(int fd, reader& rd, const std::string& target, response* r) {
  send_all(fd, "GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n");
  if (!rd.next(r)) return "(no response)";
  return r->body;
}

}  // namespace

TEST(http_server_routes, parameters_and_queries_decoded_on_the_wire) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  EXPECT_EQ(get(fd, rd, "/f/tok", &r), "rss:tok");
  EXPECT_EQ(get(fd, rd, "/f/tok.atom", &r), "atom:tok");
  EXPECT_EQ(get(fd, rd, "/f/tok.json?x=1", &r), "json:tok");
  EXPECT_EQ(get(fd, rd, "/f/a%20b%2Fc+d.atom", &r), "atom:a b/c+d");  // '+' stays in paths
  EXPECT_EQ(get(fd, rd, "/api/subscriptions/s%3A1", &r), "get:s:1");
  send_all(fd, "POST /api/sources:import HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(get(fd, rd, "/q?x=1&y&tag=a&&tag=b%26c&tag=", &r),
            "x=1;y=;tag=a;tag=b&c;tag=; x=1 y tags=3");
  EXPECT_EQ(get(fd, rd, "/q?a+b=c+d&%C3%A9=%e2%82%ac&=v", &r),
            "a b=c d;\xc3\xa9=\xe2\x82\xac;=v; x=(none) no-y tags=0");
  EXPECT_EQ(get(fd, rd, "/q", &r), " x=(none) no-y tags=0");
  EXPECT_EQ(get(fd, rd, "/q?", &r), " x=(none) no-y tags=0");
  close(fd);
}

TEST(http_server_routes, malformed_escapes_are_400_json_and_the_connection_stays) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  for (const char* bad : {"/q?x=%zz", "/q?x=%4", "/q?x=%", "/q?%g1=2", "/q?ok=1&x=a%2"}) {
    get(fd, rd, bad, &r);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.headers["content-type"], "application/json") << bad;
    EXPECT_EQ(r.body.rfind("{\"error\": \"invalid_query\", \"message\": \"malformed percent "
                           "escape \\\"%",
                           0),
              0u)
        << r.body;
    EXPECT_NE(r.body.find("%25"), std::string::npos) << r.body;  // says how to write a %
    EXPECT_EQ(r.headers.count("connection"), 0u);                // not a framing error: keep-alive
  }
  get(fd, rd, "/f/ab%zz.atom", &r);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body,
            "{\"error\": \"invalid_path\", \"message\": \"malformed percent escape \\\"%zz\\\" "
            "in the path (a literal % is written %25)\"}\n");
  std::string many = "/q?";
  for (int i = 0; i < 65; ++i) many += "k=" + std::to_string(i) + "&";
  get(fd, rd, many, &r);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("more than 64 query parameters"), std::string::npos) << r.body;
  EXPECT_EQ(get(fd, rd, "/f/still-here", &r), "rss:still-here");
  close(fd);
}

TEST(http_server_routes, errors_are_json_and_head_gets_none) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  get(fd, rd, "/nope", &r);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.body, "{\"error\": \"not_found\", \"message\": \"GET /nope: no such route\"}\n");
  send_all(fd, "DELETE /f/x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD");
  EXPECT_NE(r.body.find("\"error\": \"method_not_allowed\""), std::string::npos);
  // HEAD: the same status and headers, Content-Length of the body it would have, no body.
  send_all(fd,
           "HEAD /nope HTTP/1.1\r\nHost: t\r\n\r\nHEAD /api/sources:import HTTP/1.1\r\n"
           "Host: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "POST");
  ASSERT_TRUE(rd.next(&r));  // the next response starts right after the HEAD headers
  EXPECT_EQ(r.body, "/a");
  // A request path with bytes that are not UTF-8: the error body is still valid JSON.
  get(fd, rd, "/\xff\xfe", &r);
  EXPECT_EQ(r.status, 404);
  simdjson::dom::parser p;
  simdjson::dom::element e;
  EXPECT_EQ(p.parse(r.body).get(e), simdjson::SUCCESS) << r.body;
  // Backpressure helper.
  get(fd, rd, "/busy", &r);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(r.body,
            "{\"error\": \"unavailable\", \"message\": \"the ring to the store is full\"}\n");
  EXPECT_EQ(get(fd, rd, "/a", &r), "/a");
  close(fd);
}

TEST(http_server_routes, context_pointer_reaches_the_handler) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  EXPECT_EQ(get(fd, rd, "/open", &r), "1");
  int fd2 = dial(s.port());
  EXPECT_EQ(get(fd, rd, "/open", &r), "2");
  close(fd2);
  close(fd);
}

TEST(http_server_routes, json_bodies_reach_simdjson_in_place_or_copied_once) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  auto post = [&](const std::string& body) {
    send_all(fd, "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body);
    EXPECT_TRUE(rd.next(&r));
    return r.body;
  };
  // Small: arrives in one receive, copied into the padded scratch.
  EXPECT_EQ(post("[1,2,3]"), "6 copied");
  // Large (over the 512-byte receive buffers): assembled in a pooled block, parsed in place.
  std::string big = "[";
  int64_t want = 0;
  for (int i = 0; i < 20000; ++i) {
    big += (i ? "," : "") + std::to_string(i);
    want += i;
  }
  big += "]";
  EXPECT_EQ(post(big), std::to_string(want) + " in-place");
  post("[1,");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("\"error\": \"malformed_json\""), std::string::npos) << r.body;
  // Chunked: de-chunked by the parser, copied.
  send_all(fd,
           "POST /sum HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[4,\r\n"
           "2\r\n5]\r\n0\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "9 copied");
  EXPECT_EQ(post("[]"), "0 copied");
  close(fd);
}

TEST(http_server_routes, deferred_timeout_then_late_complete_is_a_no_op) {
  held_state hs;
  server_options so = shard_thread::default_options();
  so.defer_timeout_ms = 300;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); }, so);
  int fd = dial(s.port());
  reader rd(fd);
  response r;
  // Pipelined behind the deferral: answered after the 503, in order.
  send_all(fd, "GET /hold HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.body.rfind("{\"error\": \"timeout\", \"message\": \"no answer within 300 ms", 0), 0u)
      << r.body;
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "/a");
  // The late answer finds the 503 already sent: complete() is false and writes nothing,
  // even though the same connection is still open and serving.
  EXPECT_EQ(get(fd, rd, "/complete-held", &r), "false;");
  EXPECT_EQ(get(fd, rd, "/a", &r), "/a");
  // A HEAD that times out gets its 503 without a body.
  send_all(fd, "HEAD /hold HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(rd.next(&r, /*head=*/true));
  EXPECT_EQ(r.status, 503);
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.body, "/a");
  EXPECT_EQ(get(fd, rd, "/complete-held", &r), "false;");
  // A deferral answered in time, from another connection's handler.
  send_all(fd, "GET /hold HTTP/1.1\r\nHost: t\r\n\r\n");
  int fd2 = dial(s.port());
  reader rd2(fd2);
  // Wait until the /hold is held (it may still be in flight), then complete it.
  std::string got;
  for (int i = 0; i < 1000 && (got = get(fd2, rd2, "/complete-held", &r)) == "none"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(got, "true;");
  ASSERT_TRUE(rd.next(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "held answer");
  close(fd2);
  close(fd);
}

TEST(http_server_routes, deferred_answer_for_a_connection_reset_mid_request_is_dropped) {
  held_state hs;
  shard_thread s([&](router& rt) { add_wire_routes(rt, &hs); });
  int obs = dial(s.port());
  reader ro(obs);
  response r;
  for (int round = 0; round < 5; ++round) {
    int fd = dial(s.port());
    // Pipelined: the held request, and one behind it that is never answered.
    send_all(fd, "GET /hold HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n");
    for (int i = 0; i < 5000 && get(obs, ro, "/held", &r) != "1"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(r.body, "1");
    linger lg{1, 0};  // close with RST: the server sees ECONNRESET and releases the slot
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    for (int i = 0; i < 5000 && get(obs, ro, "/open", &r) != "1"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(r.body, "1");
    // The freed slot now serves another client; the stale deferral must not answer it.
    int other = dial(s.port());
    reader rother(other);
    EXPECT_EQ(get(other, rother, "/a", &r), "/a");
    EXPECT_EQ(get(obs, ro, "/complete-held", &r), "false;");
    EXPECT_EQ(get(other, rother, "/a", &r), "/a");
    close(other);
  }
  close(obs);
}
