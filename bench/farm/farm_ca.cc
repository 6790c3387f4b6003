#include "feedplane/farm/farm_ca.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "feedplane/net/tls_server.h"

namespace feedplane::farm {

namespace {

constexpr long day_s = 86400;

bool add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, valid from a day ago for `days`, signed by
// issuer/issuer_key (itself when issuer is null). Null on failure.
X509* make_cert(EVP_PKEY* key, const std::string& cn, uint64_t serial, uint32_t days, X509* issuer,
                EVP_PKEY* issuer_key, const std::string& san) {
  X509* c = X509_new();
  bool ok = c != nullptr && X509_set_version(c, 2) == 1 &&
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(c), serial) == 1 &&
            X509_gmtime_adj(X509_getm_notBefore(c), -day_s) != nullptr &&
            X509_gmtime_adj(X509_getm_notAfter(c), long(days) * day_s) != nullptr &&
            X509_set_pubkey(c, key) == 1 &&
            X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                       0) == 1;
  X509* signer = issuer != nullptr ? issuer : c;
  ok = ok && X509_set_issuer_name(c, X509_get_subject_name(signer)) == 1;
  if (issuer == nullptr) {
    ok = ok && add_ext(c, signer, NID_basic_constraints, "critical,CA:TRUE") &&
         add_ext(c, signer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         add_ext(c, signer, NID_subject_key_identifier, "hash");
  } else {
    ok = ok && add_ext(c, signer, NID_basic_constraints, "critical,CA:FALSE") &&
         add_ext(c, signer, NID_key_usage, "critical,digitalSignature") &&
         add_ext(c, signer, NID_ext_key_usage, "serverAuth") &&
         add_ext(c, signer, NID_authority_key_identifier, "keyid") &&
         add_ext(c, signer, NID_subject_alt_name, san.c_str());
  }
  ok = ok && X509_sign(c, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0;
  if (!ok) {
    X509_free(c);
    return nullptr;
  }
  return c;
}

}  // namespace

cert_authority::~cert_authority() {
  cache_.clear();
  X509_free(ca_);
  EVP_PKEY_free(ca_key_);
  EVP_PKEY_free(leaf_key_);
}

std::unique_ptr<cert_authority> cert_authority::create(uint32_t days, std::string* error) {
  std::unique_ptr<cert_authority> a(new cert_authority());
  a->days_ = days;
  a->ca_key_ = EVP_EC_gen("P-256");
  a->leaf_key_ = EVP_EC_gen("P-256");
  if (a->ca_key_ != nullptr) {
    a->ca_ = make_cert(a->ca_key_, "feedplane farm CA", a->serial_++, days, nullptr, nullptr, "");
  }
  if (a->ca_ == nullptr || a->leaf_key_ == nullptr) {
    *error = "cannot make the farm's CA: " + net::tls_error_text();
    return nullptr;
  }
  return a;
}

std::string cert_authority::ca_pem() const {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, ca_);
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  std::string s(p, static_cast<size_t>(n));
  BIO_free(b);
  return s;
}

const net::tls_identity* cert_authority::identity_for(std::string_view name) {
  const std::string key(name);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second.get();
  X509* leaf = make_cert(leaf_key_, key, serial_++, days_, ca_, ca_key_, "DNS:" + key);
  if (leaf == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  std::string err;
  auto id = net::tls_identity::adopt(leaf, leaf_key_, &err);
  X509_free(leaf);
  if (!id) return nullptr;
  ++issued_;
  while (cache_.size() >= cache_cap_ && !order_.empty()) {
    cache_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  return cache_.emplace(key, std::move(id)).first->second.get();
}

}  // namespace feedplane::farm
