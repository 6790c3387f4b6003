// URLs without I/O (the feedplane::net_url target, which feed links too): absolute http/https
// URLs for the client (parsing, redirects, the pieces an HTTP/1.1 request needs), and RFC 3986
// reference resolution over URI text of any scheme (links in feeds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::net {

struct url {
  bool https = false;
  std::string host;    // lower-case; an IPv6 literal without brackets
  uint16_t port = 0;   // explicit or the scheme's default
  std::string target;  // path and query, always starting with '/'; the fragment is dropped
  bool ipv6_literal = false;

  std::string_view scheme() const { return https ? "https" : "http"; }
  bool default_port() const { return port == (https ? 443 : 80); }
  // "host", "host:8080" or "[::1]:8080": the Host header value and the key for reuse.
  std::string authority() const;
  // The canonical absolute form: scheme://authority/target.
  std::string str() const;
  // The same, appended to out (no allocation when out has the capacity).
  void append_authority(std::string& out) const;
  void append_str(std::string& out) const;
  friend bool operator==(const url&, const url&) = default;
};

// Parses an absolute http or https URL. Scheme and host are case-insensitive and are
// lower-cased; bytes that may not appear raw in a request target (controls, space,
// non-ASCII) are percent-encoded. Userinfo is dropped. Returns false for anything else
// (other schemes set *unsupported_scheme when given); out is then unspecified. out's
// strings keep their capacity (a reused url parses without allocating).
bool parse_url(std::string_view text, url& out, bool* unsupported_scheme = nullptr);

// Resolves `ref` (absolute, scheme-relative, absolute-path, or relative, as in a Location
// header) against `base` per RFC 3986 section 5.2, removing dot segments, then parses the
// result as parse_url does (false, and *unsupported_scheme, as there).
bool resolve_url(const url& base, std::string_view ref, url& out,
                 bool* unsupported_scheme = nullptr);

// Appends to out the reference `ref` (ASCII whitespace trimmed) resolved against the absolute
// URI `base`, any scheme, per RFC 3986 section 5.2: dot segments removed, query and fragment
// kept, nothing lower-cased or percent-encoded. An absolute ref, or an empty or relative
// base, is appended unchanged.
void resolve_url(std::string_view base, std::string_view ref, std::string& out);

// True when s starts with a URI scheme and ':' ("http:", "mailto:", "at:"): a letter, then
// letters, digits, '+', '-' or '.' (RFC 3986 section 3.1).
bool has_scheme(std::string_view s);

}  // namespace feedplane::net
