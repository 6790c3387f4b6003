// Serves the regular files of one directory from memory (loaded once at start-up, then
// immutable and shared by every shard): ETag in nginx's format ("mtime-size" in hex),
// Last-Modified, a precompressed gzip form, Content-Type from the extension.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/net/http_server.h"

namespace feedplane::net {

class static_files {
 public:
  // Loads every regular file directly in `dir` (not recursive) of at most max_file bytes.
  // Returns "" or an error naming the file. A missing directory is not an error (0 files).
  std::string load(const std::string& dir, size_t max_file = 8u << 20);
  // Adds a GET route for <prefix><file name>. *this must outlive the router.
  void add_routes(router& r, const std::string& prefix) const;
  size_t count() const { return files_.size(); }
  // The entity tag served for `name` ("" if unknown).
  std::string_view etag(std::string_view name) const;

 private:
  struct file {
    std::string name;
    std::string body;
    std::string gzip;
    std::string etag;
    int64_t mtime = 0;
    std::string_view content_type;
  };
  const file* find(std::string_view name) const;
  std::vector<file> files_;  // sorted by name
};

}  // namespace feedplane::net
