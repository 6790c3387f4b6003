// POST /sum for the server tests that hand bodies to simdjson: sums a JSON array of
// integers parsed in place and answers "SUM in-place" or "SUM copied" (whether the body
// reached the handler in the connection's input block or through the padded scratch),
// without allocating (the parser is reused at its capacity; the answer fits the
// response's kept storage), so the allocation-counting test can use it too.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "feedplane/net/http_server.h"

namespace http_test {

inline void add_sum_route(feedplane::net::router& rt) {
  using namespace feedplane::net;
  rt.add("POST", "/sum", [](request_context& c, http_response& r) {
    static thread_local simdjson::ondemand::parser parser;
    const std::string_view b = c.padded_body();
    simdjson::ondemand::document doc;
    int64_t sum = 0;
    auto err =
        parser.iterate(simdjson::padded_string_view(b.data(), b.size(), b.size() + body_padding))
            .get(doc);
    simdjson::ondemand::array a;
    if (!err) err = doc.get_array().get(a);
    if (!err) {
      for (auto v : a) {
        int64_t x = 0;
        if ((err = v.get_int64().get(x))) break;
        sum += x;
      }
    }
    if (err) {
      set_json_error(r, 400, "malformed_json", simdjson::error_message(err));
      return;
    }
    char out[40];
    char* e = std::to_chars(out, out + 20, sum).ptr;
    const std::string_view how = b.data() == c.request().body.data() ? " in-place" : " copied";
    e = std::copy(how.begin(), how.end(), e);
    r.set_body(std::string_view(out, size_t(e - out)));
    r.compressible = false;
  });
}

}  // namespace http_test
