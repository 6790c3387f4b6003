// HTTP/1.1 request parser for the server (RFC 9112), incremental and allocation-free for
// requests without a chunked body.
//
// Per-connection state (request_parser) is a few offsets; the parsed view (http_request,
// with its header array) is scratch owned by the caller, typically one per shard, because
// a request is handled as soon as it is complete. parse() is called again with the whole
// buffered input each time more bytes arrive; it resumes the header-end scan where it
// stopped, so a client sending one byte at a time costs O(n) in total, not O(n^2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/http_header.h"

namespace feedplane::net {

struct request_limits {
  uint32_t max_request_line = 8 * 1024;   // 414 beyond
  uint32_t max_header_bytes = 32 * 1024;  // 431 beyond (all header lines together)
  uint32_t max_headers = 100;             // 431 beyond
  uint32_t max_body = 1024 * 1024;        // 413 beyond (decoded size for chunked)
};

// A parsed request. Views point into the parse() input (the body of a chunked request into
// the parser's decoded-body buffer) and are valid until the input changes or reset().
struct http_request {
  static constexpr uint32_t header_capacity = 128;

  std::string_view method;
  std::string_view target;  // as sent: "/a/b?x=1" (absolute-form is reduced to origin-form)
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', without it
  int version_minor = 1;    // HTTP/1.<minor>
  bool keep_alive = true;
  bool chunked = false;
  bool expect_continue = false;
  uint64_t content_length = 0;
  std::string_view body;
  // Values of headers the server itself acts on ("" when absent).
  std::string_view host;
  std::string_view if_none_match;
  std::string_view if_modified_since;
  std::string_view accept_encoding;

  http_header headers[header_capacity];
  uint32_t header_count = 0;

  // Value of the first header named `name` (case-insensitive), or "" if absent.
  std::string_view header(std::string_view name) const;
};

enum class parse_status { incomplete, complete, error };

// Buffers for decoded chunked bodies, shared by the parsers of one server (one thread): a
// parser takes one when a chunked body starts and gives it back when reset, so a large
// chunked request costs no heap churn (the buffer keeps its capacity for the next one)
// and idle connections hold none. Bounded in bytes; beyond that, buffers are freed.
class body_pool {
 public:
  explicit body_pool(size_t max_bytes = size_t{8} << 20) : max_bytes_(max_bytes) {}
  std::string take();
  void give(std::string& b);  // leaves b empty, without a heap buffer
  size_t bytes() const { return bytes_; }

 private:
  std::vector<std::string> free_;
  size_t bytes_ = 0;
  size_t max_bytes_;
};

class request_parser {
 public:
  explicit request_parser(const request_limits& limits = {}, body_pool* pool = nullptr)
      : limits_(limits), pool_(pool) {}
  request_parser(request_parser&&) = default;
  request_parser& operator=(request_parser&& o) noexcept {
    if (pool_ != nullptr) pool_->give(body_);
    limits_ = o.limits_;
    pool_ = o.pool_;
    body_.swap(o.body_);
    o.body_.clear();
    reset();
    return *this;
  }
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;
  ~request_parser() {
    if (pool_ != nullptr) pool_->give(body_);
  }

  // Parses the request at the start of `in` (all bytes buffered so far for it).
  // complete: `out` describes it and consumed() bytes of `in` belong to it.
  // incomplete: call again with more bytes appended (same prefix).
  // error: error_status() is the status to answer (400, 413, 414, 431, 501, 505) and
  // error_reason() a short text; the connection must be closed after answering.
  parse_status parse(std::string_view in, http_request& out);

  size_t consumed() const { return consumed_; }
  int error_status() const { return error_status_; }
  const char* error_reason() const { return error_reason_; }
  // True once the head of the current request parsed and only its body is missing.
  bool head_done() const { return head_end_ != 0 && error_status_ == 0; }
  // True once any byte of the current request has been seen (header timer running).
  bool started() const { return started_; }
  // Prepares for the next request on the same connection.
  void reset();
  // Heap bytes of decoded chunked body retained (0 while it is the string's inline buffer;
  // with a body_pool, given back at reset()).
  size_t body_capacity() const {
    return body_.capacity() > std::string().capacity() ? body_.capacity() : 0;
  }

 private:
  parse_status fail(int status, const char* reason);
  parse_status parse_head(std::string_view head, http_request& out);
  parse_status parse_chunked(std::string_view in, http_request& out);

  request_limits limits_;
  body_pool* pool_ = nullptr;
  // Header-end scan: all of in[skip_, scan_) is known not to contain the header end.
  size_t skip_ = 0;  // leading empty lines before the request line
  size_t scan_ = 0;
  size_t line_end_ = 0;  // offset of the request line's '\n', 0 until found
  size_t head_end_ = 0;  // offset just past the empty line, 0 until found
  size_t consumed_ = 0;
  bool started_ = false;
  int error_status_ = 0;
  const char* error_reason_ = "";
  // Chunked decoding state (offsets into the input, so the caller may move its buffer).
  enum class chunk_state : uint8_t { size, data, data_crlf, trailer, done };
  chunk_state cstate_ = chunk_state::size;
  size_t cpos_ = 0;       // next input offset to decode
  uint64_t cremain_ = 0;  // bytes left in the current chunk
  size_t trailer_bytes_ = 0;
  std::string body_;  // decoded chunked body
};

// Parses an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"); returns unix seconds or -1.
int64_t parse_http_date(std::string_view s);
// Formats unix seconds as IMF-fixdate into out (29 chars); returns the view.
std::string_view format_http_date(int64_t t, char (&out)[32]);

}  // namespace feedplane::net
