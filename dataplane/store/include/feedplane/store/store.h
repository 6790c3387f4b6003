// The store thread: RocksDB group commit, the article sequencer, start-up streaming.
//
// One thread owns the database for writing. Each shard has a port: its write ring in,
// its event ring and article ring out. The thread drains every write ring round robin
// into one group, applies the whole group (every op of every write, each article under
// the next sequence number, and the next sequence itself in kind::meta) as one WriteBatch
// with one synced write, and only after that write returns sends each write back to its
// shard as the ack and broadcasts the group's articles, in sequence order, to every shard.
// A full event or article ring stops it (it waits for space, it never drops), so it stops
// draining write rings: that is the backpressure that reaches the crawlers.
//
// A failed write or sync puts the store in the failed state for good (until restart):
// that group and every later write come back with a non-zero status, nothing is
// sequenced or broadcast again, the reason is in stats(), reads keep working.
//
// The article log is collected (DESIGN.md 9: an article goes once it is past the recent
// window and no list holds it). Each shard sends a gc_report (runtime/messages.h) on its api
// lane; once every shard has sent one since the last collection, the store deletes the
// articles below the lowest bound, and below its own recent window (replay_window_s), that
// no report holds, in one synced batch with the record of what it kept, before it
// acknowledges the report that completed the set. Reads and the replay skip the gaps.
//
// Threads: open/start/stop on the owner (the main thread); notify() on a shard after it
// publishes to its write ring; stats(), queue_depth(), get(), read_article() on any
// thread; everything else on the store's own thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedplane/runtime/messages.h"
#include "feedplane/runtime/shard.h"
#include "feedplane/runtime/sleeper.h"

namespace rocksdb {
class FileSystem;
}

namespace feedplane::store {

// store_write::status values. Stays 0 for a durable write.
enum class store_errc : int32_t {
  ok = 0,
  failed,        // refused: the store failed earlier and acknowledges nothing until restart
  write_failed,  // this write's group failed to write or sync (the store is now failed)
  bad_write,     // an op of a kind shards may not write (meta, articles), or a null article
};
std::string_view store_errc_name(store_errc e);
std::string_view store_errc_message(store_errc e);

// The on-disk format this binary writes; open() refuses a newer one and marks an older one
// as this version (each migration is a step of open()). 2: article records are their
// header and strings (runtime/article.h); version 1's whole-block records still read.
inline constexpr uint32_t store_format_version = 2;

struct store_options {
  std::string dir;  // created if missing
  // At most this many writes per group (one synced write), and per ring per round robin
  // pass, so one busy shard cannot starve the others within a group.
  uint32_t max_group = 8192;
  uint32_t max_per_ring = 1024;
  // Group commit under load (as MySQL's binlog_group_commit_sync_delay, but only while
  // syncs run back to back): a group gathered less than this many microseconds after the
  // last synced write began waits until then and takes what arrived meanwhile. A write
  // after a quiet spell is written at once. 0: never waits.
  uint32_t group_commit_us = 0;
  // The same window for a group that holds crawl-lane writes only, when longer: nobody
  // waits on their acknowledgement, so under a crawl a sync carries more of them (an
  // api-lane write arriving meanwhile waits only for group_commit_us). 0: as group_commit_us.
  uint32_t crawl_commit_us = 0;
  // The memtables' budget, every column family together (RocksDB's write buffer manager):
  // once they reach it RocksDB flushes one (its choice: the oldest), and a family's own
  // memtable is switched at half of it. Bounds the store's memory whatever the number of kinds
  // written at once: by RocksDB's defaults each kind could hold two 64 MiB memtables (one
  // flushing), and memory freed after a flush stays resident with the allocator's 2 MiB pages
  // (bench/RESULTS.md, "crawler: memory per feed"). 0: RocksDB's defaults.
  uint64_t memtable_bytes = uint64_t{64} << 20;
  // A clean close flushes the memtables, so the next start replays no log. Tests that
  // simulate a power cut (fault_fs) turn it off: the process they model never closes, and a
  // flush into a crashed file system only exercises RocksDB's background-error path.
  bool flush_at_close = true;
  // null: RocksDB's default file system. Tests pass a fault_fs (fault_fs.h).
  std::shared_ptr<rocksdb::FileSystem> fs;
  // At start, after the records and before `streamed`, broadcast the stored articles with
  // sequence >= replay_from on every article ring, in order (0: none).
  uint64_t replay_from = 0;
  // With ports that report what they need (store_port::replay_need), the replay starts
  // higher: at the lowest sequence any shard asked for, or the first article sequenced in
  // the last replay_window_s seconds if that is lower (the shards' index of recent
  // articles), never below replay_from. A shard restoring a list snapshot taken at N asks
  // for N + 1, so a restart reads the log's tail, not the whole log.
  uint32_t replay_window_s = 0;
};

// One shard's ends of its rings with the store. The store is their only producer (event,
// article) or consumer (write).
struct store_port {
  runtime::write_ring* in = nullptr;
  runtime::event_ring* events = nullptr;
  runtime::article_ring* articles = nullptr;
  // The shard's sleeper: after publishing, the store calls wake(wake_ctx) only when
  // consumer->must_wake() says the shard may be asleep. Without a sleeper, wake is called
  // after every publish; without wake, the shard is expected to poll.
  runtime::sleeper* consumer = nullptr;
  void (*wake)(void* ctx) = nullptr;
  void* wake_ctx = nullptr;
  // The shard's write_lane::api ring (null: the shard has none). Its writes may carry no
  // articles; the store writes and acknowledges them while a broadcast waits for room.
  runtime::write_ring* api_in = nullptr;
  // The lowest sequence this shard needs replayed, lowered while it applies the start-up
  // records (null: the replay starts at store_options::replay_from). runtime::mesh's
  // replay_need gives the memory-ordering argument.
  std::atomic<uint64_t>* replay_need = nullptr;
};

// Which shard owns a streamed record: the index of its port. Called on the store thread
// during start-up only.
using owner_fn = std::function<uint32_t(runtime::kind k, std::string_view key)>;

// The ports of every shard of a mesh: its rings with the store, its sleeper, and a wake-up
// through the eventfd of the loop the shard registered (none before it did, none after it
// left). The one way `feedplane serve` and the tests join a store to shards.
std::vector<store_port> ports_from_mesh(runtime::mesh& m);

// Power-of-two histogram: bucket i counts values v with bit_width(v) == i, i.e. bucket 0
// holds 0 and bucket i >= 1 holds [2^(i-1), 2^i - 1] (Prometheus le="2^i - 1").
inline constexpr size_t histogram_buckets = 32;
struct histogram {
  std::array<std::atomic<uint64_t>, histogram_buckets> buckets{};
  std::atomic<uint64_t> sum{0};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> max{0};
  void add(uint64_t v);  // store thread only (single writer: relaxed load + store)
  static uint64_t upper_bound(size_t bucket) { return (uint64_t{1} << bucket) - 1; }
};

// Written by the store thread only, readable from any thread: every field is a relaxed
// atomic, a gauge or counter on its own (no invariant holds across two fields).
struct store_stats {
  std::atomic<uint64_t> writes_acked{0};    // writes sent back with status 0 (durable)
  std::atomic<uint64_t> writes_refused{0};  // writes sent back with a non-zero status
  std::atomic<uint64_t> ops_written{0};     // store_ops applied
  std::atomic<uint64_t> articles_sequenced{0};
  std::atomic<uint64_t> groups{0};             // synced writes
  histogram group_writes;                      // writes per group
  histogram fsync_us;                          // duration of each synced Write, microseconds
  std::atomic<uint64_t> ring_full_waits{0};    // times an event/article ring was full
  std::atomic<uint64_t> writes_past_stall{0};  // api-lane writes acked while a broadcast waited
  std::atomic<uint64_t> sleeps{0};             // times the store thread went to sleep
  std::atomic<uint64_t> records_streamed{0};   // start-up records sent to shards
  std::atomic<uint64_t> articles_replayed{0};
  std::atomic<uint64_t> replay_first{0};  // the first sequence the start-up replay sought
  // The last sequence the start-up replay broadcast (0: none), and next_seq when it ended:
  // the log has gaps where articles were collected, so a shard is caught up once it
  // applied replay_last, and has then applied everything below replay_end.
  std::atomic<uint64_t> replay_last{0};
  std::atomic<uint64_t> replay_end{0};
  std::atomic<bool> streamed{false};  // start-up streaming done (for /readyz)
  // RocksDB's flushes and compactions running now, and done since open (an event
  // listener's counts, on RocksDB's threads). A flush or compaction streams tens of MiB
  // through the caches the shards' indexes live in: a match that meets one is slower.
  std::atomic<uint32_t> background_jobs{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<uint64_t> compactions{0};
  std::atomic<uint64_t> next_seq{1};  // the sequence the next article gets
  // The article log's collection (rt::gc_report): every article below gc_base is deleted
  // but articles_kept of them, which lists held.
  std::atomic<uint64_t> gc_runs{0};
  std::atomic<uint64_t> articles_deleted{0};  // by this process
  std::atomic<uint64_t> gc_base{1};
  std::atomic<uint64_t> articles_kept{0};
  // failed: set once, with release, after failed_reason is written; a reader that sees
  // true (acquire) may read failed_reason (store::failed_reason() does both).
  std::atomic<bool> failed{false};
  std::string failed_reason;
};

class store {
 public:
  // Opens (creating if needed) the database in opt.dir with one column family per kind,
  // checks and writes the format version. ports[i] belongs to shard i; owner() must return
  // an index into ports. Returns null and sets *error on failure.
  static std::unique_ptr<store> open(const store_options& opt, std::vector<store_port> ports,
                                     owner_fn owner, std::string* error);
  ~store();  // stop(), then closes the database
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  // Starts the thread: it streams start-up records (then `streamed`) and then commits
  // writes until stop().
  void start();
  // Ends the thread after the group in progress (its acks are delivered if the rings
  // take them; once stopping, a full ring is given up on and the rest is destroyed).
  // Writes still in the write rings are left there (not applied, never acknowledged).
  // Stop the shards' producers first. Idempotent.
  void stop();

  // Shard thread, after publishing to its write rings (api: some on the api lane): wakes
  // the store thread if it may be asleep, or if it holds a group of crawl writes and api
  // writes arrived (the seq_cst fence in must_wake pairs with each sleeper's prepare).
  void notify(bool api = false) {
    if (sleeper_.must_wake()) wake_store();
    if (api && api_sleeper_.must_wake()) api_sleeper_.wake();
  }

  const store_stats& stats() const { return stats_; }
  // null while not failed, else why (stable for the store's lifetime).
  const char* failed_reason() const {
    // acquire: pairs with the release store of stats_.failed after the reason is written.
    return stats_.failed.load(std::memory_order_acquire) ? stats_.failed_reason.c_str() : nullptr;
  }
  // Writes waiting in all write rings now (sum of occupancy; a gauge).
  uint64_t queue_depth() const;
  // Bytes in RocksDB's memtables, every family, active and waiting to be flushed (a gauge;
  // RocksDB's properties are thread-safe).
  uint64_t memtable_bytes() const;
  // Bytes of the article family's files on disk (a gauge; RocksDB's property).
  uint64_t article_file_bytes() const;

  // Reads, from any thread (RocksDB reads are thread-safe and see every acknowledged
  // write). False when absent or on error (then *error is set, else cleared).
  bool get(runtime::kind k, std::string_view key, std::string* value, std::string* error) const;
  // The article with sequence seq, decoded; empty when absent or unreadable (see *error).
  runtime::article_ref read_article(uint64_t seq, std::string* error) const;
  // Up to `limit` stored articles from sequence `first` on, in order (the log has gaps
  // where articles were collected). On an error, those before it and *error set.
  std::vector<runtime::article_ref> read_articles(uint64_t first, size_t limit,
                                                  std::string* error) const;
  // Raw record of the article with sequence seq (as article::record()).
  bool read_article_record(uint64_t seq, std::string* record, std::string* error) const;

  // A consistent copy of the database in dir (which must not exist; its parent must), from
  // any thread but a shard's: it blocks while RocksDB flushes the memtables and links (same
  // file system) or copies the files, tens of ms to seconds. Every write acknowledged
  // before the call is in it; the store thread goes on committing meanwhile. The copy
  // opens as a store of its own (open() with dir). False with *error on failure (a partial
  // dir may be left; the caller removes it).
  bool checkpoint(const std::string& dir, std::string* error) const;

 private:
  struct impl;
  explicit store(std::unique_ptr<impl> p);
  void wake_store();

  store_stats stats_;
  runtime::sleeper sleeper_;  // the store thread's: word() is its futex
  // While the store thread holds a group of crawl writes for crawl_commit_us: woken early
  // by api writes only (sleeper::wait_for and wake).
  runtime::sleeper api_sleeper_;
  std::unique_ptr<impl> impl_;
};

}  // namespace feedplane::store
