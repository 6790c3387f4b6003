#include "feedplane/net/http_request.h"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "feedplane/base/ascii.h"
#include "http_chars.h"

namespace feedplane::net {

namespace {

using base::ascii_iequals;

// Calls f(token) for each comma-separated, OWS-trimmed, non-empty element.
template <class F>
void for_each_token(std::string_view v, F f) {
  while (!v.empty()) {
    size_t c = v.find(',');
    std::string_view t = trim_ows(v.substr(0, c));
    if (!t.empty()) f(t);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}

}  // namespace

std::string_view http_request::header(std::string_view name) const {
  for (uint32_t i = 0; i < header_count; ++i) {
    if (ascii_iequals(headers[i].name, name)) return headers[i].value;
  }
  return {};
}

parse_status request_parser::fail(int status, const char* reason) {
  error_status_ = status;
  error_reason_ = reason;
  return parse_status::error;
}

void request_parser::reset() {
  skip_ = scan_ = head_end_ = consumed_ = 0;
  line_end_ = 0;
  started_ = false;
  error_status_ = 0;
  error_reason_ = "";
  cstate_ = chunk_state::size;
  cpos_ = 0;
  cremain_ = 0;
  trailer_bytes_ = 0;
  if (pool_ != nullptr) {
    pool_->give(body_);
  } else {
    body_.clear();
    if (body_.capacity() > size_t{64} * 1024) std::string().swap(body_);  // bound idle memory
  }
}

std::string body_pool::take() {
  std::string b;
  if (!free_.empty()) {
    b.swap(free_.back());
    free_.pop_back();
    bytes_ -= b.capacity();
  }
  return b;
}

void body_pool::give(std::string& b) {
  b.clear();
  const size_t cap = b.capacity();
  if (cap > std::string().capacity() && bytes_ + cap <= max_bytes_) {
    bytes_ += cap;
    free_.emplace_back().swap(b);  // b is left with a fresh (inline) buffer
  } else {
    std::string().swap(b);
  }
}

parse_status request_parser::parse(std::string_view in, http_request& out) {
  consumed_ = 0;
  if (head_end_ == 0) {
    // RFC 9112 2.2: ignore empty lines before the request line (bounded).
    while (skip_ < in.size() && (in[skip_] == '\r' || in[skip_] == '\n')) {
      if (++skip_ > 64) return fail(400, "too many empty lines before the request line");
    }
    if (skip_ < in.size()) started_ = true;
    if (scan_ < skip_) scan_ = skip_;
    // Resume the search for the empty line ending the header block. memchr skips whole
    // runs of header bytes per call, so the scan stays cheap on large headers.
    while (scan_ < in.size()) {
      const void* p = memchr(in.data() + scan_, '\n', in.size() - scan_);
      if (p == nullptr) {
        scan_ = in.size();
        break;
      }
      const size_t i = size_t(static_cast<const char*>(p) - in.data());
      if (line_end_ == 0) {
        line_end_ = i;
        if (i - skip_ > limits_.max_request_line) return fail(414, "request line too long");
      }
      if (i + 1 >= in.size()) {
        scan_ = i;  // undecided until the next byte arrives
        break;
      }
      if (in[i + 1] == '\n') {
        head_end_ = i + 2;
        break;
      }
      if (in[i + 1] == '\r') {
        if (i + 2 >= in.size()) {
          scan_ = i;
          break;
        }
        if (in[i + 2] == '\n') {
          head_end_ = i + 3;
          break;
        }
      }
      scan_ = i + 1;
    }
    if (head_end_ == 0) {
      if (line_end_ == 0) {
        if (in.size() - skip_ > limits_.max_request_line) return fail(414, "request line too long");
      } else if (in.size() - line_end_ > size_t(limits_.max_header_bytes) + 4) {
        return fail(431, "request header fields too large");
      }
      return parse_status::incomplete;
    }
    if (head_end_ - line_end_ > size_t(limits_.max_header_bytes) + 3) {
      return fail(431, "request header fields too large");
    }
  }

  // The head is re-parsed on each call while the body is incomplete: cheap, and it keeps
  // views valid even when the caller moved its buffer.
  if (parse_status s = parse_head(in.substr(skip_, head_end_ - skip_), out);
      s != parse_status::complete) {
    return s;
  }
  if (out.chunked) return parse_chunked(in, out);
  if (in.size() - head_end_ < out.content_length) return parse_status::incomplete;
  out.body = in.substr(head_end_, size_t(out.content_length));
  consumed_ = head_end_ + size_t(out.content_length);
  return parse_status::complete;
}

parse_status request_parser::parse_head(std::string_view head, http_request& out) {
  out.header_count = 0;
  out.body = {};
  out.host = out.if_none_match = out.if_modified_since = out.accept_encoding = {};
  out.chunked = out.expect_continue = false;
  out.content_length = 0;

  // ---- request line: method SP request-target SP HTTP-version CRLF ----
  size_t nl = head.find('\n');
  if (nl == 0 || head[nl - 1] != '\r') return fail(400, "request line not terminated by CRLF");
  std::string_view line = head.substr(0, nl - 1);
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return fail(400, "malformed request line");
  out.method = line.substr(0, sp1);
  for (char c : out.method) {
    if (!is_tchar(static_cast<unsigned char>(c))) return fail(400, "invalid method");
  }
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return fail(400, "malformed request line");
  out.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (char ch : out.target) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || c == '#') return fail(400, "invalid character in request target");
  }
  std::string_view version = line.substr(sp2 + 1);
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return fail(400, "malformed HTTP version");
  }
  if (version[5] != '1') return fail(505, "HTTP version not supported");
  out.version_minor = version[7] - '0';

  std::string_view t = out.target;
  if (t.front() != '/') {
    if (t == "*") {
      if (out.method != "OPTIONS") return fail(400, "asterisk-form target outside OPTIONS");
    } else {
      // absolute-form: scheme "://" authority path-abempty
      size_t s = t.find("://");
      if (s == std::string_view::npos || s == 0) return fail(400, "invalid request target");
      size_t p = t.find_first_of("/?", s + 3);
      t = p == std::string_view::npos ? std::string_view("/") : t.substr(p);
      if (t.front() == '?') return fail(400, "invalid request target");
    }
  }
  size_t q = t.find('?');
  out.path = t.substr(0, q);
  out.query = q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
  out.target = t;

  // ---- header fields ----
  const uint32_t max_headers = std::min(limits_.max_headers, http_request::header_capacity);
  bool has_cl = false, te_seen = false, te_other = false, host_seen = false;
  bool conn_close = false, conn_keep = false;
  size_t pos = nl + 1;
  for (;;) {
    size_t e = head.find('\n', pos);
    if (e == std::string_view::npos) return fail(400, "malformed header block");
    if (e == pos || head[e - 1] != '\r') {
      if (e == pos) break;  // bare LF empty line: accepted as the end of the head
      return fail(400, "header line not terminated by CRLF");
    }
    std::string_view hl = head.substr(pos, e - 1 - pos);
    pos = e + 1;
    if (hl.empty()) break;
    if (hl.front() == ' ' || hl.front() == '\t') return fail(400, "obsolete header line folding");
    size_t colon = hl.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header field");
    std::string_view name = hl.substr(0, colon);
    for (char c : name) {
      if (!is_tchar(static_cast<unsigned char>(c))) return fail(400, "invalid header field name");
    }
    std::string_view value = trim_ows(hl.substr(colon + 1));
    for (char ch : value) {
      unsigned char c = static_cast<unsigned char>(ch);
      if ((c < 0x20 && c != '\t') || c == 0x7f) return fail(400, "invalid header field value");
    }
    if (out.header_count >= max_headers) return fail(431, "too many header fields");
    out.headers[out.header_count++] = {name, value};

    switch (name.size()) {
      case 4:
        if (ascii_iequals(name, "host")) {
          if (host_seen) return fail(400, "duplicate Host header");
          host_seen = true;
          out.host = value;
        }
        break;
      case 6:
        if (ascii_iequals(name, "expect") && ascii_iequals(value, "100-continue"))
          out.expect_continue = true;
        break;
      case 10:
        if (ascii_iequals(name, "connection")) {
          for_each_token(value, [&](std::string_view tok) {
            if (ascii_iequals(tok, "close")) conn_close = true;
            if (ascii_iequals(tok, "keep-alive")) conn_keep = true;
          });
        }
        break;
      case 13:
        if (ascii_iequals(name, "if-none-match")) out.if_none_match = value;
        break;
      case 14:
        if (ascii_iequals(name, "content-length")) {
          if (value.empty()) return fail(400, "invalid Content-Length");
          uint64_t n = 0;
          for (char c : value) {
            if (c < '0' || c > '9') return fail(400, "invalid Content-Length");
            if (n > (UINT64_MAX - 9) / 10) return fail(400, "invalid Content-Length");
            n = n * 10 + uint64_t(c - '0');
          }
          if (has_cl && n != out.content_length) return fail(400, "conflicting Content-Length");
          has_cl = true;
          out.content_length = n;
        }
        break;
      case 15:
        if (ascii_iequals(name, "accept-encoding")) out.accept_encoding = value;
        break;
      case 17:
        if (ascii_iequals(name, "transfer-encoding")) {
          // Only "chunked", alone: anything else could be read differently by a proxy.
          for_each_token(value, [&](std::string_view tok) {
            if (ascii_iequals(tok, "chunked") && !out.chunked && !te_other) {
              out.chunked = true;
            } else {
              te_other = true;
            }
          });
          if (value.empty()) te_other = true;
          te_seen = true;
        }
        if (ascii_iequals(name, "if-modified-since")) out.if_modified_since = value;
        break;
      default:
        break;
    }
  }

  // Request smuggling defences (RFC 9112 6.1, 6.3): never guess between two framings.
  if (te_seen && has_cl) return fail(400, "Content-Length together with Transfer-Encoding");
  if (te_seen && out.version_minor == 0)
    return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
  if (te_other) return fail(501, "unsupported Transfer-Encoding");
  if (out.version_minor == 1 && !host_seen) return fail(400, "missing Host header");
  if (out.content_length > limits_.max_body) return fail(413, "request body too large");
  out.keep_alive = out.version_minor >= 1 ? !conn_close : (conn_keep && !conn_close);
  return parse_status::complete;
}

parse_status request_parser::parse_chunked(std::string_view in, http_request& out) {
  constexpr size_t max_size_line = 4096;
  if (cpos_ < head_end_) {
    cpos_ = head_end_;
    cstate_ = chunk_state::size;
    // The decoded body goes into a pooled buffer (no growth from empty per request).
    if (pool_ != nullptr && body_capacity() == 0) {
      std::string b = pool_->take();
      body_.swap(b);
      body_.clear();
    }
  }
  // The caller buffers the raw body until the request completes, so chunk framing (size
  // lines, extensions) is bounded too, not only the decoded bytes.
  const size_t max_raw = size_t(limits_.max_body) * 2 + size_t{64} * 1024;
  // Decodes from where the previous call stopped; each input byte is visited once.
  while (cstate_ != chunk_state::done) {
    if (cpos_ - head_end_ > max_raw)
      return fail(413, "chunked request too large (framing included)");
    switch (cstate_) {
      case chunk_state::size: {
        size_t nl = in.find('\n', cpos_);
        if (nl == std::string_view::npos) {
          if (in.size() - cpos_ > max_size_line) return fail(400, "chunk size line too long");
          return parse_status::incomplete;
        }
        if (nl - cpos_ > max_size_line) return fail(400, "chunk size line too long");
        if (nl == cpos_ || in[nl - 1] != '\r') return fail(400, "invalid chunk size line");
        std::string_view l = in.substr(cpos_, nl - 1 - cpos_);
        uint64_t size = 0;
        size_t i = 0;
        for (; i < l.size(); ++i) {
          int h = base::hex_digit(l[i]);
          if (h < 0) break;
          if (i >= 15) return fail(400, "invalid chunk size");  // > 2^60: never a real chunk
          size = size * 16 + uint64_t(h);
        }
        if (i == 0) return fail(400, "invalid chunk size");
        std::string_view rest = l.substr(i);
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
          rest.remove_prefix(1);
        if (!rest.empty() && rest.front() != ';') return fail(400, "invalid chunk size");
        for (char ch : rest) {
          unsigned char c = static_cast<unsigned char>(ch);
          if ((c < 0x20 && c != '\t') || c == 0x7f) return fail(400, "invalid chunk extension");
        }
        cpos_ = nl + 1;
        if (size == 0) {
          cstate_ = chunk_state::trailer;
        } else {
          if (body_.size() + size > limits_.max_body) return fail(413, "request body too large");
          cremain_ = size;
          cstate_ = chunk_state::data;
        }
        break;
      }
      case chunk_state::data: {
        size_t n = size_t(std::min<uint64_t>(cremain_, in.size() - cpos_));
        body_.append(in.data() + cpos_, n);
        cpos_ += n;
        cremain_ -= n;
        if (cremain_ > 0) return parse_status::incomplete;
        cstate_ = chunk_state::data_crlf;
        break;
      }
      case chunk_state::data_crlf:
        if (in.size() - cpos_ < 2) {
          if (in.size() > cpos_ && in[cpos_] != '\r')
            return fail(400, "chunk data not followed by CRLF");
          return parse_status::incomplete;
        }
        if (in[cpos_] != '\r' || in[cpos_ + 1] != '\n') {
          return fail(400, "chunk data not followed by CRLF");
        }
        cpos_ += 2;
        cstate_ = chunk_state::size;
        break;
      case chunk_state::trailer: {
        size_t nl = in.find('\n', cpos_);
        if (nl == std::string_view::npos) {
          // A partial line of k bytes ends as a field of at least k + 1 (with its CRLF),
          // unless it is the lone CR of the empty line that ends the trailer, which costs
          // nothing: fail early only when the whole parse would fail too.
          const size_t k = in.size() - cpos_;
          const bool may_end = k == 0 || (k == 1 && in[cpos_] == '\r');
          if (!may_end && trailer_bytes_ + k + 1 > limits_.max_header_bytes) {
            return fail(431, "trailer fields too large");
          }
          return parse_status::incomplete;
        }
        if (nl == cpos_ || in[nl - 1] != '\r')
          return fail(400, "trailer line not terminated by CRLF");
        size_t len = nl - cpos_ - 1;
        cpos_ = nl + 1;
        if (len == 0) {
          cstate_ = chunk_state::done;
          break;
        }
        trailer_bytes_ += len + 2;
        if (trailer_bytes_ > limits_.max_header_bytes) return fail(431, "trailer fields too large");
        break;
      }
      case chunk_state::done:
        break;
    }
  }
  out.body = body_;
  out.content_length = body_.size();
  consumed_ = cpos_;
  return parse_status::complete;
}

// ---- dates ----

namespace {
constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
int two_digits(std::string_view s, size_t at) {
  if (s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9') return -1;
  return (s[at] - '0') * 10 + (s[at + 1] - '0');
}
}  // namespace

namespace {

int month_index(std::string_view m) {
  for (int i = 0; i < 12; ++i) {
    if (m == months[i]) return i;
  }
  return -1;
}

// Fields already split out; validates ranges and converts.
int64_t to_unix(int year, int mon, int mday, int hour, int min, int sec) {
  if (year < 1900 || mon < 0 || mday < 1 || mday > 31 || hour < 0 || hour > 23 || min < 0 ||
      min > 59 || sec < 0 || sec > 60) {
    return -1;
  }
  tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = mon;
  t.tm_mday = mday;
  t.tm_hour = hour;
  t.tm_min = min;
  t.tm_sec = sec;
  return int64_t(timegm(&t));
}

// "08:49:37" at s[at..at+8).
bool clock_fields(std::string_view s, size_t at, int* h, int* m, int* sec) {
  if (s[at + 2] != ':' || s[at + 5] != ':') return false;
  *h = two_digits(s, at);
  *m = two_digits(s, at + 3);
  *sec = two_digits(s, at + 6);
  return true;
}

}  // namespace

int64_t parse_http_date(std::string_view s) {
  int h = 0, mi = 0, sec = 0;
  // IMF-fixdate (the one to send): "Sun, 06 Nov 1994 08:49:37 GMT"
  if (s.size() == 29 && s[3] == ',' && s[4] == ' ' && s[7] == ' ' && s[11] == ' ' && s[16] == ' ' &&
      s.substr(25) == " GMT") {
    int y1 = two_digits(s, 12), y2 = two_digits(s, 14);
    if (y1 < 0 || y2 < 0 || !clock_fields(s, 17, &h, &mi, &sec)) return -1;
    return to_unix(y1 * 100 + y2, month_index(s.substr(8, 3)), two_digits(s, 5), h, mi, sec);
  }
  // asctime: "Sun Nov  6 08:49:37 1994"
  if (s.size() == 24 && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' && s[19] == ' ') {
    int mday = s[8] == ' ' ? two_digits(std::string("0") + s[9], 0) : two_digits(s, 8);
    int y1 = two_digits(s, 20), y2 = two_digits(s, 22);
    if (y1 < 0 || y2 < 0 || !clock_fields(s, 11, &h, &mi, &sec)) return -1;
    return to_unix(y1 * 100 + y2, month_index(s.substr(4, 3)), mday, h, mi, sec);
  }
  // RFC 850 (obsolete): "Sunday, 06-Nov-94 08:49:37 GMT"
  const size_t comma = s.find(", ");
  if (comma != std::string_view::npos && comma >= 6 && comma <= 9 && s.size() == comma + 24 &&
      s[comma + 4] == '-' && s[comma + 8] == '-' && s[comma + 11] == ' ' &&
      s.substr(comma + 20) == " GMT") {
    int yy = two_digits(s, comma + 9);
    if (yy < 0 || !clock_fields(s, comma + 12, &h, &mi, &sec)) return -1;
    // Two-digit years: RFC 9110 5.6.7 says a year more than 50 years ahead is in the past.
    int year = yy + 2000;
    time_t now = ::time(nullptr);
    tm g{};
    gmtime_r(&now, &g);
    if (year > g.tm_year + 1900 + 50) year -= 100;
    return to_unix(year, month_index(s.substr(comma + 5, 3)), two_digits(s, comma + 2), h, mi, sec);
  }
  return -1;
}

std::string_view format_http_date(int64_t t, char (&out)[32]) {
  time_t tt = time_t(t);
  tm g{};
  gmtime_r(&tt, &g);
  int year = g.tm_year + 1900;
  std::memcpy(out, days[g.tm_wday], 3);
  out[3] = ',';
  out[4] = ' ';
  out[5] = char('0' + g.tm_mday / 10);
  out[6] = char('0' + g.tm_mday % 10);
  out[7] = ' ';
  std::memcpy(out + 8, months[g.tm_mon], 3);
  out[11] = ' ';
  out[12] = char('0' + (year / 1000) % 10);
  out[13] = char('0' + (year / 100) % 10);
  out[14] = char('0' + (year / 10) % 10);
  out[15] = char('0' + year % 10);
  out[16] = ' ';
  out[17] = char('0' + g.tm_hour / 10);
  out[18] = char('0' + g.tm_hour % 10);
  out[19] = ':';
  out[20] = char('0' + g.tm_min / 10);
  out[21] = char('0' + g.tm_min % 10);
  out[22] = ':';
  out[23] = char('0' + g.tm_sec / 10);
  out[24] = char('0' + g.tm_sec % 10);
  std::memcpy(out + 25, " GMT", 4);
  out[29] = '\0';
  return {out, 29};
}

}  // namespace feedplane::net
