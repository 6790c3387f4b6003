// Placement and feed tokens (DESIGN.md 9, "Placement" and "Polls").
//
// Subscriptions and accounts live on fixed partitions: partition = hash(id) mod
// `partitions`, shard = partition mod shards. The number of partitions never changes, so
// ids and tokens survive a change of --shards; a whole partition moves with its shard.
//
// A feed token names a subscription without a lookup table: its partition, its slot in
// that partition's slot array (which never moves), and 128 random bits that make it
// unguessable. Text form: the 22 bytes below in URL-safe base64 without padding (30
// characters), so it is one path segment.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedplane::reflector {

inline constexpr uint32_t partitions = 1024;

// The partition of a subscription or account id: fixed for ever (xxHash3 of the id).
uint32_t partition_of(std::string_view id);
// The shard that owns a partition.
inline uint32_t shard_of_partition(uint32_t partition, uint32_t shards) {
  return partition % shards;
}

struct feed_token {
  uint32_t partition = 0;                 // < partitions
  uint32_t slot = 0;                      // index into the partition's slot array
  std::array<uint8_t, 16> random_bits{};  // from RAND_bytes
  bool operator==(const feed_token&) const = default;
};

inline constexpr size_t token_bytes = 2 + 4 + 16;
inline constexpr size_t token_text_size = 30;  // ceil(22 * 4 / 3)

// The token's text (token_text_size characters of [A-Za-z0-9_-]).
std::string encode_token(const feed_token& t);
void append_token(const feed_token& t, std::string& out);  // encode_token's text, appended
// Parses the text form; false for any other length, alphabet, a non-canonical final
// character or a partition >= partitions.
bool decode_token(std::string_view text, feed_token* out);

// n bytes from OpenSSL's CSPRNG; false (and nothing usable) when it fails. Drawn from a
// per-thread pool refilled 4 KiB at a time; bytes leave the pool once, and a forked child
// refills before it draws.
bool random_bytes(void* out, size_t n);
// A new subscription or account id: PREFIX "_", the creation time (Unix milliseconds, 48 bits)
// in 8 characters of an alphabet in ASCII order, then 64 random bits in URL-safe base64 (11
// characters). Ids made later sort after ids made earlier (to the millisecond), so the
// store's memtables fill nearly in key order and its files do not overlap. Empty when the
// random bytes fail.
std::string time_ordered_id(char prefix, uint64_t unix_ms);
// Lower-case hex.
std::string hex(const uint8_t* p, size_t n);

}  // namespace feedplane::reflector
