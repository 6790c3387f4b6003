// Reading a whole file that the user named, with a size cap checked before the memory is
// spent; writing one so that a crash or power loss leaves the old bytes or the new ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace feedplane::dataplane {

enum class read_status : uint8_t { ok, too_large, failed };

// Reads the file at path into out, never more than cap + 1 bytes. too_large: a regular file
// larger than cap (known from its size, before any read), or a pipe or device that gave more
// than cap bytes. failed: *why says what went wrong (strerror, or "it is a directory").
read_status read_file(const std::string& path, size_t cap, std::string& out, std::string* why);

struct file_bytes {
  std::string path;
  std::string bytes;
};

// Replaces each file at path with its bytes so that a crash or power loss leaves the old
// bytes or the new ones: writes "<path>.tmp" for each, makes them durable with one syncfs
// per chunk of files (not an fsync per file) and renames each over its path; after all the
// renames each directory is fsynced once (not once per file). Returns how many files are
// replaced durably; each one that is not adds its step and strerror to *why ("; " between them) and
// keeps its old bytes, unless only its directory's fsync failed (then it may hold either).
size_t write_files_durably(std::span<const file_bytes> files, std::string* why);

}  // namespace feedplane::dataplane
