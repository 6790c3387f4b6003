// Content-Encoding decoding (gzip, deflate) with libdeflate, capped: a body that would
// decode to more than the cap fails with body_too_large instead of growing memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "feedplane/net/fetch_error.h"

struct libdeflate_decompressor;

namespace feedplane::net {

// One per connection pool or thread; reused (libdeflate's decompressor holds ~32 KiB tables).
class content_decoder {
 public:
  content_decoder();
  ~content_decoder();
  content_decoder(const content_decoder&) = delete;
  content_decoder& operator=(const content_decoder&) = delete;

  // Decodes `in` per the Content-Encoding header value (a comma list applied in order;
  // "identity" and empty mean none) into `out` (replaced). Returns ok, bad_gzip,
  // bad_deflate, unsupported_content_encoding or body_too_large (decoded size > cap).
  // With no coding, out is a copy of in; callers that can avoid the copy check
  // needs_decoding() first.
  fetch_error decode(std::string_view content_encoding, std::string_view in, uint64_t cap,
                     std::string& out);
  static bool needs_decoding(std::string_view content_encoding);

 private:
  fetch_error gunzip(std::string_view in, uint64_t cap, std::string& out);
  fetch_error inflate(std::string_view in, uint64_t cap, std::string& out);

  libdeflate_decompressor* d_;
};

}  // namespace feedplane::net
