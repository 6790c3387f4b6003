// The farm's certificate authority (issue 12, DESIGN.md 9 "The load harness"): a CA made at
// start-up whose certificate feedplane trusts through [client] ca_file, and a leaf
// certificate per SNI name issued on the first handshake that asks for it, then cached.
//
// Every leaf shares one P-256 key made at start-up (issuing is then one ECDSA signature,
// about 50 us, not a key generation): a farm of a million HTTPS names issues lazily, and
// the cache is bounded (the oldest leaf is dropped; OpenSSL holds its own references to a
// leaf a handshake is using, so dropping one is safe). Used on the farm's loop thread only.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;

namespace feedplane::net {
class tls_identity;
}

namespace feedplane::farm {

class cert_authority {
 public:
  // A new CA ("feedplane farm CA", valid from a day ago for `days`). Null with *error when
  // OpenSSL fails.
  static std::unique_ptr<cert_authority> create(uint32_t days, std::string* error);
  ~cert_authority();
  cert_authority(const cert_authority&) = delete;
  cert_authority& operator=(const cert_authority&) = delete;

  // The CA certificate, PEM (what clients trust).
  std::string ca_pem() const;
  // The leaf for DNS name `name` (SAN DNS:name, CN name, serverAuth, signed by the CA),
  // issued now if it is not cached. Null when issuing fails. Valid until the next call.
  const net::tls_identity* identity_for(std::string_view name);

  void set_cache_capacity(size_t n) { cache_cap_ = n == 0 ? 1 : n; }
  size_t issued() const { return issued_; }  // leaves issued so far (cache misses)
  size_t cached() const { return cache_.size(); }

 private:
  cert_authority() = default;
  X509* ca_ = nullptr;
  EVP_PKEY* ca_key_ = nullptr;
  EVP_PKEY* leaf_key_ = nullptr;  // shared by every leaf
  uint32_t days_ = 30;
  uint64_t serial_ = 1;
  size_t issued_ = 0;
  size_t cache_cap_ = 65536;
  std::unordered_map<std::string, std::unique_ptr<net::tls_identity>> cache_;
  std::deque<std::string> order_;  // cached names, oldest first (eviction order)
};

}  // namespace feedplane::farm
