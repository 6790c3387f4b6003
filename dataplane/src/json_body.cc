#include "feedplane/dataplane/json_body.h"

#include <string>

namespace feedplane::dataplane {

static_assert(simdjson::SIMDJSON_PADDING <= net::body_padding);

bool read_json_object(
    simdjson::ondemand::parser& parser, std::string_view body, net::http_response& r,
    std::string_view expected,
    const std::function<bool(std::string_view key, simdjson::ondemand::value value)>& on_field) {
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  simdjson::padded_string_view in(body.data(), body.size(), body.size() + net::body_padding);
  if (parser.iterate(in).get(doc) || doc.get_object().get(obj)) {
    net::set_json_error(r, 400, "bad_json", std::string("expected ") + std::string(expected));
    return false;
  }
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      net::set_json_error(r, 400, "bad_json", "unreadable key");
      return false;
    }
    if (!on_field(key, field.value())) return false;
  }
  // Nothing may follow the object.
  if (const char* rest = nullptr; !doc.current_location().get(rest)) {
    net::set_json_error(r, 400, "bad_json", "trailing content after the object");
    return false;
  }
  return true;
}

}  // namespace feedplane::dataplane
