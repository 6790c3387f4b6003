// What travels on the runtime's rings, and who owns it at each step.
//
//   shard i -> shard j   control ring   task_ptr     (requests, and the same task returning)
//   shard i -> store     write ring     write_ptr    (changes + new articles, durably applied)
//   store -> shard i     event ring     store_event  (the write_ptr back as its ack; blocks of
//                                                      start-up records; end of streaming)
//   store -> shard i     article ring   article_ref  (sequenced articles, in sequence order)
//
// Every object is owned by exactly one party at a time: the producer until it publishes,
// the ring until the consumer takes it, then the consumer. A task and a write both come
// back to the shard that made them, which frees them, so memory returns to the thread
// that allocated it and the number in flight per pair is bounded by the sender.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/runtime/article.h"
#include "feedplane/runtime/spsc_ring.h"

namespace feedplane::runtime {

class shard;

// A unit of cross-shard work. The origin shard sends it to a target shard (run() runs
// there, on the target's thread, with the target's state), and the target sends it back
// (done() runs on the origin's thread). A task must not touch the other shard's memory
// in either step: it carries what it needs and what it found.
class task {
 public:
  virtual ~task() = default;
  virtual void run(shard& target) = 0;
  virtual void done(shard& origin) = 0;

  uint32_t from = 0;       // origin shard, set by shard::send
  uint32_t to = 0;         // target shard
  bool returning = false;  // false on the way there, true on the way back
};
using task_ptr = std::unique_ptr<task>;

// The kinds of durable state: one RocksDB column family each. The store thread creates
// the mechanism; the crawler and the reflector fill in their kinds.
enum class kind : uint8_t {
  meta = 0,      // format version, next sequence
  sources = 1,   // crawler: source definitions
  crawl = 2,     // crawler: per-feed state (validators, hashes, seen identities)
  accounts = 3,  // reflector
  subscriptions = 4,
  articles = 5,  // the article log, keyed by big-endian sequence
  test = 6,      // used by tests and benchmarks only
  count = 7,     // number of kinds
};
const char* kind_name(kind k);

// One key change inside a write.
struct store_op {
  kind k = kind::test;
  bool erase = false;
  std::string key;
  std::string value;
};

// Which of a shard's two write rings a write travels on. The store sequences articles
// and sends each to every shard in order, so when a shard stops taking articles (the
// reflector's memory pressure) a write carrying articles must wait for room on its ring.
// `crawl` writes (the crawler's: articles, sources, crawl state) wait behind such a
// stalled broadcast, and their acks with them; `api` writes (accounts, subscriptions)
// carry no articles and touch no kind a crawl write does, so the store writes and
// acknowledges them while the broadcast waits. Order holds within a lane, not across.
enum class write_lane : uint8_t { crawl = 0, api = 1 };

// A shard's part of a collection of the article log (DESIGN.md 9: an article is deleted
// once it is past the recent window and no list holds it). Every sequence below `bound`
// that a list of the shard held when it looked, sorted and unique. `bound` is at most the
// recent window's first sequence when the scan began; a list gains only sequences at or
// above it (new matches; backfills take nothing below the highest bound a scan began
// with): whatever is below it and not in `held` is in no list of the shard for good.
struct gc_report {
  uint64_t bound = 0;
  std::vector<uint64_t> held;
};

// A durable write: its ops and its new articles are applied in one RocksDB WriteBatch
// (all or nothing), synced with the rest of its group, and only then acknowledged by
// sending the same object back to its origin shard. Articles get their sequence numbers
// (dense, global) from the store and are broadcast in sequence order after the sync.
struct store_write {
  virtual ~store_write() = default;
  // Runs on the origin shard when the write came back: status == 0 means durable.
  virtual void on_durable(shard& origin) = 0;

  std::vector<store_op> ops;
  std::vector<article_ref> articles;
  uint32_t origin_shard = 0;            // set by shard::write
  write_lane lane = write_lane::crawl;  // set by shard::write
  // Filled by the store before it sends the write back.
  int32_t status = 0;      // 0, or a store error (store.h: store_errc)
  uint64_t first_seq = 0;  // sequence of articles[0] (the rest follow densely)
  // A shard's collection report (api lane, no ops, no articles): the store deletes once
  // every shard has sent one (store.h).
  std::unique_ptr<gc_report> gc;
};
using write_ptr = std::unique_ptr<store_write>;

// What the store sends a shard besides articles.
struct store_event {
  enum type_t : uint8_t { ack, records, streamed } type = ack;
  write_ptr write;  // ack: the write coming back
  // records: start-up key/values the shard owns, many to a block (append_record,
  // for_each_record): one allocation and one ring slot per ~100 records, not two strings
  // each, which at 10M subscriptions were most of the store thread's start-up time.
  std::string block;
};

// A records block: { u8 kind, u32 key size, u32 value size, key, value } repeated, in the
// process's own byte order (it never leaves the process).
inline void append_record(std::string& block, kind k, std::string_view key,
                          std::string_view value) {
  const uint32_t ks = uint32_t(key.size()), vs = uint32_t(value.size());
  char h[9];
  h[0] = char(k);
  std::memcpy(h + 1, &ks, 4);
  std::memcpy(h + 5, &vs, 4);
  block.append(h, 9);
  block.append(key);
  block.append(value);
}

// Calls f(kind, key, value) for each record of a block made by append_record.
template <class F>
void for_each_record(std::string_view block, F&& f) {
  size_t p = 0;
  while (block.size() - p >= 9) {
    uint32_t ks, vs;
    std::memcpy(&ks, block.data() + p + 1, 4);
    std::memcpy(&vs, block.data() + p + 5, 4);
    const kind k = kind(uint8_t(block[p]));
    p += 9;
    f(k, block.substr(p, ks), block.substr(p + ks, vs));
    p += size_t(ks) + vs;
  }
}

using control_ring = spsc_ring<task_ptr>;
using write_ring = spsc_ring<write_ptr>;
using event_ring = spsc_ring<store_event>;
using article_ring = spsc_ring<article_ref>;

}  // namespace feedplane::runtime
