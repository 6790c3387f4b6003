// What components other than the crawler know of sources: where one is crawled, and the
// feedback the reflector gives it. Here, in dataplane, so that the reflector reaches a
// source's crawler through the component interface (component.h) without linking the
// crawler, and neither component library depends on the other (DESIGN.md 2).
#pragma once

#include <cstdint>

namespace feedplane::dataplane {

// The shard that crawls a source: a source id carries the hash of its politeness key in its
// high 32 bits (crawler/placement.h), so the shard follows from the id alone and
// --shards may change between runs. crawler::owner_of is this function.
inline uint32_t source_shard(uint64_t source_id, uint32_t shards) {
  return uint32_t((source_id >> 32) % shards);
}

// One shard's count, over a report period, of its subscriptions that a source's new
// articles matched (summed over the articles): the crawler's weight feedback (issue 10).
struct source_matches {
  uint64_t source_id = 0;
  uint64_t matched = 0;
};

}  // namespace feedplane::dataplane
