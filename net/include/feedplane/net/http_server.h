// HTTP/1.1 server on one shard's loop: multishot accept and multishot recv with provided
// buffers, keep-alive, pipelined requests answered in order, limits (414/431/413),
// header/idle timeouts (408 + close), HEAD, conditional GET (304), gzip, a route table.
//
// One http_server per shard, all sharing nothing; each accepts on its own SO_REUSEPORT
// listener. Handlers run on the shard thread and fill an http_response synchronously.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/http_request.h"
#include "feedplane/net/loop.h"

struct libdeflate_compressor;

namespace feedplane::net {

class http_server;
struct http_response;

// A request answered later: a handler that cannot answer at once (the state it needs lives
// on another shard, say) copies http_response::later, sets http_response::defer and returns;
// whoever has the answer calls later.complete(response) on the same shard's thread. The
// connection answers nothing else meanwhile (pipelined requests wait, in order; reading
// pauses). If the client went away first, complete() returns false and does nothing; if
// complete() never comes, the connection is closed after the idle timeout.
class deferred_response {
 public:
  bool complete(http_response& r) const;
  bool valid() const { return srv_ != nullptr; }

 private:
  friend class http_server;
  http_server* srv_ = nullptr;
  void* conn_ = nullptr;
  uint32_t gen_ = 0;
};

// What a route handler fills. The server reuses one per shard; views must stay valid until
// the handler returns (the server copies the bytes into the connection's output).
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
  bool defer = false;              // set by a handler that answers later through `later`
  deferred_response later;         // filled by the server before the handler runs

  // Convenience: owned body text.
  void set_body(std::string_view b) {
    storage.assign(b);
    body = storage;
  }
  void clear();
};

using route_handler = std::function<void(const http_request&, http_response&)>;

// The route table: exact paths and path prefixes, per method. A GET route also answers
// HEAD. Later issues add their routes here; lookups are a linear scan of a short table.
class router {
 public:
  void add(std::string_view method, std::string path, route_handler h);
  void add_prefix(std::string_view method, std::string prefix, route_handler h);
  // The handler for (method, path), or null with *status = 404 (no such path) or 405
  // (path exists, method not; *allow lists the methods).
  const route_handler* find(std::string_view method, std::string_view path, int* status,
                            std::string* allow) const;

 private:
  struct route {
    std::string method;
    std::string path;
    bool prefix = false;
    route_handler h;
  };
  std::vector<route> routes_;
};

struct server_options {
  request_limits limits;
  uint32_t header_timeout_ms = 10'000;  // first byte of a request -> complete request
  uint32_t idle_timeout_ms = 60'000;    // between requests on keep-alive; stalled sends
  uint32_t linger_ms = 2'000;           // draining input after a final response
  bool gzip = true;
  uint32_t gzip_min_bytes = 256;
  uint32_t output_high_water = 256 * 1024;  // stop reading pipelined requests above this
};

struct server_stats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t errors_4xx = 0;  // 4xx and 5xx answers, parser errors included
  uint64_t timeouts = 0;    // 408 sent or idle connection closed
  uint64_t open = 0;        // connections open now
};

class http_server {
 public:
  http_server(loop& l, const router& routes, const server_options& opt);
  // Destroy only after the loop stopped running: connections' ops hold pointers here.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Starts a multishot accept on listen_fd (owned by the caller, kept open while serving).
  bool start(int listen_fd);
  // Stops accepting and closes every connection (their ops are cancelled).
  void shutdown();
  const server_stats& stats() const { return stats_; }
  // Bytes of heap owned by connection state now (pool slots + buffers), for measurements.
  size_t connection_memory() const;

  struct connection;  // private to http_server.cc
  struct request_meta;

 private:
  friend struct connection;
  void on_accept(const completion& c);
  static void on_accept_retry(void* self);
  connection* alloc_connection();
  void release(connection& k);
  void handle(connection& k, const http_request& req);
  void write_response(connection& k, const request_meta& req, http_response& r);
  friend class deferred_response;
  bool complete_deferred(void* conn, uint32_t gen, http_response& r);
  // head: the request being refused is a HEAD (its raw bytes say so): no body.
  void write_error(connection& k, int status, const char* reason, bool head);
  std::string_view date();
  // Output buffers are lent to connections only while they have output (per-shard pool,
  // no allocation in steady state, no buffer held by an idle connection).
  void take_buffer(std::string& s);
  void give_buffer(std::string& s);

  loop& loop_;
  const router& routes_;
  server_options opt_;
  int listen_fd_ = -1;
  op_id accept_op_;
  bool accepting_ = false;
  bool stopping_ = false;
  timer accept_retry_;

  // Connection pool: chunks never move; free slots on a stack. Grows with peak load only.
  std::vector<std::unique_ptr<connection[]>> chunks_;
  std::vector<connection*> free_;
  std::vector<connection*> all_;

  http_request req_;    // scratch for the request being handled (one per shard)
  http_response resp_;  // scratch response (reused, keeps capacity)
  libdeflate_compressor* gz_ = nullptr;
  std::string gz_buf_;
  std::vector<std::string> buf_pool_;
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
