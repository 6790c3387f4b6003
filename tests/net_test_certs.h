// Test helper: a throwaway CA and leaf certificates made with the OpenSSL API, so TLS
// tests can cover expired, not-yet-valid, unknown-CA and wrong-name certificates.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace feedplane::test {

struct key_and_cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  key_and_cert() = default;
  key_and_cert(const key_and_cert&) = delete;
  key_and_cert& operator=(const key_and_cert&) = delete;
  key_and_cert(key_and_cert&& o) noexcept : key(o.key), cert(o.cert) {
    o.key = nullptr;
    o.cert = nullptr;
  }
  key_and_cert& operator=(key_and_cert&& o) noexcept {
    std::swap(key, o.key);
    std::swap(cert, o.cert);
    return *this;
  }
  ~key_and_cert() {
    EVP_PKEY_free(key);
    X509_free(cert);
  }
  std::string cert_pem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, cert);
    char* p;
    long n = BIO_get_mem_data(b, &p);
    std::string s(p, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  }
  std::string key_pem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* p;
    long n = BIO_get_mem_data(b, &p);
    std::string s(p, static_cast<size_t>(n));
    BIO_free(b);
    return s;
  }
};

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// issuer null: self-signed CA. san: e.g. "DNS:localhost,IP:127.0.0.1".
inline key_and_cert make_cert(const std::string& cn, const key_and_cert* issuer,
                              const std::string& san, long not_before_s, long not_after_s,
                              bool is_ca) {
  key_and_cert kc;
  kc.key = EVP_EC_gen("P-256");
  kc.cert = X509_new();
  X509_set_version(kc.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(kc.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(kc.cert), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(kc.cert), not_after_s);
  X509_set_pubkey(kc.cert, kc.key);
  X509_NAME* name = X509_get_subject_name(kc.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* issuer_cert = issuer ? issuer->cert : kc.cert;
  X509_set_issuer_name(kc.cert, X509_get_subject_name(issuer_cert));
  if (is_ca) {
    add_ext(kc.cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(kc.cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(kc.cert, issuer_cert, NID_basic_constraints, "CA:FALSE");
    if (!san.empty()) add_ext(kc.cert, issuer_cert, NID_subject_alt_name, san.c_str());
  }
  add_ext(kc.cert, issuer_cert, NID_subject_key_identifier, "hash");
  X509_sign(kc.cert, issuer ? issuer->key : kc.key, EVP_sha256());
  return kc;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace feedplane::test
