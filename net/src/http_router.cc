// The route table, request contexts (path parameters, query strings, padded bodies) and the
// JSON error shape.
#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "feedplane/base/ascii.h"
#include "feedplane/base/json.h"
#include "feedplane/net/http_server.h"

namespace feedplane::net {

namespace {

// Percent-decodes s (and '+' as a space when plus_is_space) into out, which has room for
// s.size() bytes, or views s itself when nothing needs decoding. Returns false with *bad at
// the offending '%' for a malformed escape.
bool percent_decode(std::string_view s, bool plus_is_space, char* out, size_t* out_used,
                    std::string_view* decoded, size_t* bad) {
  const size_t first = plus_is_space ? s.find_first_of("%+") : s.find('%');
  if (first == std::string_view::npos) {
    *decoded = s;
    return true;
  }
  char* const start = out + *out_used;
  char* w = start;
  std::copy(s.data(), s.data() + first, w);
  w += first;
  for (size_t i = first; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      const int hi = i + 1 < s.size() ? base::hex_digit(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? base::hex_digit(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        *bad = i;
        return false;
      }
      *w++ = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      *w++ = c == '+' && plus_is_space ? ' ' : c;
    }
  }
  *decoded = std::string_view(start, size_t(w - start));
  *out_used += size_t(w - start);
  return true;
}

// "malformed percent escape "%zz" in <where>; a literal % is written %25".
void describe_bad_escape(std::string_view s, size_t at, std::string_view where, std::string& msg) {
  msg.assign("malformed percent escape \"");
  msg.append(s.substr(at, 3));
  msg.append("\" in ").append(where).append(" (a literal % is written %25)");
}

// Precedence key of a pattern segment: literal (0) before parameter (1); between
// parameters the longer suffix first.
std::pair<int, ptrdiff_t> segment_key(int param, const std::string& literal) {
  return param < 0 ? std::pair<int, ptrdiff_t>{0, 0}
                   : std::pair<int, ptrdiff_t>{1, -ptrdiff_t(literal.size())};
}

bool valid_param_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

// ---- errors ----

std::string_view error_code(int status) {
  switch (status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 408:
      return "request_timeout";
    case 409:
      return "conflict";
    case 413:
      return "payload_too_large";
    case 414:
      return "uri_too_long";
    case 429:
      return "too_many_requests";
    case 431:
      return "header_fields_too_large";
    case 500:
      return "internal_error";
    case 501:
      return "not_implemented";
    case 503:
      return "unavailable";
    case 505:
      return "http_version_not_supported";
    default:
      return status >= 500 ? "server_error" : "client_error";
  }
}

void set_json_error(http_response& r, int status, std::string_view code, std::string_view message) {
  r.status = status;
  r.content_type = "application/json";
  r.gzip_body = {};
  r.keep.reset();
  r.etag = {};
  r.last_modified = -1;
  r.compressible = false;
  std::string& b = r.storage;
  b.clear();
  b.append("{\"error\": ");
  base::append_json_string(code, b);
  b.append(", \"message\": ");
  base::append_json_string(message, b);
  b.append("}\n");
  r.body = b;
}

void set_unavailable(http_response& r, std::string_view message, uint32_t retry_after_s,
                     std::string_view code) {
  set_json_error(r, 503, code, message);
  char n[16];
  auto e = std::to_chars(n, n + sizeof(n), retry_after_s);
  r.extra_headers.append("Retry-After: ").append(n, size_t(e.ptr - n)).append("\r\n");
}

// ---- query strings and contexts ----

const query_param* query_string::find(std::string_view name, const query_param* after) const {
  const query_param* p = after == nullptr ? items_ : after + 1;
  for (; p < items_ + size_; ++p) {
    if (p->name == name) return p;
  }
  return nullptr;
}

std::string_view query_string::get(std::string_view name, std::string_view absent) const {
  const query_param* p = find(name);
  return p != nullptr ? p->value : absent;
}

std::string_view request_context::param(std::string_view name) const {
  for (uint32_t i = 0; i < param_count_; ++i) {
    if (params_[i].name == name) return params_[i].value;
  }
  return {};
}

std::string_view request_context::padded_body() {
  static constexpr char empty[body_padding] = {};
  const std::string_view b = req_->body;
  if (b.empty()) return std::string_view(empty, sizeof(empty)).substr(0, 0);
  if (body_in_place_) return b;
  // A body that arrived within one receive (or was de-chunked): copy it with zeroed
  // padding into the server's scratch, which keeps its capacity.
  std::string& s = *body_scratch_;
  s.assign(b);
  s.append(body_padding, '\0');
  return {s.data(), b.size()};
}

bool http_server::prepare_context(const http_request& req, bool body_in_place) {
  request_context& c = rctx_;
  c.req_ = &req;
  c.ctx_ = context_;
  c.body_in_place_ = body_in_place && !req.chunked;
  c.body_scratch_ = &body_scratch_;
  c.param_count_ = 0;
  c.query_.size_ = 0;
  // Decoded bytes never outnumber the raw ones, and the target is at most a request line:
  // the buffer is sized once and views into it stay put while it fills.
  if (decoded_cap_ < req.target.size()) {
    decoded_cap_ = std::max<size_t>(req.target.size(), opt_.limits.max_request_line);
    decoded_ = std::make_unique<char[]>(decoded_cap_);
  }
  size_t used = 0, bad = 0;
  for (uint32_t i = 0; i < match_.param_count; ++i) {
    const std::string_view raw = match_.params[i].value;
    std::string_view v;
    if (!percent_decode(raw, false, decoded_.get(), &used, &v, &bad)) {
      describe_bad_escape(raw, bad, "the path", msg_);
      set_json_error(resp_, 400, "invalid_path", msg_);
      return false;
    }
    c.params_[i] = {match_.params[i].name, v};
  }
  c.param_count_ = match_.param_count;
  std::string_view q = req.query;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view item = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (item.empty()) continue;
    if (c.query_.size_ == query_string::capacity) {
      msg_.assign("more than ");
      msg_.append(std::to_string(query_string::capacity)).append(" query parameters");
      set_json_error(resp_, 400, "invalid_query", msg_);
      return false;
    }
    const size_t eq = item.find('=');
    const std::string_view raw_name = item.substr(0, eq);
    const std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    query_param& p = c.query_.items_[c.query_.size_];
    if (!percent_decode(raw_name, true, decoded_.get(), &used, &p.name, &bad)) {
      describe_bad_escape(raw_name, bad, "the query string", msg_);
      set_json_error(resp_, 400, "invalid_query", msg_);
      return false;
    }
    if (!percent_decode(raw_value, true, decoded_.get(), &used, &p.value, &bad)) {
      describe_bad_escape(raw_value, bad, "the query string", msg_);
      set_json_error(resp_, 400, "invalid_query", msg_);
      return false;
    }
    ++c.query_.size_;
  }
  return true;
}

// ---- router ----

void router::add(std::string_view method, std::string_view pattern, route_handler h) {
  const auto fail = [&](std::string_view why) {
    throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                "': " + std::string(why));
  };
  if (pattern.empty() || pattern.front() != '/') fail("must start with '/'");
  resource r;
  r.pattern = std::string(pattern);
  std::string_view rest = pattern.substr(1);
  while (true) {
    const size_t slash = rest.find('/');
    const std::string_view seg = rest.substr(0, slash);
    segment s;
    if (!seg.empty() && seg.front() == '{') {
      const size_t close = seg.find('}');
      if (close == std::string_view::npos) fail("'{' without '}'");
      const std::string_view name = seg.substr(1, close - 1);
      if (!valid_param_name(name)) fail("a parameter name is letters, digits and '_'");
      for (const std::string& n : r.param_names) {
        if (n == name) fail("parameter named twice");
      }
      s.param = int(r.param_names.size());
      r.param_names.emplace_back(name);
      s.literal = std::string(seg.substr(close + 1));
    } else {
      s.literal = std::string(seg);
    }
    if (s.literal.find_first_of("{}") != std::string::npos) {
      fail("'{' or '}' outside a parameter (one parameter per segment, at its start)");
    }
    r.segments.push_back(std::move(s));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (r.param_names.size() > request_context::max_params) fail("too many parameters");
  if (r.segments.size() > max_segments) fail("too many segments");
  add_resource(method, std::move(r), std::move(h));
}

void router::add_prefix(std::string_view method, std::string_view prefix, route_handler h) {
  if (prefix.empty() || prefix.front() != '/') {
    throw std::invalid_argument("route prefix '" + std::string(prefix) + "': must start with '/'");
  }
  resource r;
  r.pattern = std::string(prefix);
  r.prefix = true;
  add_resource(method, std::move(r), std::move(h));
}

void router::add_resource(std::string_view method, resource r, route_handler h) {
  auto same_shape = [&](const resource& o) {
    if (o.prefix != r.prefix || o.segments.size() != r.segments.size()) return false;
    if (o.prefix) return o.pattern == r.pattern;
    for (size_t i = 0; i < o.segments.size(); ++i) {
      if ((o.segments[i].param < 0) != (r.segments[i].param < 0) ||
          o.segments[i].literal != r.segments[i].literal) {
        return false;
      }
    }
    return true;
  };
  auto it = std::find_if(resources_.begin(), resources_.end(), same_shape);
  if (it == resources_.end()) {
    resources_.push_back(std::move(r));
    it = resources_.end() - 1;
  } else if (it->pattern != r.pattern) {
    throw std::invalid_argument("route pattern '" + r.pattern + "' has the shape of '" +
                                it->pattern + "' with other parameter names");
  }
  for (const method_handler& m : it->handlers) {
    if (m.method == method) {
      throw std::invalid_argument("route " + std::string(method) + " " + it->pattern +
                                  " added twice");
    }
  }
  it->handlers.push_back({std::string(method), std::move(h)});
  bool has_head = false;
  for (const method_handler& m : it->handlers) has_head |= m.method == "HEAD";
  it->allow.clear();
  for (const method_handler& m : it->handlers) {
    if (!it->allow.empty()) it->allow.append(", ");
    it->allow.append(m.method);
    if (m.method == "GET" && !has_head) it->allow.append(", HEAD");
  }
  // Precedence order (see the header): patterns by segment keys, then prefixes, longest
  // first. Stable, and re-sorted at set-up only.
  std::stable_sort(resources_.begin(), resources_.end(), [](const resource& a, const resource& b) {
    if (a.prefix != b.prefix) return !a.prefix;
    if (a.prefix) return a.pattern.size() > b.pattern.size();
    return std::lexicographical_compare(a.segments.begin(), a.segments.end(), b.segments.begin(),
                                        b.segments.end(), [](const segment& x, const segment& y) {
                                          return segment_key(x.param, x.literal) <
                                                 segment_key(y.param, y.literal);
                                        });
  });
  for (auto& b : by_count_) b.clear();
  first_prefix_ = resources_.size();
  for (size_t i = 0; i < resources_.size(); ++i) {
    if (resources_[i].prefix) {
      first_prefix_ = std::min(first_prefix_, i);
    } else {
      by_count_[resources_[i].segments.size()].push_back(uint32_t(i));
    }
  }
}

bool router::match_segments(const resource& r, const std::string_view* segs, match* m) const {
  uint32_t n = 0;
  for (size_t i = 0; i < r.segments.size(); ++i) {
    const segment& s = r.segments[i];
    const std::string_view g = segs[i];
    if (s.param < 0) {
      if (g != s.literal) return false;
      continue;
    }
    if (g.size() <= s.literal.size() || !g.ends_with(s.literal)) return false;
    m->params[n++] = {r.param_names[size_t(s.param)], g.substr(0, g.size() - s.literal.size())};
  }
  m->param_count = n;
  return true;
}

void router::find(std::string_view method, std::string_view path, match* m) const {
  m->handler = nullptr;
  m->status = 404;
  m->allow = {};
  m->param_count = 0;
  // Fast because the path is split once into a fixed array and only the patterns with its
  // number of segments are tried, pre-split and in precedence order, the first match winning
  // (a literal mismatch is a length compare): a handful of compares, no allocation.
  std::string_view segs[max_segments];
  size_t nseg = 0;
  if (!path.empty() && path.front() == '/') {
    std::string_view rest = path.substr(1);
    while (true) {
      if (nseg == max_segments) {
        nseg = max_segments + 1;  // longer than any pattern: only prefixes can match
        break;
      }
      const size_t slash = rest.find('/');
      segs[nseg++] = rest.substr(0, slash);
      if (slash == std::string_view::npos) break;
      rest = rest.substr(slash + 1);
    }
  }
  const resource* hit = nullptr;
  if (nseg <= max_segments) {
    for (uint32_t i : by_count_[nseg]) {
      if (match_segments(resources_[i], segs, m)) {
        hit = &resources_[i];
        break;
      }
    }
  }
  for (size_t i = first_prefix_; hit == nullptr && i < resources_.size(); ++i) {
    if (path.starts_with(resources_[i].pattern)) hit = &resources_[i];
  }
  if (hit == nullptr) {
    m->param_count = 0;
    return;
  }
  const route_handler* get = nullptr;
  for (const method_handler& h : hit->handlers) {
    if (h.method == method) {
      m->handler = &h.h;
      return;
    }
    if (h.method == "GET") get = &h.h;
  }
  if (method == "HEAD" && get != nullptr) {
    m->handler = get;
    return;
  }
  m->status = 405;
  m->allow = hit->allow;
  m->param_count = 0;
}

}  // namespace feedplane::net
