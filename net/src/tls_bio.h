// The network side of a TLS connection, server or client: a BIO that reads ciphertext from
// the bytes just received (in place, from the provided buffer) and hands what OpenSSL
// writes to a callback (the connection's pooled output). One per http_server and one per
// tls_context (client), shared by all their SSLs: the owner points `io` at the connection
// before each OpenSSL call, on its own thread.
#pragma once

#include <cstddef>

typedef struct bio_st BIO;

namespace feedplane::net {

struct tls_bio_io {
  const char* in = nullptr;  // ciphertext not yet read by OpenSSL
  size_t in_len = 0;
  void (*write)(void* ctx, const char* p, size_t n) = nullptr;  // never fails, never blocks
  void* ctx = nullptr;                                          // the current connection
};

// A new BIO over *io (one reference, the caller's). Reads past in_len ask to retry.
BIO* tls_bio_new(tls_bio_io* io);

}  // namespace feedplane::net
