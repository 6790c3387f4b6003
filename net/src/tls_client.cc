#include "feedplane/net/tls_client.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace feedplane::net {

namespace {

std::string ssl_error_string() {
  std::string s;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!s.empty()) s += "; ";
    s += buf;
  }
  return s;
}

fetch_error classify_verify(long v) {
  switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CRL_HAS_EXPIRED:
      return fetch_error::tls_cert_expired;
    case X509_V_ERR_CERT_NOT_YET_VALID:
    case X509_V_ERR_CRL_NOT_YET_VALID:
      return fetch_error::tls_cert_not_yet_valid;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return fetch_error::tls_name_mismatch;
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
    case X509_V_ERR_INVALID_CA:
      return fetch_error::tls_unknown_ca;
    default:
      return fetch_error::tls_handshake_failed;
  }
}

}  // namespace

std::unique_ptr<tls_context> tls_context::create(const std::string& ca_file, std::string* error) {
  SSL_CTX* c = SSL_CTX_new(TLS_client_method());
  if (c == nullptr) {
    *error = "SSL_CTX_new failed: " + ssl_error_string();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_mode(c, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  int ok = ca_file.empty() ? SSL_CTX_set_default_verify_paths(c)
                           : SSL_CTX_load_verify_locations(c, ca_file.c_str(), nullptr);
  if (ok != 1) {
    *error = (ca_file.empty() ? std::string("cannot load the system CA store")
                              : "cannot load CA file " + ca_file) +
             ": " + ssl_error_string();
    SSL_CTX_free(c);
    return nullptr;
  }
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  return std::unique_ptr<tls_context>(new tls_context(c));
}

tls_context::~tls_context() { SSL_CTX_free(ctx_); }

tls_session::~tls_session() { reset(); }

void tls_session::reset() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees both BIOs
  ssl_ = nullptr;
  rbio_ = wbio_ = nullptr;
  handshake_done_ = false;
  error_ = fetch_error::ok;
  detail_.clear();
}

bool tls_session::start(tls_context& ctx, const std::string& host, bool verify) {
  reset();
  ssl_ = SSL_new(ctx.native());
  if (ssl_ == nullptr) {
    error_ = fetch_error::tls_error;
    detail_ = ssl_error_string();
    return false;
  }
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  if (rbio_ == nullptr || wbio_ == nullptr) {
    BIO_free(rbio_);
    BIO_free(wbio_);
    rbio_ = wbio_ = nullptr;
    error_ = fetch_error::tls_error;
    detail_ = "BIO_new failed";
    return false;
  }
  // An empty read BIO reports "retry" rather than EOF.
  BIO_set_mem_eof_return(rbio_, -1);
  SSL_set_bio(ssl_, rbio_, wbio_);
  SSL_set_connect_state(ssl_);
  in6_addr a6;
  in_addr a4;
  bool ip =
      inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
  if (!ip) SSL_set_tlsext_host_name(ssl_, host.c_str());
  if (verify) {
    SSL_set_verify(ssl_, SSL_VERIFY_PEER, nullptr);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    if (ok != 1) {
      error_ = fetch_error::tls_error;
      detail_ = "cannot set the expected host name";
      return false;
    }
  } else {
    SSL_set_verify(ssl_, SSL_VERIFY_NONE, nullptr);
  }
  return true;
}

tls_session::result tls_session::fail_from(int ret, bool in_handshake) {
  int e = SSL_get_error(ssl_, ret);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    ERR_clear_error();
    return result::want_io;
  }
  if (e == SSL_ERROR_ZERO_RETURN) return result::closed;
  if (in_handshake) {
    long v = SSL_get_verify_result(ssl_);
    if (v != X509_V_OK) {
      error_ = classify_verify(v);
      detail_ = X509_verify_cert_error_string(v);
      ERR_clear_error();
      return result::error;
    }
    error_ = fetch_error::tls_handshake_failed;
  } else {
    error_ = fetch_error::tls_error;
  }
  detail_ = ssl_error_string();
  if (detail_.empty()) detail_ = "SSL error " + std::to_string(e);
  return result::error;
}

tls_session::result tls_session::handshake() {
  if (handshake_done_) return result::ok;
  if (ssl_ == nullptr) return result::error;
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshake_done_ = true;
    return result::ok;
  }
  return fail_from(r, true);
}

void tls_session::feed(const char* data, size_t n) {
  if (rbio_ != nullptr && n > 0) BIO_write(rbio_, data, static_cast<int>(n));
}

bool tls_session::has_output() const { return wbio_ != nullptr && BIO_ctrl_pending(wbio_) > 0; }

size_t tls_session::take_output(std::string& out) {
  if (wbio_ == nullptr) return 0;
  size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return 0;
  size_t old = out.size();
  out.resize(old + pending);
  int got = BIO_read(wbio_, out.data() + old, static_cast<int>(pending));
  out.resize(old + (got > 0 ? static_cast<size_t>(got) : 0));
  return out.size() - old;
}

tls_session::result tls_session::write(const char* data, size_t n) {
  if (ssl_ == nullptr) return result::error;
  size_t done = 0;
  while (done < n) {
    size_t written = 0;
    int r = SSL_write_ex(ssl_, data + done, n - done, &written);
    if (r != 1) return fail_from(r, false);
    done += written;
  }
  return result::ok;
}

tls_session::result tls_session::read(char* buf, size_t cap, size_t* got) {
  *got = 0;
  if (ssl_ == nullptr) return result::error;
  size_t n = 0;
  int r = SSL_read_ex(ssl_, buf, cap, &n);
  if (r == 1) {
    *got = n;
    return result::ok;
  }
  return fail_from(r, !handshake_done_);
}

}  // namespace feedplane::net
