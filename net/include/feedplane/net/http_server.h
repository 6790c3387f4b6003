// HTTP/1.1 server on one shard's loop: multishot accept and multishot recv with provided
// buffers, keep-alive, pipelined requests answered in order, limits (414/431/413),
// header/idle timeouts (408 + close), HEAD, conditional GET (304), gzip, a route table with
// path parameters and decoded query strings, JSON errors, deferred answers with a deadline.
//
// One http_server per shard, all sharing nothing; each accepts on its own SO_REUSEPORT
// listener. Handlers run on the shard thread and fill an http_response synchronously (or
// defer it). The router is immutable once serving starts, so one may be shared by every
// shard; per-shard state reaches a handler through the server's context pointer
// (request_context::context(), the shard in dataplane).
//
// Errors. Every error the server answers itself, and every error a handler answers with
// set_json_error(), is `{"error": CODE, "message": TEXT}` with Content-Type
// application/json (no body for HEAD). CODE is stable, for programs; TEXT is for people:
//   400 bad_request (malformed request), invalid_query (query string), invalid_path
//       (a path parameter's percent escape); 404 not_found; 405 method_not_allowed (with
//   Allow); 408 request_timeout; 413 payload_too_large; 414 uri_too_long;
//   431 header_fields_too_large; 501 not_implemented; 505 http_version_not_supported;
//   503 timeout (a deferred answer that did not come in time, with Retry-After: 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/http_request.h"
#include "feedplane/net/loop.h"
#include "feedplane/net/string_pool.h"

struct libdeflate_compressor;
typedef struct bio_st BIO;

namespace feedplane::net {

class http_server;
class tls_server_context;
struct tls_bio_io;
struct http_response;

// Bytes readable after the end of request_context::padded_body(): SIMDJSON_PADDING (64), so
// dataplane parses a body in place with
//   simdjson::padded_string_view(b.data(), b.size(), b.size() + net::body_padding)
// (net does not link simdjson; static_assert(simdjson::SIMDJSON_PADDING <= body_padding)).
inline constexpr size_t body_padding = 64;

// A request answered later: a handler that cannot answer at once (the state it needs lives
// on another shard, say) copies http_response::later, sets http_response::defer and returns;
// whoever has the answer calls later.complete(response) on the same shard's thread. The
// connection answers nothing else meanwhile (pipelined requests wait, in order; reading
// pauses). If complete() does not come within server_options::defer_timeout_ms the client
// gets 503 {"error": "timeout"} with Retry-After: 1 and the connection goes on with the
// next pipelined request. complete() returns false and does nothing when the answer is no
// longer wanted: the client went away, or the 503 was already sent.
class deferred_response {
 public:
  bool complete(http_response& r) const;
  bool valid() const { return srv_ != nullptr; }

 private:
  friend class http_server;
  http_server* srv_ = nullptr;
  void* conn_ = nullptr;
  uint32_t gen_ = 0;  // the connection slot's generation (bumped when it is released)
  uint32_t seq_ = 0;  // the request's number on that connection (a late answer misses)
};

// What a route handler fills. The server reuses one per shard; views must stay valid until
// the handler returns (the server copies the bytes into the connection's output), unless
// `keep` is set (below).
struct http_response {
  int status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view body;
  std::string_view gzip_body;      // optional precompressed form of body (else compressed here)
  std::string_view etag;           // quoted entity tag, e.g. "\"5f3a-2000\"" ("" = none)
  int64_t last_modified = -1;      // unix seconds, -1 = none
  std::string_view cache_control;  // "" = none
  bool compressible = true;        // may be gzip'd for clients that accept it
  std::string extra_headers;       // raw "Name: value\r\n" lines
  std::string storage;             // owned bytes for dynamic bodies: body = storage
  // Keeps body and gzip_body alive until they are sent. Set, a plaintext connection sends
  // a large body from where it is (a gather write) instead of copying it into its output,
  // and holds `keep` until the send completes: the reflector's rendered feeds. Reset by
  // set_body and set_json_error (their bytes are the shard's, not kept).
  std::shared_ptr<const void> keep;
  bool defer = false;       // set by a handler that answers later through `later`
  deferred_response later;  // filled by the server before the handler runs

  // Convenience: owned body text.
  void set_body(std::string_view b) {
    storage.assign(b);
    body = storage;
    keep.reset();
  }
  void clear();
};

// The error shape of the server and of the API: status, Content-Type application/json,
// body {"error": CODE, "message": MESSAGE} (MESSAGE JSON-escaped; it must not point into
// r.storage, which holds the body). Clears body, gzip_body, etag and last_modified; keeps
// extra_headers. Reuses r.storage: no allocation once it has grown.
void set_json_error(http_response& r, int status, std::string_view code, std::string_view message);
// Backpressure (a full ring): 503 {"error": code, "message": ...} with Retry-After.
void set_unavailable(http_response& r, std::string_view message, uint32_t retry_after_s = 1,
                     std::string_view code = "unavailable");
// The stable CODE for a status the server answers itself ("not_found" for 404, ...).
std::string_view error_code(int status);
// Conditional GET (RFC 9110 13.1): true when a GET or HEAD with these If-None-Match and
// If-Modified-Since values ("" when absent) gets 304 for a representation with this ETag
// ("" = none) and Last-Modified (unix seconds, -1 = none). If-None-Match, when present,
// decides alone (weak comparison). The server applies it to every 200 answer to GET and
// HEAD; a handler may ask first to skip building a body that will not be sent.
bool not_modified(std::string_view if_none_match, std::string_view if_modified_since,
                  std::string_view etag, int64_t last_modified);

struct path_param {
  std::string_view name;   // as in the pattern ("token" for {token})
  std::string_view value;  // percent-decoded
};

struct query_param {
  std::string_view name;  // percent-decoded, '+' read as a space
  std::string_view value;
};

// A request's query string split at '&' and '=' and decoded, in order; repeated names kept.
// "a&b=" gives a = "" and b = "". Views live until the handler returns.
class query_string {
 public:
  static constexpr uint32_t capacity = 64;  // more parameters: 400 invalid_query

  // The first parameter named `name`, or the next one after `after` (repeated names:
  // for (auto* p = q.find("tag"); p; p = q.find("tag", p)) ...); null when there is none.
  const query_param* find(std::string_view name, const query_param* after = nullptr) const;
  // The value of the first parameter named `name`, or `absent`.
  std::string_view get(std::string_view name, std::string_view absent = {}) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const query_param& operator[](uint32_t i) const { return items_[i]; }
  const query_param* begin() const { return items_; }
  const query_param* end() const { return items_ + size_; }

 private:
  friend class http_server;
  query_param items_[capacity];
  uint32_t size_ = 0;
};

// What a handler gets besides the response to fill: the request, its path parameters and
// query string (both decoded), the body ready for simdjson, and the server's context
// pointer. One per server, reused: nothing here allocates per request. Valid until the
// handler returns (copy what a deferred answer needs).
class request_context {
 public:
  static constexpr uint32_t max_params = 8;

  const http_request& request() const { return *req_; }
  // The pointer the http_server was constructed with (the shard, in dataplane).
  void* context() const { return ctx_; }
  template <class T>
  T& context_as() const {
    return *static_cast<T*>(ctx_);
  }
  // The value of path parameter `name` ("" if the route has none of that name).
  std::string_view param(std::string_view name) const;
  uint32_t param_count() const { return param_count_; }
  const path_param& param_at(uint32_t i) const { return params_[i]; }
  const query_string& query() const { return query_; }
  // The connection's socket, for getpeername() (per-address limits); only while the
  // handler runs.
  int connection_fd() const { return fd_; }
  // The body with body_padding readable bytes after its end. In place (no copy) when the
  // request arrived over several receives, as every body larger than a receive buffer
  // does; otherwise copied once into a per-server scratch buffer that is reused.
  std::string_view padded_body();

 private:
  friend class http_server;
  const http_request* req_ = nullptr;
  void* ctx_ = nullptr;
  int fd_ = -1;                          // the connection's socket
  bool body_in_place_ = false;           // body has body_padding readable bytes after it
  std::string* body_scratch_ = nullptr;  // the server's, for bodies that must be copied
  uint32_t param_count_ = 0;
  path_param params_[max_params];
  query_string query_;
};

using route_handler = std::function<void(request_context&, http_response&)>;

// The route table.
//
// A pattern is '/'-separated segments; each is a literal ("api", "sources:import") or a
// parameter "{name}", optionally followed by a literal suffix in the same segment
// ("{token}.atom"). A parameter matches one non-empty segment without its suffix, never
// across '/'; its value is percent-decoded (a malformed escape is 400 invalid_path).
// Literals match the raw path bytes. add_prefix() routes match every path starting with
// the prefix ("/static/"). Precedence when several routes match a path:
//   1. a pattern beats a prefix; a longer prefix beats a shorter one;
//   2. between patterns, the leftmost segment where they differ decides: a literal beats a
//      parameter, and between parameters the longer literal suffix wins. So
//      /api/sources:import beats /api/{name}, /f/{token}.atom beats /f/{token} (on
//      /f/abc.atom, token = "abc"), and /api/sources/{id} never sees /api/sources:import
//      (another number of segments).
// The best match names the resource; when it has no handler for the method the answer is
// 405 with Allow listing its methods. A GET handler also answers HEAD.
class router {
 public:
  // Throws std::invalid_argument (at set-up, never while serving) on a malformed pattern,
  // more than request_context::max_params parameters or 16 segments, a (method, pattern)
  // added twice, or two patterns of one shape with different parameter names.
  void add(std::string_view method, std::string_view pattern, route_handler h);
  void add_prefix(std::string_view method, std::string_view prefix, route_handler h);

  struct match {
    const route_handler* handler = nullptr;  // null: `status` says why
    int status = 0;                          // 404, or 405 with `allow`
    std::string_view allow;                  // "GET, HEAD, POST"
    uint32_t param_count = 0;
    path_param params[request_context::max_params];  // raw values (not yet decoded)
  };
  // Fills *m for (method, path). Never allocates.
  void find(std::string_view method, std::string_view path, match* m) const;

  static constexpr uint32_t max_segments = 16;

 private:
  struct segment {
    std::string literal;  // the whole segment, or a parameter's suffix
    int param = -1;       // parameter index, -1 for a literal segment
  };
  struct method_handler {
    std::string method;
    route_handler h;
  };
  struct resource {
    std::string pattern;
    bool prefix = false;
    std::vector<segment> segments;
    std::vector<std::string> param_names;
    std::vector<method_handler> handlers;
    std::string allow;
  };
  void add_resource(std::string_view method, resource r, route_handler h);
  bool match_segments(const resource& r, const std::string_view* segs, match* m) const;
  std::vector<resource> resources_;                   // in precedence order: the first match wins
  std::vector<uint32_t> by_count_[max_segments + 1];  // patterns by segment count, in order
  size_t first_prefix_ = 0;                           // prefixes follow the patterns
};

struct server_options {
  request_limits limits;
  uint32_t header_timeout_ms = 10'000;  // first byte of a request -> complete request
  uint32_t idle_timeout_ms = 60'000;    // between requests on keep-alive; stalled sends
  uint32_t linger_ms = 2'000;           // draining input after a final response
  bool gzip = true;
  uint32_t gzip_min_bytes = 256;
  // libdeflate's 1 (fastest, nginx's default) .. 12. Dynamic answers are compressed once per
  // response, so the fastest level: at 6 a bulk API answer's gzip was 7% of a shard's CPU.
  // Bodies polled many times come precompressed (`gzip_body`) at their owner's level.
  uint32_t gzip_level = 1;
  uint32_t output_high_water = 256 * 1024;  // stop reading pipelined requests above this
  // A body of at least this many bytes whose response has `keep` is sent from where it
  // is, not copied (plaintext only: TLS encrypts from a copy anyway).
  uint32_t gather_min_bytes = 4096;
  uint32_t defer_timeout_ms = 10'000;  // deferred answer not completed: 503 + Retry-After
  // Input blocks (requests that span receives, large bodies) kept for reuse, in bytes.
  size_t input_pool_bytes = size_t{8} << 20;
  // Set: every connection is HTTPS (tls_server.h). Not owned; outlives the server; may be
  // shared by every shard's server. A TLS connection has header_timeout_ms from accept to
  // finish its handshake (bytes that trickle in do not extend it); a client that speaks
  // plain HTTP gets 400 bad_request ("plain HTTP request sent to an HTTPS port").
  const tls_server_context* tls = nullptr;
};

struct server_stats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t errors_4xx = 0;         // 4xx and 5xx answers, parser errors included
  uint64_t not_modified = 0;       // 304 answers to conditional GETs
  uint64_t timeouts = 0;           // 408 sent or idle connection closed
  uint64_t deferred_timeouts = 0;  // 503 sent for a deferred answer that did not come
  uint64_t open = 0;               // connections open now
  uint64_t bytes_in = 0;           // bytes received on the wire (ciphertext under TLS)
  uint64_t bytes_out = 0;          // bytes sent on the wire (ciphertext under TLS)
  uint64_t tls_handshakes = 0;     // TLS handshakes completed (resumed ones included)
  uint64_t tls_resumed = 0;        // of which resumed a session (a ticket): no certificate sent
  uint64_t tls_failed = 0;         // handshakes refused: not a ClientHello, plain HTTP, no
                                   // certificate for the name, no common protocol or cipher
};

class http_server {
 public:
  // context: opaque, handed to every handler (request_context::context()); the server
  // never dereferences it. routes must outlive the server.
  http_server(loop& l, const router& routes, const server_options& opt, void* context = nullptr);
  // Destroy only after the loop stopped running: connections' ops hold pointers here.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Starts a multishot accept on listen_fd (owned by the caller, kept open while serving).
  bool start(int listen_fd);
  // Stops accepting and closes every connection (their ops are cancelled).
  void shutdown();
  const server_stats& stats() const { return stats_; }
  // OpenSSL's reason for the last failed TLS handshake or connection ("" if none yet), for
  // logs: "wrong version number", "http request", "no shared cipher", ...
  const std::string& last_tls_error() const { return tls_last_error_; }
  // Bytes of heap owned by connection state now (pool slots + buffers), for measurements.
  size_t connection_memory() const;
  // Bytes of input blocks held for reuse (bounded by server_options::input_pool_bytes).
  size_t input_pool_memory() const { return in_pool_bytes_; }
  // Bytes of decoded-chunked-body buffers held for reuse.
  size_t body_pool_memory() const { return body_pool_.bytes(); }
  void* context() const { return context_; }

  struct connection;  // private to http_server.cc
  struct request_meta;

 private:
  friend struct connection;
  void on_accept(const completion& c);
  static void on_accept_retry(void* self);
  connection* alloc_connection();
  bool start_tls(connection& k);  // a new SSL for an accepted connection (opt_.tls set)
  void release(connection& k);
  // body_in_place: req's body sits in a connection input block (body_padding after it).
  void handle(connection& k, const http_request& req, bool body_in_place);
  // Decodes path parameters and the query string into rctx_; false: resp_ holds the 400.
  bool prepare_context(const http_request& req, bool body_in_place);
  void write_response(connection& k, const request_meta& req, http_response& r);
  friend class deferred_response;
  bool complete_deferred(void* conn, uint32_t gen, uint32_t seq, http_response& r);
  // Sends a deferred request's answer, then goes on with what waited behind it.
  void finish_deferred(connection& k, http_response& r);
  void expire_deferred(connection& k);
  // head: the request being refused is a HEAD (its raw bytes say so): no body.
  void write_error(connection& k, int status, const char* reason, bool head);
  std::string_view date();
  // Output buffers are lent to connections only while they have output (per-shard pool,
  // no allocation in steady state, no buffer held by an idle connection).
  void take_buffer(std::string& s);
  void give_buffer(std::string& s);

  // A heap block for input that spans receives; body_padding zeroed bytes follow `cap`.
  struct input_block {
    std::unique_ptr<char[]> p;
    size_t cap = 0;
  };
  // Input blocks are lent like output buffers: a connection holds one only while a request
  // is split across receives, and a 100 KB body reuses a pooled block instead of growing a
  // fresh string each time. take_input returns a block of at least `want` bytes.
  input_block take_input(size_t want);
  void give_input(input_block& b);

  loop& loop_;
  const router& routes_;
  server_options opt_;
  void* context_ = nullptr;
  int listen_fd_ = -1;
  op_id accept_op_;
  bool accepting_ = false;
  bool stopping_ = false;
  timer accept_retry_;

  // Connection pool: chunks never move; free slots on a stack. Grows with peak load only.
  // Decoded chunked bodies, lent to the connections' parsers (bounded). Declared before
  // the connections: their parsers give buffers back when destroyed.
  body_pool body_pool_;
  std::vector<std::unique_ptr<connection[]>> chunks_;
  std::vector<connection*> free_;
  std::vector<connection*> all_;

  http_request req_;    // scratch for the request being handled (one per shard)
  http_response resp_;  // scratch response (reused, keeps capacity)
  router::match match_;
  request_context rctx_;
  std::unique_ptr<char[]> decoded_;  // percent-decoded params and query (request-line sized)
  size_t decoded_cap_ = 0;
  std::string body_scratch_;  // bodies copied for padded_body()
  std::string msg_;           // error messages being composed
  std::string err_body_;      // write_error's JSON body
  http_response timeout_resp_;
  std::vector<input_block> in_pool_;
  size_t in_pool_bytes_ = 0;
  // TLS (null/empty when opt_.tls is not set): one BIO shared by every connection's SSL,
  // pointed at the connection before each OpenSSL call (tls_bio.h), and the plaintext
  // scratch that received records are decrypted into before they are parsed.
  std::unique_ptr<tls_bio_io> tls_io_;
  BIO* tls_bio_ = nullptr;
  std::unique_ptr<char[]> tls_plain_;
  std::string tls_last_error_;
  libdeflate_compressor* gz_ = nullptr;
  std::string gz_buf_;
  string_pool buf_pool_;
  int64_t date_sec_ = -1;
  char date_[32] = {};
  int64_t lm_sec_ = -1;  // last Last-Modified value formatted into lm_
  char lm_[32] = {};
  server_stats stats_;
};

// Opens a TCP listener on "ADDR:PORT" ("127.0.0.1:8080", "[::1]:0", "0.0.0.0:80").
// reuseport: SO_REUSEPORT so that every shard binds its own. Returns fd or -1 with *error.
int listen_tcp(std::string_view addr_port, bool reuseport, std::string* error);
// The port a socket is bound to.
int bound_port(int fd);

}  // namespace feedplane::net
