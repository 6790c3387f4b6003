#include "feedplane/crawler/placement.h"

#include <libpsl.h>
#include <xxhash.h>

#include <string>

#include "feedplane/base/ascii.h"
#include "feedplane/net/dns.h"

namespace feedplane::crawler {

namespace {
// Debian's publicsuffix list (the package's DAFSA, loaded once per process; libpsl's
// lookups on a loaded context are read-only and thread-safe). psl_latest picks the newest
// of the file and the library's built-in list.
const psl_ctx_t* suffixes() {
  static const psl_ctx_t* ctx = psl_latest("/usr/share/publicsuffix/public_suffix_list.dafsa");
  return ctx;
}
}  // namespace

std::string politeness_key(std::string_view host, const std::vector<std::string>& shared) {
  std::string h;
  h.reserve(host.size());
  for (char c : host) h.push_back(base::ascii_lower(c));
  while (!h.empty() && h.back() == '.') h.pop_back();
  net::ip_address ip;
  if (net::parse_ip_literal(h, ip)) return h;
  for (const std::string& p : shared) {
    if (h == p || (h.size() > p.size() && h.compare(h.size() - p.size(), p.size(), p) == 0 &&
                   h[h.size() - p.size() - 1] == '.'))
      return p;
  }  // libpsl would cut "127.0.0.1" to "0.1"
  if (const psl_ctx_t* ctx = suffixes()) {
    if (const char* d = psl_registrable_domain(ctx, h.c_str())) return std::string(d);
  }
  return h;
}

uint64_t source_id(std::string_view politeness_key, std::string_view url) {
  const uint64_t hi = XXH3_64bits(politeness_key.data(), politeness_key.size()) >> 32;
  const uint64_t lo = uint32_t(XXH3_64bits(url.data(), url.size()));
  return (hi << 32) | lo;
}

std::string store_key(uint64_t id) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[size_t(i)] = char(uint8_t(id >> (56 - 8 * i)));
  return k;
}

bool parse_store_key(std::string_view key, uint64_t* id) {
  if (key.size() != 8) return false;
  uint64_t v = 0;
  for (char c : key) v = (v << 8) | uint8_t(c);
  *id = v;
  return true;
}

std::string format_id(uint64_t id) {
  std::string s(16, '0');
  base::hex16(id, s.data());
  return s;
}

bool parse_id(std::string_view text, uint64_t* id) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    const int d = base::hex_digit(c);
    if (d < 0) return false;
    v = (v << 4) | uint64_t(d);
  }
  *id = v;
  return true;
}

}  // namespace feedplane::crawler
