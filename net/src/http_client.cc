#include "feedplane/net/http_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

#include "feedplane/base/ascii.h"
#include "feedplane/net/http_response.h"

namespace feedplane::net {

namespace {
constexpr size_t k_plain_buf = size_t{16} * 1024;  // one TLS record of plaintext
constexpr uint32_t k_max_stale_retries = 2;
// Free conn objects kept for reuse; beyond it they go back to the allocator (reap timer).
constexpr size_t k_conn_reserve = 64;

bool is_redirect(int s) { return s == 301 || s == 302 || s == 303 || s == 307 || s == 308; }

bool header_text_ok(std::string_view s) {
  for (char c : s)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

bool header_name_ok(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c <= ' ' || c == ':' || c >= 0x7f) return false;
  return true;
}

fetch_error classify_connect(int res) {
  switch (-res) {
    case ECONNREFUSED:
      return fetch_error::connect_refused;
    case ETIMEDOUT:
      return fetch_error::connect_timeout;
    default:
      return fetch_error::connect_failed;
  }
}

// A pin's key, "host:port" (or "*:port"), written over out: the constructor files pins
// under it and pinned() looks them up with it in a kept string (no allocation per lookup).
void pin_key(std::string_view host, uint16_t port, std::string& out) {
  char digits[8];
  out.assign(host).push_back(':');
  out.append(digits, size_t(std::to_chars(digits, digits + sizeof(digits), port).ptr - digits));
}
}  // namespace

// A scheme+host+port (+ verification mode): its connections and the fetches waiting for one.
struct http_client::host_pool {
  std::string host;
  uint16_t port = 0;
  bool https = false;
  bool insecure = false;
  uint32_t open = 0;        // connections counted against per_host_connections
  std::vector<conn*> idle;  // keep-alive connections ready for a request
  // Fetches waiting for a connection slot: an intrusive FIFO through txn::wprev/wnext (no
  // allocation per queued fetch, O(1) removal on cancel).
  txn* wait_head = nullptr;
  txn* wait_tail = nullptr;
  bool waiting_empty() const { return wait_head == nullptr; }
};

// One fetch, across its redirects. A slot of the txn slab: strings, the parser and the
// result keep their capacity between fetches, so a fetch in steady state allocates nothing.
struct http_client::txn {
  http_client* client = nullptr;
  uint64_t id = 0;  // generation << 32 | (slot index + 1)
  uint32_t index = 0;
  bool active = false;
  done_fn done = nullptr;
  void* ctx = nullptr;
  fetch_request req;
  url cur;
  std::vector<std::string> visited;  // every URL of a chain that redirected, for loops
  size_t nvisited = 0;               // visited[0, nvisited) are this chain's (rest: capacity)
  fetch_result result;
  // Header strings beyond result.headers.size(), kept with their capacity for the next
  // response (a vector's clear or shrink would free them).
  std::vector<std::pair<std::string, std::string>> spare_headers;
  std::string wire_body;
  response_parser parser;  // the response on the connection carrying this fetch
  timer total;
  conn* c = nullptr;                // the connection carrying it, if any
  host_pool* waiting_in = nullptr;  // the pool whose queue holds it, if any
  txn* wprev = nullptr;             // links in waiting_in's queue
  txn* wnext = nullptr;
  std::chrono::steady_clock::time_point started;
  uint64_t max_body = 0;
  uint32_t stale_retries = 0;
};

// One TCP (+TLS) connection. Its object is reused or freed (reap timer) only once closed
// and no io_uring op refers to it (ops). No receive buffer of its own (provided buffers),
// no parser (the txn's), output buffers only while sending.
struct http_client::conn {
  enum class state : uint8_t { resolving, connecting, handshaking, busy, idle, closing, free };
  http_client* client = nullptr;
  host_pool* pool = nullptr;
  size_t slot = 0;  // its index in conns_
  state st = state::free;
  int fd = -1;
  uint32_t ops = 0;  // io_uring ops in flight that carry this conn as context
  std::vector<ip_address> addrs;
  size_t addr_i = 0;
  sockaddr_storage sa{};
  socklen_t sa_len = 0;
  uint64_t dns_id = 0;
  tls_session tls;
  txn* t = nullptr;
  std::string out;  // bytes being sent (owned by the kernel while sending); pooled
  size_t out_off = 0;
  std::string pending;  // bytes queued while a send is in flight (TLS output lands here)
  bool sending = false;
  bool receiving = false;
  bool got_bytes = false;  // any response byte for the current request
  uint32_t served = 0;     // responses completed on this connection
  timer conn_timer;
  timer idle_timer;
};

bool parse_resolve_pin(std::string_view text, resolve_pin& out, std::string* error) {
  // HOST:PORT:ADDR; ADDR may itself hold colons (IPv6), so split at the first two.
  const size_t a = text.find(':');
  const size_t b = a == std::string_view::npos ? a : text.find(':', a + 1);
  if (a == 0 || b == std::string_view::npos) {
    if (error != nullptr) *error = "expected HOST:PORT:ADDR";
    return false;
  }
  const std::string_view port = text.substr(a + 1, b - a - 1);
  uint32_t p = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9' || (p = p * 10 + uint32_t(ch - '0')) > 65535) {
      p = 0;
      break;
    }
  }
  if (port.empty() || p == 0) {
    if (error != nullptr) *error = "the port must be 1..65535";
    return false;
  }
  std::string addr(text.substr(b + 1));
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']')
    addr = addr.substr(1, addr.size() - 2);
  if (!parse_ip_literal(addr, out.addr)) {
    if (error != nullptr) *error = "the address must be an IPv4 or IPv6 literal";
    return false;
  }
  out.host.clear();
  for (char ch : text.substr(0, a)) out.host.push_back(base::ascii_lower(ch));
  out.port = uint16_t(p);
  return true;
}

http_client::http_client(loop& l, const client_options& opt) : loop_(l), opt_(opt) {
  std::string k;
  for (const resolve_pin& p : opt_.pins) {
    pin_key(p.host, p.port, k);
    pins_[k] = p.addr;
  }
}

bool http_client::addresses_allowed(const std::vector<ip_address>& addrs) const {
  if (opt_.allow_private) return true;
  for (const ip_address& a : addrs) {
    if (is_private_address(a)) return false;
  }
  return true;
}

const ip_address* http_client::pinned(std::string_view host, uint16_t port) const {
  if (pins_.empty()) return nullptr;
  pin_key(host, port, pin_key_);
  if (auto it = pins_.find(pin_key_); it != pins_.end()) return &it->second;
  pin_key("*", port, pin_key_);
  if (auto it = pins_.find(pin_key_); it != pins_.end()) return &it->second;
  return nullptr;
}

std::unique_ptr<http_client> http_client::create(loop& l, const client_options& opt,
                                                 std::string* error) {
  std::unique_ptr<http_client> c(new http_client(l, opt));
  c->dns_ = dns_resolver::create(opt.dns, error);
  if (!c->dns_) return nullptr;
  c->dns_->set_watch_fn(&http_client::dns_watch, c.get());
  c->tls_ = tls_context::create(opt.ca_file, error, opt.tls_session_hosts);
  if (!c->tls_) return nullptr;
  c->plain_.reset(new char[k_plain_buf]);
  c->dns_timer_.set(&http_client::on_dns_timer, c.get());
  c->gc_timer_.set(&http_client::on_gc_timer, c.get());
  c->reap_timer_.set(&http_client::on_reap_timer, c.get());
  l.arm(c->gc_timer_, std::max<uint32_t>(1, opt.pool_gc_interval_ms));
  return c;
}

http_client::~http_client() {
  // c-ares calls back (sock_state, cancelled queries) while it is destroyed: detach first.
  if (dns_) {
    dns_->set_watch_fn(nullptr, nullptr);
    dns_.reset();
  }
  loop_.disarm(dns_timer_);
  loop_.disarm(gc_timer_);
  loop_.disarm(reap_timer_);
  for (auto& c : conns_) {
    loop_.disarm(c->conn_timer);
    loop_.disarm(c->idle_timer);
    if (c->fd >= 0) ::close(c->fd);
  }
  for (auto& t : txns_) loop_.disarm(t->total);
}

size_t http_client::connection_memory() const {
  size_t total = bufs_.bytes() + conns_.capacity() * sizeof(conns_[0]) +
                 conn_free_.capacity() * sizeof(uintptr_t);
  for (const auto& c : conns_) {
    total += sizeof(conn) + c->out.capacity() + c->pending.capacity() +
             c->addrs.capacity() * sizeof(ip_address) + c->tls.buffered_bytes();
  }
  return total;
}

size_t http_client::fetch_state_memory() const {
  size_t total = txns_.capacity() * sizeof(txns_[0]) + txn_free_.capacity() * sizeof(uint32_t);
  for (const auto& t : txns_) {
    total += sizeof(txn) + t->wire_body.capacity() + t->parser.body().capacity() +
             t->result.body.capacity();
    for (const auto& v : t->visited) total += v.capacity();
  }
  return total;
}

// ---------------------------------------------------------------- fetches

http_client::txn* http_client::alloc_txn() {
  if (txn_free_.empty()) {
    auto t = std::make_unique<txn>();
    t->client = this;
    t->index = static_cast<uint32_t>(txns_.size());
    t->id = uint64_t{t->index} + 1;
    t->total.set(&http_client::on_total_timeout, t.get());
    txns_.push_back(std::move(t));
    txn_free_.reserve(txns_.size());  // finish() pushes without allocating
    return txns_.back().get();
  }
  txn* t = txns_[txn_free_.back()].get();
  txn_free_.pop_back();
  // Next generation, same slot: an old id no longer matches.
  t->id = ((t->id >> 32) + 1) << 32 | (uint64_t{t->index} + 1);
  return t;
}

// Why it is fast: the txn is a reused slab slot whose strings, parser and result keep
// their capacity, so a fetch on a pooled connection allocates nothing.
uint64_t http_client::fetch(const fetch_request& req, done_fn done, void* ctx) {
  txn* t = alloc_txn();
  t->active = true;
  ++active_;
  t->done = done;
  t->ctx = ctx;
  t->req = req;
  t->c = nullptr;
  t->cur.host.clear();  // final_url of a fetch refused before its URL is parsed: req.url
  t->waiting_in = nullptr;
  t->wprev = t->wnext = nullptr;
  t->stale_retries = 0;
  t->nvisited = 0;
  auto& r = t->result;
  r.error = fetch_error::ok;
  r.detail.clear();
  r.status = 0;
  r.final_url.clear();
  r.redirects.clear();
  r.wire_bytes = 0;
  r.decoded_bytes = 0;
  set_header_count(t, 0);
  r.body.clear();
  for (auto* f : {&r.etag, &r.last_modified, &r.cache_control, &r.expires, &r.retry_after,
                  &r.content_type, &r.content_encoding, &r.im})
    f->clear();
  r.reused_connection = false;
  r.tls_resumed = false;
  t->started = std::chrono::steady_clock::now();
  t->max_body = req.max_body ? req.max_body : opt_.max_body;
  loop_.arm(t->total, req.total_timeout_ms ? req.total_timeout_ms : opt_.total_timeout_ms);

  uint64_t id = t->id;
  if (opt_.max_in_flight != 0 && active_ > opt_.max_in_flight) {
    ++stats_.refused_in_flight;
    finish(t, fetch_error::too_many_in_flight);
    return id;
  }
  for (const auto& [name, value] : req.headers) {
    if (!header_name_ok(name) || !header_text_ok(value)) {
      finish(t, fetch_error::bad_request_header, name);
      return id;
    }
  }
  if (!header_text_ok(req.if_none_match) || !header_text_ok(req.if_modified_since)) {
    finish(t, fetch_error::bad_request_header, "validator");
    return id;
  }
  bool unsupported = false;
  if (!parse_url(req.url, t->cur, &unsupported)) {
    t->cur = url{};
    finish(t, unsupported ? fetch_error::unsupported_scheme : fetch_error::bad_url, req.url);
    return id;
  }
  start_hop(t);  // the chain's first URL is recorded for loop detection at its first redirect
  return id;
}

void http_client::cancel(uint64_t id) {
  const uint64_t i = (id & 0xffffffffu) - 1;
  if (i >= txns_.size()) return;
  txn* t = txns_[i].get();
  if (t->active && t->id == id) finish(t, fetch_error::cancelled);
}

void http_client::start_hop(txn* t) {
  scratch_.assign(t->cur.https ? "s:" : "h:");
  t->cur.append_authority(scratch_);
  bool insecure = t->cur.https && t->req.insecure;
  if (insecure) scratch_ += "!";
  auto& slot = pools_[scratch_];
  if (!slot) {
    slot = std::make_unique<host_pool>();
    slot->host = t->cur.host;
    slot->port = t->cur.port;
    slot->https = t->cur.https;
    slot->insecure = insecure;
  }
  host_pool& p = *slot;
  if (!p.idle.empty()) {
    conn* c = p.idle.back();
    p.idle.pop_back();
    --idle_total_;
    loop_.disarm(c->idle_timer);
    ++stats_.connections_reused;
    c->st = conn::state::busy;
    assign(c, t);
    send_request(c);
    return;
  }
  if (p.open < std::max<uint32_t>(1, opt_.per_host_connections)) {
    new_conn(p, t);
    return;
  }
  t->waiting_in = &p;
  t->wprev = p.wait_tail;
  t->wnext = nullptr;
  (p.wait_tail ? p.wait_tail->wnext : p.wait_head) = t;
  p.wait_tail = t;
}

void http_client::unwait(txn* t) {
  host_pool& p = *t->waiting_in;
  (t->wprev ? t->wprev->wnext : p.wait_head) = t->wnext;
  (t->wnext ? t->wnext->wprev : p.wait_tail) = t->wprev;
  t->wprev = t->wnext = nullptr;
  t->waiting_in = nullptr;
}

void http_client::set_header_count(txn* t, size_t n) {
  auto& h = t->result.headers;
  while (h.size() > n) {
    t->spare_headers.push_back(std::move(h.back()));
    h.pop_back();
  }
  while (h.size() < n) {
    if (t->spare_headers.empty()) {
      h.emplace_back();
    } else {
      h.push_back(std::move(t->spare_headers.back()));
      t->spare_headers.pop_back();
    }
  }
}

void http_client::visit(txn* t, const url& u) {
  if (t->nvisited == t->visited.size()) t->visited.emplace_back();
  std::string& v = t->visited[t->nvisited++];
  v.clear();
  u.append_str(v);
}

bool http_client::visited(const txn* t, std::string_view u) {
  for (size_t i = 0; i < t->nvisited; ++i)
    if (t->visited[i] == u) return true;
  return false;
}

void http_client::finish(txn* t, fetch_error e, std::string detail) {
  loop_.disarm(t->total);
  if (conn* c = t->c) {
    // Failed or cancelled while on a connection: the connection's state is unknown.
    t->c = nullptr;
    c->t = nullptr;
    host_pool* p = c->pool;
    close_conn(c);
    if (p) pump_pool(*p);
  }
  if (t->waiting_in) unwait(t);
  auto& r = t->result;
  r.error = e;
  if (e != fetch_error::ok) {
    r.detail = std::move(detail);
    r.body.clear();
  }
  r.final_url.clear();
  if (t->cur.host.empty()) {
    r.final_url = t->req.url;
  } else {
    t->cur.append_str(r.final_url);
  }
  r.decoded_bytes = r.body.size();
  r.elapsed_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - t->started)
                                           .count());
  t->active = false;
  --active_;
  if (t->done) t->done(t->ctx, t->id, r);
  // The slot's three body buffers trade places (parser, wire, decoded): each is kept up to
  // keep_buffer_bytes, so a slot holds at most three times that between fetches.
  for (std::string* b : {&r.body, &t->wire_body, &t->parser.body()}) {
    if (b->capacity() > opt_.keep_buffer_bytes) std::string().swap(*b);
  }
  txn_free_.push_back(t->index);  // capacity reserved at the slab's growth: no allocation
}

void http_client::on_total_timeout(void* ctx) {
  auto* t = static_cast<txn*>(ctx);
  fetch_error e = fetch_error::total_timeout;
  if (t->c) {
    switch (t->c->st) {
      case conn::state::resolving:
        e = fetch_error::dns_timeout;
        break;
      case conn::state::connecting:
        e = fetch_error::connect_timeout;
        break;
      case conn::state::handshaking:
        e = fetch_error::tls_handshake_timeout;
        break;
      default:
        break;
    }
  }
  t->client->finish(t, e);
}

// ---------------------------------------------------------------- connections

http_client::conn* http_client::new_conn(host_pool& p, txn* t) {
  conn* c;
  if (!conn_free_.empty()) {
    c = conn_free_.back();
    conn_free_.pop_back();
  } else {
    conns_.push_back(std::make_unique<conn>());
    c = conns_.back().get();
    c->client = this;
    c->slot = conns_.size() - 1;
    c->conn_timer.set(&http_client::on_conn_timeout, c);
    c->idle_timer.set(&http_client::on_idle_timeout, c);
    c->tls.set_output(&c->pending);
  }
  c->pool = &p;
  ++p.open;
  ++stats_.connections_opened;
  c->st = conn::state::resolving;
  c->served = 0;
  c->addrs.clear();
  c->addr_i = 0;
  c->out.clear();
  c->out_off = 0;
  c->pending.clear();
  c->sending = c->receiving = false;
  assign(c, t);
  loop_.arm(c->conn_timer, opt_.connect_timeout_ms);
  fetch_error e;
  if (const ip_address* pin = pinned(p.host, p.port)) {
    c->addrs.assign(1, *pin);
    connect_addr(c);
  } else if (dns_->resolve(p.host, &http_client::on_dns, c, &c->dns_id, &e, &c->addrs)) {
    if (e == fetch_error::ok && !addresses_allowed(c->addrs)) e = fetch_error::address_not_allowed;
    if (e != fetch_error::ok) {
      conn_failed(c, e, p.host);
    } else {
      c->addr_i = 0;
      connect_addr(c);
    }
  } else {
    arm_dns_timer();
  }
  return c;
}

void http_client::assign(conn* c, txn* t) {
  c->t = t;
  t->c = c;
  c->got_bytes = false;
}

void http_client::on_dns(void* ctx, fetch_error e, const std::vector<ip_address>& addrs) {
  auto* c = static_cast<conn*>(ctx);
  if (c->st != conn::state::resolving) return;  // closed meanwhile (cancel() also guards)
  c->dns_id = 0;
  if (e == fetch_error::ok && !c->client->addresses_allowed(addrs))
    e = fetch_error::address_not_allowed;
  if (e != fetch_error::ok) {
    c->client->conn_failed(c, e, c->pool ? c->pool->host : std::string());
    return;
  }
  c->addrs = addrs;
  c->addr_i = 0;
  c->client->connect_addr(c);
}

void http_client::connect_addr(conn* c) {
  const ip_address& a = c->addrs[c->addr_i];
  c->fd = ::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    conn_failed(c, fetch_error::connect_failed, std::strerror(errno));
    return;
  }
  int one = 1;
  ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->sa_len = a.to_sockaddr(c->pool->port, c->sa);
  c->st = conn::state::connecting;
  auto id = loop_.connect(c->fd, reinterpret_cast<sockaddr*>(&c->sa), c->sa_len,
                          handler{[](void* x, const completion& cq) {
                                    auto* cc = static_cast<conn*>(x);
                                    cc->client->on_connect_cqe(cc, cq);
                                  },
                                  c, 0});
  if (!id.valid()) {
    conn_failed(c, fetch_error::internal, "io_uring op slab full");
    return;
  }
  ++c->ops;
}

void http_client::on_connect_cqe(conn* c, const completion& cq) {
  --c->ops;
  if (c->st == conn::state::closing) {
    maybe_free(c);
    return;
  }
  if (cq.res < 0) {
    fetch_error e = classify_connect(cq.res);
    std::string detail = c->addrs[c->addr_i].str() + ": " + std::strerror(-cq.res);
    ::close(c->fd);
    c->fd = -1;
    // Refused or unreachable on one address: try the host's next address (IPv4 then IPv6).
    if (c->addr_i + 1 < c->addrs.size()) {
      ++c->addr_i;
      connect_addr(c);
      return;
    }
    conn_failed(c, e, std::move(detail));
    return;
  }
  if (c->pool->https) {
    c->st = conn::state::handshaking;
    if (!c->tls.start(*tls_, c->pool->host, !c->pool->insecure, c->pool->port)) {
      conn_failed(c, c->tls.error(), c->tls.detail());
      return;
    }
    c->tls.set_output(&c->pending);
    drive_tls(c);
    return;
  }
  loop_.disarm(c->conn_timer);
  c->st = conn::state::busy;
  send_request(c);
}

void http_client::drive_tls(conn* c) {
  if (c->pending.capacity() < string_pool::k_min) bufs_.take(c->pending);
  auto r = c->tls.handshake();
  flush_out(c);
  if (r == tls_session::result::ok) {
    loop_.disarm(c->conn_timer);
    c->st = conn::state::busy;
    ++stats_.tls_handshakes;
    if (c->tls.resumed()) ++stats_.tls_resumed;
    send_request(c);
    return;
  }
  if (r == tls_session::result::want_io) {
    arm_recv(c);
    return;
  }
  conn_failed(
      c, c->tls.error() == fetch_error::ok ? fetch_error::tls_handshake_failed : c->tls.error(),
      c->tls.detail());
}

void http_client::queue_out(conn* c, std::string_view bytes) {
  std::string& o = c->sending ? c->pending : c->out;
  if (o.capacity() < string_pool::k_min) bufs_.take(o);
  o.append(bytes);
}

void http_client::send_request(conn* c) {
  txn* t = c->t;
  const url& u = t->cur;
  // Built in one buffer and sent with one send: no per-header syscalls or copies.
  std::string& b = scratch_;
  b.clear();
  b += "GET ";
  b += u.target;
  b += " HTTP/1.1\r\nHost: ";
  u.append_authority(b);
  b += "\r\nUser-Agent: ";
  b += opt_.user_agent;
  b += "\r\nAccept: */*\r\n";
  if (t->req.accept_compressed) b += "Accept-Encoding: gzip, deflate\r\n";
  if (!t->req.if_none_match.empty()) {
    b += "If-None-Match: ";
    b += t->req.if_none_match;
    b += "\r\n";
  }
  if (!t->req.if_modified_since.empty()) {
    b += "If-Modified-Since: ";
    b += t->req.if_modified_since;
    b += "\r\n";
  }
  if (t->req.a_im_feed) b += "A-IM: feed\r\n";
  for (const auto& [name, value] : t->req.headers) {
    b += name;
    b += ": ";
    b += value;
    b += "\r\n";
  }
  b += "\r\n";
  response_limits lim;
  lim.max_body = t->max_body;
  lim.max_header_bytes = opt_.max_header_bytes;
  t->parser.set_limits(lim);
  t->parser.reset();
  c->got_bytes = false;
  t->result.reused_connection = c->served > 0;
  t->result.tls_resumed = c->pool->https && c->tls.resumed();
  if (c->pool->https) {
    if (c->pending.capacity() < string_pool::k_min) bufs_.take(c->pending);
    if (c->tls.write(b.data(), b.size()) != tls_session::result::ok) {
      conn_failed(c, fetch_error::tls_error, c->tls.detail());
      return;
    }
  } else {
    queue_out(c, b);
  }
  flush_out(c);
  arm_recv(c);
}

void http_client::flush_out(conn* c) {
  if (c->sending || c->st == conn::state::closing) return;
  if (c->out_off >= c->out.size()) {
    c->out_off = 0;
    if (c->pending.empty()) {
      // Nothing to send: the buffers go back to the pool, an idle connection keeps none.
      bufs_.give(c->out);
      bufs_.give(c->pending);
      return;
    }
    c->out.clear();
    c->out.swap(c->pending);
  }
  auto id = loop_.send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off,
                       handler{[](void* x, const completion& cq) {
                                 auto* cc = static_cast<conn*>(x);
                                 cc->client->on_send_cqe(cc, cq);
                               },
                               c, 0});
  if (!id.valid()) {
    conn_failed(c, fetch_error::internal, "io_uring op slab full");
    return;
  }
  ++c->ops;
  c->sending = true;
}

void http_client::on_send_cqe(conn* c, const completion& cq) {
  --c->ops;
  ++stats_.send_completions;
  c->sending = false;
  if (c->st == conn::state::closing) {
    maybe_free(c);
    return;
  }
  if (cq.res < 0) {
    conn_failed(c,
                cq.res == -EPIPE || cq.res == -ECONNRESET ? fetch_error::connection_reset
                                                          : fetch_error::send_failed,
                std::strerror(-cq.res));
    return;
  }
  c->out_off += static_cast<size_t>(cq.res);
  flush_out(c);
}

// A provided buffer of the loop is lent only while the receive completes: a connection
// waiting for bytes (or idle) holds none.
void http_client::arm_recv(conn* c) {
  if (c->receiving || c->st == conn::state::closing) return;
  auto id = loop_.recv_provided(c->fd, handler{[](void* x, const completion& cq) {
                                                 auto* cc = static_cast<conn*>(x);
                                                 cc->client->on_recv_cqe(cc, cq);
                                               },
                                               c, 0});
  if (!id.valid()) {
    conn_failed(c, fetch_error::internal, "io_uring op slab full");
    return;
  }
  ++c->ops;
  c->receiving = true;
}

void http_client::on_recv_cqe(conn* c, const completion& cq) {
  --c->ops;
  ++stats_.recv_completions;
  c->receiving = false;
  if (c->st == conn::state::closing) {
    maybe_free(c);
    return;
  }
  if (cq.res == -ENOBUFS) {
    arm_recv(c);  // the loop's buffers ran dry: they are back once this turn's callbacks ran
    return;
  }
  if (cq.res < 0) {
    conn_failed(c, cq.res == -ECONNRESET ? fetch_error::connection_reset : fetch_error::recv_failed,
                std::strerror(-cq.res));
    return;
  }
  if (cq.res == 0) {
    handle_eof(c);
    return;
  }
  const char* data = reinterpret_cast<const char*>(cq.data.data());
  const size_t n = cq.data.size();
  if (c->st == conn::state::idle) return;  // not armed while idle; defensive
  if (c->pool->https) {
    on_tls_bytes(c, data, n);
    return;
  }
  if (handle_plain(c, data, n)) return;
  if (c->t != nullptr) arm_recv(c);
}

// Ciphertext in a provided buffer: OpenSSL reads it in place and decrypts into the client's
// scratch, from which the response is parsed. What it leaves unread is copied before the
// buffer goes back to the loop (rare: a record split at the end of a response).
// Why it is fast: no copy before decryption, no per-connection buffer to touch.
void http_client::on_tls_bytes(conn* c, const char* data, size_t n) {
  c->tls.feed(data, n);
  struct keep_unread {
    conn* c;
    ~keep_unread() { c->tls.release_input(); }  // a closed conn's session is reset: no-op
  } guard{c};
  if (c->st == conn::state::handshaking) {
    drive_tls(c);
    // After the handshake, the rest of this buffer (a ticket, the response) is read below.
    if (c->st != conn::state::busy) return;
  }
  while (true) {
    size_t got = 0;
    auto r = c->tls.read(plain_.get(), k_plain_buf, &got);
    if (r == tls_session::result::ok) {
      if (handle_plain(c, plain_.get(), got)) return;  // response finished
      continue;
    }
    if (r == tls_session::result::closed) {
      handle_eof(c);
      return;
    }
    if (r == tls_session::result::error) {
      conn_failed(c, c->tls.error(), c->tls.detail());
      return;
    }
    break;  // want_io
  }
  if (!c->pending.empty()) flush_out(c);  // e.g. a key update answer
  if (c->t != nullptr) arm_recv(c);
}

// Returns true when the response completed (or failed): the conn may have moved on.
bool http_client::handle_plain(conn* c, const char* data, size_t n) {
  if (c->t == nullptr) return true;
  c->got_bytes = true;
  size_t used = 0;
  auto s = c->t->parser.feed(data, n, &used);
  if (s == response_parser::status::error) {
    conn_failed(c, c->t->parser.error(), {});
    return true;
  }
  if (s == response_parser::status::done) {
    // Bytes after the response on a connection without pipelining: do not reuse it.
    on_response(c, used == n);
    return true;
  }
  return false;
}

void http_client::handle_eof(conn* c) {
  if (c->st == conn::state::handshaking) {
    conn_failed(c, fetch_error::tls_handshake_failed, "connection closed during the handshake");
    return;
  }
  if (c->t == nullptr) {
    host_pool* p = c->pool;
    close_conn(c);
    if (p) pump_pool(*p);
    return;
  }
  if (c->t->parser.feed_eof() == response_parser::status::done) {
    on_response(c, false);
    return;
  }
  conn_failed(c, c->t->parser.error(), {});
}

void http_client::conn_failed(conn* c, fetch_error e, std::string detail) {
  txn* t = c->t;
  host_pool* p = c->pool;
  bool stale = c->served > 0 && !c->got_bytes &&
               (e == fetch_error::closed_before_response || e == fetch_error::connection_reset ||
                e == fetch_error::send_failed || e == fetch_error::recv_failed);
  c->t = nullptr;
  if (t) t->c = nullptr;
  close_conn(c);
  if (t) {
    if (stale && t->stale_retries < k_max_stale_retries) {
      // A pooled connection the server had already closed: retry on a fresh one.
      ++t->stale_retries;
      ++stats_.retries_on_stale;
      start_hop(t);
    } else {
      finish(t, e, std::move(detail));
    }
  }
  if (p) pump_pool(*p);
}

void http_client::pump_pool(host_pool& p) {
  while (!p.waiting_empty() && p.open < std::max<uint32_t>(1, opt_.per_host_connections)) {
    txn* t = p.wait_head;
    unwait(t);
    new_conn(p, t);
  }
}

void http_client::on_response(conn* c, bool reusable) {
  txn* t = c->t;
  response_parser& rp = t->parser;
  auto& r = t->result;
  r.status = rp.status_code();
  r.wire_bytes += rp.wire_bytes();
  // Copy what the caller sees before the parser serves the next request on this conn.
  auto hs = rp.headers();
  set_header_count(t, hs.size());
  for (size_t i = 0; i < hs.size(); ++i) {
    r.headers[i].first.assign(hs[i].name);
    r.headers[i].second.assign(hs[i].value);
  }
  r.etag.assign(rp.header("etag"));
  r.last_modified.assign(rp.header("last-modified"));
  // Cache-Control is a list header that may come in several lines: join them.
  r.cache_control.clear();
  for (const auto& hd : hs) {
    if (!base::ascii_iequals(hd.name, "cache-control")) continue;
    if (!r.cache_control.empty()) r.cache_control += ", ";
    r.cache_control.append(hd.value);
  }
  r.expires.assign(rp.header("expires"));
  r.retry_after.assign(rp.header("retry-after"));
  r.content_type.assign(rp.header("content-type"));
  r.content_encoding.assign(rp.header("content-encoding"));
  r.im.assign(rp.header("im"));
  std::string_view location = rp.header("location");
  bool redirect = is_redirect(r.status);
  std::string loc_copy;
  if (redirect) loc_copy.assign(location);
  // Swap buffers instead of copying: the parser keeps the capacity of the last body (the
  // parser and both buffers belong to the txn, not to the connection).
  t->wire_body.swap(rp.body());
  rp.body().clear();

  ++c->served;
  host_pool& p = *c->pool;
  c->t = nullptr;
  t->c = nullptr;
  release(c, reusable && rp.keep_alive(), p);

  if (redirect) {
    if (loc_copy.empty()) {
      finish(t, fetch_error::redirect_without_location, std::to_string(r.status));
      return;
    }
    url next;
    bool unsupported = false;
    if (!resolve_url(t->cur, loc_copy, next, &unsupported)) {
      finish(t, unsupported ? fetch_error::unsupported_scheme : fetch_error::bad_url, loc_copy);
      return;
    }
    redirect_hop hop;
    hop.from = t->cur.str();
    hop.to = next.str();
    hop.status = r.status;
    hop.permanent = r.status == 301 || r.status == 308;
    r.redirects.push_back(hop);
    if (t->nvisited == 0) visit(t, t->cur);  // the first hop: its origin joins the chain
    if (visited(t, hop.to)) {
      finish(t, fetch_error::redirect_loop, hop.to);
      return;
    }
    if (r.redirects.size() > opt_.max_redirects) {
      finish(t, fetch_error::too_many_redirects, std::to_string(opt_.max_redirects));
      return;
    }
    visit(t, next);
    t->cur = std::move(next);
    start_hop(t);
    return;
  }
  fetch_error e = fetch_error::ok;
  if (content_decoder::needs_decoding(r.content_encoding) && !t->wire_body.empty()) {
    e = decoder_.decode(r.content_encoding, t->wire_body, t->max_body, r.body);
  } else {
    r.body.swap(t->wire_body);
  }
  finish(t, e);
}

void http_client::release(conn* c, bool reusable, host_pool& p) {
  if (!reusable) {
    close_conn(c);
    pump_pool(p);
    return;
  }
  if (!p.waiting_empty()) {
    txn* next = p.wait_head;
    unwait(next);
    c->st = conn::state::busy;
    ++stats_.connections_reused;
    assign(c, next);
    send_request(c);
    return;
  }
  if (idle_total_ >= opt_.max_idle_connections) {
    close_conn(c);
    pump_pool(p);
    return;
  }
  c->st = conn::state::idle;
  p.idle.push_back(c);
  ++idle_total_;
  loop_.arm(c->idle_timer, opt_.idle_timeout_ms);
}

void http_client::on_conn_timeout(void* ctx) {
  auto* c = static_cast<conn*>(ctx);
  fetch_error e = c->st == conn::state::handshaking ? fetch_error::tls_handshake_timeout
                  : c->st == conn::state::resolving ? fetch_error::dns_timeout
                                                    : fetch_error::connect_timeout;
  c->client->conn_failed(c, e, {});
}

void http_client::on_idle_timeout(void* ctx) {
  auto* c = static_cast<conn*>(ctx);
  host_pool* p = c->pool;
  c->client->close_conn(c);
  if (p) c->client->pump_pool(*p);
}

void http_client::close_conn(conn* c) {
  if (c->st == conn::state::closing || c->st == conn::state::free) return;
  loop_.disarm(c->conn_timer);
  loop_.disarm(c->idle_timer);
  if (c->dns_id) {
    dns_->cancel(c->dns_id);
    c->dns_id = 0;
  }
  if (host_pool* p = c->pool) {
    auto& idle = p->idle;
    if (c->st == conn::state::idle) {
      idle.erase(std::remove(idle.begin(), idle.end(), c), idle.end());
      --idle_total_;
    }
    --p->open;
    c->pool = nullptr;
  }
  c->st = conn::state::closing;
  c->t = nullptr;
  if (c->fd >= 0 && c->ops > 0) loop_.cancel_fd(c->fd);
  maybe_free(c);
}

void http_client::maybe_free(conn* c) {
  if (c->st != conn::state::closing || c->ops > 0) return;
  if (c->fd >= 0) ::close(c->fd);
  c->fd = -1;
  c->tls.reset();
  bufs_.give(c->out);
  bufs_.give(c->pending);
  c->out_off = 0;
  c->st = conn::state::free;
  conn_free_.push_back(c);
  // Not deleted here: callers up the stack may still look at c. The reap timer runs from
  // the loop, where nothing refers to a free conn.
  if (conn_free_.size() > k_conn_reserve && !reap_timer_.armed()) loop_.arm(reap_timer_, 1);
}

void http_client::on_reap_timer(void* ctx) {
  auto* self = static_cast<http_client*>(ctx);
  while (self->conn_free_.size() > k_conn_reserve) {
    conn* c = self->conn_free_.back();
    self->conn_free_.pop_back();
    // Swap-remove from conns_ (its slot index moves with the last conn).
    auto& v = self->conns_;
    const size_t i = c->slot;
    v[i].swap(v.back());
    v[i]->slot = i;
    v.pop_back();  // deletes c (closed, no op in flight, timers disarmed)
    ++self->stats_.connection_objects_freed;
  }
  if (self->conns_.capacity() > 2 * self->conns_.size() + 64) self->conns_.shrink_to_fit();
  if (self->conn_free_.capacity() > 2 * k_conn_reserve) self->conn_free_.shrink_to_fit();
}

void http_client::shutdown() {
  // A callback may start fetches: sweep until none is left.
  for (bool any = true; any;) {
    any = false;
    for (size_t i = 0; i < txns_.size(); ++i) {
      if (txns_[i]->active) {
        finish(txns_[i].get(), fetch_error::cancelled);
        any = true;
      }
    }
  }
  for (auto& c : conns_) close_conn(c.get());
  for (auto& [fd, e] : dns_fds_) {
    e.mask = 0;
    if (e.armed) loop_.cancel(e.op);
  }
  loop_.disarm(dns_timer_);
  loop_.disarm(gc_timer_);
  loop_.disarm(reap_timer_);
}

bool http_client::quiescent() const {
  if (dns_polls_in_flight_ > 0) return false;
  for (const auto& c : conns_)
    if (c->ops > 0) return false;
  return true;
}

// ---------------------------------------------------------------- DNS on the loop

void http_client::dns_watch(void* ctx, int fd, bool readable, bool writable) {
  auto* self = static_cast<http_client*>(ctx);
  uint32_t mask = (readable ? POLLIN : 0) | (writable ? POLLOUT : 0);
  auto& e = self->dns_fds_[fd];
  e.mask = mask;
  if (mask == 0) {
    // c-ares may close this fd next: a poll on it would pin the old socket; cancel it.
    if (e.armed) {
      self->loop_.cancel(e.op);
    } else {
      self->dns_fds_.erase(fd);
    }
    return;
  }
  if (!e.armed) self->arm_dns_poll(fd, e);
}

void http_client::arm_dns_poll(int fd, dns_watch_entry& e) {
  e.op = loop_.poll_add(
      fd, e.mask,
      handler{&http_client::on_dns_poll, this, static_cast<uint64_t>(static_cast<uint32_t>(fd))});
  if (e.op.valid()) {
    e.armed = true;
    ++dns_polls_in_flight_;
  }
}

void http_client::on_dns_poll(void* ctx, const completion& cq) {
  auto* self = static_cast<http_client*>(ctx);
  --self->dns_polls_in_flight_;
  int fd = static_cast<int>(cq.tag);
  auto it = self->dns_fds_.find(fd);
  if (it == self->dns_fds_.end()) return;
  it->second.armed = false;
  if (cq.res > 0 && it->second.mask != 0 && self->dns_) {
    auto rev = static_cast<uint32_t>(cq.res);
    self->dns_->process_fd(fd, (rev & (POLLIN | POLLERR | POLLHUP)) != 0, (rev & POLLOUT) != 0);
  }
  // process_fd may have changed the watch set (and rehashed the map): look again.
  it = self->dns_fds_.find(fd);
  if (it != self->dns_fds_.end() && !it->second.armed) {
    if (it->second.mask == 0) {
      self->dns_fds_.erase(it);
    } else {
      self->arm_dns_poll(fd, it->second);
    }
  }
  self->arm_dns_timer();
}

// Destroys and rebuilds x: unlike assigning a fresh object (a std::string moved from an
// empty one keeps its own buffer), this frees every buffer x held.
template <class T>
void rebuild(T& x) {
  std::destroy_at(&x);
  std::construct_at(&x);
}

void http_client::trim() {
  for (uint32_t i : txn_free_) {
    txn& t = *txns_[i];
    rebuild(t.req);
    rebuild(t.cur);
    rebuild(t.visited);
    rebuild(t.result);
    rebuild(t.spare_headers);
    rebuild(t.wire_body);
    rebuild(t.parser);
  }
  bufs_.clear();
  rebuild(scratch_);
}

void http_client::on_gc_timer(void* ctx) {
  auto* self = static_cast<http_client*>(ctx);
  // With nothing in flight, the buffers of the fetch slots and the output pool go back to
  // the allocator: a burst of thousands of fetches does not keep its memory for life.
  if (self->active_ == 0) self->trim();
  // Runs from the loop's timer dispatch, never inside a client call, so no host_pool
  // reference is live on the stack. A pool with no connection and no waiting fetch is
  // referenced by nothing (conns drop their pool pointer when they close).
  absl::erase_if(self->pools_, [](const auto& kv) {
    return kv.second->open == 0 && kv.second->waiting_empty() && kv.second->idle.empty();
  });
  self->loop_.arm(self->gc_timer_, std::max<uint32_t>(1, self->opt_.pool_gc_interval_ms));
}

void http_client::on_dns_timer(void* ctx) {
  auto* self = static_cast<http_client*>(ctx);
  if (!self->dns_) return;
  self->dns_->process_timeouts();
  self->arm_dns_timer();
}

void http_client::arm_dns_timer() {
  int64_t ms = dns_ ? dns_->next_timeout_ms() : -1;
  if (ms < 0) {
    loop_.disarm(dns_timer_);
    return;
  }
  loop_.arm(dns_timer_, static_cast<uint64_t>(std::max<int64_t>(ms, 1)));
}

}  // namespace feedplane::net
