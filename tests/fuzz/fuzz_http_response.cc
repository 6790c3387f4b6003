// libFuzzer target: the HTTP/1.1 response parser on arbitrary bytes, fed in pieces whose
// sizes come from the first input byte, with small limits so the limit paths get hit.
#include <cstddef>
#include <cstdint>

#include "feedplane/net/http_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t step = (data[0] % 16) + 1;
  ++data;
  --size;
  feedplane::net::response_limits limits;
  limits.max_header_bytes = 4096;
  limits.max_headers = 20;
  limits.max_body = 16384;
  feedplane::net::response_parser p(limits);
  const char* bytes = reinterpret_cast<const char*>(data);
  size_t pos = 0;
  // Several responses in a row on one "connection", as keep-alive would see them.
  while (pos < size) {
    size_t n = size - pos < step ? size - pos : step;
    size_t used = 0;
    auto s = p.feed(bytes + pos, n, &used);
    if (used > n) __builtin_trap();
    pos += used;
    if (s == feedplane::net::response_parser::status::error) return 0;
    if (s == feedplane::net::response_parser::status::done) {
      if (p.body().size() > limits.max_body) __builtin_trap();
      (void)p.header("content-type");
      p.reset();
    }
  }
  if (p.feed_eof() == feedplane::net::response_parser::status::done &&
      p.body().size() > limits.max_body)
    __builtin_trap();
  return 0;
}
