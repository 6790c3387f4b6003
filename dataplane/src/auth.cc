#include "feedplane/dataplane/auth.h"

#include <openssl/crypto.h>

#include "feedplane/base/ascii.h"
#include "feedplane/dataplane/config.h"

namespace feedplane::dataplane {

std::string_view bearer_token(const net::http_request& req) {
  std::string_view v = req.header("authorization");
  constexpr std::string_view scheme = "bearer ";
  if (!base::ascii_istarts_with(v, scheme)) return {};
  v.remove_prefix(scheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  return v;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // The lengths are not secret (tokens have a fixed length); the bytes are.
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool require_admin(const net::request_context& ctx, const config& cfg, net::http_response& r) {
  const std::string_view want = cfg.api.admin_token;
  const std::string_view got = bearer_token(ctx.request());
  if (!want.empty() && !got.empty() && constant_time_equal(got, want)) return true;
  if (want.empty()) {
    net::set_json_error(r, 401, "unauthenticated",
                        "the admin API is disabled: start feedplane serve with --admin-token, "
                        "FEEDPLANE_ADMIN_TOKEN or api.admin_token");
  } else {
    net::set_json_error(r, 401, "unauthenticated",
                        "this route needs the admin token: Authorization: Bearer TOKEN");
  }
  r.extra_headers += "WWW-Authenticate: Bearer\r\n";
  return false;
}

}  // namespace feedplane::dataplane
