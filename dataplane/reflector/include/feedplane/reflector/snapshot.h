// Snapshots of the reflector's last-k lists (DESIGN.md 9): lists are derived state (no
// durable write per match), so each shard writes the lists of its partitions, with the
// last article sequence it had applied (N), to one file per partition. After a crash a
// shard restores the lists of the subscriptions whose list identity is unchanged and
// re-matches only the articles after N; a subscription the snapshot lacks, or whose list
// started again since (a new query), is re-matched from its own first sequence as before.
//
// A file holds one partition (so a change of --shards reassigns whole files):
//   "FPLS" u32 version(1) u32 partition u64 applied u32 count,
//   count x { u64 id_hash, u64 identity, u8 n, n x u64 sequence (oldest first) },
//   u64 XXH3 of everything before it.
// Little-endian. A file that fails any check (magic, version, partition, sizes, sequences
// above `applied`, n > max_k, checksum) is refused as a whole: the partition is then
// re-matched from the log, which loses nothing (the log is the truth).
// Files are written to a temporary name, fsync'd and renamed over the old one, and the
// directory is fsync'd: a crash leaves the old file or the new one, never a torn one.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::reflector {

struct list_snapshot_entry {
  uint64_t id_hash = 0;  // snapshot_id_hash(subscription id)
  // The list's identity: a hash of what makes a subscription's list start again (its query
  // generation, first sequence and creation time), so neither an edited query nor a new
  // subscription under a reused id takes an old list.
  uint64_t identity = 0;
  std::vector<uint64_t> seqs;  // oldest first, at most max_k
};

struct partition_snapshot {
  uint32_t partition = 0;
  uint64_t applied = 0;  // every article <= this had been matched into these lists
  std::vector<list_snapshot_entry> lists;
};

// XXH3 of the id. Also the hash of the reflector's id map (inline for it): one hash of a
// subscription id in the project, a few instructions for a 21-byte id.
inline uint64_t snapshot_id_hash(std::string_view subscription_id) {
  return XXH3_64bits(subscription_id.data(), subscription_id.size());
}

// Appends one list to an encoding started by begin_partition_snapshot; finish writes the
// count and the checksum. A streaming writer, so a shard serializes straight from its lists.
void begin_partition_snapshot(uint32_t partition, uint64_t applied, std::string& out);
void append_list_snapshot(uint64_t id_hash, uint64_t identity, const uint64_t* seqs, size_t n,
                          std::string& out);
void finish_partition_snapshot(uint32_t count, std::string& out);

// Parses a file's bytes; false with *error saying why (then `out` is unspecified).
bool decode_partition_snapshot(std::string_view bytes, uint32_t partition, partition_snapshot& out,
                               std::string* error);

// The restored lists of a start-up, by id hash: built once from the snapshot files, then
// looked up (and taken) once per subscription as a million records stream in. Open
// addressing with linear probing, at most 70% full, 24-byte entries: an entry lies at its
// home slot or a slot or two after (1.5-2 probes on average), so prefetch() (the lines of
// the home slot and the next) brings what find() reads. It replaced absl's map, whose
// prefetch of this table the compiler had deleted (see prefetch()) and which reaches only
// the first of the 16 slots its probe group spreads over six lines.
class restored_lists {
 public:
  struct entry {
    uint64_t key = 0;       // the id hash | 1 (0: an empty slot)
    uint64_t identity = 0;  // list_snapshot_entry::identity
    uint32_t first = 0;     // the list's sequences start here in seqs()
    uint32_t n = 0;         // how many; taken: a taken list is not found again
  };
  static constexpr uint32_t taken = UINT32_MAX;

  // Adds a list (before build). A second list under the same id hash is ignored at build.
  void add(uint64_t id_hash, uint64_t identity, const uint64_t* seqs, size_t n);
  // Files what add() gathered into the table, sized once.
  void build();
  size_t size() const { return count_; }
  // always_inline: GCC 12's IPA pure-const pass counts a prefetch as no side effect, so
  // a helper that only prefetches, when not inlined early, is found `const` and its calls
  // deleted (this one's were, and absl's prefetch on the map before it: the restart's
  // lookups missed every time). Inlined first, the prefetches stay.
  [[gnu::always_inline]] void prefetch(uint64_t id_hash) const {
    if (mask_ == 0) return;
    const size_t i = (id_hash | 1) & mask_;
    __builtin_prefetch(&slots_[i]);
    __builtin_prefetch(&slots_[i + 1].n);  // its last bytes; slots_ has one spare at the end
  }
  // The untaken list under id_hash, or null.
  entry* find(uint64_t id_hash) {
    if (mask_ == 0) return nullptr;
    const uint64_t key = id_hash | 1;
    for (size_t i = key & mask_;; i = (i + 1) & mask_) {
      entry& e = slots_[i];
      if (e.key == key) return e.n == taken ? nullptr : &e;
      if (e.key == 0) return nullptr;
    }
  }
  const uint64_t* seqs(const entry& e) const { return seqs_.data() + e.first; }
  // Marks the list taken (its slot stays, so later probes still pass it).
  void take(entry& e) { e.n = taken; }
  void clear() { *this = restored_lists{}; }

 private:
  std::vector<entry> pending_;  // add()'s, until build
  std::vector<entry> slots_;
  std::vector<uint64_t> seqs_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// "<dir>/p-0042.lists"
std::string snapshot_path(const std::string& dir, uint32_t partition);

// The index's word frequencies (matcher::index::frequencies), one file per shard, written
// after each round of list snapshots and at a clean stop, and read at start-up before any
// subscription is added: a restart then files every clause by the counts the last run had,
// not at zero, and its index needs no upkeep pass to reach its old postings per article.
//   "FPWF" u32 version(1) u64 through u64 counted u32 decay_cursor u32 n, n x u16, u64 XXH3.
// `through`: the last article sequence counted (the replay does not count those again).
// A file that fails any check is refused as a whole: the shard then counts the replay's
// articles, as without a file; nothing depends on it but where clauses are filed.
struct word_frequencies {
  uint64_t through = 0;
  uint64_t counted = 0;
  uint32_t decay_cursor = 0;
  std::vector<uint16_t> counters;
};
void encode_word_frequencies(uint64_t through, uint64_t counted, uint32_t decay_cursor,
                             const uint16_t* counters, size_t n, std::string& out);
// max_counters bounds what a file may claim (the sketch's size), checked before reserving.
bool decode_word_frequencies(std::string_view bytes, size_t max_counters, word_frequencies& out,
                             std::string* error);
// "<dir>/shard-03.words"
std::string word_frequencies_path(const std::string& dir, uint32_t shard);

}  // namespace feedplane::reflector
