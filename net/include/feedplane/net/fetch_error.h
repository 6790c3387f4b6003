// Every way an HTTP fetch can fail, each a distinct name the caller can count and show.
#pragma once

#include <cstdint>
#include <string_view>

namespace feedplane::net {

enum class fetch_error : uint8_t {
  ok = 0,
  // URL and redirects
  bad_url,
  bad_request_header,
  unsupported_scheme,
  too_many_redirects,
  redirect_loop,
  redirect_without_location,
  // name resolution
  dns_not_found,
  dns_timeout,
  dns_failure,
  address_not_allowed,  // the name resolved to a private/loopback/link-local address
  // connection
  connect_refused,
  connect_timeout,
  connect_failed,
  connection_reset,
  send_failed,
  recv_failed,
  // TLS
  tls_cert_expired,
  tls_cert_not_yet_valid,
  tls_unknown_ca,
  tls_name_mismatch,
  tls_handshake_timeout,
  tls_handshake_failed,
  tls_error,
  // the response
  closed_before_response,
  closed_mid_headers,
  closed_mid_body,
  bad_status_line,
  bad_header,
  headers_too_large,
  too_many_headers,
  bad_content_length,
  bad_transfer_encoding,
  bad_chunk_size,
  bad_chunk_framing,
  unexpected_upgrade,
  body_too_large,
  bad_gzip,
  bad_deflate,
  unsupported_content_encoding,
  total_timeout,
  cancelled,
  too_many_in_flight,  // refused at once: max_in_flight fetches are running (backpressure)
  internal,
};

// "dns_not_found" etc.: stable names for JSON output, metrics and logs.
std::string_view fetch_error_name(fetch_error e);
// One sentence a user can act on.
std::string_view fetch_error_message(fetch_error e);

}  // namespace feedplane::net
