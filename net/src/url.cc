#include "feedplane/net/url.h"

#include <arpa/inet.h>

#include <charconv>

#include "feedplane/base/ascii.h"

namespace feedplane::net {

namespace {

using base::ascii_iequals;
using base::ascii_lower;

// Appends `s` to `out`, percent-encoding bytes that may not appear raw in a request target.
void append_target_bytes(std::string& out, std::string_view s) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' ||
        c == '`' || c == '{' || c == '|' || c == '}') {
      out.push_back('%');
      out.push_back(k_hex[c >> 4]);
      out.push_back(k_hex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
}

bool valid_reg_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == '_' || c == '~';
    if (!ok) return false;
  }
  return true;
}

// Parses "host[:port]" into out.host/out.port/out.ipv6_literal.
bool parse_authority(std::string_view auth, url& out) {
  if (auto at = auth.rfind('@'); at != std::string_view::npos) auth.remove_prefix(at + 1);
  std::string_view host;
  std::string_view port;
  if (!auth.empty() && auth[0] == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos) return false;
    host = auth.substr(1, close - 1);
    auto rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port = rest.substr(1);
    }
    std::string h(host);
    if (auto pct = h.find('%'); pct != std::string::npos) return false;  // no zone ids
    in6_addr a6;
    if (inet_pton(AF_INET6, h.c_str(), &a6) != 1) return false;
    out.ipv6_literal = true;
  } else {
    auto colon = auth.rfind(':');
    if (colon != std::string_view::npos) {
      host = auth.substr(0, colon);
      port = auth.substr(colon + 1);
    } else {
      host = auth;
    }
    out.ipv6_literal = false;
  }
  out.host.clear();
  for (char c : host) out.host.push_back(ascii_lower(c));
  if (!out.ipv6_literal && !valid_reg_name(out.host)) return false;
  if (out.ipv6_literal && out.host.empty()) return false;
  out.port = out.https ? 443 : 80;
  if (!port.empty()) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v == 0 || v > 65535) return false;
    out.port = static_cast<uint16_t>(v);
  }
  return true;
}

bool is_scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

// RFC 3986 section 5.2.4: appends path to out with "." and ".." segments removed; out's
// bytes before the call (scheme and authority) are never removed.
void remove_dot_segments(std::string_view path, std::string& out) {
  const size_t root = out.size();
  while (!path.empty()) {
    if (path.starts_with("../")) {
      path.remove_prefix(3);
    } else if (path.starts_with("./") || path.starts_with("/./")) {
      path.remove_prefix(2);
    } else if (path == "/.") {
      path = "/";
    } else if (path.starts_with("/../") || path == "/..") {
      path = path.size() == 3 ? std::string_view("/") : path.substr(3);
      const size_t slash = out.rfind('/');
      out.resize(slash == std::string::npos || slash < root ? root : slash);
    } else if (path == "." || path == "..") {
      path = {};
    } else {
      size_t next = path.find('/', 1);
      if (next == std::string_view::npos) next = path.size();
      out.append(path.substr(0, next));
      path.remove_prefix(next);
    }
  }
}

// A URI reference split into its RFC 3986 section 3 components (views into the text).
struct uri_parts {
  std::string_view scheme, authority, path, query, fragment;
  bool has_authority = false, has_query = false, has_fragment = false;
};

uri_parts split_uri(std::string_view s) {
  uri_parts p;
  if (has_scheme(s)) {
    const size_t c = s.find(':');
    p.scheme = s.substr(0, c);
    s.remove_prefix(c + 1);
  }
  if (const size_t h = s.find('#'); h != std::string_view::npos) {
    p.fragment = s.substr(h + 1);
    p.has_fragment = true;
    s = s.substr(0, h);
  }
  if (const size_t q = s.find('?'); q != std::string_view::npos) {
    p.query = s.substr(q + 1);
    p.has_query = true;
    s = s.substr(0, q);
  }
  if (s.starts_with("//")) {
    s.remove_prefix(2);
    const size_t sl = s.find('/');
    p.authority = s.substr(0, sl);
    p.has_authority = true;
    s = sl == std::string_view::npos ? std::string_view() : s.substr(sl);
  }
  p.path = s;
  return p;
}

}  // namespace

void url::append_authority(std::string& a) const {
  if (ipv6_literal) {
    a.push_back('[');
    a += host;
    a.push_back(']');
  } else {
    a += host;
  }
  if (!default_port()) {
    char buf[8];
    char* e = buf + sizeof buf;
    char* p = e;
    uint32_t v = port;
    do *--p = char('0' + v % 10);
    while ((v /= 10) != 0);
    a.push_back(':');
    a.append(p, e);
  }
}

std::string url::authority() const {
  std::string a;
  append_authority(a);
  return a;
}

void url::append_str(std::string& s) const {
  s += scheme();
  s += "://";
  append_authority(s);
  s += target;
}

std::string url::str() const {
  std::string s;
  append_str(s);
  return s;
}

bool parse_url(std::string_view text, url& out, bool* unsupported_scheme) {
  if (unsupported_scheme) *unsupported_scheme = false;
  text = base::ascii_trim(text);
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto scheme = text.substr(0, colon);
  for (char c : scheme) {
    if (!is_scheme_char(c)) return false;
  }
  // Parsed into out directly: its strings keep their capacity.
  url& u = out;
  u.https = false;
  u.host.clear();
  u.port = 0;
  u.target.clear();
  u.ipv6_literal = false;
  if (ascii_iequals(scheme, "https")) {
    u.https = true;
  } else if (!ascii_iequals(scheme, "http")) {
    if (unsupported_scheme) *unsupported_scheme = true;
    return false;
  }
  auto rest = text.substr(colon + 1);
  if (!rest.starts_with("//")) return false;
  rest.remove_prefix(2);
  size_t end = rest.find_first_of("/?#");
  if (end == std::string_view::npos) end = rest.size();
  if (!parse_authority(rest.substr(0, end), u)) return false;
  rest.remove_prefix(end);
  if (auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  if (rest.empty() || rest[0] != '/') u.target.push_back('/');
  append_target_bytes(u.target, rest);
  return true;
}

bool has_scheme(std::string_view s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] == ':') return true;
    if (!is_scheme_char(s[i])) return false;
  }
  return false;
}

void resolve_url(std::string_view base, std::string_view ref, std::string& out) {
  ref = base::ascii_trim(ref);
  if (base.empty() || has_scheme(ref) || !has_scheme(base)) {
    out.append(ref);
    return;
  }
  const uri_parts b = split_uri(base);
  const uri_parts r = split_uri(ref);
  out.append(b.scheme);
  out.push_back(':');
  std::string_view query;
  bool has_query = false;
  if (r.has_authority) {
    out.append("//");
    out.append(r.authority);
    remove_dot_segments(r.path, out);
    query = r.query;
    has_query = r.has_query;
  } else {
    if (b.has_authority) {
      out.append("//");
      out.append(b.authority);
    }
    if (r.path.empty()) {
      out.append(b.path);
      query = r.has_query ? r.query : b.query;
      has_query = r.has_query || b.has_query;
    } else {
      if (r.path[0] == '/') {
        remove_dot_segments(r.path, out);
      } else {
        // Merge (section 5.2.3): the base path up to its last '/', then the reference path.
        std::string merged;
        if (b.has_authority && b.path.empty()) {
          merged = "/";
        } else {
          const size_t sl = b.path.rfind('/');
          if (sl != std::string_view::npos) merged.assign(b.path.substr(0, sl + 1));
        }
        merged.append(r.path);
        remove_dot_segments(merged, out);
      }
      query = r.query;
      has_query = r.has_query;
    }
  }
  if (has_query) {
    out.push_back('?');
    out.append(query);
  }
  if (r.has_fragment) {
    out.push_back('#');
    out.append(r.fragment);
  }
}

bool resolve_url(const url& base, std::string_view ref, url& out, bool* unsupported_scheme) {
  // Redirects are rare: the canonical text of the base and one re-parse cost nothing that
  // matters, and parse_url then applies every rule of an http(s) URL to the result.
  std::string abs;
  resolve_url(base.str(), ref, abs);
  return parse_url(abs, out, unsupported_scheme);
}

}  // namespace feedplane::net
