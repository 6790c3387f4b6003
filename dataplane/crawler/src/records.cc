#include "feedplane/crawler/records.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

namespace feedplane::crawler {

namespace {
constexpr uint8_t k_source_version = 1;
constexpr uint8_t k_crawl_version = 6;
// Older versions, read and converted (rewritten as 6 at the feed's next write):
constexpr uint8_t k_crawl_version_without_weight = 5;   // no match weight (weight 1)
constexpr uint8_t k_crawl_version_wide_seen = 4;        // ...and 64-bit (identity, content) pairs
constexpr uint8_t k_crawl_version_without_hints = 3;    // ...and no publisher's hints
constexpr uint8_t k_crawl_version_without_history = 2;  // ...and no posting history
constexpr size_t k_hints_size = 4 + 4 + 4 + 1;
constexpr size_t k_weight_size = 4 + 4;
// No feed keeps more (2x a document of parse_options::max_entries, with room to spare):
// a larger count in a record is garbage, not a feed.
constexpr uint32_t k_max_seen = 1u << 20;

void put_u8(std::string& o, uint8_t v) { o.push_back(char(v)); }
void put_u32(std::string& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(char(uint8_t(v >> (8 * i))));
}
void put_f32(std::string& o, float v) { put_u32(o, std::bit_cast<uint32_t>(v)); }
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
  float f32() { return std::bit_cast<float>(u32()); }
  std::string str() {
    const uint32_t n = u32();
    const char* p;
    return take(n, &p) ? std::string(p, n) : std::string();
  }
};
}  // namespace

std::string_view record_errc_name(record_errc e) {
  switch (e) {
    case record_errc::ok:
      return "ok";
    case record_errc::empty:
      return "empty record";
    case record_errc::unknown_version:
      return "unknown record version";
    case record_errc::truncated:
      return "truncated record";
    case record_errc::trailing_bytes:
      return "bytes after the record's last field";
    case record_errc::bad_field:
      return "a field out of range";
  }
  return "unknown";
}

void encode(const source_record& r, std::string& out) {
  out.clear();
  put_u8(out, k_source_version);
  put_str(out, r.url);
  put_str(out, r.title);
}

record_errc decode(std::string_view in, source_record& r) {
  if (in.empty()) return record_errc::empty;
  reader rd{in};
  if (rd.u8() != k_source_version) return record_errc::unknown_version;
  r.url = rd.str();
  r.title = rd.str();
  if (rd.bad) return record_errc::truncated;
  if (!rd.in.empty()) return record_errc::trailing_bytes;
  return r.url.empty() ? record_errc::bad_field : record_errc::ok;
}

namespace {
// Everything before the seen identities, as versions 4 and 6 write it.
void encode_fields(const crawl_record& r, uint8_t version, std::string& out) {
  out.clear();
  out.reserve(112 + posting_history::k_encoded_size + k_hints_size + k_weight_size + r.etag.size() +
              r.last_modified.size() + r.last_error.size() + r.moved_to.size() +
              r.seen.size() * sizeof(feed::seen_record));
  put_u8(out, version);
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
  const feed::fetch_hints h = r.hints.get();
  put_u32(out, h.ttl_s);
  put_u32(out, h.update_s);
  put_u32(out, h.skip_hours);
  put_u8(out, h.skip_days);
  if (version >= 6) {
    put_f32(out, r.matched.matches);
    put_f32(out, r.matched.articles);
  }
}
}  // namespace

void encode(const crawl_record& r, std::string& out) {
  encode_fields(r, k_crawl_version, out);
  put_u32(out, std::max<uint32_t>(r.seen_limit, uint32_t(r.seen.size())));
  put_u32(out, uint32_t(r.seen.size()));
  for (const feed::seen_record& s : r.seen) {
    put_u64(out, s.w0);
    put_u64(out, s.w1);
  }
}

void encode_v4(const crawl_record& r, const std::vector<std::pair<uint64_t, uint64_t>>& pairs,
               std::string& out) {
  encode_fields(r, k_crawl_version_wide_seen, out);
  put_u32(out, uint32_t(pairs.size()));
  for (const auto& [id, content] : pairs) {
    put_u64(out, id);
    put_u64(out, content);
  }
}

record_errc decode(std::string_view in, crawl_record& r) {
  if (in.empty()) return record_errc::empty;
  reader rd{in};
  const uint8_t version = rd.u8();
  if (version != k_crawl_version && version != k_crawl_version_without_weight &&
      version != k_crawl_version_wide_seen && version != k_crawl_version_without_hints &&
      version != k_crawl_version_without_history)
    return record_errc::unknown_version;
  r.etag = rd.str();
  r.last_modified = rd.str();
  r.document_hash = rd.u64();
  r.interval_s = rd.u32();
  r.next_fetch_ms = int64_t(rd.u64());
  r.next_reason = rd.u8();
  r.last_fetch_ms = int64_t(rd.u64());
  r.last_status = uint16_t(std::min<uint32_t>(rd.u32(), UINT16_MAX));
  r.last_bytes = uint32_t(std::min<uint64_t>(rd.u64(), UINT32_MAX));
  r.last_new = uint16_t(std::min<uint32_t>(rd.u32(), UINT16_MAX));
  r.last_outcome = rd.u8();
  r.consecutive_errors = rd.u32();
  r.last_error = rd.str();
  r.fetches = uint32_t(std::min<uint64_t>(rd.u64(), UINT32_MAX));
  r.articles = uint32_t(std::min<uint64_t>(rd.u64(), UINT32_MAX));
  r.flags = rd.u8();
  r.moved_to = rd.str();
  r.moved_count = uint8_t(std::min<uint32_t>(rd.u32(), UINT8_MAX));
  r.history = posting_history();
  if (version != k_crawl_version_without_history) {
    const char* h = nullptr;
    if (!rd.take(posting_history::k_encoded_size, &h)) return record_errc::truncated;
    if (!r.history.decode(std::string_view(h, posting_history::k_encoded_size)))
      return record_errc::bad_field;
  }
  feed::fetch_hints h;
  if (version >= k_crawl_version_wide_seen) {
    h.ttl_s = rd.u32();
    h.update_s = rd.u32();
    h.skip_hours = rd.u32() & ((1u << 24) - 1);
    h.skip_days = rd.u8() & 0x7f;
  }
  r.hints = h;
  r.matched = {};
  if (version >= k_crawl_version) {
    r.matched.matches = rd.f32();
    r.matched.articles = rd.f32();
    // Finite and not negative (a NaN fails both): anything else is garbage, not a weight.
    auto sane = [](float v) { return v >= 0 && v <= std::numeric_limits<float>::max(); };
    if (!rd.bad && (!sane(r.matched.matches) || !sane(r.matched.articles)))
      return record_errc::bad_field;
  }
  r.seen.clear();
  r.seen_limit = 0;
  // The compact seen set (version 5 on) has its limit; older versions held 64-bit pairs.
  const bool compact = version >= k_crawl_version_without_weight;
  r.seen_converted = !compact;
  if (compact) r.seen_limit = rd.u32();
  const uint32_t n = rd.u32();
  if (rd.bad) return record_errc::truncated;
  if (n > k_max_seen || (compact && r.seen_limit < n) || r.seen_limit > k_max_seen)
    return record_errc::bad_field;
  if (rd.in.size() < size_t(n) * 16) return record_errc::truncated;
  if (rd.in.size() > size_t(n) * 16) return record_errc::trailing_bytes;
  r.seen.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t a = rd.u64();
    const uint64_t b = rd.u64();
    if (compact) {
      const feed::seen_record s{a, b};
      if (s.identity() == 0) return record_errc::bad_field;
      r.seen.push_back(s);
    } else {
      // (identity, content) as 64-bit hashes; a link alias was a pair of its own, so it
      // converts to a record of its own (found by its identity fingerprint, as before).
      r.seen.push_back(feed::seen_record::from_hashes(a == 0 ? 1 : a, 0, b));
    }
  }
  return rd.bad ? record_errc::truncated : record_errc::ok;
}

}  // namespace feedplane::crawler
