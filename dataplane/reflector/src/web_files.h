// The web page's files, compiled in from web/ (CMakeLists.txt generates their table).
#pragma once

#include <string_view>
#include <vector>

namespace feedplane::reflector {

struct web_file {
  std::string_view name;  // "index.html"
  std::string_view body;
};
const std::vector<web_file>& web_files();

}  // namespace feedplane::reflector
