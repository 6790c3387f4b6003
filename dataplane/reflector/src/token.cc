#include "feedplane/reflector/token.h"

#include <openssl/rand.h>
#include <xxhash.h>

#include <climits>

namespace feedplane::reflector {

namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

uint32_t partition_of(std::string_view id) {
  return uint32_t(XXH3_64bits(id.data(), id.size()) % partitions);
}

bool random_bytes(void* out, size_t n) {
  return n <= size_t(INT_MAX) && RAND_bytes(static_cast<unsigned char*>(out), int(n)) == 1;
}

std::string base64url(const uint8_t* p, size_t n) {
  std::string s;
  s.reserve((n * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    s.push_back(alphabet[v >> 18]);
    s.push_back(alphabet[(v >> 12) & 63]);
    s.push_back(alphabet[(v >> 6) & 63]);
    s.push_back(alphabet[v & 63]);
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t(p[i]) << 16;
    s.push_back(alphabet[v >> 18]);
    s.push_back(alphabet[(v >> 12) & 63]);
  } else if (n - i == 2) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    s.push_back(alphabet[v >> 18]);
    s.push_back(alphabet[(v >> 12) & 63]);
    s.push_back(alphabet[(v >> 6) & 63]);
  }
  return s;
}

std::string hex(const uint8_t* p, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  return s;
}

std::string encode_token(const feed_token& t) {
  uint8_t b[token_bytes];
  b[0] = uint8_t(t.partition >> 8);
  b[1] = uint8_t(t.partition);
  b[2] = uint8_t(t.slot >> 24);
  b[3] = uint8_t(t.slot >> 16);
  b[4] = uint8_t(t.slot >> 8);
  b[5] = uint8_t(t.slot);
  for (size_t i = 0; i < t.random_bits.size(); ++i) b[6 + i] = t.random_bits[i];
  return base64url(b, sizeof(b));
}

bool decode_token(std::string_view text, feed_token* out) {
  if (text.size() != token_text_size) return false;
  uint8_t b[token_bytes + 1] = {};
  // 30 characters = 7 groups of 4 (21 bytes) and a final pair (1 byte, 4 bits unused).
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = decode_char(c);
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
