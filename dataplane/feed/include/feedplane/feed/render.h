// The model as JSON, the shape `feedplane parse` prints (dates RFC 3339 UTC).
#pragma once

#include <string>

#include "feedplane/feed/model.h"

namespace feedplane::feed {

// Appends f to out as one JSON object: {"format", "version", "feed": {...}, "entries": [...],
// "recovered": [names]}. Absent dates are null. Strings are escaped by
// base::append_json_string.
void render_json(const feed& f, std::string& out);

}  // namespace feedplane::feed
