#include "feedplane/reflector/snapshot.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>

#include "feedplane/reflector/last_k.h"

namespace feedplane::reflector {

namespace {

constexpr char magic[4] = {'F', 'P', 'L', 'S'};
constexpr uint32_t version = 1;
constexpr size_t header_bytes = 4 + 4 + 4 + 8 + 4;  // magic, version, partition, applied, count
constexpr size_t count_at = 4 + 4 + 4 + 8;

template <class T>
void put(T v, std::string& out) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, arm64)
  out.append(b, sizeof(T));
}

template <class T>
bool get(std::string_view& in, T* v) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(v, in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return true;
}

constexpr char words_magic[4] = {'F', 'P', 'W', 'F'};
constexpr uint32_t words_version = 1;
constexpr size_t words_header_bytes = 4 + 4 + 8 + 8 + 4 + 4;

// Both file kinds end in an XXH3 of everything before it and start with a magic: checks
// both and leaves `in` at the bytes after the magic, without the checksum; false with
// *error saying why.
bool open_file(std::string_view bytes, size_t header, const char (&kind)[4], const char* not_kind,
               std::string_view& in, std::string* error) {
  if (bytes.size() < header + 8) {
    *error = "shorter than a header";
    return false;
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + body.size(), 8);
  if (sum != XXH3_64bits(body.data(), body.size())) {
    *error = "checksum mismatch";
    return false;
  }
  if (std::memcmp(body.data(), kind, 4) != 0) {
    *error = not_kind;
    return false;
  }
  in = body.substr(4);
  return true;
}

}  // namespace

void restored_lists::add(uint64_t id_hash, uint64_t identity, const uint64_t* seqs, size_t n) {
  pending_.push_back(entry{id_hash | 1, identity, uint32_t(seqs_.size()), uint32_t(n)});
  seqs_.insert(seqs_.end(), seqs, seqs + n);
}

void restored_lists::build() {
  // At most 70% full: at 1M subscriptions (half a million lists a shard) that is 2^20
  // slots, 48% full; at 10M 2^23, 60% (a half-full bound would take 2^24, 400 MB a shard).
  size_t cap = 16;
  while (cap * 7 < pending_.size() * 10) cap *= 2;
  slots_.assign(cap + 1, entry{});  // the spare is never filed: prefetch() reads past a slot
  mask_ = cap - 1;
  count_ = 0;
  for (const entry& p : pending_) {
    size_t i = p.key & mask_;
    while (slots_[i].key != 0 && slots_[i].key != p.key) i = (i + 1) & mask_;
    if (slots_[i].key == p.key) continue;  // the first list under a hash stays (as before)
    slots_[i] = p;
    ++count_;
  }
  pending_ = {};
}

void begin_partition_snapshot(uint32_t partition, uint64_t applied, std::string& out) {
  out.clear();
  out.append(magic, 4);
  put(version, out);
  put(partition, out);
  put(applied, out);
  put(uint32_t{0}, out);  // the count, written by finish
}

void append_list_snapshot(uint64_t id_hash, uint64_t identity, const uint64_t* seqs, size_t n,
                          std::string& out) {
  put(id_hash, out);
  put(identity, out);
  out.push_back(char(uint8_t(n)));
  if (n != 0) out.append(reinterpret_cast<const char*>(seqs), n * sizeof(uint64_t));
}

void finish_partition_snapshot(uint32_t count, std::string& out) {
  std::memcpy(out.data() + count_at, &count, sizeof(count));
  put(uint64_t(XXH3_64bits(out.data(), out.size())), out);
}

bool decode_partition_snapshot(std::string_view bytes, uint32_t partition, partition_snapshot& out,
                               std::string* error) {
  auto fail = [&](std::string why) {
    *error = std::move(why);
    return false;
  };
  std::string_view in;
  if (!open_file(bytes, header_bytes, magic, "not a list snapshot", in, error)) return false;
  uint32_t v = 0, p = 0, count = 0;
  get(in, &v);
  get(in, &p);
  if (v != version) return fail(fmt::format("version {} (this build reads {})", v, version));
  if (p != partition) return fail(fmt::format("holds partition {}, not {}", p, partition));
  out.partition = p;
  get(in, &out.applied);
  get(in, &count);
  // Each list takes at least 17 bytes: a count beyond that is a lie, refused before any
  // memory is reserved for it.
  if (uint64_t(count) * 17 > in.size()) return fail("count larger than the file");
  out.lists.clear();
  out.lists.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    list_snapshot_entry e;
    uint8_t n = 0;
    if (!get(in, &e.id_hash) || !get(in, &e.identity) || !get(in, &n))
      return fail(fmt::format("list {} cut short", i));
    if (n > max_k) return fail(fmt::format("list {} holds {} entries (at most {})", i, n, max_k));
    if (in.size() < size_t(n) * 8) return fail(fmt::format("list {} cut short", i));
    e.seqs.resize(n);
    if (n != 0) std::memcpy(e.seqs.data(), in.data(), size_t(n) * 8);
    in.remove_prefix(size_t(n) * 8);
    for (uint64_t s : e.seqs) {
      if (s == 0 || s > out.applied)
        return fail(fmt::format("list {} holds sequence {} (applied {})", i, s, out.applied));
    }
    out.lists.push_back(std::move(e));
  }
  if (!in.empty()) return fail(fmt::format("{} bytes after the last list", in.size()));
  return true;
}

std::string snapshot_path(const std::string& dir, uint32_t partition) {
  return fmt::format("{}/p-{:04}.lists", dir, partition);
}

void encode_word_frequencies(uint64_t through, uint64_t counted, uint32_t decay_cursor,
                             const uint16_t* counters, size_t n, std::string& out) {
  out.clear();
  out.reserve(words_header_bytes + n * sizeof(uint16_t) + 8);
  out.append(words_magic, 4);
  put(words_version, out);
  put(through, out);
  put(counted, out);
  put(decay_cursor, out);
  put(uint32_t(n), out);
  out.append(reinterpret_cast<const char*>(counters), n * sizeof(uint16_t));
  put(uint64_t(XXH3_64bits(out.data(), out.size())), out);
}

bool decode_word_frequencies(std::string_view bytes, size_t max_counters, word_frequencies& out,
                             std::string* error) {
  auto fail = [&](std::string why) {
    *error = std::move(why);
    return false;
  };
  std::string_view in;
  if (!open_file(bytes, words_header_bytes, words_magic, "not a word frequencies file", in, error))
    return false;
  uint32_t v = 0, n = 0;
  get(in, &v);
  if (v != words_version)
    return fail(fmt::format("version {} (this build reads {})", v, words_version));
  get(in, &out.through);
  get(in, &out.counted);
  get(in, &out.decay_cursor);
  get(in, &n);
  if (n > max_counters) return fail(fmt::format("{} counters (at most {})", n, max_counters));
  if (in.size() != size_t(n) * sizeof(uint16_t))
    return fail(fmt::format("{} bytes of counters for {}", in.size(), n));
  if (n != 0 && out.decay_cursor >= n)
    return fail(fmt::format("decay cursor {} past {} counters", out.decay_cursor, n));
  out.counters.resize(n);
  if (n != 0) std::memcpy(out.counters.data(), in.data(), in.size());
  return true;
}

std::string word_frequencies_path(const std::string& dir, uint32_t shard) {
  return fmt::format("{}/shard-{:02}.words", dir, shard);
}

}  // namespace feedplane::reflector
