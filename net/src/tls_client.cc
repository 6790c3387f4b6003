#include "feedplane/net/tls_client.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cstring>

#include "tls_bio.h"

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

// Every call into OpenSSL for a session goes through bind()/unbind(): the one BIO of the
// context reads this session's unread ciphertext and appends to its output string.
void append_output(void* sink, const char* p, size_t n) {
  static_cast<std::string*>(sink)->append(p, n);
}

// The system CA store, parsed once per process and shared by every context that uses it
// (an X509_STORE is reference-counted, locked inside, and meant to be shared between
// SSL_CTXs): each shard parsing the ~140 certificates itself was 3% of a restart's shard
// time. Null if it cannot be loaded, with why in *error (OpenSSL's error queue is the
// loading thread's, so the reason is kept with the store).
X509_STORE* system_ca_store(std::string* error) {
  struct loaded {
    X509_STORE* store = nullptr;
    std::string error;
  };
  static const loaded once = [] {
    loaded l;
    l.store = X509_STORE_new();
    if (l.store == nullptr || X509_STORE_set_default_paths(l.store) != 1) {
      l.error = ssl_error_string();
      X509_STORE_free(l.store);  // null-safe
      l.store = nullptr;
    }
    return l;
  }();
  if (once.store == nullptr) *error = once.error;
  return once.store;
}

}  // namespace

std::unique_ptr<tls_context> tls_context::create(const std::string& ca_file, std::string* error,
                                                 uint32_t session_hosts) {
  SSL_CTX* c = SSL_CTX_new(TLS_client_method());
  if (c == nullptr) {
    *error = "SSL_CTX_new failed: " + ssl_error_string();
    return nullptr;
  }
  std::unique_ptr<tls_context> t(new tls_context());
  t->ctx_ = c;
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  // RELEASE_BUFFERS: OpenSSL's record buffers are freed while empty (an idle connection
  // keeps none).
  SSL_CTX_set_mode(c, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  if (ca_file.empty()) {
    std::string why;
    X509_STORE* store = system_ca_store(&why);
    if (store == nullptr) {
      *error = "cannot load the system CA store: " + why;
      return nullptr;
    }
    SSL_CTX_set1_cert_store(c, store);  // takes its own reference
  } else if (SSL_CTX_load_verify_locations(c, ca_file.c_str(), nullptr) != 1) {
    *error = "cannot load CA file " + ca_file + ": " + ssl_error_string();
    return nullptr;
  }
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  // Client-side cache kept by us, per host (OpenSSL's internal store is keyed by session
  // id, useless to a client): new_session hands every ticket over.
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(c, &tls_context::on_new_session);
  t->session_hosts_ = session_hosts;
  t->io_ = std::make_unique<tls_bio_io>();
  t->io_->write = &append_output;
  t->bio_ = tls_bio_new(t->io_.get());
  if (t->bio_ == nullptr) {
    *error = "BIO_new failed: " + ssl_error_string();
    return nullptr;
  }
  return t;
}

tls_context::~tls_context() {
  clear_sessions();
  BIO_free(bio_);  // the context's reference; every SSL held its own
  SSL_CTX_free(ctx_);
}

tls_context::cache_stats tls_context::session_stats() const {
  cache_stats s;
  s.stored = stored_;
  s.offered = offered_;
  s.evicted = evicted_;
  s.hosts = sessions_.size();
  s.tickets = tickets_;
  return s;
}

void tls_context::clear_sessions() {
  while (!sessions_.empty()) drop_host(sessions_.begin());
}

void tls_context::drop_host(std::unordered_map<std::string, host_entry>::iterator it) {
  host_entry& e = it->second;
  for (uint32_t i = 0; i < e.n; ++i) SSL_SESSION_free(e.s[i]);
  tickets_ -= e.n;
  lru_.erase(e.lru);
  sessions_.erase(it);
}

SSL_SESSION* tls_context::take_session(const std::string& key) {
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return nullptr;
  host_entry& e = it->second;
  SSL_SESSION* s = e.s[e.n - 1];  // the newest
  if (SSL_SESSION_get_protocol_version(s) >= TLS1_3_VERSION) {
    // Single use (RFC 8446 C.4: reusing a ticket lets an observer link connections).
    --e.n;
    --tickets_;
    if (e.n == 0) {
      lru_.erase(e.lru);
      sessions_.erase(it);
    }
  } else {
    SSL_SESSION_up_ref(s);  // TLS 1.2: reusable; the cache keeps its reference
    lru_.splice(lru_.begin(), lru_, e.lru);
  }
  ++offered_;
  return s;
}

void tls_context::put_session(const std::string& key, SSL_SESSION* s) {
  auto [it, fresh] = sessions_.try_emplace(key);
  host_entry& e = it->second;
  if (fresh) {
    lru_.push_front(&it->first);  // node keys never move
    e.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, e.lru);
  }
  if (e.n == k_per_host) {  // keep the newest two
    SSL_SESSION_free(e.s[0]);
    e.s[0] = e.s[1];
    --e.n;
    --tickets_;
    ++evicted_;
  }
  e.s[e.n++] = s;
  ++tickets_;
  ++stored_;
  while (sessions_.size() > session_hosts_) {
    auto victim = sessions_.find(*lru_.back());
    evicted_ += victim->second.n;
    drop_host(victim);
  }
}

int tls_context::on_new_session(SSL* ssl, SSL_SESSION* s) {
  auto* t = static_cast<tls_session*>(SSL_get_app_data(ssl));
  if (t == nullptr || t->ctx_ == nullptr || t->key_.empty() || t->ctx_->session_hosts_ == 0 ||
      SSL_SESSION_is_resumable(s) != 1)
    return 0;  // not kept: OpenSSL frees it
  t->ctx_->put_session(t->key_, s);
  return 1;  // the cache holds the reference
}

tls_session::~tls_session() { reset(); }

void tls_session::reset() {
  if (ssl_ != nullptr) {
    // SSL_free of a connection not shut down marks its session (in TLS 1.3 the last
    // ticket received, which the cache holds) not resumable. Closing a healthy connection
    // without close_notify is ordinary for HTTP/1.1 keep-alive: say it was shut down.
    if (handshake_done_ && error_ == fetch_error::ok)
      SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(ssl_);  // drops its reference to the context's BIO
  }
  ssl_ = nullptr;
  ctx_ = nullptr;
  key_.clear();
  in_ = nullptr;
  in_len_ = 0;
  in_owned_ = false;
  std::string().swap(in_buf_);
  own_out_.clear();
  sink_ = &own_out_;
  handshake_done_ = false;
  error_ = fetch_error::ok;
  detail_.clear();
}

bool tls_session::start(tls_context& ctx, const std::string& host, bool verify, uint16_t port) {
  reset();
  ssl_ = SSL_new(ctx.native());
  if (ssl_ == nullptr) {
    error_ = fetch_error::tls_error;
    detail_ = ssl_error_string();
    return false;
  }
  ctx_ = &ctx;
  SSL_set_app_data(ssl_, this);
  BIO_up_ref(ctx.bio_);  // the SSL's reference (one for both directions)
  SSL_set_bio(ssl_, ctx.bio_, ctx.bio_);
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
  if (port != 0 && ctx.session_hosts_ > 0) {
    key_.assign(host);
    key_ += ':';
    key_ += std::to_string(port);
    if (!verify) key_ += '!';
    if (SSL_SESSION* s = ctx.take_session(key_)) {
      // A ticket OpenSSL will not use (expired, other protocol) just means a full handshake.
      SSL_set_session(ssl_, s);
      SSL_SESSION_free(s);  // the SSL holds its own reference
    }
  }
  return true;
}

bool tls_session::resumed() const {
  return ssl_ != nullptr && handshake_done_ && SSL_session_reused(ssl_) == 1;
}

void tls_session::bind() {
  tls_bio_io& io = *ctx_->io_;
  io.in = in_;
  io.in_len = in_len_;
  io.ctx = sink_;
}

void tls_session::unbind() {
  tls_bio_io& io = *ctx_->io_;
  in_ = io.in;
  in_len_ = io.in_len;
  io.in_len = 0;
  if (in_len_ == 0 && in_owned_) {
    // Everything kept by release_input() is read: give the copy back.
    std::string().swap(in_buf_);
    in_owned_ = false;
    in_ = nullptr;
  }
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
  bind();
  int r = SSL_do_handshake(ssl_);
  unbind();
  if (r == 1) {
    handshake_done_ = true;
    return result::ok;
  }
  return fail_from(r, true);
}

void tls_session::feed(const char* data, size_t n) {
  if (ssl_ == nullptr || n == 0) return;
  if (in_len_ == 0) {
    if (in_owned_) {
      std::string().swap(in_buf_);
      in_owned_ = false;
    }
    in_ = data;  // borrowed until release_input()
    in_len_ = n;
    return;
  }
  // Unread bytes before these (rare: a record split at the end of a response): copy both.
  if (in_owned_) {
    in_buf_.erase(0, static_cast<size_t>(in_ - in_buf_.data()));
  } else {
    in_buf_.assign(in_, in_len_);
  }
  in_buf_.append(data, n);
  in_ = in_buf_.data();
  in_len_ = in_buf_.size();
  in_owned_ = true;
}

void tls_session::release_input() {
  if (in_len_ == 0 || in_owned_) return;
  in_buf_.assign(in_, in_len_);
  in_ = in_buf_.data();
  in_owned_ = true;
}

size_t tls_session::take_output(std::string& out) {
  const size_t n = own_out_.size();
  out.append(own_out_);
  own_out_.clear();
  return n;
}

tls_session::result tls_session::write(const char* data, size_t n) {
  if (ssl_ == nullptr) return result::error;
  size_t done = 0;
  bind();
  while (done < n) {
    size_t written = 0;
    int r = SSL_write_ex(ssl_, data + done, n - done, &written);
    if (r != 1) {
      unbind();
      return fail_from(r, false);
    }
    done += written;
  }
  unbind();
  return result::ok;
}

tls_session::result tls_session::read(char* buf, size_t cap, size_t* got) {
  *got = 0;
  if (ssl_ == nullptr) return result::error;
  size_t n = 0;
  bind();
  int r = SSL_read_ex(ssl_, buf, cap, &n);
  unbind();
  if (r == 1) {
    *got = n;
    return result::ok;
  }
  return fail_from(r, !handshake_done_);
}

}  // namespace feedplane::net
