// HTTP/1.1 client on the io_uring loop: GET with keep-alive reuse per host, DNS through
// c-ares, TLS over memory BIOs, connect and total timeouts, redirects (each hop reported,
// permanent or not), conditional requests, RFC 3229 `A-IM: feed`, gzip/deflate, a body
// cap, and a distinct fetch_error for every failure. Knows nothing about feeds.
//
// Memory: a connection holds no buffer of its own while idle. Receives use the loop's
// provided buffers (lent only while a recv completes, as the server's), TLS reads them in
// place and decrypts into one per-client scratch, request and TLS output borrow pooled
// strings while there is something to send, and the response parser belongs to the fetch
// (per-fetch state is a slab of reused txns, ids index it). Idle connections are closed
// after idle_timeout_ms or beyond max_idle_connections, and their objects freed (a few
// are kept for reuse). connection_memory() says what connections hold now.
//
// Threading and lifetime: one client per loop, used on the loop's thread only. Before
// destroying it call shutdown() and run the loop until quiescent() (every io_uring op it
// started has completed); the destructor asserts nothing but frees memory the kernel
// might otherwise still write to.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "feedplane/net/content_decoding.h"
#include "feedplane/net/dns.h"
#include "feedplane/net/fetch_error.h"
#include "feedplane/net/loop.h"
#include "feedplane/net/string_pool.h"
#include "feedplane/net/tls_client.h"
#include "feedplane/net/url.h"

namespace feedplane::net {

// A name pinned to an address, as curl's --resolve HOST:PORT:ADDR: connections to HOST on
// PORT go to ADDR without DNS. HOST "*" pins every name on that port.
struct resolve_pin {
  std::string host;  // lower-case, or "*"
  uint16_t port = 0;
  ip_address addr;
};

// Parses "HOST:PORT:ADDR" (ADDR an IPv4 literal, or IPv6 with or without brackets). False,
// with *error saying why, for anything else.
bool parse_resolve_pin(std::string_view text, resolve_pin& out, std::string* error);

struct client_options {
  uint32_t connect_timeout_ms = 5'000;            // TCP connect + TLS handshake
  uint32_t total_timeout_ms = 5'000;              // whole fetch, redirects included
  uint64_t max_body = uint64_t{8} * 1024 * 1024;  // wire body and decoded body
  uint32_t max_redirects = 5;
  uint32_t per_host_connections = 2;      // concurrent connections per scheme+host+port
  uint32_t idle_timeout_ms = 30'000;      // an idle pooled connection is closed after this
  uint32_t max_idle_connections = 1024;   // across all hosts; beyond it, close instead of pooling
  uint32_t pool_gc_interval_ms = 60'000;  // how often per-host state with no connections is freed
  uint32_t max_header_bytes = 64 * 1024;
  // A fetch slot keeps its body buffers for the next fetch (no allocation per fetch) up to
  // this capacity each; a larger one, grown for a large document, is freed when its fetch
  // ends. Without the cap every slot would keep the largest document it ever carried: at a
  // thousand fetches in flight and a 150 KB feed now and then, ~400 MB held for nothing.
  uint32_t keep_buffer_bytes = 32 * 1024;
  std::string user_agent = "feedplane/0.1";
  std::string ca_file;  // empty: the system CA store
  dns_options dns;
  std::vector<resolve_pin> pins;  // checked before DNS; a later pin of a name wins
  // false: a name that resolves (or an IP literal URL that is) loopback, private,
  // link-local or metadata fails with address_not_allowed, checked on every connection,
  // so after every redirect too. Pinned names are exempt: the pin is the operator's word.
  bool allow_private = true;
  // Fetches in flight at once (redirect hops and waiting for a connection included); 0 =
  // unlimited. fetch() beyond it fails at once with too_many_in_flight (the callback runs
  // before fetch() returns): the caller's backpressure signal, checkable first with
  // can_fetch().
  uint32_t max_in_flight = 0;
  // Hosts whose TLS session tickets are kept for resumption (two each; least recently used
  // dropped beyond it). 0: every HTTPS connection does a full handshake.
  uint32_t tls_session_hosts = 4096;
};

struct fetch_request {
  std::string url;
  std::string if_none_match;      // stored ETag, sent as If-None-Match
  std::string if_modified_since;  // stored Last-Modified, sent as If-Modified-Since
  bool a_im_feed = false;         // send `A-IM: feed` (RFC 3229 delta feeds, 226 IM Used)
  bool insecure = false;          // per-source opt-out: do not verify the certificate
  bool accept_compressed = true;  // Accept-Encoding: gzip, deflate
  // Extra request headers ("Name", "value"); names/values with CR, LF or NUL are refused.
  std::vector<std::pair<std::string, std::string>> headers;
  uint32_t total_timeout_ms = 0;  // 0: the client's default
  uint64_t max_body = 0;          // 0: the client's default
};

struct redirect_hop {
  std::string from;        // the URL that answered with a redirect
  std::string to;          // the resolved Location
  int status = 0;          // 301, 302, 303, 307 or 308
  bool permanent = false;  // 301 and 308: the caller should update its stored URL
};

struct fetch_result {
  fetch_error error = fetch_error::ok;
  std::string detail;  // more about the error (OpenSSL text, errno text), may be empty
  int status = 0;      // final HTTP status (0 if no response)
  std::string final_url;
  std::vector<redirect_hop> redirects;
  // The headers a crawler acts on (empty when absent).
  std::string etag, last_modified, cache_control, expires, retry_after, content_type,
      content_encoding, im;
  std::vector<std::pair<std::string, std::string>> headers;  // all final response headers
  std::string body;            // decoded (Content-Encoding removed); empty for 304
  uint64_t wire_bytes = 0;     // HTTP bytes received for the whole chain (before TLS)
  uint64_t decoded_bytes = 0;  // body.size()
  uint64_t elapsed_ms = 0;
  bool reused_connection = false;  // the final response came over a pooled connection
  bool tls_resumed = false;        // ... over a TLS connection whose handshake resumed a session

  // Where a crawler should move its stored URL: the target of the last hop of the unbroken
  // run of permanent redirects (301/308) at the start of the chain; empty when the first
  // hop is temporary or there was none (a 302 after a 301 keeps the 301's target).
  std::string_view permanent_url() const {
    std::string_view u;
    for (const auto& h : redirects) {
      if (!h.permanent) break;
      u = h.to;
    }
    return u;
  }
};

class http_client {
 public:
  // Called once per fetch on the loop thread. The result may be moved from; it is
  // reused after the callback returns.
  using done_fn = void (*)(void* ctx, uint64_t id, fetch_result& r);

  static std::unique_ptr<http_client> create(loop& l, const client_options& opt,
                                             std::string* error);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  // Starts a fetch; returns its id (never 0). `done` is always called exactly once,
  // possibly before fetch() returns (bad URL, too_many_in_flight).
  uint64_t fetch(const fetch_request& req, done_fn done, void* ctx);
  // False when fetch() would be refused with too_many_in_flight (max_in_flight reached).
  bool can_fetch() const { return opt_.max_in_flight == 0 || active_ < opt_.max_in_flight; }
  // Fails the fetch with `cancelled` (its callback runs now).
  void cancel(uint64_t id);

  // Fails every fetch with `cancelled` and closes every connection.
  void shutdown();
  // True when no io_uring operation of this client is in flight.
  bool quiescent() const;
  size_t in_flight() const { return active_; }
  size_t host_pools() const { return pools_.size(); }
  // Connections in some host's idle pool now.
  size_t idle_connections() const { return idle_total_; }
  // Connection objects allocated now: open, closing, or kept free for reuse (a bounded
  // number beyond the open ones).
  size_t connection_objects() const { return conns_.size(); }
  // Heap bytes held by connection state now: the connection objects, their output and
  // address buffers and TLS input copies (not OpenSSL's own per-connection state).
  size_t connection_memory() const;
  // Heap bytes held by per-fetch state (the txn slab: parsers, bodies, results).
  size_t fetch_state_memory() const;
  // Releases the buffers of fetch slots not in use and of the output buffer pool (the
  // slots themselves stay: ids index them). The pool-collection timer does it when no
  // fetch is in flight; the next fetches allocate again until warm.
  void trim();
  // The TLS ticket cache (sessions kept per host for resumption).
  tls_context::cache_stats tls_sessions() const { return tls_->session_stats(); }
  // The pinned address of host:port (its own pin, else the "*" pin of the port), or null.
  const ip_address* pinned(std::string_view host, uint16_t port) const;

  struct counters {
    uint64_t connections_opened = 0;
    uint64_t connections_reused = 0;
    uint64_t retries_on_stale = 0;
    uint64_t recv_completions = 0;  // io_uring recv CQEs (per fetch: how batched reads are)
    uint64_t send_completions = 0;
    uint64_t tls_handshakes = 0;            // TLS handshakes completed
    uint64_t tls_resumed = 0;               // of which resumed a cached session (a ticket)
    uint64_t refused_in_flight = 0;         // fetches refused with too_many_in_flight
    uint64_t connection_objects_freed = 0;  // conn objects returned to the allocator
  };
  const counters& stats() const { return stats_; }

 private:
  struct txn;
  struct conn;
  struct host_pool;
  struct dns_watch_entry {
    uint32_t mask = 0;   // POLLIN / POLLOUT wanted by c-ares; 0 = not watched
    bool armed = false;  // a poll request is in flight
    op_id op;
  };
  friend struct conn;
  friend struct txn;

  http_client(loop& l, const client_options& opt);

  // txn lifecycle
  txn* alloc_txn();
  void start_hop(txn* t);
  void unwait(txn* t);  // takes t out of its pool's waiting queue
  // Records u in the chain; visited(): u is already in it (redirect loop detection).
  static void visit(txn* t, const url& u);
  static bool visited(const txn* t, std::string_view u);
  // Resizes t's result headers to n, moving strings to and from a spare list so that their
  // buffers survive from one response to the next.
  static void set_header_count(txn* t, size_t n);
  void finish(txn* t, fetch_error e, std::string detail = {});
  static void on_total_timeout(void* ctx);

  // connections
  conn* new_conn(host_pool& p, txn* t);
  void assign(conn* c, txn* t);
  void drive_tls(conn* c);
  void send_request(conn* c);
  void arm_recv(conn* c);
  void flush_out(conn* c);
  bool handle_plain(conn* c, const char* data, size_t n);
  void pump_pool(host_pool& p);
  void connect_addr(conn* c);
  void queue_out(conn* c, std::string_view bytes);
  void on_response(conn* c, bool reusable);
  void handle_eof(conn* c);
  void conn_failed(conn* c, fetch_error e, std::string detail);
  void release(conn* c, bool reusable, host_pool& p);
  void close_conn(conn* c);
  void maybe_free(conn* c);
  static void on_reap_timer(void* ctx);
  static void on_dns(void* ctx, fetch_error e, const std::vector<ip_address>& addrs);
  bool addresses_allowed(const std::vector<ip_address>& addrs) const;
  static void on_conn_timeout(void* ctx);
  static void on_idle_timeout(void* ctx);
  void on_connect_cqe(conn* c, const completion& cq);
  void on_send_cqe(conn* c, const completion& cq);
  void on_recv_cqe(conn* c, const completion& cq);
  void on_tls_bytes(conn* c, const char* data, size_t n);

  // DNS fd readiness through loop poll requests
  static void dns_watch(void* ctx, int fd, bool readable, bool writable);
  static void on_dns_poll(void* ctx, const completion& c);
  void arm_dns_poll(int fd, dns_watch_entry& e);
  static void on_dns_timer(void* ctx);
  static void on_gc_timer(void* ctx);
  void arm_dns_timer();

  loop& loop_;
  client_options opt_;
  std::unique_ptr<dns_resolver> dns_;
  std::unique_ptr<tls_context> tls_;
  content_decoder decoder_;
  // Flat tables: a fetch finds its pool and, with pins, its pin (their node maps and a new
  // key string per pin lookup were 1.7% of a crawl's CPU).
  absl::flat_hash_map<std::string, std::unique_ptr<host_pool>> pools_;
  absl::flat_hash_map<std::string, ip_address> pins_;  // "host:port" (or "*:port") -> address
  mutable std::string pin_key_;  // pinned()'s key, kept so that a lookup allocates nothing
  // Per-fetch state: a slab that grows with the peak in flight; a fetch id is the slot's
  // generation (high 32 bits) and index + 1 (low 32 bits), so cancel() needs no map.
  std::vector<std::unique_ptr<txn>> txns_;
  std::vector<uint32_t> txn_free_;            // free slot indices
  size_t active_ = 0;                         // fetches in flight
  std::vector<std::unique_ptr<conn>> conns_;  // every conn object, live, closing or free
  std::vector<conn*> conn_free_;              // freed conns, kept for reuse (bounded)
  timer reap_timer_;         // returns free conn objects beyond the reserve to the allocator
  uint32_t idle_total_ = 0;  // connections in some pool's idle list
  counters stats_;
  std::string scratch_;
  string_pool bufs_;               // output buffers lent to busy connections
  std::unique_ptr<char[]> plain_;  // TLS plaintext scratch (responses are parsed from it)

  std::unordered_map<int, dns_watch_entry> dns_fds_;
  uint32_t dns_polls_in_flight_ = 0;
  timer dns_timer_;
  timer gc_timer_;  // frees host pools with no connections and no waiting fetches
};

}  // namespace feedplane::net
