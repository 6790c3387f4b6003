// Bearer tokens: the admin token (config api.admin_token, --admin-token or
// FEEDPLANE_ADMIN_TOKEN) and account secrets. One implementation of reading the header and
// comparing in constant time, for every route that needs either.
#pragma once

#include <string_view>

#include "feedplane/net/http_server.h"

namespace feedplane::dataplane {

struct config;

// The token of an `Authorization: Bearer TOKEN` header ("" when absent or another scheme).
std::string_view bearer_token(const net::http_request& req);

// Equal bytes, in time that depends on the lengths only (OpenSSL CRYPTO_memcmp).
bool constant_time_equal(std::string_view a, std::string_view b);

// True when the request carries the admin token. Otherwise fills r with 401
// {"error": "unauthenticated"} (no or another token; also when no admin token is set, which
// disables the admin API) and returns false.
bool require_admin(const net::request_context& ctx, const config& cfg, net::http_response& r);

}  // namespace feedplane::dataplane
