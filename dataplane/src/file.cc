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

// Writes bytes to path + ".tmp" and leaves it open: the fd, or -1 with *why on failure.
int write_tmp(const std::string& path, std::string_view bytes, std::string* why) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const char* step) {
    *why = std::string(step) + " " + tmp + ": " + std::strerror(errno);
    return -1;
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
  return fd;
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
  // Why a syncfs per chunk of files, not an fsync per file: each fsync ends in a flush of
  // the disk's write cache, and a snapshot round writes a file per changed partition (up to
  // 1,024); one syncfs writes back every file of the chunk and flushes once. Measured on a
  // VM's virtio disk (reflector_bench BM_snapshot_round): 512 files of 3 KB, 159 ms of CPU
  // with an fsync each, 63 ms this way (bench/RESULTS.md, "store"). Chunks bound the
  // descriptors held open.
  constexpr size_t chunk = 128;
  struct written {
    int fd;
    dev_t dev;
    const file_bytes* f;
  };
  std::vector<written> chunk_files;
  chunk_files.reserve(std::min(chunk, files.size()));
  std::vector<std::pair<dev_t, int>> fs_synced;  // a device and its syncfs's errno (0: durable)
  for (size_t from = 0; from < files.size(); from += chunk) {
    chunk_files.clear();
    for (size_t i = from; i < std::min(files.size(), from + chunk); ++i) {
      std::string failed;
      const int fd = write_tmp(files[i].path, files[i].bytes, &failed);
      if (fd < 0) {
        note(failed);
        continue;
      }
      struct stat st {};
      chunk_files.push_back({fd, ::fstat(fd, &st) == 0 ? st.st_dev : dev_t(-1), &files[i]});
    }
    // One syncfs per file system the chunk's files are on (one, in practice).
    fs_synced.clear();
    for (const written& w : chunk_files) {
      if (std::none_of(fs_synced.begin(), fs_synced.end(),
                       [&](const auto& d) { return d.first == w.dev; }))
        fs_synced.emplace_back(w.dev, ::syncfs(w.fd) == 0 ? 0 : errno);
    }
    for (const written& w : chunk_files) {
      ::close(w.fd);
      const int e = std::find_if(fs_synced.begin(), fs_synced.end(), [&](const auto& d) {
                      return d.first == w.dev;
                    })->second;
      const std::string tmp = w.f->path + ".tmp";
      if (e != 0) {
        note("cannot sync " + tmp + ": " + std::strerror(e));
        continue;
      }
      if (::rename(tmp.c_str(), w.f->path.c_str()) != 0) {
        note("cannot rename " + tmp + ": " + std::strerror(errno));
        continue;
      }
      renamed.push_back(w.f);
    }
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
