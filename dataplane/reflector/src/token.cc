#include "feedplane/reflector/token.h"

#include "feedplane/base/ascii.h"
#include "feedplane/base/base64.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <xxhash.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>

namespace feedplane::reflector {

uint32_t partition_of(std::string_view id) {
  return uint32_t(XXH3_64bits(id.data(), id.size()) % partitions);
}

namespace {

// Bumped in a forked child, whose copies of the pools must not hand out the parent's bytes.
std::atomic<uint32_t> fork_generation{0};
void on_fork_child() {
  // Relaxed: the child runs this before any of its code, on its only thread.
  fork_generation.fetch_add(1, std::memory_order_relaxed);
}
const bool fork_hook = pthread_atfork(nullptr, nullptr, on_fork_child) == 0;

// A thread's pool of CSPRNG output. Fast because one RAND_bytes call serves ~150 ids and
// tokens: each call costs OpenSSL's DRBG a fresh AES key schedule and locking, which was
// 14% of a shard's CPU in a bulk creation when every id and token made its own call.
struct random_pool {
  unsigned char bytes[4096];
  size_t used = sizeof(bytes);  // all used: the first draw fills it
  uint32_t generation = 0;
};
thread_local random_pool pool;

}  // namespace

bool random_bytes(void* out, size_t n) {
  if (n > sizeof(pool.bytes) || !fork_hook)
    return n <= size_t(INT_MAX) && RAND_bytes(static_cast<unsigned char*>(out), int(n)) == 1;
  random_pool& p = pool;
  // Relaxed: only this thread's own fork (handled before it returns) changes it under us.
  const uint32_t gen = fork_generation.load(std::memory_order_relaxed);
  if (p.generation != gen || sizeof(p.bytes) - p.used < n) {
    if (RAND_bytes(p.bytes, int(sizeof(p.bytes))) != 1) return false;
    p.used = 0;
    p.generation = gen;
  }
  std::memcpy(out, p.bytes + p.used, n);
  // Wiped once handed out: a later read of this memory does not reveal issued tokens.
  OPENSSL_cleanse(p.bytes + p.used, n);
  p.used += n;
  return true;
}

std::string time_ordered_id(char prefix, uint64_t unix_ms) {
  // The 64 characters of base64url, sorted by their byte values.
  static constexpr char sorted[] =
      "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
  uint8_t r[8];
  if (!random_bytes(r, sizeof(r))) return {};
  std::string s;
  s.reserve(2 + 8 + 11);
  s.push_back(prefix);
  s.push_back('_');
  for (int shift = 42; shift >= 0; shift -= 6) s.push_back(sorted[(unix_ms >> shift) & 63]);
  base::append_base64url(r, sizeof(r), s);
  return s;
}

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  base::append_hex(p, n, s);
  return s;
}

std::string encode_token(const feed_token& t) {
  std::string s;
  append_token(t, s);
  return s;
}

void append_token(const feed_token& t, std::string& out) {
  uint8_t b[token_bytes];
  b[0] = uint8_t(t.partition >> 8);
  b[1] = uint8_t(t.partition);
  b[2] = uint8_t(t.slot >> 24);
  b[3] = uint8_t(t.slot >> 16);
  b[4] = uint8_t(t.slot >> 8);
  b[5] = uint8_t(t.slot);
  for (size_t i = 0; i < t.random_bits.size(); ++i) b[6 + i] = t.random_bits[i];
  base::append_base64url(b, sizeof(b), out);
}

bool decode_token(std::string_view text, feed_token* out) {
  if (text.size() != token_text_size) return false;
  uint8_t b[token_bytes + 1] = {};
  // 30 characters = 7 groups of 4 (21 bytes) and a final pair (1 byte, 4 bits unused).
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = base::base64url_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      b[o++] = uint8_t(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (o != token_bytes || acc != 0) return false;  // the unused low bits must be zero
  feed_token t;
  t.partition = uint32_t(b[0]) << 8 | b[1];
  if (t.partition >= partitions) return false;
  t.slot = uint32_t(b[2]) << 24 | uint32_t(b[3]) << 16 | uint32_t(b[4]) << 8 | b[5];
  for (size_t i = 0; i < t.random_bits.size(); ++i) t.random_bits[i] = b[6 + i];
  *out = t;
  return true;
}

}  // namespace feedplane::reflector
