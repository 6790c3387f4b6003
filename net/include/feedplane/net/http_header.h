// One header field, shared by the request parser (server) and the response parser (client),
// so that a file can include both.
#pragma once

#include <string_view>

namespace feedplane::net {

// Views into the parser's input, valid as long as the request or response they came from.
struct http_header {
  std::string_view name;   // as sent (compare case-insensitively)
  std::string_view value;  // trimmed of surrounding whitespace; a response's obs-folds are
                           // replaced by spaces
};

}  // namespace feedplane::net
