#include "feedplane/net/content_decoding.h"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "feedplane/base/ascii.h"
#include "http_chars.h"

namespace feedplane::net {

namespace {

// First guess at the decoded size: a few times the input, capped, at least 4 KiB.
size_t first_guess(size_t in, uint64_t cap) {
  uint64_t g = std::max<uint64_t>(4096, static_cast<uint64_t>(in) * 4);
  return static_cast<size_t>(std::min<uint64_t>(g, cap));
}

}  // namespace

content_decoder::content_decoder() : d_(libdeflate_alloc_decompressor()) {
  if (d_ == nullptr) throw std::bad_alloc();
}

content_decoder::~content_decoder() { libdeflate_free_decompressor(d_); }

bool content_decoder::needs_decoding(std::string_view ce) {
  bool any = false;
  while (!ce.empty()) {
    auto comma = ce.find(',');
    auto tok = trim_ows(ce.substr(0, comma));
    if (!tok.empty() && !base::ascii_iequals(tok, "identity")) any = true;
    if (comma == std::string_view::npos) break;
    ce.remove_prefix(comma + 1);
  }
  return any;
}

fetch_error content_decoder::decode(std::string_view ce, std::string_view in, uint64_t cap,
                                    std::string& out) {
  // Codings are listed in the order applied; decode them in reverse.
  std::string_view codings[4];
  size_t count = 0;
  while (!ce.empty()) {
    auto comma = ce.find(',');
    auto tok = trim_ows(ce.substr(0, comma));
    if (!tok.empty() && !base::ascii_iequals(tok, "identity")) {
      if (count == 4) return fetch_error::unsupported_content_encoding;
      codings[count++] = tok;
    }
    if (comma == std::string_view::npos) break;
    ce.remove_prefix(comma + 1);
  }
  if (count == 0) {
    if (in.size() > cap) return fetch_error::body_too_large;
    out.assign(in);
    return fetch_error::ok;
  }
  // The usual single coding decodes straight from `in`; stacked codings go through `stage`.
  std::string stage;
  std::string_view src = in;
  for (size_t k = count; k-- > 0;) {
    auto tok = codings[k];
    fetch_error e;
    if (base::ascii_iequals(tok, "gzip") || base::ascii_iequals(tok, "x-gzip")) {
      e = gunzip(src, cap, out);
    } else if (base::ascii_iequals(tok, "deflate")) {
      e = inflate(src, cap, out);
    } else {
      return fetch_error::unsupported_content_encoding;
    }
    if (e != fetch_error::ok) return e;
    if (k > 0) {
      stage.swap(out);
      src = stage;
    }
  }
  return fetch_error::ok;
}

fetch_error content_decoder::gunzip(std::string_view in, uint64_t cap, std::string& out) {
  out.clear();
  if (in.empty()) return fetch_error::bad_gzip;
  // Members are decoded one after another (RFC 1952 allows concatenated members).
  size_t pos = 0;
  while (pos < in.size()) {
    const char* src = in.data() + pos;
    size_t src_len = in.size() - pos;
    // The gzip trailer's ISIZE (size mod 2^32) is a good hint for a single member.
    size_t guess = first_guess(src_len, cap);
    if (src_len >= 18) {
      uint32_t isize;
      std::memcpy(&isize, in.data() + in.size() - 4, 4);
      if (isize > 0 && isize <= cap - out.size()) guess = std::max<size_t>(isize, 64);
    }
    size_t base = out.size();
    size_t room = static_cast<size_t>(std::min<uint64_t>(guess, cap - base));
    while (true) {
      out.resize(base + room);
      size_t in_used = 0;
      size_t produced = 0;
      auto r = libdeflate_gzip_decompress_ex(d_, src, src_len, out.data() + base, room, &in_used,
                                             &produced);
      if (r == LIBDEFLATE_SUCCESS) {
        out.resize(base + produced);
        pos += in_used;
        break;
      }
      if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (base + room >= cap) {
          out.clear();
          return fetch_error::body_too_large;
        }
        room = static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(room) * 2, cap - base));
        continue;
      }
      out.clear();
      return fetch_error::bad_gzip;
    }
    // Trailing zero padding after the last member is tolerated.
    while (pos < in.size() && in[pos] == '\0') ++pos;
  }
  return fetch_error::ok;
}

fetch_error content_decoder::inflate(std::string_view in, uint64_t cap, std::string& out) {
  out.clear();
  // "deflate" is zlib-wrapped per RFC 9110; some servers send raw deflate. Try both.
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t room = first_guess(in.size(), cap);
    while (true) {
      out.resize(room);
      size_t produced = 0;
      auto r = attempt == 0 ? libdeflate_zlib_decompress(d_, in.data(), in.size(), out.data(), room,
                                                         &produced)
                            : libdeflate_deflate_decompress(d_, in.data(), in.size(), out.data(),
                                                            room, &produced);
      if (r == LIBDEFLATE_SUCCESS) {
        out.resize(produced);
        return fetch_error::ok;
      }
      if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (room >= cap) {
          out.clear();
          return fetch_error::body_too_large;
        }
        room = static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(room) * 2, cap));
        continue;
      }
      break;  // bad data for this wrapper
    }
  }
  out.clear();
  return fetch_error::bad_deflate;
}

}  // namespace feedplane::net
