// Small text utilities of feed ingestion: dates, entity decoding, HTML link resolution.
// All are allocation-free except where they append to a caller's string, and never throw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::feed {

// Parses an RFC 822/1123, RFC 3339/ISO 8601 or common broken feed date into seconds since
// the epoch (UTC). Returns false (and leaves *out alone) when the text is not a date it can
// read with certainty: unknown words, out-of-range fields or trailing garbage all fail.
bool parse_date(std::string_view text, int64_t* out);

// Writes t as RFC 3339 UTC ("2004-01-01T19:48:21Z") into buf (>= 32 bytes); returns length.
int format_rfc3339(int64_t t, char* buf);

// Writes to out html with the relative URLs of its start tags' href, src, cite, poster and
// srcset (each candidate) attributes resolved against the absolute base (net::resolve_url);
// everything else is copied byte for byte. Returns false, with out left empty (nothing
// appended, so nothing allocated), when nothing needed resolving: callers keep html as it
// is. Markup with an unterminated quoted value is resolved only up to it.
bool resolve_html_urls(std::string_view html, std::string_view base, std::string& out);

// Counters a decoder bumps for each repair it makes (see model.h `recovery`).
struct decode_stats {
  uint32_t flags = 0;
  uint32_t events = 0;
};

// Appends in to out with XML character references, the five XML entities and HTML named
// entities decoded by matcher::decode_char_ref, counting bare_ampersand, html_entity and
// undefined_entity in stats. '&' that starts no complete reference (no ';') stays literal:
// the legacy HTML no-semicolon forms are not decoded, so URL queries like "?a=1&copy=2"
// survive.
void decode_entities(std::string_view in, std::string& out, decode_stats& stats);

// Removes leading and trailing ASCII whitespace from s in place (base::ascii_trim is the
// string_view form).
void trim(std::string& s);

}  // namespace feedplane::feed
