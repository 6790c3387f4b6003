#include "feedplane/crawler/source.h"

#include <array>
#include <cstring>

namespace feedplane::crawler {

namespace {

size_t varint_size(size_t v) { return v < 0x80 ? 1 : v < 0x4000 ? 2 : 3; }

char* put_varint(char* p, size_t v) {
  while (v >= 0x80) {
    *p++ = char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  *p++ = char(uint8_t(v));
  return p;
}

const char* get_varint(const char* p, size_t* v) {
  size_t out = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = uint8_t(*p++);
    out |= size_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  *v = out;
  return p;
}

// The fields of a block (all empty when p is null).
std::array<std::string_view, source_text::k_fields> fields_of(const char* p) {
  std::array<std::string_view, source_text::k_fields> f{};
  if (p == nullptr) return f;
  size_t len[source_text::k_fields];
  for (size_t& n : len) p = get_varint(p, &n);
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = std::string_view(p, len[i]);
    p += len[i];
  }
  return f;
}

}  // namespace

source_text& source_text::operator=(const source_text& o) {
  if (this == &o) return *this;
  const size_t n = o.heap_bytes();
  if (n == 0) {
    p_.reset();
  } else {
    p_.reset(new char[n]);
    std::memcpy(p_.get(), o.p_.get(), n);
  }
  return *this;
}

std::string_view source_text::get(field f) const { return fields_of(p_.get())[f]; }

std::array<std::string_view, source_text::k_fields> source_text::all() const {
  return fields_of(p_.get());
}

size_t source_text::heap_bytes() const {
  if (!p_) return 0;
  size_t total = 0;
  for (std::string_view v : fields_of(p_.get())) total += varint_size(v.size()) + v.size();
  return total;
}

namespace {
std::string_view clamp_text(std::string_view v) {
  if (v.size() <= source_text::k_max) return v;
  size_t n = source_text::k_max;
  while (n > 0 && (uint8_t(v[n]) & 0xc0) == 0x80) --n;  // v[n] starts a character
  return v.substr(0, n);
}
}  // namespace

void source_text::set(field f, std::string_view v) {
  v = clamp_text(v);
  auto fields = fields_of(p_.get());
  if (fields[f] == v) return;
  fields[f] = v;
  rebuild(fields);
}

void source_text::set(field f, std::string_view v, field g, std::string_view w) {
  v = clamp_text(v);
  w = clamp_text(w);
  auto fields = fields_of(p_.get());
  if (fields[f] == v && fields[g] == w) return;
  fields[f] = v;
  fields[g] = w;
  rebuild(fields);
}

void source_text::rebuild(const std::array<std::string_view, k_fields>& fields) {
  size_t total = 0, bytes = 0;
  for (std::string_view x : fields) {
    total += varint_size(x.size()) + x.size();
    bytes += x.size();
  }
  if (bytes == 0) {
    p_.reset();
    return;
  }
  // Built in a new block: v may point into the old one.
  std::unique_ptr<char[]> next(new char[total]);
  char* p = next.get();
  for (std::string_view x : fields) p = put_varint(p, x.size());
  for (std::string_view x : fields) {
    if (!x.empty()) std::memcpy(p, x.data(), x.size());
    p += x.size();
  }
  p_ = std::move(next);
}

void source::to_record(crawl_record& out) const {
  static_cast<crawl_fields&>(out) = rec;
  out.etag.assign(text.get(source_text::etag));
  out.last_modified.assign(text.get(source_text::last_modified));
  out.last_error.assign(text.get(source_text::last_error));
  out.moved_to.assign(text.get(source_text::moved_to));
  out.document_hash = state.document_hash();
  const auto seen = state.seen().records();
  out.seen.assign(seen.begin(), seen.end());
  out.seen_limit = uint32_t(state.seen().capacity());
  out.seen_converted = false;
}

void source::from_record(crawl_record& r) {
  rec = static_cast<const crawl_fields&>(r);
  text.set(source_text::etag, r.etag);
  text.set(source_text::last_modified, r.last_modified);
  text.set(source_text::last_error, r.last_error);
  text.set(source_text::moved_to, r.moved_to);
  if (r.seen_converted) {
    state.restore_converted(r.document_hash, r.seen);
  } else {
    state.restore(r.document_hash, r.seen, r.seen_limit);
  }
}

}  // namespace feedplane::crawler
