// A temporary directory for one test, removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace feedplane::test {

struct temp_dir {
  std::string path;
  // prefix names the directory (/tmp/PREFIX-XXXXXX), so a test's leftovers say whose they
  // are if it is killed.
  explicit temp_dir(std::string_view prefix = "feedplane-test") {
    std::string t =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (mkdtemp(t.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path = t;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;  // a test that failed half-way may have removed it already
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace feedplane::test
