#include "feedplane/net/http_static.h"

#include <dirent.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace feedplane::net {

namespace {

std::string_view content_type_for(std::string_view name) {
  size_t dot = name.rfind('.');
  std::string_view ext = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  if (ext == "xml") return "text/xml";
  if (ext == "rss") return "application/rss+xml";
  if (ext == "atom") return "application/atom+xml";
  if (ext == "json") return "application/json";
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "css") return "text/css";
  if (ext == "js") return "application/javascript";
  if (ext == "txt") return "text/plain; charset=utf-8";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  return "application/octet-stream";
}

}  // namespace

std::string static_files::load(const std::string& dir, size_t max_file) {
  files_.clear();
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return errno == ENOENT ? std::string() : dir + ": " + strerror(errno);
  libdeflate_compressor* gz = libdeflate_alloc_compressor(9);
  std::string err;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir;
    path.append("/").append(name);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (size_t(st.st_size) > max_file) {
      err = path + ": larger than " + std::to_string(max_file) + " bytes";
      break;
    }
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err = path + ": " + strerror(errno);
      break;
    }
    file f;
    f.name = name;
    f.body.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < f.body.size()) {
      ssize_t n = read(fd, f.body.data() + got, f.body.size() - got);
      if (n <= 0) break;
      got += size_t(n);
    }
    close(fd);
    if (got != f.body.size()) {
      err = path + ": short read";
      break;
    }
    f.mtime = int64_t(st.st_mtime);
    char tag[64];
    snprintf(tag, sizeof(tag), "\"%llx-%llx\"", static_cast<unsigned long long>(st.st_mtime),
             static_cast<unsigned long long>(st.st_size));
    f.etag = tag;
    f.content_type = content_type_for(name);
    if (gz != nullptr && !f.body.empty()) {
      f.gzip.resize(libdeflate_gzip_compress_bound(gz, f.body.size()));
      size_t n =
          libdeflate_gzip_compress(gz, f.body.data(), f.body.size(), f.gzip.data(), f.gzip.size());
      f.gzip.resize(n < f.body.size() ? n : 0);  // keep only if it helps
    }
    files_.push_back(std::move(f));
  }
  closedir(d);
  if (gz != nullptr) libdeflate_free_compressor(gz);
  if (!err.empty()) {
    files_.clear();
    return err;
  }
  std::sort(files_.begin(), files_.end(),
            [](const file& a, const file& b) { return a.name < b.name; });
  return {};
}

const static_files::file* static_files::find(std::string_view name) const {
  auto it = std::lower_bound(files_.begin(), files_.end(), name,
                             [](const file& f, std::string_view n) { return f.name < n; });
  return it != files_.end() && it->name == name ? &*it : nullptr;
}

std::string_view static_files::etag(std::string_view name) const {
  const file* f = find(name);
  return f != nullptr ? std::string_view(f->etag) : std::string_view();
}

void static_files::add_routes(router& r, const std::string& prefix) const {
  const size_t plen = prefix.size();
  r.add_prefix("GET", prefix, [this, plen](request_context& c, http_response& resp) {
    const file* f = find(c.request().path.substr(plen));
    if (f == nullptr) {
      set_json_error(resp, 404, "not_found", "no such file");
      return;
    }
    resp.content_type = f->content_type;
    resp.body = f->body;
    resp.gzip_body = f->gzip;
    resp.compressible = !f->gzip.empty();  // incompressible files are never re-tried
    resp.etag = f->etag;
    resp.last_modified = f->mtime;
  });
}

}  // namespace feedplane::net
