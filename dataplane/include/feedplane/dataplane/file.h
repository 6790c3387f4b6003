// Reading a whole file that the user named, with a size cap checked before the memory is
// spent; writing one so that a crash or power loss leaves the old bytes or the new ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::dataplane {

enum class read_status : uint8_t { ok, too_large, failed };

// Reads the file at path into out, never more than cap + 1 bytes. too_large: a regular file
// larger than cap (known from its size, before any read), or a pipe or device that gave more
// than cap bytes. failed: *why says what went wrong (strerror, or "it is a directory").
read_status read_file(const std::string& path, size_t cap, std::string& out, std::string* why);

// Replaces the file at path with bytes: writes "<path>.tmp", fsyncs it, renames it over
// path and fsyncs the directory. False with *why (strerror and the step) on any failure,
// leaving path as it was.
bool write_file_durably(const std::string& path, std::string_view bytes, std::string* why);

}  // namespace feedplane::dataplane
