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

// RFC 3986 5.2.4: remove "." and ".." segments from an absolute path.
std::string remove_dot_segments(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./") || in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../") || in == "/..") {
      in = in.size() == 3 ? std::string_view("/") : in.substr(3);
      auto slash = out.rfind('/');
      out.resize(slash == std::string::npos ? 0 : slash);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      if (next == std::string_view::npos) next = in.size();
      out.append(in.substr(0, next));
      in.remove_prefix(next);
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::string url::authority() const {
  std::string a;
  if (ipv6_literal) {
    a.push_back('[');
    a += host;
    a.push_back(']');
  } else {
    a = host;
  }
  if (!default_port()) {
    a.push_back(':');
    a += std::to_string(port);
  }
  return a;
}

std::string url::str() const {
  std::string s(scheme());
  s += "://";
  s += authority();
  s += target;
  return s;
}

bool parse_url(std::string_view text, url& out, bool* unsupported_scheme) {
  if (unsupported_scheme) *unsupported_scheme = false;
  text = trim(text);
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto scheme = text.substr(0, colon);
  for (char c : scheme) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '-' || c == '.';
    if (!ok) return false;
  }
  url u;
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
  out = std::move(u);
  return true;
}

bool resolve_url(const url& base, std::string_view ref, url& out, bool* unsupported_scheme) {
  if (unsupported_scheme) *unsupported_scheme = false;
  ref = trim(ref);
  if (auto hash = ref.find('#'); hash != std::string_view::npos) ref = ref.substr(0, hash);
  // A scheme is letters/digits/+-. before the first ':' that precedes any '/', '?'.
  auto colon = ref.find(':');
  auto delim = ref.find_first_of("/?");
  if (colon != std::string_view::npos && colon > 0 &&
      (delim == std::string_view::npos || colon < delim)) {
    bool scheme_ok = true;
    for (char c : ref.substr(0, colon)) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '+' || c == '-' || c == '.';
      scheme_ok = scheme_ok && ok;
    }
    if (scheme_ok) return parse_url(ref, out, unsupported_scheme);
  }
  if (ref.starts_with("//")) {
    std::string abs(base.scheme());
    abs.push_back(':');
    abs.append(ref);
    return parse_url(abs, out, unsupported_scheme);
  }
  url u = base;
  std::string_view base_path = base.target;
  if (auto q = base_path.find('?'); q != std::string_view::npos) base_path = base_path.substr(0, q);
  std::string merged;
  if (ref.empty()) {
    out = base;
    return true;
  }
  if (ref[0] == '?') {
    merged.append(base_path);
    merged.append(ref);
  } else {
    std::string_view path = ref;
    std::string_view query;
    if (auto q = ref.find('?'); q != std::string_view::npos) {
      path = ref.substr(0, q);
      query = ref.substr(q);
    }
    std::string joined;
    if (!path.empty() && path[0] == '/') {
      joined.assign(path);
    } else {
      auto slash = base_path.rfind('/');
      joined.assign(base_path.substr(0, slash == std::string_view::npos ? 0 : slash + 1));
      if (joined.empty()) joined = "/";
      joined.append(path);
    }
    merged = remove_dot_segments(joined);
    if (merged.empty() || merged[0] != '/') merged.insert(merged.begin(), '/');
    merged.append(query);
  }
  u.target.clear();
  append_target_bytes(u.target, merged);
  out = std::move(u);
  return true;
}

}  // namespace feedplane::net
