#include "records.h"

#include <cstring>

namespace feedplane::crawler {

namespace {
constexpr uint8_t k_source_version = 1;
constexpr uint8_t k_crawl_version = 4;
constexpr uint8_t k_crawl_version_without_hints = 3;    // read, then rewritten as 4
constexpr uint8_t k_crawl_version_without_history = 2;  // read, then rewritten as 4
constexpr size_t k_hints_size = 4 + 4 + 4 + 1;

void put_u8(std::string& o, uint8_t v) { o.push_back(char(v)); }
void put_u32(std::string& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(char(uint8_t(v >> (8 * i))));
}
void put_u64(std::string& o, uint64_t v) {
  for (int i = 0; i < 8; ++i) o.push_back(char(uint8_t(v >> (8 * i))));
}
void put_str(std::string& o, std::string_view s) {
  put_u32(o, uint32_t(s.size()));
  o.append(s);
}

// Reads fields in order; any read past the end sets `bad` and yields zeros.
struct reader {
  std::string_view in;
  bool bad = false;
  bool take(size_t n, const char** p) {
    if (bad || in.size() < n) {
      bad = true;
      return false;
    }
    *p = in.data();
    in.remove_prefix(n);
    return true;
  }
  uint8_t u8() {
    const char* p;
    return take(1, &p) ? uint8_t(*p) : 0;
  }
  uint32_t u32() {
    const char* p;
    if (!take(4, &p)) return 0;
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
    return v;
  }
  uint64_t u64() {
    const char* p;
    if (!take(8, &p)) return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
    return v;
  }
  std::string str() {
    const uint32_t n = u32();
    const char* p;
    return take(n, &p) ? std::string(p, n) : std::string();
  }
};
}  // namespace

void encode(const source_record& r, std::string& out) {
  out.clear();
  put_u8(out, k_source_version);
  put_str(out, r.url);
  put_str(out, r.title);
}

bool decode(std::string_view in, source_record& r) {
  reader rd{in};
  if (rd.u8() != k_source_version) return false;
  r.url = rd.str();
  r.title = rd.str();
  return !rd.bad && rd.in.empty() && !r.url.empty();
}

void encode(const crawl_record& r, std::string& out) {
  out.clear();
  out.reserve(96 + posting_history::k_encoded_size + k_hints_size + r.etag.size() +
              r.last_modified.size() + r.seen.size() * 16);
  put_u8(out, k_crawl_version);
  put_str(out, r.etag);
  put_str(out, r.last_modified);
  put_u64(out, r.document_hash);
  put_u32(out, r.interval_s);
  put_u64(out, uint64_t(r.next_fetch_ms));
  put_u8(out, r.next_reason);
  put_u64(out, uint64_t(r.last_fetch_ms));
  put_u32(out, r.last_status);
  put_u64(out, r.last_bytes);
  put_u32(out, r.last_new);
  put_u8(out, r.last_outcome);
  put_u32(out, r.consecutive_errors);
  put_str(out, r.last_error);
  put_u64(out, r.fetches);
  put_u64(out, r.articles);
  put_u8(out, r.flags);
  put_str(out, r.moved_to);
  put_u32(out, r.moved_count);
  r.history.encode(out);
  put_u32(out, r.hints.ttl_s);
  put_u32(out, r.hints.update_s);
  put_u32(out, r.hints.skip_hours);
  put_u8(out, r.hints.skip_days);
  put_u32(out, uint32_t(r.seen.size()));
  for (const auto& [id, content] : r.seen) {
    put_u64(out, id);
    put_u64(out, content);
  }
}

bool decode(std::string_view in, crawl_record& r) {
  reader rd{in};
  const uint8_t version = rd.u8();
  if (version != k_crawl_version && version != k_crawl_version_without_hints &&
      version != k_crawl_version_without_history)
    return false;
  r.etag = rd.str();
  r.last_modified = rd.str();
  r.document_hash = rd.u64();
  r.interval_s = rd.u32();
  r.next_fetch_ms = int64_t(rd.u64());
  r.next_reason = rd.u8();
  r.last_fetch_ms = int64_t(rd.u64());
  r.last_status = rd.u32();
  r.last_bytes = rd.u64();
  r.last_new = rd.u32();
  r.last_outcome = rd.u8();
  r.consecutive_errors = rd.u32();
  r.last_error = rd.str();
  r.fetches = rd.u64();
  r.articles = rd.u64();
  r.flags = rd.u8();
  r.moved_to = rd.str();
  r.moved_count = rd.u32();
  r.history = posting_history();
  if (version != k_crawl_version_without_history) {
    const char* h = nullptr;
    if (!rd.take(posting_history::k_encoded_size, &h) ||
        !r.history.decode(std::string_view(h, posting_history::k_encoded_size))) {
      return false;
    }
  }
  r.hints = feed::fetch_hints();
  if (version == k_crawl_version) {
    r.hints.ttl_s = rd.u32();
    r.hints.update_s = rd.u32();
    r.hints.skip_hours = rd.u32() & ((1u << 24) - 1);
    r.hints.skip_days = rd.u8() & 0x7f;
  }
  const uint32_t n = rd.u32();
  if (rd.bad || rd.in.size() != size_t(n) * 16) return false;
  r.seen.clear();
  r.seen.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t id = rd.u64();
    r.seen.emplace_back(id, rd.u64());
  }
  return !rd.bad;
}

}  // namespace feedplane::crawler
