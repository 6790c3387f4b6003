// libFuzzer target: the server's HTTP/1.1 request parser on arbitrary bytes. The input is
// parsed whole and again as a connection would see it (growing buffer, piece sizes from
// the first byte); both must agree, and a complete request must stay inside the limits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "feedplane/net/http_request.h"

using namespace feedplane::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = (data[0] % 32) + 1;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  request_limits lim;
  lim.max_request_line = 256;
  lim.max_header_bytes = 1024;
  lim.max_headers = 16;
  lim.max_body = 4096;

  // Whole input, several requests in a row as keep-alive would see them.
  request_parser whole(lim);
  http_request r;
  parse_status ws = whole.parse(in, r);
  size_t whole_used = whole.consumed();
  std::string whole_body(ws == parse_status::complete ? r.body : std::string_view());
  if (ws == parse_status::complete) {
    if (whole_used == 0 || whole_used > in.size()) __builtin_trap();
    if (r.body.size() > lim.max_body || r.header_count > lim.max_headers) __builtin_trap();
    if (r.method.empty() || r.path.empty()) __builtin_trap();
    (void)r.header("host");
  } else if (ws == parse_status::error) {
    int s = whole.error_status();
    if (s != 400 && s != 413 && s != 414 && s != 431 && s != 501 && s != 505) __builtin_trap();
  }

  // The same bytes arriving in pieces.
  request_parser inc(lim);
  std::string buf;
  parse_status is = parse_status::incomplete;
  for (size_t pos = 0; pos < in.size() && is == parse_status::incomplete;) {
    size_t n = in.size() - pos < step ? in.size() - pos : step;
    buf.append(in.substr(pos, n));
    pos += n;
    is = inc.parse(buf, r);
  }
  if ((is == parse_status::complete) != (ws == parse_status::complete)) __builtin_trap();
  if (is == parse_status::complete) {
    if (inc.consumed() != whole_used || r.body != whole_body) __builtin_trap();
  }
  return 0;
}
