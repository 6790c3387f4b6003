#include "feedplane/dataplane/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace feedplane::dataplane {

read_status read_file(const std::string& path, size_t cap, std::string& out, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return read_status::failed;
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = std::strerror(errno);
    return read_status::failed;
  }
  if (S_ISDIR(st.st_mode)) {
    *why = "it is a directory";
    return read_status::failed;
  }
  const bool sized = S_ISREG(st.st_mode) && st.st_size > 0;
  if (sized && static_cast<uint64_t>(st.st_size) > cap) return read_status::too_large;
  // A regular file is read in one buffer of its size (+1 to see it grow); procfs files
  // (size 0), pipes and devices grow the buffer up to the cap.
  out.resize(sized ? static_cast<size_t>(st.st_size) + 1 : std::min<size_t>(cap + 1, 65536));
  size_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (out.size() > cap) break;
      out.resize(std::min(out.size() * 2, cap + 1));
    }
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::strerror(errno);
      return read_status::failed;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out.resize(used);
  return used > cap ? read_status::too_large : read_status::ok;
}

namespace {

// Writes bytes to path + ".tmp" and fsyncs it. False with *why on failure.
bool write_synced_tmp(const std::string& path, std::string_view bytes, std::string* why) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const char* step) {
    *why = std::string(step) + " " + tmp + ": " + std::strerror(errno);
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      return fail("cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return fail("cannot fsync");
  }
  ::close(fd);
  return true;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash + 1);
}

}  // namespace

size_t write_files_durably(std::span<const file_bytes> files, std::string* why) {
  why->clear();
  auto note = [&](std::string_view line) {
    if (!why->empty()) *why += "; ";
    *why += line;
  };
  std::vector<const file_bytes*> renamed;
  renamed.reserve(files.size());
  for (const file_bytes& f : files) {
    std::string failed;
    if (!write_synced_tmp(f.path, f.bytes, &failed)) {
      note(failed);
      continue;
    }
    const std::string tmp = f.path + ".tmp";
    if (::rename(tmp.c_str(), f.path.c_str()) != 0) {
      note("cannot rename " + tmp + ": " + std::strerror(errno));
      continue;
    }
    renamed.push_back(&f);
  }
  // Why one fsync per directory: each costs a journal commit, and the renames of a batch
  // share their directory (a snapshot round writes a file per changed partition).
  size_t durable = 0;
  std::vector<std::string> synced;
  for (const file_bytes* f : renamed) {
    const std::string dir = dir_of(f->path);
    if (std::find(synced.begin(), synced.end(), dir) != synced.end()) continue;
    synced.push_back(dir);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = dfd < 0 ? -1 : ::fsync(dfd);
    const int e = errno;
    if (dfd >= 0) ::close(dfd);
    if (rc != 0) {
      note(std::string(dfd < 0 ? "cannot open the directory of "
                               : "cannot fsync the directory of ") +
           f->path + ": " + std::strerror(e));
      synced.back().clear();  // its files are replaced but not known durable
    }
  }
  for (const file_bytes* f : renamed) {
    if (std::find(synced.begin(), synced.end(), dir_of(f->path)) != synced.end()) ++durable;
  }
  return durable;
}

}  // namespace feedplane::dataplane
