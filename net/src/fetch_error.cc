#include "feedplane/net/fetch_error.h"

#include "feedplane/base/errc.h"

namespace feedplane::net {

namespace {
using base::errc_entry;
// Indexed by the enum value; the static_assert below keeps the table in step with it.
constexpr errc_entry k_table[] = {
    {"ok", "no error"},
    {"bad_url", "the URL is not a valid absolute http or https URL"},
    {"bad_request_header", "a request header name or value contains CR, LF or NUL, or is empty"},
    {"unsupported_scheme", "only http and https URLs can be fetched"},
    {"too_many_redirects", "the redirect chain is longer than the configured limit"},
    {"redirect_loop", "a redirect points back to a URL already visited in this chain"},
    {"redirect_without_location", "a redirect status came without a usable Location header"},
    {"dns_not_found", "the host name does not exist (NXDOMAIN or no address records)"},
    {"dns_timeout", "the DNS servers did not answer in time"},
    {"dns_failure", "name resolution failed"},
    {"address_not_allowed",
     "the host resolved to a loopback, private, link-local or metadata address, which this "
     "client may not reach unless the name is pinned"},
    {"connect_refused", "the server refused the TCP connection"},
    {"connect_timeout", "the TCP connection was not established within the connect timeout"},
    {"connect_failed", "the TCP connection could not be established"},
    {"connection_reset", "the server reset the connection"},
    {"send_failed", "sending the request failed"},
    {"recv_failed", "receiving the response failed"},
    {"tls_cert_expired", "the server's certificate (or one in its chain) has expired"},
    {"tls_cert_not_yet_valid", "the server's certificate is not valid yet"},
    {"tls_unknown_ca",
     "the server's certificate is not signed by a trusted CA (self-signed or unknown issuer)"},
    {"tls_name_mismatch", "the server's certificate does not cover the requested host name"},
    {"tls_handshake_timeout", "the TLS handshake did not finish in time"},
    {"tls_handshake_failed", "the TLS handshake failed (protocol or cipher mismatch, alert)"},
    {"tls_error", "the TLS connection failed after the handshake"},
    {"closed_before_response", "the server closed the connection without sending a response"},
    {"closed_mid_headers", "the server closed the connection in the middle of the headers"},
    {"closed_mid_body", "the server closed the connection before the whole body arrived"},
    {"bad_status_line", "the response's status line is malformed"},
    {"bad_header", "a response header line is malformed"},
    {"headers_too_large", "the response headers exceed the size limit"},
    {"too_many_headers", "the response has more header lines than the limit"},
    {"bad_content_length", "the Content-Length header is invalid or contradictory"},
    {"bad_transfer_encoding", "the Transfer-Encoding is unsupported or malformed"},
    {"bad_chunk_size", "a chunk size line of a chunked body is invalid"},
    {"bad_chunk_framing", "a chunk of a chunked body is not followed by CRLF"},
    {"unexpected_upgrade", "the server answered 101 Switching Protocols to a plain GET"},
    {"body_too_large", "the body exceeds the size cap"},
    {"bad_gzip", "the gzip-encoded body is corrupt"},
    {"bad_deflate", "the deflate-encoded body is corrupt"},
    {"unsupported_content_encoding", "the body uses a Content-Encoding we cannot decode"},
    {"total_timeout", "the whole fetch did not finish within the total timeout"},
    {"cancelled", "the fetch was cancelled"},
    {"too_many_in_flight",
     "the client already runs its maximum of fetches in flight; retry when one finishes"},
    {"internal", "internal error"},
};
static_assert(sizeof(k_table) / sizeof(k_table[0]) ==
              static_cast<size_t>(fetch_error::internal) + 1);
}  // namespace

// Out of range reads as `internal`, the table's last entry.
std::string_view fetch_error_name(fetch_error e) {
  return base::errc_lookup(k_table, e, k_table[std::size(k_table) - 1]).name;
}

std::string_view fetch_error_message(fetch_error e) {
  return base::errc_lookup(k_table, e, k_table[std::size(k_table) - 1]).message;
}

}  // namespace feedplane::net
