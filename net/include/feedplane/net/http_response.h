// Incremental HTTP/1.1 response parser for the client: status line, headers,
// Content-Length / chunked / close-delimited bodies, 1xx interim responses skipped.
// Untrusted input: every limit is enforced while bytes arrive, so memory stays bounded
// by max_header_bytes + max_body whatever the peer sends. No exceptions; errors are
// fetch_error values. One parser per connection, reused across responses (reset()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/fetch_error.h"
#include "feedplane/net/http_header.h"

namespace feedplane::net {

struct response_limits {
  uint32_t max_header_bytes = 64 * 1024;  // status line + headers (+ interim responses, trailers)
  uint32_t max_headers = 100;
  uint64_t max_body = uint64_t{8} * 1024 * 1024;  // body bytes after de-chunking, before decoding
};

enum class body_framing : uint8_t { none, length, chunked, close };

class response_parser {
 public:
  enum class status : uint8_t { need_more, done, error };

  explicit response_parser(response_limits limits = {}) : limits_(limits) { reset(); }

  // Starts a new response. no_body: the request was HEAD (no body whatever the headers say).
  void reset(bool no_body = false);
  void set_limits(const response_limits& l) { limits_ = l; }

  // Consumes bytes. need_more: all n consumed, send more. done: the response is complete
  // and *used (<= n) bytes were consumed. error: see error(); *used is unspecified.
  status feed(const char* data, size_t n, size_t* used);
  // The peer closed the connection: completes a close-delimited body, else an error.
  status feed_eof();

  fetch_error error() const { return error_; }
  bool headers_done() const { return phase_ > phase::headers; }
  bool done() const { return phase_ == phase::done; }

  // Valid once headers_done().
  int status_code() const { return status_code_; }
  int version_minor() const { return version_minor_; }
  std::string_view reason() const { return reason_; }
  std::span<const http_header> headers() const { return headers_; }
  // The first header with this name (ASCII case-insensitive), or an empty view.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  body_framing framing() const { return framing_; }
  // True when the connection may carry another request after this response completes.
  bool keep_alive() const { return keep_alive_; }

  // The body after de-chunking, still content-coded. Moved-from by the caller is fine.
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }
  // Bytes consumed from the wire for this response, interim responses included.
  uint64_t wire_bytes() const { return wire_bytes_; }
  uint32_t interim_responses() const { return interim_; }

 private:
  enum class phase : uint8_t { headers, body, done, error };
  enum class chunk_state : uint8_t { size, ext, size_lf, data, data_cr, data_lf, trailer };

  status fail(fetch_error e);
  status feed_headers(const char* data, size_t n, size_t* used);
  status feed_body(const char* data, size_t n, size_t* used);
  status feed_chunked(const char* data, size_t n, size_t* used);
  // Parses hdr_ (one complete header block); sets framing or returns an error.
  fetch_error parse_header_block();

  response_limits limits_;
  phase phase_ = phase::headers;
  fetch_error error_ = fetch_error::ok;
  bool no_body_request_ = false;

  // header block accumulation
  std::string hdr_;
  uint64_t header_bytes_total_ = 0;  // across interim responses, vs max_header_bytes
  size_t cur_line_len_ = 0;
  char last_byte_ = 0;
  bool seen_nonempty_line_ = false;

  int status_code_ = 0;
  int version_minor_ = 1;
  std::string_view reason_;
  std::vector<http_header> headers_;
  body_framing framing_ = body_framing::none;
  bool keep_alive_ = false;
  uint32_t interim_ = 0;

  uint64_t remaining_ = 0;  // length: bytes left; chunked: bytes left in this chunk
  chunk_state cstate_ = chunk_state::size;
  uint32_t chunk_line_len_ = 0;
  uint32_t chunk_digits_ = 0;
  uint32_t trailer_bytes_ = 0;
  uint32_t trailer_line_len_ = 0;

  std::string body_;
  uint64_t wire_bytes_ = 0;
};

}  // namespace feedplane::net
