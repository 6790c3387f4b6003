// TLS client without sockets: the network side is plain bytes in and out, so the loop does
// all socket I/O (io_uring) and TLS never touches a file descriptor. Verification against
// the system CA store or a given CA file, SNI, host-name check, and a distinct fetch_error
// for expired / not yet valid / unknown CA / name mismatch. The handshake timeout is the
// caller's timer (it reports tls_handshake_timeout).
//
// Memory: the network side is the server's BIO (tls_bio.h), one per context: ciphertext is
// read in place from the caller's receive buffer and written straight into the caller's
// output string, so a session holds no buffer of its own (SSL_MODE_RELEASE_BUFFERS frees
// OpenSSL's record buffers while they are empty). Only ciphertext left unread when the
// caller's buffer goes away (release_input) is copied, and freed once read.
//
// Resumption: the context keeps TLS session tickets per host (host:port and verification
// mode) from OpenSSL's new-session callback, at most two per host and `session_hosts`
// hosts (least recently used evicted). A TLS 1.3 ticket is used once (taken out of the
// cache; the server sends fresh ones); a TLS 1.2 session stays until replaced. A ticket the
// server rejects costs nothing but the full handshake OpenSSL then does.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "feedplane/net/fetch_error.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;
typedef struct ssl_session_st SSL_SESSION;

namespace feedplane::net {

struct tls_bio_io;
class tls_session;

// Shared settings, the network BIO and the session cache: one per client (per shard), used
// on its thread only.
class tls_context {
 public:
  // ca_file empty: the system CA store. session_hosts: hosts whose session tickets are kept
  // (0: no resumption). Returns null and sets *error on failure (unreadable CA file,
  // OpenSSL failure).
  static std::unique_ptr<tls_context> create(const std::string& ca_file, std::string* error,
                                             uint32_t session_hosts = 4096);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  SSL_CTX* native() const { return ctx_; }

  struct cache_stats {
    uint64_t stored = 0;   // tickets (sessions) received and kept
    uint64_t offered = 0;  // handshakes that offered a cached ticket
    uint64_t evicted = 0;  // tickets dropped: host over two, or least recently used host
    size_t hosts = 0;      // hosts with a ticket now
    size_t tickets = 0;    // tickets held now
  };
  cache_stats session_stats() const;
  // Drops every cached ticket (tests; a CA change).
  void clear_sessions();

 private:
  friend class tls_session;
  static constexpr uint32_t k_per_host = 2;
  struct host_entry {
    SSL_SESSION* s[k_per_host] = {};  // oldest first
    uint32_t n = 0;
    std::list<const std::string*>::iterator lru;  // its place in lru_ (front: most recent)
  };
  tls_context() = default;
  // A reference to the newest ticket for key (removed from the cache if single-use), or null.
  SSL_SESSION* take_session(const std::string& key);
  void put_session(const std::string& key, SSL_SESSION* s);  // takes the reference
  void drop_host(std::unordered_map<std::string, host_entry>::iterator it);
  static int on_new_session(SSL* ssl, SSL_SESSION* s);

  SSL_CTX* ctx_ = nullptr;
  // The one network BIO of every session of this context: pointed at the session (its
  // unread ciphertext and output string) before each OpenSSL call, on this thread.
  std::unique_ptr<tls_bio_io> io_;
  BIO* bio_ = nullptr;
  uint32_t session_hosts_ = 0;
  std::unordered_map<std::string, host_entry> sessions_;  // key: "host:port" + "!" if unverified
  std::list<const std::string*> lru_;                     // keys of sessions_, most recent first
  size_t tickets_ = 0;
  uint64_t stored_ = 0, offered_ = 0, evicted_ = 0;
};

class tls_session {
 public:
  enum class result : uint8_t {
    ok,       // done (handshake complete / bytes written / bytes read)
    want_io,  // send take_output() if any, then feed() more received bytes
    closed,   // the peer sent close_notify (read side)
    error,    // see error() and detail()
  };

  tls_session() = default;
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  // Prepares a client session for `host` (SNI unless an IP literal; the certificate must
  // match host). verify=false is the per-source opt-out (self-signed servers): the chain
  // and name are not checked. port: with host and verify, the key of the ticket cache (a
  // cached ticket is offered; tickets the server sends are kept); 0: no resumption.
  // Returns false on OpenSSL failure.
  bool start(tls_context& ctx, const std::string& host, bool verify, uint16_t port = 0);
  void reset();

  // Drives the handshake. ok once it is complete.
  result handshake();
  bool handshake_done() const { return handshake_done_; }
  // The handshake resumed a cached session (no certificate exchanged). Valid once done.
  bool resumed() const;

  // Ciphertext received from the network, read IN PLACE by the next handshake() / read():
  // the bytes must stay valid until release_input() is called, which the caller must do
  // before they go away (e.g. when its receive callback returns).
  void feed(const char* data, size_t n);
  // Copies the fed ciphertext not yet read (if any) into the session (freed once read).
  void release_input();
  // Bytes of heap this session holds for the network side (unread ciphertext copied by
  // release_input, output kept for take_output); OpenSSL's own state not included.
  size_t buffered_bytes() const { return in_buf_.capacity() + own_out_.capacity(); }

  // Where ciphertext to send goes: appended to *sink by every call that produces it. Null
  // (the default): kept in the session for take_output().
  void set_output(std::string* sink) { sink_ = sink != nullptr ? sink : &own_out_; }
  // Appends ciphertext kept for take_output to `out`; returns the number of bytes appended.
  size_t take_output(std::string& out);
  bool has_output() const { return !own_out_.empty(); }

  // Encrypts plaintext (all of it: memory BIOs never block writes).
  result write(const char* data, size_t n);
  // Decrypts into buf. ok with *got > 0, want_io (need more ciphertext), closed, or error.
  result read(char* buf, size_t cap, size_t* got);

  fetch_error error() const { return error_; }
  const std::string& detail() const { return detail_; }

 private:
  result fail_from(int ssl_ret, bool in_handshake);
  // Points the context's BIO at this session before an OpenSSL call; unbind() keeps what
  // OpenSSL left unread.
  void bind();
  void unbind();
  friend class tls_context;

  SSL* ssl_ = nullptr;
  tls_context* ctx_ = nullptr;
  std::string key_;           // ticket cache key; empty: no resumption
  const char* in_ = nullptr;  // ciphertext not yet read: the caller's bytes or in_buf_'s
  size_t in_len_ = 0;
  bool in_owned_ = false;  // in_ points into in_buf_
  std::string in_buf_;     // unread ciphertext kept past release_input()
  std::string own_out_;    // output when no sink is set
  std::string* sink_ = &own_out_;
  bool handshake_done_ = false;
  fetch_error error_ = fetch_error::ok;
  std::string detail_;
};

}  // namespace feedplane::net
