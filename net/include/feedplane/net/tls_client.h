// TLS client over OpenSSL memory BIOs: the network side is plain bytes in and out, so
// the loop does all socket I/O (io_uring) and TLS never touches a file descriptor.
// Verification against the system CA store or a given CA file, SNI, host-name check,
// and a distinct fetch_error for expired / not yet valid / unknown CA / name mismatch.
// The handshake timeout is the caller's timer (it reports tls_handshake_timeout).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "feedplane/net/fetch_error.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace feedplane::net {

// Shared settings and session cache: one per client (per shard), used on its thread.
class tls_context {
 public:
  // ca_file empty: the system CA store. Returns null and sets *error on failure
  // (unreadable CA file, OpenSSL failure).
  static std::unique_ptr<tls_context> create(const std::string& ca_file, std::string* error);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  SSL_CTX* native() const { return ctx_; }

 private:
  explicit tls_context(SSL_CTX* c) : ctx_(c) {}
  SSL_CTX* ctx_;
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
  // and name are not checked. Returns false on OpenSSL failure.
  bool start(tls_context& ctx, const std::string& host, bool verify);
  void reset();

  // Drives the handshake. ok once it is complete.
  result handshake();
  bool handshake_done() const { return handshake_done_; }

  // Ciphertext received from the network.
  void feed(const char* data, size_t n);
  // Appends ciphertext to send to `out`; returns the number of bytes appended.
  size_t take_output(std::string& out);
  bool has_output() const;

  // Encrypts plaintext (all of it: memory BIOs never block writes).
  result write(const char* data, size_t n);
  // Decrypts into buf. ok with *got > 0, want_io (need more ciphertext), closed, or error.
  result read(char* buf, size_t cap, size_t* got);

  fetch_error error() const { return error_; }
  const std::string& detail() const { return detail_; }

 private:
  result fail_from(int ssl_ret, bool in_handshake);

  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // network -> OpenSSL (owned by ssl_)
  BIO* wbio_ = nullptr;  // OpenSSL -> network (owned by ssl_)
  bool handshake_done_ = false;
  fetch_error error_ = fetch_error::ok;
  std::string detail_;
};

}  // namespace feedplane::net
