#include "feedplane/net/http_server.h"

#include <arpa/inet.h>
#include <libdeflate.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <string>

#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/net/tls_server.h"
#include "http_chars.h"
#include "tls_bio.h"

namespace feedplane::net {

namespace {

// Plaintext decrypted per batch of TLS records before it is parsed: two full records.
constexpr size_t tls_plain_bytes = size_t{32} * 1024;

// Input buffered while parsing is paused (pipelined behind a deferred answer) before
// reading stops too.
constexpr size_t paused_input_limit = size_t{64} * 1024;

// Whether raw request bytes (a request refused before it parsed) are a HEAD request: the
// method is the first token, after any empty lines (RFC 9112 2.2).
bool is_head_request(std::string_view raw) {
  size_t i = 0;
  while (i < raw.size() && (raw[i] == '\r' || raw[i] == '\n')) ++i;
  return raw.substr(i).starts_with("HEAD ");
}

const char* reason_phrase(int s) {
  switch (s) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

void append_num(std::string& s, uint64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof(b), v);
  s.append(b, size_t(r.ptr - b));
}

// True if Accept-Encoding allows gzip (RFC 9110 12.5.3): "gzip", "x-gzip" or "*" with q > 0.
bool accepts_gzip(std::string_view ae) {
  bool gzip = false, star = false, gzip_listed = false;
  while (!ae.empty()) {
    size_t c = ae.find(',');
    std::string_view item = trim_ows(ae.substr(0, c));
    ae = c == std::string_view::npos ? std::string_view() : ae.substr(c + 1);
    size_t semi = item.find(';');
    std::string_view coding = trim_ows(item.substr(0, semi));
    bool q_zero = false;
    if (semi != std::string_view::npos) {
      std::string_view p = trim_ows(item.substr(semi + 1));
      if (p.size() >= 2 && (p[0] | 0x20) == 'q' && p[1] == '=') {
        std::string_view q = p.substr(2);
        q_zero =
            !q.empty() && q[0] == '0' && q.find_first_of("123456789") == std::string_view::npos;
      }
    }
    if (base::ascii_iequals(coding, "gzip") || base::ascii_iequals(coding, "x-gzip")) {
      gzip_listed = true;
      gzip = !q_zero;
    } else if (coding == "*") {
      star = !q_zero;
    }
  }
  return gzip || (!gzip_listed && star);
}

// Weak comparison (RFC 9110 8.8.3.2): W/ prefixes are ignored.
bool etag_matches(std::string_view inm, std::string_view etag) {
  if (etag.size() > 2 && etag.substr(0, 2) == "W/") etag.remove_prefix(2);
  while (!inm.empty()) {
    size_t c = inm.find(',');
    std::string_view t = trim_ows(inm.substr(0, c));
    inm = c == std::string_view::npos ? std::string_view() : inm.substr(c + 1);
    if (t == "*") return true;
    if (t.size() > 2 && t.substr(0, 2) == "W/") t.remove_prefix(2);
    if (t == etag) return true;
  }
  return false;
}

}  // namespace

bool not_modified(std::string_view if_none_match, std::string_view if_modified_since,
                  std::string_view etag, int64_t last_modified) {
  if (!if_none_match.empty()) return !etag.empty() && etag_matches(if_none_match, etag);
  if (if_modified_since.empty() || last_modified < 0) return false;
  const int64_t ims = parse_http_date(if_modified_since);
  return ims >= 0 && last_modified <= ims;
}

// ---- connection ----

// What the response needs from its request (copied when the response is deferred).
struct http_server::request_meta {
  std::string_view method;
  std::string_view if_none_match;
  std::string_view if_modified_since;
  std::string_view accept_encoding;
  bool keep_alive = true;
  int version_minor = 1;

  static request_meta of(const http_request& r) {
    return {r.method,          r.if_none_match, r.if_modified_since,
            r.accept_encoding, r.keep_alive,    r.version_minor};
  }
};

// Owned copy of a deferred request's meta (allocated on a connection's first deferral and
// kept with the pool slot).
struct deferred_state {
  std::string method, inm, ims, ae;
  bool keep_alive = true;
  int version_minor = 1;
};

// Bodies a plaintext connection sends from where they are, in order with its output: the
// piece at `at` goes out after out[0, at) and before out[at, ...). `queued` goes with
// `out`, `sending` with the send in flight; a piece's `keep` holds its bytes until then.
struct gather_state {
  struct piece {
    size_t at = 0;
    std::string_view bytes;
    std::shared_ptr<const void> keep;
  };
  std::vector<piece> queued, sending;
  size_t queued_bytes = 0, sending_bytes = 0;
  std::vector<iovec> iov;  // the sendmsg in flight's (valid until it completes)
  msghdr msg{};

  void drop_sending() {
    sending.clear();  // releases the bodies' keeps
    sending_bytes = 0;
  }
  void drop_all() {
    drop_sending();
    queued.clear();
    queued_bytes = 0;
  }
};

struct http_server::connection {
  http_server* srv = nullptr;
  int fd = -1;
  bool in_use = false;
  bool dead = false;  // closing for good: waiting for ops to finish, then released
  bool recv_armed = false;
  bool send_inflight = false;
  bool closing = false;    // no more requests: send what is queued, then linger
  bool lingering = false;  // write side shut, draining input until EOF or linger_ms
  bool peer_closed = false;
  bool paused = false;           // not parsing: awaiting an answer, or output above high water
  bool reading_stopped = false;  // recv cancelled on purpose (output high water, or too
                                 // much input pipelined behind a deferred answer)
  bool continue_sent = false;    // "100 Continue" already sent for the current request
  bool awaiting = false;         // a deferred response is outstanding
  uint32_t gen = 0;              // bumped when the slot is released (stale deferrals miss)
  uint32_t seq = 0;              // bumped per request handled (a late deferred answer misses)
  uint64_t idle_deadline = 0;    // loop ms after which an idle (or stalled-send) conn closes
  std::unique_ptr<deferred_state> dstate;
  enum class tmode : uint8_t { none, idle, request, send, linger, awaiting } tm = tmode::none;
  op_id recv_op;
  size_t send_off = 0;
  // Input of a request that did not arrive in one piece: in.p[0, in_size) (no block when
  // empty; the block goes back to the server's pool as soon as it empties).
  input_block in;
  size_t in_size = 0;
  size_t in_want = 0;   // bytes the request being received needs (head + body + padding)
  std::string out;      // responses queued behind the send in flight (plaintext)
  std::string sending;  // the send in flight (ciphertext on a TLS connection)
  // Large kept bodies (http_response::keep) sent from where they are: made at the first
  // one and kept with the slot, so a connection that never sends one pays a pointer.
  std::unique_ptr<gather_state> gather;
  // TLS only (opt_.tls): the connection's SSL (its network side is the server's shared
  // BIO), and the ciphertext OpenSSL wrote that waits for the send in flight (a lent
  // buffer, like out). ssl is freed as soon as no more TLS is needed (a fatal error, our
  // close_notify), so a closing connection keeps no OpenSSL state.
  SSL* ssl = nullptr;
  bool handshaking = false;  // accepted, handshake not finished: the accept deadline holds
  std::string cipher;
  request_parser parser;
  timer t;

  loop& lp() { return srv->loop_; }

  // Output queued behind the send in flight, gathered bodies included.
  size_t queued() const { return out.size() + (gather ? gather->queued_bytes : 0); }

  void arm_recv() {
    if (recv_armed || peer_closed || dead) return;
    recv_op = lp().recv_multishot(fd, bind<&connection::on_recv>(this));
    if (!recv_op.valid()) {
      abort();
      return;
    }
    recv_armed = true;
  }

  void set_timer(tmode m, uint32_t ms) {
    tm = m;
    lp().arm(t, ms);
  }

  static void on_timer(void* ctx) {
    auto* k = static_cast<connection*>(ctx);
    switch (k->tm) {
      case tmode::request:
        // Slowloris or a stalled request: answer 408 and close (RFC 9110 15.5.9).
        ++k->srv->stats_.timeouts;
        k->tm = tmode::none;
        k->srv->write_error(*k, 408, "request not received in time", is_head_request(k->input()));
        k->in_size = 0;
        k->flush();
        return;
      case tmode::idle:
        if (k->lp().now_ms() < k->idle_deadline) {
          k->lp().arm(k->t, k->idle_deadline - k->lp().now_ms());
          return;
        }
        ++k->srv->stats_.timeouts;
        k->abort();
        return;
      case tmode::awaiting:
        k->tm = tmode::none;
        k->srv->expire_deferred(*k);
        return;
      case tmode::send:
      case tmode::linger:
      case tmode::none:
        k->abort();
        return;
    }
  }

  // Chooses the timer for the connection's current state (request timer is not pushed
  // back by further bytes: that is what defeats slowloris).
  void update_timer() {
    if (dead || lingering || handshaking) return;
    if (awaiting) {
      // The handler owes an answer: 503 if it does not come in time.
      if (tm != tmode::awaiting) set_timer(tmode::awaiting, srv->opt_.defer_timeout_ms);
    } else if (in_size != 0 || parser.started()) {
      if (tm != tmode::request) set_timer(tmode::request, srv->opt_.header_timeout_ms);
    } else {
      // Idle or sending: a lazy deadline. Moving it is one store per request; the timer
      // is re-armed only when it fires early (or must fire earlier).
      idle_deadline = lp().now_ms() + srv->opt_.idle_timeout_ms;
      if (tm != tmode::idle || !t.armed() || t.deadline_ms() > idle_deadline + 1) {
        set_timer(tmode::idle, srv->opt_.idle_timeout_ms);
      }
    }
  }

  void on_recv(const completion& c) {
    if (!c.more()) recv_armed = false;
    if (dead) {
      maybe_release();
      return;
    }
    if (c.res > 0 && !lingering) {
      const std::string_view d(reinterpret_cast<const char*>(c.data.data()), c.data.size());
      srv->stats_.bytes_in += d.size();
      if (ssl == nullptr) {
        feed(d);
      } else {
        feed_tls(d);
      }
    }
    if (dead) {
      maybe_release();
      return;
    }
    if (!c.more()) {
      if (c.res == 0) {
        peer_closed = true;
        // Nothing more will arrive (a half-close): answer what was received, including a
        // deferred answer and pipelined requests waiting behind it, then close.
        if (!send_inflight && out.empty() && !awaiting) {
          abort();
          return;
        }
      } else if (c.res == -ENOBUFS || c.res > 0) {
        if (!reading_stopped) arm_recv();  // ring ran dry: re-arm (buffers are back by now)
      } else if (c.res == -ECANCELED) {
        // We stopped reading; if resume() already ran while the cancel was in flight, it
        // could not re-arm (recv still armed then): do it now.
        if (!reading_stopped && !closing) arm_recv();
      } else {
        abort();  // ECONNRESET and friends
        return;
      }
    }
    if (!dead) update_timer();
  }

  std::string_view input() const { return {in.p.get(), in_size}; }

  // Appends to `in`, taking a block from the pool when it has none, growing it when the
  // request needs more (a pooled block that grew keeps its size for the next request).
  void append_input(std::string_view data) {
    const size_t need = std::max(in_size + data.size(), in_want);
    if (need > in.cap) {
      if (in.cap == 0) {
        in = srv->take_input(need);
      }
      if (need > in.cap)
        grow_input(need == in_want ? sized_for_body() : std::max(need, in.cap * 2));
    }
    memcpy(in.p.get() + in_size, data.data(), data.size());
    in_size += data.size();
  }

  // in_want overestimates by the body bytes that came with the head (less than one receive
  // buffer); one receive buffer more makes every later request of that size fit the block.
  size_t sized_for_body() const { return in_want + srv->loop_.buffer_size(); }

  void grow_input(size_t cap) {
    input_block b{std::make_unique<char[]>(cap + body_padding), cap};  // zeroed
    if (in_size != 0) memcpy(b.p.get(), in.p.get(), in_size);
    in = std::move(b);
  }

  void feed(std::string_view data) {
    if (closing) return;  // after a final response, further input is discarded
    if (paused || in_size != 0) {
      append_input(data);
      if (!paused) {
        process_in();
      } else if (in_size > paused_input_limit) {
        stop_reading();
      }
      return;
    }
    size_t used = process(data, false);
    if (!closing && used < data.size()) append_input(data.substr(used));
    flush();
  }

  void process_in() {
    // Bodies parsed here sit in `in`, whose block has body_padding bytes past its end.
    size_t used = process(input(), true);
    if (closing) {
      in_size = 0;
    } else if (used != 0) {
      in_size -= used;
      memmove(in.p.get(), in.p.get() + used, in_size);
    }
    if (in_size == 0) {
      srv->give_input(in);  // split requests are rare: an idle connection holds no block
    } else if (in_want > in.cap) {
      grow_input(sized_for_body());  // the head said how large the body is: one step
    }
    flush();
  }

  // Parses and answers complete requests at the front of buf, in order. Returns bytes used.
  // in_block: buf is `in` (bodies there can be parsed in place).
  size_t process(std::string_view buf, bool in_block) {
    size_t pos = 0;
    // Pipelined requests are answered in one pass and leave in one send.
    while (pos < buf.size() && !closing && !paused && !awaiting) {
      parse_status st = parser.parse(buf.substr(pos), srv->req_);
      if (st == parse_status::incomplete) {
        // Size `in` once for the whole request when the head says how long the body is
        // (over by at most the body bytes already here).
        if (parser.head_done() && in_want == 0 && !srv->req_.chunked) {
          in_want = buf.size() - pos + size_t(srv->req_.content_length) + body_padding;
        }
        // RFC 9110 10.1.1: the client waits for 100 before sending the body.
        if (parser.head_done() && srv->req_.expect_continue && !continue_sent &&
            srv->req_.version_minor >= 1) {
          continue_sent = true;
          if (out.capacity() < 64) srv->take_buffer(out);
          out.append("HTTP/1.1 100 Continue\r\n\r\n");
        }
        break;
      }
      if (st == parse_status::error) {
        srv->write_error(*this, parser.error_status(), parser.error_reason(),
                         is_head_request(buf.substr(pos)));
        return buf.size();
      }
      pos += parser.consumed();
      continue_sent = false;
      in_want = 0;
      srv->handle(*this, srv->req_, in_block);
      parser.reset();
      tm = tm == tmode::request ? tmode::none : tm;
      if (awaiting) {
        pause();  // keep-alive is decided when the answer comes
        break;
      }
      if (!srv->req_.keep_alive) closing = true;
      if (queued() >= srv->opt_.output_high_water) {
        pause();
        stop_reading();
      }
    }
    return pos;
  }

  // Stops parsing. Reading goes on (into `in`, up to paused_input_limit) so that a client
  // that resets while its answer is deferred is seen at once: the slot is released and the
  // late complete() returns false.
  void pause() { paused = true; }

  void stop_reading() {
    if (reading_stopped) return;
    reading_stopped = true;
    if (recv_armed) lp().cancel(recv_op);
  }

  void resume() {
    paused = false;
    reading_stopped = false;
    if (in_size != 0) process_in();
    if (!dead && !closing) arm_recv();
  }

  void flush() {
    if (dead || send_inflight) return;
    // Plaintext connections pay one predictable branch here and nothing else for TLS.
    if (ssl != nullptr || !cipher.empty()) {
      flush_tls();
      return;
    }
    if (!out.empty()) {  // a gathered body always follows its head in `out`
      sending.swap(out);
      out.clear();
      send_off = 0;
      if (gather && !gather->queued.empty()) {
        gather->sending.swap(gather->queued);
        gather->sending_bytes = gather->queued_bytes;
        gather->queued_bytes = 0;
      }
      start_send();
      return;
    }
    if (closing) begin_linger();
  }

  // ---- TLS ----

  // OpenSSL's output for this connection (the shared BIO's write side): appended to
  // `cipher`, sent by the next flush().
  static void on_tls_write(void* ctx, const char* p, size_t n) {
    auto* k = static_cast<connection*>(ctx);
    if (k->cipher.capacity() < 64) k->srv->take_buffer(k->cipher);
    k->cipher.append(p, n);
  }

  tls_bio_io& io() { return *srv->tls_io_; }

  // Ciphertext received: decrypts it (driving the handshake while there is one) into the
  // server's scratch and parses the plaintext as feed() does. OpenSSL reads the bytes in
  // place from the provided buffer; every one is consumed (buffered in OpenSSL's record
  // layer when a record is incomplete) before this returns.
  // Why it is fast: no copy before decryption, records decrypted in batches of up to 32
  // KiB into one per-server scratch, and pipelined requests parsed straight from it.
  void feed_tls(std::string_view data) {
    if (handshaking && SSL_in_before(ssl) && data[0] >= 'A' && data[0] <= 'Z') {
      // "GET / HTTP/1.1" where a ClientHello (0x16) belongs: say so in plain HTTP.
      ++srv->stats_.tls_failed;
      drop_tls();
      srv->write_error(*this, 400, "plain HTTP request sent to an HTTPS port: use https://",
                       is_head_request(data));
      flush();
      return;
    }
    // SSL_get_error reads this thread's error queue, which the shard's client shares.
    ERR_clear_error();
    char* buf = srv->tls_plain_.get();
    io().in = data.data();
    io().in_len = data.size();
    for (;;) {
      size_t got = 0;
      int r = 1;
      while (got < tls_plain_bytes) {
        size_t n = 0;
        io().ctx = this;  // a handler may have flushed another connection meanwhile
        r = SSL_read_ex(ssl, buf + got, tls_plain_bytes - got, &n);
        if (r != 1) break;
        got += n;
      }
      // Classified now: answering below makes other OpenSSL calls, which reset it.
      const int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, r);
      if (handshaking && SSL_is_init_finished(ssl)) {
        handshaking = false;
        ++srv->stats_.tls_handshakes;
        if (SSL_session_reused(ssl)) ++srv->stats_.tls_resumed;
      }
      if (got > 0) {
        feed(std::string_view(buf, got));
        if (dead || ssl == nullptr) return;  // closed while answering
      }
      if (e == SSL_ERROR_NONE) continue;    // the scratch filled up: more may be waiting
      if (e == SSL_ERROR_WANT_READ) break;  // every received byte is consumed
      if (e == SSL_ERROR_ZERO_RETURN) {
        // close_notify: the client sends nothing more; answer what came, then close.
        closing = true;
        break;
      }
      fail_tls();
      break;
    }
    io().in_len = 0;
    flush();
  }

  // Encrypts the queued responses (plus close_notify once closing) and sends the
  // ciphertext. Memory BIOs never block, so SSL_write takes everything at once.
  void flush_tls() {
    if (ssl != nullptr) {
      tls_bio_io& x = io();
      const tls_bio_io saved = x;  // flushing another connection from inside a feed_tls
      x.ctx = this;
      x.in_len = 0;
      bool ok = true;
      ERR_clear_error();
      if (!out.empty()) {
        size_t w = 0;
        ok = SSL_write_ex(ssl, out.data(), out.size(), &w) == 1 && w == out.size();
        srv->give_buffer(out);
      }
      if (ok && closing && !awaiting) {
        SSL_shutdown(ssl);  // our close_notify, into cipher
        drop_tls();
      }
      x = saved;
      if (!ok) {
        drop_tls();
        abort();
        return;
      }
    }
    if (!cipher.empty()) {
      sending.swap(cipher);  // cipher takes sending's empty string (its buffer went back)
      send_off = 0;
      start_send();
      return;
    }
    if (closing) begin_linger();
  }

  // A fatal TLS error (not TLS at all, a bad record, no certificate for the name, no
  // common version or cipher): OpenSSL's alert, when it wrote one, goes out, then the
  // connection closes. When it wrote none (bytes that are not a TLS record at all: it
  // cannot know which version to answer in), a fatal protocol_version alert in a
  // TLS 1.0-versioned record (RFC 8446 5.1), so the client sees a TLS error, not a bare
  // close.
  void fail_tls() {
    if (handshaking) ++srv->stats_.tls_failed;
    const unsigned long err = ERR_peek_last_error();
    const char* reason = err != 0 ? ERR_reason_error_string(err) : nullptr;
    srv->tls_last_error_.assign(reason != nullptr ? reason : "TLS error");
    if (cipher.empty()) {
      static constexpr char alert[] = {0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46};
      on_tls_write(this, alert, sizeof alert);
    }
    drop_tls();
    closing = true;
    in_size = 0;
  }

  // Frees the SSL (nothing more will be encrypted or decrypted); clears OpenSSL's error
  // queue, which is per thread and shared with the client's sessions.
  void drop_tls() {
    SSL_free(ssl);
    ssl = nullptr;
    handshaking = false;
    ERR_clear_error();
  }

  void start_send() {
    const bool ok = gather && !gather->sending.empty()
                        ? start_gather()
                        : lp().send(fd, sending.data() + send_off, sending.size() - send_off,
                                    bind<&connection::on_send>(this))
                              .valid();
    if (!ok) {
      abort();
      return;
    }
    send_inflight = true;
  }

  size_t sending_size() const { return sending.size() + (gather ? gather->sending_bytes : 0); }

  // One sendmsg of what is left from send_off: the output between the gathered bodies and
  // the bodies themselves, at most 512 pieces at a time (a short send continues).
  bool start_gather() {
    gather_state& g = *gather;
    g.iov.clear();
    size_t skip = send_off;
    auto add = [&](const char* p, size_t n) {
      if (skip >= n) {
        skip -= n;
        return;
      }
      g.iov.push_back({const_cast<char*>(p + skip), n - skip});
      skip = 0;
    };
    size_t pos = 0;
    for (const gather_state::piece& pc : g.sending) {
      if (g.iov.size() >= 512) break;
      add(sending.data() + pos, pc.at - pos);
      add(pc.bytes.data(), pc.bytes.size());
      pos = pc.at;
    }
    if (g.iov.size() < 512) add(sending.data() + pos, sending.size() - pos);
    g.msg = msghdr{};
    g.msg.msg_iov = g.iov.data();
    g.msg.msg_iovlen = g.iov.size();
    return lp().sendmsg(fd, &g.msg, bind<&connection::on_send>(this)).valid();
  }

  void on_send(const completion& c) {
    send_inflight = false;
    if (dead) {
      maybe_release();
      return;
    }
    if (c.res < 0) {
      abort();
      return;
    }
    send_off += size_t(c.res);
    srv->stats_.bytes_out += size_t(c.res);
    if (send_off < sending_size()) {
      start_send();  // short send: the rest, in order
      update_timer();
      return;
    }
    // The buffer goes back to the shard's pool: an idle connection holds no buffers.
    srv->give_buffer(sending);
    if (gather) gather->drop_sending();
    if (paused && !awaiting && queued() < srv->opt_.output_high_water / 2) resume();
    if (dead) return;
    flush();
    if (dead) return;
    if (!send_inflight && out.empty() && peer_closed && !lingering && !awaiting) {
      abort();
      return;
    }
    update_timer();
  }

  void begin_linger() {
    if (lingering) return;
    lingering = true;
    // Half-close, then drain what the client still sends so that our final response is
    // not destroyed by a reset (RFC 9112 9.6); bounded by linger_ms.
    ::shutdown(fd, SHUT_WR);
    if (peer_closed) {
      abort();
      return;
    }
    tm = tmode::linger;
    lp().arm(t, srv->opt_.linger_ms);
    paused = reading_stopped = false;
    arm_recv();
  }

  void abort() {
    if (dead) return;
    dead = true;
    lp().disarm(t);
    if (recv_armed || send_inflight) lp().cancel_fd(fd);
    maybe_release();
  }

  void maybe_release() {
    if (recv_armed || send_inflight) return;
    srv->release(*this);
  }
};

// ---- response ----

void http_response::clear() {
  status = 200;
  content_type = "text/plain; charset=utf-8";
  body = {};
  gzip_body = {};
  etag = {};
  last_modified = -1;
  cache_control = {};
  compressible = true;
  extra_headers.clear();
  storage.clear();
  keep.reset();
  defer = false;
  later = deferred_response();
}

// ---- server ----

http_server::http_server(loop& l, const router& routes, const server_options& opt, void* context)
    : loop_(l), routes_(routes), opt_(opt), context_(context) {
  accept_retry_.set(&http_server::on_accept_retry, this);
  gz_ = libdeflate_alloc_compressor(int(std::clamp<uint32_t>(opt_.gzip_level, 1, 12)));
  if (opt_.tls != nullptr) {
    tls_io_ = std::make_unique<tls_bio_io>();
    tls_io_->write = &connection::on_tls_write;
    tls_bio_ = tls_bio_new(tls_io_.get());
    tls_plain_ = std::make_unique<char[]>(tls_plain_bytes);
  }
}

http_server::~http_server() {
  // The loop no longer runs: close sockets without waiting for completions.
  for (connection* k : all_) {
    if (k->in_use && k->fd >= 0) ::close(k->fd);
    if (k->ssl != nullptr) k->drop_tls();
  }
  BIO_free(tls_bio_);  // after every SSL that shared it
  if (gz_ != nullptr) libdeflate_free_compressor(gz_);
}

bool http_server::start(int listen_fd) {
  listen_fd_ = listen_fd;
  accept_op_ = loop_.accept_multishot(listen_fd, bind<&http_server::on_accept>(this));
  accepting_ = accept_op_.valid();
  return accepting_;
}

void http_server::on_accept_retry(void* self) {
  auto* s = static_cast<http_server*>(self);
  if (!s->stopping_ && !s->accepting_) s->start(s->listen_fd_);
}

void http_server::on_accept(const completion& c) {
  if (!c.more()) accepting_ = false;
  if (c.res >= 0) {
    const int fd = c.res;
    if (stopping_) {
      ::close(fd);
    } else {
      connection* k = alloc_connection();
      k->fd = fd;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ++stats_.accepted;
      ++stats_.open;
      if (opt_.tls != nullptr && !start_tls(*k)) {
        k->abort();
      } else {
        k->arm_recv();
      }
      if (!k->dead) {
        k->idle_deadline = loop_.now_ms() + opt_.header_timeout_ms;
        k->set_timer(connection::tmode::idle, opt_.header_timeout_ms);
      }
    }
  }
  if (!c.more() && !stopping_) {
    // EMFILE/ENFILE and friends: back off briefly instead of spinning.
    if (c.res < 0 && c.res != -ECANCELED) {
      loop_.arm(accept_retry_, 100);
    } else {
      start(listen_fd_);
    }
  }
}

bool http_server::start_tls(connection& k) {
  k.ssl = SSL_new(opt_.tls->native());
  if (k.ssl == nullptr) {
    ERR_clear_error();
    return false;
  }
  BIO_up_ref(tls_bio_);  // the SSL's reference (one for both directions)
  SSL_set_bio(k.ssl, tls_bio_, tls_bio_);
  SSL_set_accept_state(k.ssl);
  k.handshaking = true;
  return true;
}

http_server::connection* http_server::alloc_connection() {
  if (free_.empty()) {
    constexpr size_t n = 64;
    chunks_.push_back(std::make_unique<connection[]>(n));
    for (size_t i = 0; i < n; ++i) {
      connection* k = &chunks_.back()[n - 1 - i];
      all_.push_back(k);
      free_.push_back(k);
    }
  }
  connection* k = free_.back();
  free_.pop_back();
  k->srv = this;
  k->in_use = true;
  k->dead = k->recv_armed = k->send_inflight = k->closing = k->lingering = false;
  k->peer_closed = k->paused = k->reading_stopped = k->continue_sent = false;
  k->tm = connection::tmode::none;
  k->send_off = 0;
  k->in_want = 0;
  k->parser = request_parser(opt_.limits, &body_pool_);
  k->t.set(&connection::on_timer, k);
  return k;
}

void http_server::release(connection& k) {
  if (!k.in_use) return;
  ::close(k.fd);
  k.fd = -1;
  k.in_use = false;
  ++k.gen;
  k.awaiting = false;
  loop_.disarm(k.t);
  // Idle pool slots keep no buffers: 10,000 idle connections cost only their slots.
  k.in_size = 0;
  give_input(k.in);
  give_buffer(k.out);
  give_buffer(k.sending);
  if (k.gather) k.gather->drop_all();
  if (k.ssl != nullptr) k.drop_tls();
  give_buffer(k.cipher);
  k.parser = request_parser(opt_.limits, &body_pool_);
  --stats_.open;
  free_.push_back(&k);
}

void http_server::shutdown() {
  stopping_ = true;
  loop_.disarm(accept_retry_);
  if (accepting_) loop_.cancel(accept_op_);
  for (connection* k : all_) {
    if (k->in_use && !k->dead) k->abort();
  }
}

size_t http_server::connection_memory() const {
  size_t total = chunks_.size() * 64 * sizeof(connection) + all_.capacity() * sizeof(void*) +
                 free_.capacity() * sizeof(void*);
  for (const connection* k : all_) {
    total += k->in.cap + k->out.capacity() + k->sending.capacity() + k->cipher.capacity() +
             k->parser.body_capacity();
  }
  return total;
}

void http_server::take_buffer(std::string& s) { buf_pool_.take(s); }

void http_server::give_buffer(std::string& s) { buf_pool_.give(s); }

http_server::input_block http_server::take_input(size_t want) {
  // The smallest pooled block that is large enough, else the largest (the caller grows it).
  size_t best = in_pool_.size();
  for (size_t i = 0; i < in_pool_.size(); ++i) {
    const size_t c = in_pool_[i].cap;
    if (best == in_pool_.size()) {
      best = i;
      continue;
    }
    const size_t b = in_pool_[best].cap;
    if (c >= want ? (b < want || c < b) : (b < want && c > b)) best = i;
  }
  if (best == in_pool_.size()) return {};
  input_block b = std::move(in_pool_[best]);
  in_pool_[best] = std::move(in_pool_.back());
  in_pool_.pop_back();
  in_pool_bytes_ -= b.cap;
  return b;
}

void http_server::give_input(input_block& b) {
  if (b.cap == 0) return;
  if (in_pool_bytes_ + b.cap <= opt_.input_pool_bytes) {
    in_pool_bytes_ += b.cap;
    in_pool_.push_back(std::move(b));
  }
  b = {};
}

std::string_view http_server::date() {
  const int64_t now = int64_t(::time(nullptr));
  if (now != date_sec_) {
    date_sec_ = now;
    format_http_date(now, date_);
  }
  return {date_, 29};
}

void http_server::handle(connection& k, const http_request& req, bool body_in_place) {
  ++stats_.requests;
  resp_.clear();
  resp_.later.srv_ = this;
  resp_.later.conn_ = &k;
  resp_.later.gen_ = k.gen;
  resp_.later.seq_ = ++k.seq;
  routes_.find(req.method, req.path, &match_);
  if (match_.handler == nullptr) {
    msg_.assign(req.method).append(" ").append(req.path);
    if (match_.status == 405) {
      msg_.append(": method not allowed (allowed: ").append(match_.allow).append(")");
      set_json_error(resp_, 405, "method_not_allowed", msg_);
      resp_.extra_headers.append("Allow: ").append(match_.allow).append("\r\n");
    } else {
      msg_.append(": no such route");
      set_json_error(resp_, 404, "not_found", msg_);
    }
  } else if (prepare_context(req, body_in_place)) {
    rctx_.fd_ = k.fd;
    (*match_.handler)(rctx_, resp_);
  }
  if (resp_.defer) {
    if (!k.dstate) k.dstate = std::make_unique<deferred_state>();
    deferred_state& d = *k.dstate;
    d.method.assign(req.method);
    d.inm.assign(req.if_none_match);
    d.ims.assign(req.if_modified_since);
    d.ae.assign(req.accept_encoding);
    d.keep_alive = req.keep_alive;
    d.version_minor = req.version_minor;
    k.awaiting = true;
    return;
  }
  write_response(k, request_meta::of(req), resp_);
  resp_.keep.reset();  // the connection holds what it still sends; the shard's response not
}

bool deferred_response::complete(http_response& r) const {
  return srv_ != nullptr && srv_->complete_deferred(conn_, gen_, seq_, r);
}

bool http_server::complete_deferred(void* conn, uint32_t gen, uint32_t seq, http_response& r) {
  auto* k = static_cast<connection*>(conn);
  if (!k->in_use || k->gen != gen || k->seq != seq || k->dead || !k->awaiting) return false;
  finish_deferred(*k, r);
  return true;
}

void http_server::expire_deferred(connection& k) {
  ++stats_.deferred_timeouts;
  timeout_resp_.clear();
  msg_.assign("no answer within ");
  msg_.append(std::to_string(opt_.defer_timeout_ms)).append(" ms; try again");
  set_unavailable(timeout_resp_, msg_, 1, "timeout");
  finish_deferred(k, timeout_resp_);
}

void http_server::finish_deferred(connection& k, http_response& r) {
  const deferred_state& d = *k.dstate;
  request_meta m{d.method, d.inm, d.ims, d.ae, d.keep_alive, d.version_minor};
  write_response(k, m, r);
  k.awaiting = false;
  k.tm = connection::tmode::none;
  if (!d.keep_alive) k.closing = true;
  if (k.paused && !k.closing && k.queued() < opt_.output_high_water / 2) k.resume();
  if (k.dead) return;
  k.flush();
  if (!k.dead) k.update_timer();
}

void http_server::write_response(connection& k, const request_meta& req, http_response& r) {
  const bool head = req.method == "HEAD";
  std::string& o = k.out;
  if (o.capacity() < 64) take_buffer(o);
  if (r.status >= 400) ++stats_.errors_4xx;
  int status = r.status;
  // Conditional GET (RFC 9110 13.1): If-None-Match wins over If-Modified-Since.
  if (status == 200 && (req.method == "GET" || req.method == "HEAD") &&
      not_modified(req.if_none_match, req.if_modified_since, r.etag, r.last_modified)) {
    status = 304;
    ++stats_.not_modified;
  }
  const bool vary = opt_.gzip && r.compressible && r.body.size() >= opt_.gzip_min_bytes;
  std::string_view body = r.body;
  bool gzipped = false;
  const bool wants_gzip = vary && accepts_gzip(req.accept_encoding);
  if (status == 200 && wants_gzip) {
    if (!r.gzip_body.empty()) {
      body = r.gzip_body;
      gzipped = true;
    } else if (gz_ != nullptr) {
      gz_buf_.resize(libdeflate_gzip_compress_bound(gz_, r.body.size()));
      size_t n = libdeflate_gzip_compress(gz_, r.body.data(), r.body.size(), gz_buf_.data(),
                                          gz_buf_.size());
      if (n > 0 && n < r.body.size()) {
        body = std::string_view(gz_buf_.data(), n);
        gzipped = true;
      }
    }
  }

  o.append("HTTP/1.1 ");
  append_num(o, uint64_t(status));
  o.push_back(' ');
  o.append(reason_phrase(status));
  o.append("\r\nServer: feedplane\r\nDate: ");
  o.append(date());
  o.append("\r\n");
  if (status != 304) {
    o.append("Content-Type: ").append(r.content_type).append("\r\nContent-Length: ");
    append_num(o, body.size());
    o.append("\r\n");
  }
  if (!r.etag.empty()) {
    o.append("ETag: ");
    // A compressed representation has different bytes: mark its tag weak (as nginx does).
    // A 304 carries the tag the 200 would have carried for this request (RFC 9110 15.4.5).
    const bool weak = gzipped || (status == 304 && wants_gzip);
    if (weak && r.etag.substr(0, 2) != "W/") o.append("W/");
    o.append(r.etag).append("\r\n");
  }
  if (r.last_modified >= 0) {
    if (r.last_modified != lm_sec_) {  // static content repeats one value: format it once
      lm_sec_ = r.last_modified;
      format_http_date(r.last_modified, lm_);
    }
    o.append("Last-Modified: ").append(lm_, 29).append("\r\n");
  }
  if (!r.cache_control.empty()) o.append("Cache-Control: ").append(r.cache_control).append("\r\n");
  if (gzipped) o.append("Content-Encoding: gzip\r\n");
  if (vary) o.append("Vary: Accept-Encoding\r\n");
  o.append(r.extra_headers);
  if (!req.keep_alive || k.closing) {
    o.append("Connection: close\r\n");
  } else if (req.version_minor == 0) {
    o.append("Connection: keep-alive\r\n");
  }
  o.append("\r\n");
  if (status == 304 || head) return;
  // A large kept body goes out from where it is (one copy fewer per poll of a feed):
  // plaintext only, and only the caller's bytes (not gz_buf_, which the next response
  // reuses).
  if (r.keep && tls_io_ == nullptr && body.size() >= opt_.gather_min_bytes &&
      (body.data() == r.body.data() || body.data() == r.gzip_body.data())) {
    if (!k.gather) k.gather = std::make_unique<gather_state>();
    k.gather->queued.push_back({o.size(), body, r.keep});
    k.gather->queued_bytes += body.size();
    return;
  }
  o.append(body);
}

void http_server::write_error(connection& k, int status, const char* reason, bool head) {
  ++stats_.errors_4xx;
  std::string& o = k.out;
  if (o.capacity() < 64) take_buffer(o);
  o.append("HTTP/1.1 ");
  append_num(o, uint64_t(status));
  o.push_back(' ');
  o.append(reason_phrase(status));
  o.append("\r\nServer: feedplane\r\nDate: ");
  o.append(date());
  o.append("\r\nContent-Type: application/json\r\nContent-Length: ");
  err_body_.assign("{\"error\": ");
  base::append_json_string(error_code(status), err_body_);
  err_body_.append(", \"message\": ");
  base::append_json_string(reason, err_body_);
  err_body_.append("}\n");
  append_num(o, err_body_.size());
  o.append("\r\nConnection: close\r\n\r\n");
  // RFC 9110 9.3.2: a response to HEAD has no content, errors included.
  if (!head) o.append(err_body_);
  k.closing = true;
}

// ---- listeners ----

int listen_tcp(std::string_view addr_port, bool reuseport, std::string* error) {
  std::string host;
  std::string_view port_s;
  if (!addr_port.empty() && addr_port.front() == '[') {
    size_t rb = addr_port.find(']');
    if (rb == std::string_view::npos || rb + 1 >= addr_port.size() || addr_port[rb + 1] != ':') {
      *error =
          "listen address must be ADDR:PORT or [IPv6]:PORT, not '" + std::string(addr_port) + "'";
      return -1;
    }
    host = std::string(addr_port.substr(1, rb - 1));
    port_s = addr_port.substr(rb + 2);
  } else {
    size_t c = addr_port.rfind(':');
    if (c == std::string_view::npos) {
      *error = "listen address must be ADDR:PORT, not '" + std::string(addr_port) + "'";
      return -1;
    }
    host = std::string(addr_port.substr(0, c));
    port_s = addr_port.substr(c + 1);
  }
  unsigned port = 0;
  auto pr = std::from_chars(port_s.data(), port_s.data() + port_s.size(), port);
  if (port_s.empty() || pr.ec != std::errc() || pr.ptr != port_s.data() + port_s.size() ||
      port > 65535) {
    *error = "invalid port in listen address '" + std::string(addr_port) + "'";
    return -1;
  }
  if (host.empty()) host = "0.0.0.0";
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(uint16_t(port));
    len = sizeof(*a4);
  } else if (inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(uint16_t(port));
    len = sizeof(*a6);
  } else {
    *error = "listen address '" + host + "' is not an IPv4 or IPv6 address";
    return -1;
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    *error = "cannot bind " + std::string(addr_port) + ": " + strerror(errno);
    ::close(fd);
    return -1;
  }
  if (::listen(fd, 4096) != 0) {
    *error = "cannot listen on " + std::string(addr_port) + ": " + strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

}  // namespace feedplane::net
