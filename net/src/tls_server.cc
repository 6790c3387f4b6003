#include "feedplane/net/tls_server.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>

#include "tls_bio.h"

namespace feedplane::net {

std::string tls_error_text() {
  std::string s;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!s.empty()) s += "; ";
    s += buf;
  }
  return s;
}

// ---- identity ----

tls_identity::~tls_identity() {
  X509_free(leaf_);
  EVP_PKEY_free(key_);
  if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
}

std::unique_ptr<tls_identity> tls_identity::adopt(X509* leaf, EVP_PKEY* key, std::string* error) {
  if (leaf == nullptr || key == nullptr) {
    *error = "no certificate or no key";
    return nullptr;
  }
  if (X509_check_private_key(leaf, key) != 1) {
    *error = "the private key does not match the certificate: " + tls_error_text();
    return nullptr;
  }
  std::unique_ptr<tls_identity> id(new tls_identity());
  X509_up_ref(leaf);
  EVP_PKEY_up_ref(key);
  id->leaf_ = leaf;
  id->key_ = key;
  return id;
}

std::unique_ptr<tls_identity> tls_identity::load(const std::string& cert_file,
                                                 const std::string& key_file, std::string* error) {
  BIO* cb = BIO_new_file(cert_file.c_str(), "r");
  if (cb == nullptr) {
    *error = "cannot read certificate file " + cert_file + ": " + tls_error_text();
    return nullptr;
  }
  X509* leaf = PEM_read_bio_X509_AUX(cb, nullptr, nullptr, nullptr);
  if (leaf == nullptr) {
    BIO_free(cb);
    *error = "no PEM certificate in " + cert_file + ": " + tls_error_text();
    return nullptr;
  }
  STACK_OF(X509)* chain = nullptr;
  while (X509* x = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr)) {
    if (chain == nullptr) chain = sk_X509_new_null();
    sk_X509_push(chain, x);
  }
  ERR_clear_error();  // the loop above ends on "no start line"
  BIO_free(cb);
  BIO* kb = BIO_new_file(key_file.c_str(), "r");
  EVP_PKEY* key = kb != nullptr ? PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(kb);
  if (key == nullptr) {
    *error = "cannot read a PEM private key from " + key_file + ": " + tls_error_text();
    X509_free(leaf);
    if (chain != nullptr) sk_X509_pop_free(chain, X509_free);
    return nullptr;
  }
  std::string err;
  auto id = adopt(leaf, key, &err);
  X509_free(leaf);
  EVP_PKEY_free(key);
  if (!id) {
    *error = cert_file + " and " + key_file + ": " + err;
    if (chain != nullptr) sk_X509_pop_free(chain, X509_free);
    return nullptr;
  }
  id->chain_ = chain;
  return id;
}

// ---- context ----

namespace {

// ALPN (RFC 7301): http/1.1 when offered; a client offering only other protocols (h2
// alone) gets no ALPN answer and may go on with HTTP/1.1 or give up.
int on_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
            unsigned int inlen, void*) {
  static const unsigned char ours[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* sel = nullptr;
  unsigned char sel_len = 0;
  if (SSL_select_next_proto(&sel, &sel_len, ours, sizeof ours, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = sel;
  *outlen = sel_len;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

int tls_server_context::on_cert(SSL* ssl, void* self) {
  auto* c = static_cast<tls_server_context*>(self);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  const tls_identity* id = c->select_(name != nullptr ? std::string_view(name) : "");
  if (id == nullptr) return c->default_ != nullptr ? 1 : 0;  // 0: handshake_failure alert
  return SSL_use_cert_and_key(ssl, id->leaf(), id->key(), id->chain(), 1) == 1 ? 1 : 0;
}

tls_server_context::~tls_server_context() { SSL_CTX_free(ctx_); }

std::unique_ptr<tls_server_context> tls_server_context::create(std::unique_ptr<tls_identity> def,
                                                               tls_cert_selector select,
                                                               std::string* error) {
  if (def == nullptr && !select) {
    *error = "a TLS server needs a certificate or a certificate selector";
    return nullptr;
  }
  std::unique_ptr<tls_server_context> c(new tls_server_context());
  c->ctx_ = SSL_CTX_new(TLS_server_method());
  if (c->ctx_ == nullptr) {
    *error = "SSL_CTX_new failed: " + tls_error_text();
    return nullptr;
  }
  SSL_CTX* x = c->ctx_;
  SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
  // RELEASE_BUFFERS: record buffers are freed while empty (an idle connection keeps none).
  SSL_CTX_set_mode(x, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(x, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Stateless tickets only: nothing per session on the server, nothing shared to lock.
  SSL_CTX_set_session_cache_mode(x, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_alpn_select_cb(x, on_alpn, nullptr);
  if (def != nullptr &&
      SSL_CTX_use_cert_and_key(x, def->leaf(), def->key(), def->chain(), 1) != 1) {
    *error = "cannot use the certificate: " + tls_error_text();
    return nullptr;
  }
  c->default_ = std::move(def);
  c->select_ = std::move(select);
  if (c->select_) SSL_CTX_set_cert_cb(x, &tls_server_context::on_cert, c.get());
  return c;
}

// ---- the BIO ----

namespace {

int bio_read(BIO* b, char* out, int len) {
  auto* io = static_cast<tls_bio_io*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (io->in_len == 0) {
    BIO_set_retry_read(b);  // more will come with the next receive
    return -1;
  }
  const size_t n = std::min(io->in_len, static_cast<size_t>(len));
  std::memcpy(out, io->in, n);
  io->in += n;
  io->in_len -= n;
  return static_cast<int>(n);
}

int bio_write(BIO* b, const char* in, int len) {
  auto* io = static_cast<tls_bio_io*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  io->write(io->ctx, in, static_cast<size_t>(len));
  return len;
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
  auto* io = static_cast<tls_bio_io*>(BIO_get_data(b));
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(io->in_len);
    default:
      return 0;  // WPENDING among them: written bytes are handed over at once
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* make_method() {
  BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "feedplane server");
  BIO_meth_set_read(m, bio_read);
  BIO_meth_set_write(m, bio_write);
  BIO_meth_set_ctrl(m, bio_ctrl);
  BIO_meth_set_create(m, bio_create);
  return m;
}

}  // namespace

BIO* tls_bio_new(tls_bio_io* io) {
  static BIO_METHOD* const method = make_method();  // process lifetime, thread-safe init
  BIO* b = BIO_new(method);
  if (b != nullptr) BIO_set_data(b, io);
  return b;
}

}  // namespace feedplane::net
