// Server-side TLS for http_server: certificates, SNI selection, session tickets, ALPN.
//
// The connections themselves live in http_server.cc: an SSL per connection on the same
// io_uring recv/send path as plaintext, the network side reached through one custom BIO
// per server (ciphertext is read straight from the received provided buffer and written
// into the connection's pooled output buffer), so a TLS connection holds no buffer of its
// own beyond what OpenSSL keeps (SSL_MODE_RELEASE_BUFFERS frees its record buffers while
// they are empty). What an idle TLS connection costs is in bench/RESULTS.md ("## net: TLS").
//
// One tls_server_context may serve every shard (OpenSSL's SSL_CTX is thread-safe once
// configured): its session-ticket keys are then shared, so a client that resumes on
// another shard's SO_REUSEPORT listener still resumes. The server session cache is off:
// TLS 1.2 and 1.3 resumption both use stateless tickets, no lock and no memory per session.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct ssl_st SSL;
struct stack_st_X509;

namespace feedplane::net {

// A certificate chain and its private key. Immutable once made; shared by every handshake
// that presents it (OpenSSL takes references).
class tls_identity {
 public:
  // cert_file: PEM, the leaf first, then any intermediates. key_file: its PEM private key.
  // Null with *error when a file cannot be read or the key does not match the certificate.
  static std::unique_ptr<tls_identity> load(const std::string& cert_file,
                                            const std::string& key_file, std::string* error);
  // Takes a reference to leaf and key (the caller keeps its own); chain certificates
  // (intermediates) likewise. Null with *error when the key does not match.
  static std::unique_ptr<tls_identity> adopt(X509* leaf, EVP_PKEY* key, std::string* error);
  ~tls_identity();
  tls_identity(const tls_identity&) = delete;
  tls_identity& operator=(const tls_identity&) = delete;

  X509* leaf() const { return leaf_; }
  EVP_PKEY* key() const { return key_; }
  stack_st_X509* chain() const { return chain_; }

 private:
  tls_identity() = default;
  X509* leaf_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  stack_st_X509* chain_ = nullptr;  // intermediates, may be null
};

// Picks the identity for a full handshake from the client's SNI name ("" when it sent
// none, as the client sent it: not lower-cased). Not called for a resumed session. Null:
// the context's default identity; without one the handshake fails with an internal_error
// alert. Runs on the thread doing the handshake (every shard's thread when the context is
// shared) and must not block. The identity must stay alive until the selector is called
// again on that thread: OpenSSL then holds its own references to what it presents.
using tls_cert_selector = std::function<const tls_identity*(std::string_view server_name)>;

class tls_server_context {
 public:
  // def: presented when there is no selector or it returns null (may be null when a
  // selector is given). TLS 1.2 minimum, ALPN "http/1.1", session tickets on (stateless;
  // OpenSSL makes the ticket keys here and keeps them for the context's life, so tickets
  // do not survive a restart), renegotiation off.
  static std::unique_ptr<tls_server_context> create(std::unique_ptr<tls_identity> def,
                                                    tls_cert_selector select, std::string* error);
  ~tls_server_context();
  tls_server_context(const tls_server_context&) = delete;
  tls_server_context& operator=(const tls_server_context&) = delete;

  SSL_CTX* native() const { return ctx_; }

 private:
  tls_server_context() = default;
  static int on_cert(SSL* ssl, void* self);
  SSL_CTX* ctx_ = nullptr;
  std::unique_ptr<tls_identity> default_;
  tls_cert_selector select_;
};

// OpenSSL's queued error text ("" when none), clearing the queue.
std::string tls_error_text();

}  // namespace feedplane::net
