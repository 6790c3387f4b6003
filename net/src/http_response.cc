#include "feedplane/net/http_response.h"

#include <algorithm>
#include <cstring>

#include "feedplane/base/ascii.h"
#include "http_chars.h"

namespace feedplane::net {

namespace {

using base::ascii_iequals;

constexpr uint32_t k_max_chunk_line = 4096;  // size + extensions
constexpr uint32_t k_max_interim = 32;

// Calls fn(token) for each comma-separated, OWS-trimmed, non-empty token of a list header.
template <typename Fn>
void for_each_token(std::string_view v, Fn&& fn) {
  while (!v.empty()) {
    auto comma = v.find(',');
    auto tok = trim_ows(v.substr(0, comma));
    if (!tok.empty()) fn(tok);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
}

// An early look at the first bytes lets garbage fail fast instead of filling the limit.
bool status_prefix_ok(std::string_view first) {
  constexpr std::string_view k_prefix = "HTTP/";
  size_t n = std::min(first.size(), k_prefix.size());
  return first.substr(0, n) == k_prefix.substr(0, n);
}

}  // namespace

void response_parser::reset(bool no_body) {
  phase_ = phase::headers;
  error_ = fetch_error::ok;
  no_body_request_ = no_body;
  hdr_.clear();
  header_bytes_total_ = 0;
  cur_line_len_ = 0;
  last_byte_ = 0;
  seen_nonempty_line_ = false;
  status_code_ = 0;
  version_minor_ = 1;
  reason_ = {};
  headers_.clear();
  framing_ = body_framing::none;
  keep_alive_ = false;
  interim_ = 0;
  remaining_ = 0;
  cstate_ = chunk_state::size;
  chunk_line_len_ = 0;
  chunk_digits_ = 0;
  trailer_bytes_ = 0;
  trailer_line_len_ = 0;
  body_.clear();
  wire_bytes_ = 0;
}

response_parser::status response_parser::fail(fetch_error e) {
  phase_ = phase::error;
  error_ = e;
  keep_alive_ = false;
  return status::error;
}

std::string_view response_parser::header(std::string_view name) const {
  for (const auto& h : headers_)
    if (ascii_iequals(h.name, name)) return h.value;
  return {};
}

bool response_parser::has_header(std::string_view name) const {
  for (const auto& h : headers_)
    if (ascii_iequals(h.name, name)) return true;
  return false;
}

response_parser::status response_parser::feed(const char* data, size_t n, size_t* used) {
  size_t total = 0;
  while (true) {
    size_t u = 0;
    status s;
    switch (phase_) {
      case phase::headers:
        s = feed_headers(data + total, n - total, &u);
        break;
      case phase::body:
        s = feed_body(data + total, n - total, &u);
        break;
      case phase::done:
        *used = total;
        return status::done;
      case phase::error:
      default:
        *used = total;
        return status::error;
    }
    total += u;
    wire_bytes_ += u;
    if (s == status::error) {
      *used = total;
      return s;
    }
    if (phase_ == phase::done) {
      *used = total;
      return status::done;
    }
    if (total == n) {
      *used = total;
      return status::need_more;
    }
  }
}

response_parser::status response_parser::feed_headers(const char* data, size_t n, size_t* used) {
  const char* cur = data;
  const char* end = data + n;
  // memchr finds line ends at memory speed; only line boundaries are examined.
  while (cur < end) {
    const char* nl =
        static_cast<const char*>(std::memchr(cur, '\n', static_cast<size_t>(end - cur)));
    if (nl == nullptr) {
      size_t seg = static_cast<size_t>(end - cur);
      if (header_bytes_total_ + hdr_.size() + seg > limits_.max_header_bytes)
        return fail(fetch_error::headers_too_large);
      hdr_.append(cur, seg);
      cur_line_len_ += seg;
      last_byte_ = end[-1];
      *used = n;
      if (!seen_nonempty_line_ && !status_prefix_ok(hdr_))
        return fail(fetch_error::bad_status_line);
      return status::need_more;
    }
    size_t seg = static_cast<size_t>(nl - cur);
    size_t line_len = cur_line_len_ + seg;
    char lastc = seg ? nl[-1] : last_byte_;
    bool empty = line_len == 0 || (line_len == 1 && lastc == '\r');
    if (header_bytes_total_ + hdr_.size() + seg + 1 > limits_.max_header_bytes)
      return fail(fetch_error::headers_too_large);
    cur_line_len_ = 0;
    last_byte_ = '\n';
    if (empty && !seen_nonempty_line_) {
      // Stray blank lines before a status line (after a previous body) are skipped.
      hdr_.clear();
      cur = nl + 1;
      continue;
    }
    hdr_.append(cur, seg + 1);
    cur = nl + 1;
    if (!empty) {
      if (!seen_nonempty_line_ && !status_prefix_ok(hdr_))
        return fail(fetch_error::bad_status_line);
      seen_nonempty_line_ = true;
      continue;
    }
    *used = static_cast<size_t>(cur - data);
    if (auto e = parse_header_block(); e != fetch_error::ok) return fail(e);
    if (status_code_ >= 100 && status_code_ < 200) {
      if (status_code_ == 101) return fail(fetch_error::unexpected_upgrade);
      // Interim response: skip it and parse the real one that follows.
      if (++interim_ > k_max_interim) return fail(fetch_error::too_many_headers);
      header_bytes_total_ += hdr_.size();
      hdr_.clear();
      headers_.clear();
      seen_nonempty_line_ = false;
      status_code_ = 0;
      const char* rest = cur;
      size_t more = 0;
      auto s = feed_headers(rest, static_cast<size_t>(end - rest), &more);
      *used += more;
      return s;
    }
    if (framing_ == body_framing::none) {
      phase_ = phase::done;
    } else {
      phase_ = phase::body;
    }
    return status::need_more;
  }
  *used = n;
  return status::need_more;
}

fetch_error response_parser::parse_header_block() {
  // Replace obs-folds (CRLF followed by SP/HT) with spaces so values stay contiguous.
  for (size_t i = hdr_.find('\n'); i != std::string::npos && i + 1 < hdr_.size();
       i = hdr_.find('\n', i + 1)) {
    char nx = hdr_[i + 1];
    if (nx == ' ' || nx == '\t') {
      hdr_[i] = ' ';
      if (i > 0 && hdr_[i - 1] == '\r') hdr_[i - 1] = ' ';
    }
  }
  std::string_view block(hdr_);
  auto next_line = [&block]() {
    auto nl = block.find('\n');
    auto line = block.substr(0, nl);
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  // Status line: HTTP/1.x SP 3DIGIT [SP reason]
  auto sl = next_line();
  if (sl.size() < 12 || !sl.starts_with("HTTP/1.") || sl[8] != ' ')
    return fetch_error::bad_status_line;
  if (sl[7] != '0' && sl[7] != '1') return fetch_error::bad_status_line;
  version_minor_ = sl[7] - '0';
  int code = 0;
  for (int i = 9; i < 12; ++i) {
    if (sl[i] < '0' || sl[i] > '9') return fetch_error::bad_status_line;
    code = code * 10 + (sl[i] - '0');
  }
  if (code < 100 || code > 599) return fetch_error::bad_status_line;
  if (sl.size() > 12 && sl[12] != ' ') return fetch_error::bad_status_line;
  status_code_ = code;
  reason_ = sl.size() > 13 ? sl.substr(13) : std::string_view{};

  headers_.clear();
  bool have_cl = false;
  uint64_t content_length = 0;
  bool chunked = false;
  bool te_present = false;
  bool conn_close = false;
  bool conn_keep_alive = false;
  while (!block.empty()) {
    auto line = next_line();
    if (line.empty()) break;  // the terminating blank line
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return fetch_error::bad_header;
    auto name = line.substr(0, colon);
    for (char c : name)
      if (!is_tchar(static_cast<unsigned char>(c))) return fetch_error::bad_header;
    auto value = trim_ows(line.substr(colon + 1));
    for (char c : value) {
      auto uc = static_cast<unsigned char>(c);
      if ((uc < 0x20 && c != '\t') || uc == 0x7f) return fetch_error::bad_header;
    }
    if (headers_.size() >= limits_.max_headers) return fetch_error::too_many_headers;
    headers_.push_back({name, value});
    if (ascii_iequals(name, "content-length")) {
      // A list of identical values is tolerated (RFC 9110 8.6); anything else is not.
      bool bad = value.empty();
      for_each_token(value, [&](std::string_view tok) {
        uint64_t v = 0;
        if (tok.size() > 18) bad = true;
        for (char c : tok) {
          if (c < '0' || c > '9') bad = true;
          v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        if (have_cl && v != content_length) bad = true;
        have_cl = true;
        content_length = v;
      });
      if (bad) return fetch_error::bad_content_length;
    } else if (ascii_iequals(name, "transfer-encoding")) {
      te_present = true;
      bool bad = false;
      for_each_token(value, [&](std::string_view tok) {
        if (chunked) bad = true;  // chunked must be the final coding
        if (ascii_iequals(tok, "chunked")) {
          chunked = true;
        } else if (!ascii_iequals(tok, "identity")) {
          bad = true;  // gzip/deflate as transfer codings are not accepted
        }
      });
      if (bad) return fetch_error::bad_transfer_encoding;
    } else if (ascii_iequals(name, "connection")) {
      for_each_token(value, [&](std::string_view tok) {
        if (ascii_iequals(tok, "close")) conn_close = true;
        if (ascii_iequals(tok, "keep-alive")) conn_keep_alive = true;
      });
    }
  }
  keep_alive_ = version_minor_ == 1 ? !conn_close : (conn_keep_alive && !conn_close);
  if (status_code_ < 200) {
    framing_ = body_framing::none;
    return fetch_error::ok;
  }
  if (no_body_request_ || status_code_ == 204 || status_code_ == 304) {
    framing_ = body_framing::none;
    return fetch_error::ok;
  }
  if (te_present) {
    if (!chunked) {
      // A non-chunked transfer coding means the body runs to close (RFC 9112 6.3).
      framing_ = body_framing::close;
      keep_alive_ = false;
      return fetch_error::ok;
    }
    framing_ = body_framing::chunked;
    // Content-Length together with chunked: the framing is chunked; do not reuse.
    if (have_cl) keep_alive_ = false;
    return fetch_error::ok;
  }
  if (have_cl) {
    if (content_length > limits_.max_body) return fetch_error::body_too_large;
    framing_ = content_length == 0 ? body_framing::none : body_framing::length;
    remaining_ = content_length;
    body_.reserve(content_length);
    return fetch_error::ok;
  }
  framing_ = body_framing::close;
  keep_alive_ = false;
  return fetch_error::ok;
}

response_parser::status response_parser::feed_body(const char* data, size_t n, size_t* used) {
  switch (framing_) {
    case body_framing::length: {
      size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n));
      body_.append(data, take);
      remaining_ -= take;
      *used = take;
      if (remaining_ == 0) phase_ = phase::done;
      return status::need_more;
    }
    case body_framing::close:
      if (body_.size() + n > limits_.max_body) return fail(fetch_error::body_too_large);
      body_.append(data, n);
      *used = n;
      return status::need_more;
    case body_framing::chunked:
      return feed_chunked(data, n, used);
    case body_framing::none:
    default:
      phase_ = phase::done;
      *used = 0;
      return status::need_more;
  }
}

response_parser::status response_parser::feed_chunked(const char* data, size_t n, size_t* used) {
  size_t i = 0;
  // Framing bytes go through this small state machine; chunk data is copied in bulk.
  while (i < n) {
    char c = data[i];
    switch (cstate_) {
      case chunk_state::size: {
        int h = base::hex_digit(c);
        if (h >= 0) {
          if (++chunk_digits_ > 15) return fail(fetch_error::bad_chunk_size);
          remaining_ = (remaining_ << 4) | static_cast<uint64_t>(h);
          ++i;
          ++chunk_line_len_;
          break;
        }
        if (chunk_digits_ == 0) return fail(fetch_error::bad_chunk_size);
        if (c == ';' || c == ' ' || c == '\t') {
          cstate_ = chunk_state::ext;
          ++i;
          ++chunk_line_len_;
          break;
        }
        if (c == '\r') {
          cstate_ = chunk_state::size_lf;
          ++i;
          break;
        }
        if (c == '\n') {
          cstate_ = chunk_state::size_lf;
          break;  // handled in size_lf without consuming
        }
        return fail(fetch_error::bad_chunk_size);
      }
      case chunk_state::ext:
        if (c == '\n') {
          cstate_ = chunk_state::size_lf;  // handled in size_lf without consuming
          break;
        }
        if (c == '\r') {
          cstate_ = chunk_state::size_lf;
        } else if (++chunk_line_len_ > k_max_chunk_line ||
                   (static_cast<unsigned char>(c) < 0x20 && c != '\t')) {
          return fail(fetch_error::bad_chunk_size);  // over-long or control bytes in extensions
        }
        ++i;
        break;
      case chunk_state::size_lf:
        if (c != '\n') return fail(fetch_error::bad_chunk_size);
        ++i;
        chunk_line_len_ = 0;
        chunk_digits_ = 0;
        if (remaining_ == 0) {
          cstate_ = chunk_state::trailer;
          trailer_line_len_ = 0;
        } else {
          if (body_.size() + remaining_ > limits_.max_body)
            return fail(fetch_error::body_too_large);
          cstate_ = chunk_state::data;
        }
        break;
      case chunk_state::data: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - i));
        body_.append(data + i, take);
        remaining_ -= take;
        i += take;
        if (remaining_ == 0) cstate_ = chunk_state::data_cr;
        break;
      }
      case chunk_state::data_cr:
        if (c == '\r') {
          cstate_ = chunk_state::data_lf;
          ++i;
        } else if (c == '\n') {
          cstate_ = chunk_state::data_lf;
        } else {
          return fail(fetch_error::bad_chunk_framing);
        }
        break;
      case chunk_state::data_lf:
        if (c != '\n') return fail(fetch_error::bad_chunk_framing);
        ++i;
        cstate_ = chunk_state::size;
        break;
      case chunk_state::trailer:
        ++i;
        if (header_bytes_total_ + hdr_.size() + ++trailer_bytes_ > limits_.max_header_bytes)
          return fail(fetch_error::headers_too_large);
        if (c == '\n') {
          if (trailer_line_len_ == 0) {
            phase_ = phase::done;
            *used = i;
            return status::need_more;
          }
          trailer_line_len_ = 0;
        } else if (c != '\r' || trailer_line_len_ != 0) {
          // A lone CR at the start of a line still counts as an empty line.
          ++trailer_line_len_;
        }
        break;
    }
  }
  *used = i;
  return status::need_more;
}

response_parser::status response_parser::feed_eof() {
  switch (phase_) {
    case phase::done:
      return status::done;
    case phase::error:
      return status::error;
    case phase::headers:
      return fail(hdr_.empty() && !seen_nonempty_line_ && interim_ == 0
                      ? fetch_error::closed_before_response
                      : fetch_error::closed_mid_headers);
    case phase::body:
      if (framing_ == body_framing::close) {
        phase_ = phase::done;
        keep_alive_ = false;
        return status::done;
      }
      return fail(fetch_error::closed_mid_body);
  }
  return fail(fetch_error::internal);
}

}  // namespace feedplane::net
