// Where a source lives. A source belongs to the shard of its politeness key (DESIGN.md 9
// "Placement"): the registrable domain of its host (libpsl over Debian's publicsuffix
// list), so one shard sees every fetch to a domain and can enforce its caps. Store keys
// are global: a source id carries the hash of its politeness key in its high 32 bits, so
// owner() computes the shard from the key alone and --shards may change between runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/dataplane/sources.h"

namespace feedplane::crawler {

// The registrable domain of host ("news.bbc.co.uk" -> "bbc.co.uk"), lower-case; the host
// itself when it has none (an IP literal, "localhost", a bare public suffix). A host under
// one of the `shared` platforms (crawler.shared_domains: "github.io", "tumblr.com"...) gets
// the platform as its key, so one cap covers every blog the platform serves.
std::string politeness_key(std::string_view host, const std::vector<std::string>& shared = {});

// The id a URL (canonical form) gets under its politeness key: hash(key) in the high 32
// bits, hash(url) in the low 32. On a collision with another URL the owner probes the low
// half upwards (next_id_candidate); the high half never changes.
uint64_t source_id(std::string_view politeness_key, std::string_view url);
inline uint64_t next_id_candidate(uint64_t id) {
  return (id & 0xffffffff00000000ull) | uint32_t(uint32_t(id) + 1);
}

// The shard of a source id among `shards` (dataplane's one rule, which the reflector also
// uses to send a source's matches to its crawler).
inline uint32_t owner_of(uint64_t id, uint32_t shards) {
  return dataplane::source_shard(id, shards);
}

// Store keys of both crawler kinds: the id, big-endian (8 bytes), so a scan is in id order.
std::string store_key(uint64_t id);
// The id of a store key; false when it is not 8 bytes.
bool parse_store_key(std::string_view key, uint64_t* id);

// The API form of an id: 16 lower-case hex digits (a JSON number would lose bits).
std::string format_id(uint64_t id);
bool parse_id(std::string_view text, uint64_t* id);

}  // namespace feedplane::crawler
