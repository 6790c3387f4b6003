// A request body that must be one JSON object, read field by field (the admin routes').
#pragma once

#include <simdjson.h>

#include <functional>
#include <string_view>

#include "feedplane/net/http_server.h"

namespace feedplane::dataplane {

// Calls on_field(key, value) for each field of the object in body, which must have
// net::body_padding readable bytes after its end (request_context::padded_body()).
// on_field returns false after filling r with its own error (an unknown field, a bad
// value). Returns false with r filled as 400 bad_json for a body that is not one JSON
// object (`expected` says what it should be), an unreadable key, or trailing content.
bool read_json_object(
    simdjson::ondemand::parser& parser, std::string_view body, net::http_response& r,
    std::string_view expected,
    const std::function<bool(std::string_view key, simdjson::ondemand::value value)>& on_field);

}  // namespace feedplane::dataplane
