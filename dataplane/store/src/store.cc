#include "feedplane/store/store.h"

#include "feedplane/base/errc.h"
#include "feedplane/store/memtable.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <thread>
#include <utility>

namespace feedplane::store {

namespace rt = feedplane::runtime;

namespace {

using base::errc_entry;
// Indexed by the enum value; the static_assert keeps the table in step with it.
constexpr errc_entry k_errc[] = {
    {"ok", "durable"},
    {"failed", "durable writes are refused: the store failed earlier (see its reason)"},
    {"write_failed", "the group this write was in failed to write or sync"},
    {"bad_write", "the write has an op of a kind shards may not write, or a null article"},
};
static_assert(sizeof(k_errc) / sizeof(k_errc[0]) == size_t(store_errc::bad_write) + 1);

// meta keys
constexpr std::string_view k_format_key = "format_version";
constexpr std::string_view k_next_seq_key = "next_seq";
// The article log's collection: u64 base (big-endian), then the sequences below it still
// stored (every other one below base is deleted), ascending, as LEB128 gaps from the last.
constexpr std::string_view k_gc_key = "article_gc";

constexpr size_t k_kinds = size_t(rt::kind::count);

// Articles are keyed by big-endian sequence so that key order is sequence order.
void put_be64(uint64_t v, char out[8]) {
  for (int i = 7; i >= 0; --i) {
    out[i] = char(v & 0xff);
    v >>= 8;
  }
}
uint64_t get_be64(std::string_view s) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < s.size(); ++i) v = (v << 8) | uint8_t(s[i]);
  return v;
}

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

std::string encode_gc(uint64_t base, const std::vector<uint64_t>& kept) {
  std::string out(8, '\0');
  put_be64(base, out.data());
  uint64_t last = 0;
  for (uint64_t v : kept) {
    for (uint64_t d = v - last;; d >>= 7) {
      out.push_back(char((d & 0x7f) | (d >= 0x80 ? 0x80 : 0)));
      if (d < 0x80) break;
    }
    last = v;
  }
  return out;
}

bool decode_gc(std::string_view in, uint64_t* base, std::vector<uint64_t>* kept) {
  if (in.size() < 8) return false;
  *base = get_be64(in);
  kept->clear();
  uint64_t last = 0, d = 0;
  int shift = 0;
  for (size_t i = 8; i < in.size(); ++i) {
    if (shift > 63) return false;
    d |= uint64_t(uint8_t(in[i]) & 0x7f) << shift;
    if ((uint8_t(in[i]) & 0x80) != 0) {
      shift += 7;
      continue;
    }
    if (d == 0) return false;  // ascending, unique
    last += d;
    if (last >= *base) return false;
    kept->push_back(last);
    d = 0;
    shift = 0;
  }
  return shift == 0;
}

// Kinds a shard may write through a store_op: meta and articles belong to the store.
bool shard_writable(rt::kind k) {
  return size_t(k) < k_kinds && k != rt::kind::meta && k != rt::kind::articles;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

constexpr errc_entry k_unknown_store_errc{"unknown", "unknown store error"};
std::string_view store_errc_name(store_errc e) {
  return base::errc_lookup(k_errc, e, k_unknown_store_errc).name;
}
std::string_view store_errc_message(store_errc e) {
  return base::errc_lookup(k_errc, e, k_unknown_store_errc).message;
}

void histogram::add(uint64_t v) {
  const size_t b = std::min<size_t>(std::bit_width(v), histogram_buckets - 1);
  // Single writer (the store thread): relaxed load + store instead of read-modify-writes.
  auto bump = [](std::atomic<uint64_t>& a, uint64_t d) {
    a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  };
  bump(buckets[b], 1);
  bump(sum, v);
  bump(count, 1);
  if (v > max.load(std::memory_order_relaxed)) max.store(v, std::memory_order_relaxed);
}

struct store::impl {
  store_options opt;
  std::vector<store_port> ports;
  owner_fn owner;
  store_stats* stats = nullptr;
  rt::sleeper* self = nullptr;      // the store thread's sleeper (store::sleeper_)
  rt::sleeper* api_self = nullptr;  // woken by api writes during a crawl hold (api_sleeper_)

  // Declared before db: destroyed after it.
  std::unique_ptr<rocksdb::Env> env;
  std::unique_ptr<rocksdb::DB> db;
  std::array<rocksdb::ColumnFamilyHandle*, k_kinds> cf{};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // every handle opened, to destroy

  std::thread thread;
  // Set by stop() on the owner thread, polled by the store thread: relaxed is enough, it
  // publishes no data (the thread only leaves its loops; join() orders the rest).
  std::atomic<bool> stop_requested{false};

  // ---- store thread only ----
  uint64_t next_seq = 1;
  bool failed = false;
  size_t rr = 0;                     // first port of the next round robin pass
  std::vector<rt::write_ptr> group;  // reserved to max_group: no allocation per group
  size_t group_api = 0;              // of them, api-lane writes
  // A broadcast that waits for room on a shard's article ring: the crawl-lane writes of
  // its group (acknowledged once every article is on every ring) and where it stopped.
  std::vector<rt::write_ptr> held;
  size_t bc_port = 0, bc_write = 0, bc_article = 0;
  std::chrono::steady_clock::time_point last_write{};  // the last synced write's start
  rocksdb::WriteBatch batch;
  rocksdb::WriteOptions sync_write;
  // The article log's collection: each shard's latest report (null: none since the last
  // collection); every article below gc_base is deleted but those in gc_kept (ascending).
  std::vector<std::unique_ptr<rt::gc_report>> gc_reports;
  uint64_t gc_base = 1;
  std::vector<uint64_t> gc_kept;

  ~impl() {
    if (db) {
      // A clean stop flushes the memtables, so the next start has no log to replay: at a
      // million subscriptions the replay and the flush at open cost ~2.5 s of the first
      // restart after a bulk creation. Not after a failure (a full disk would refuse it), nor
      // when the options turn it off.
      if (!failed && opt.flush_at_close) {
        rocksdb::FlushOptions fo;
        fo.allow_write_stall = true;
        db->Flush(fo, handles).PermitUncheckedError();  // after a simulated crash: fails
      }
      for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
      db->Close().PermitUncheckedError();  // after a simulated crash this fails: fine
      db.reset();
    }
  }

  rocksdb::Status open_db(std::string* error);
  void run();
  void stream_startup();
  uint64_t replay_start();
  uint64_t first_recent_seq();
  size_t gather(bool crawl_lane);
  void gather_more(bool crawl_lane);
  void hold_for_group(bool crawl_lane);
  void commit();
  void collect();
  bool advance_broadcast();
  void ack(rt::write_ptr w);
  void wait_for_room();
  void fail(const std::string& why);
  void wake_port(size_t i);
  template <class T, class V>
  bool push(rt::spsc_ring<T>& r, size_t port, V&& v);
  template <class T, class V>
  bool push_slow(rt::spsc_ring<T>& r, size_t port, V&& v);
  void publish_port(size_t i);
};

// RocksDB's informational log goes to stderr at WARN and above, not to a LOG file in the
// data directory: on a full disk Debian's librocksdb (built with assertions) aborts the
// process in the LOG writer's second failed append, and the store must survive a full
// disk (it fails, says why and keeps serving reads).
class stderr_logger final : public rocksdb::Logger {
 public:
  stderr_logger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    std::fputs("feedplane: rocksdb: ", stderr);
    std::vfprintf(stderr, format, ap);
    std::fputc('\n', stderr);
  }
};

// Counts RocksDB's background work for store_stats. Relaxed: independent gauges and
// counters, read for metrics and diagnosis; nothing is published through them.
// A compaction's end is reported whether it succeeded or not; a flush's only when it
// succeeded, and a failed one as a background error of reason kFlush or kFlushNoWAL
// (seen with a full disk at the clean stop's flush), which ends it here.
class background_counter final : public rocksdb::EventListener {
 public:
  explicit background_counter(store_stats& s) : s_(s) {}
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) override { begin(); }
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override {
    end();
    s_.flushes.fetch_add(1, std::memory_order_relaxed);
  }
  void OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override { begin(); }
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override {
    end();
    s_.compactions.fetch_add(1, std::memory_order_relaxed);
  }
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status*) override {
    if (reason == rocksdb::BackgroundErrorReason::kFlush ||
        reason == rocksdb::BackgroundErrorReason::kFlushNoWAL)
      end();
  }

 private:
  void begin() { s_.background_jobs.fetch_add(1, std::memory_order_relaxed); }
  // Never below zero: an error without a counted begin (a flush that failed before it
  // started) leaves the gauge as it is.
  void end() {
    uint32_t v = s_.background_jobs.load(std::memory_order_relaxed);
    while (v != 0 &&
           !s_.background_jobs.compare_exchange_weak(v, v - 1, std::memory_order_relaxed)) {
    }
  }
  store_stats& s_;
};

rocksdb::Status store::impl::open_db(std::string* error) {
  rocksdb::Options o;
  o.info_log = std::make_shared<stderr_logger>();
  o.listeners.push_back(std::make_shared<background_counter>(*stats));
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  o.max_background_jobs = 2;
  o.keep_log_file_num = 4;
  // After a crash the log is replayed into the memtables and kept until they flush in
  // their own time, instead of flushed into small files before the store may open.
  o.avoid_flush_during_recovery = true;
  // One writer (the store thread), and the vector memtables below need it.
  o.allow_concurrent_memtable_write = false;
  // LZ4 rather than RocksDB's default Snappy: about the same ratio on our JSON records,
  // and a start-up scan of a million subscriptions spent 12% of the store thread in
  // Snappy's decompression, a flush of a bulk creation 9% of its time in compression
  // (bench/RESULTS.md, "subscriptions at a million"). Each block names its own
  // compression, so a database written with Snappy reads as before. Debian's RocksDB
  // links liblz4 (RocksDB would refuse to open with a clear error if it did not).
  o.compression = rocksdb::kLZ4Compression;
  // Levels 0 and 1 uncompressed, LZ4 from level 2 on (the per-level split RocksDB's tuning
  // guide gives): a flush and each compaction of L0 into L1 re-encode the newest data, and
  // under a crawl the flush thread spent ~2% of the process compressing new articles into
  // L0 files that L1 rewrites soon after (bench/RESULTS.md, "crawler: throughput"). L1 is
  // at most max_bytes_for_level_base (256 MiB) of uncompressed records on disk; data is
  // compressed once, on its way into L2.
  o.compression_per_level = {rocksdb::kNoCompression, rocksdb::kNoCompression,
                             rocksdb::kLZ4Compression};
  if (opt.memtable_bytes != 0) {
    o.db_write_buffer_size = opt.memtable_bytes;
    o.write_buffer_size = std::max<uint64_t>(opt.memtable_bytes / 2, uint64_t{1} << 20);
  }
  if (opt.fs) {
    env = rocksdb::NewCompositeEnv(opt.fs);
    o.env = env.get();
  }

  std::vector<std::string> existing;
  // Fails for a database that does not exist yet: then only the kinds are opened.
  rocksdb::DB::ListColumnFamilies(o, opt.dir, &existing).PermitUncheckedError();
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  descs.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o));
  for (size_t k = 0; k < k_kinds; ++k) {
    rocksdb::ColumnFamilyOptions cfo(o);
    const rt::kind kk = rt::kind(k);
    if (kk == rt::kind::subscriptions || kk == rt::kind::accounts || kk == rt::kind::sources ||
        kk == rt::kind::crawl) {
      // Written in bulk and read only by the start-up scan: a vector memtable appends each
      // write (sorted once, at flush) where the skip list searched for its place, most of
      // the store thread's time in a bulk creation; and it sorts on key prefixes copied
      // inline, not through pointers into the arena (memtable.h). The crawler's families
      // too (a source import writes in bulk; a crawl rewrites its feed's record at random
      // keys, where the skip list's search missed the cache at every level): the crawler
      // reads them only at start (the scan, and one key before it).
      cfo.memtable_factory = make_prefix_vector_memtable();
    }
    if (kk == rt::kind::subscriptions || kk == rt::kind::accounts) {
      // Their ids are time-ordered (time_ordered_id), so each flush's file covers keys
      // above the last one's and RocksDB could move it down the levels as it is; but a
      // level whose compression differs from the file's forbids that move ("trivial move"),
      // and with L0 and L1 uncompressed every subscription was read and rewritten twice
      // more (into L1, and compressed into L2): RocksDB's background threads were 26% of a
      // 10M bulk creation's CPU. One compression for every level here (o.compression's
      // LZ4, at the flush), then moved, not rewritten.
      cfo.compression_per_level.clear();
    }
    // The articles' keys ascend, which the skip list's insert hint suits
    // (memtable_insert_with_hint_prefix_extractor), but Debian's RocksDB fails an assertion
    // in the hinted insert once the collector's deletes go below the hint
    // (store.collects_what_no_shard_holds_below_every_bound aborted): not used.
    descs.emplace_back(rt::kind_name(kk), cfo);
  }
  // A family this binary does not know (written by a newer one) must be opened too;
  // the format check below then refuses the database with a clear message.
  for (const auto& name : existing) {
    bool known = false;
    for (const auto& d : descs) known = known || d.name == name;
    if (!known) descs.emplace_back(name, rocksdb::ColumnFamilyOptions(o));
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(o), opt.dir, descs, &handles, &raw);
  if (!s.ok()) {
    *error = "cannot open the store in " + opt.dir + ": " + s.ToString();
    return s;
  }
  db.reset(raw);
  for (size_t k = 0; k < k_kinds; ++k) cf[k] = handles[k + 1];

  // Format version: absent in a new database (write it), newer refused, older migrated.
  rocksdb::WriteBatch init;
  std::string v;
  rocksdb::ColumnFamilyHandle* meta = cf[size_t(rt::kind::meta)];
  s = db->Get(rocksdb::ReadOptions(), meta, slice(k_format_key), &v);
  if (s.IsNotFound()) {
    char b[8];
    put_be64(store_format_version, b);
    init.Put(meta, slice(k_format_key), rocksdb::Slice(b, 8)).PermitUncheckedError();
  } else if (!s.ok()) {
    *error = "cannot read the store's format version in " + opt.dir + ": " + s.ToString();
    return s;
  } else {
    const uint64_t found = v.size() == 8 ? get_be64(v) : 0;
    if (found > store_format_version) {
      *error = "the store in " + opt.dir + " has format version " + std::to_string(found) +
               ", newer than this binary's (" + std::to_string(store_format_version) +
               "): run a newer feedplane, or point --data at another directory";
      return rocksdb::Status::NotSupported(*error);
    }
    if (found == 0) {
      *error = "the store in " + opt.dir + " has an unreadable format version";
      return rocksdb::Status::Corruption(*error);
    }
    // Migrations, oldest first. 1 -> 2: nothing to rewrite (article::decode reads version
    // 1's records), but this binary writes records a version-1 binary cannot read, so the
    // version moves now and such a binary refuses the store at open, not at its replay.
    if (found < store_format_version) {
      char b[8];
      put_be64(store_format_version, b);
      init.Put(meta, slice(k_format_key), rocksdb::Slice(b, 8)).PermitUncheckedError();
    }
  }

  // The next sequence: stored with every group; cross-checked with the last article key
  // (the two are written in one batch, so they agree unless the database was edited).
  next_seq = 1;
  s = db->Get(rocksdb::ReadOptions(), meta, slice(k_next_seq_key), &v);
  if (s.ok() && v.size() == 8) next_seq = get_be64(v);
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), cf[size_t(rt::kind::articles)]));
    it->SeekToLast();
    if (it->Valid()) {
      const uint64_t last = get_be64(std::string_view(it->key().data(), it->key().size()));
      if (last >= next_seq) next_seq = last + 1;
    }
  }
  s = db->Get(rocksdb::ReadOptions(), meta, slice(k_gc_key), &v);
  if (s.ok() && !decode_gc(v, &gc_base, &gc_kept)) {
    *error = "the store in " + opt.dir + " has an unreadable article collection record";
    return rocksdb::Status::Corruption(*error);
  }
  if (!s.ok() && !s.IsNotFound()) {
    *error =
        "cannot read the store's article collection record in " + opt.dir + ": " + s.ToString();
    return s;
  }
  stats->gc_base.store(gc_base, std::memory_order_relaxed);
  stats->articles_kept.store(gc_kept.size(), std::memory_order_relaxed);
  if (init.Count() > 0) {
    rocksdb::WriteOptions w;
    w.sync = true;
    s = db->Write(w, &init);
    if (!s.ok()) {
      *error = "cannot write the store's format version in " + opt.dir + ": " + s.ToString();
      return s;
    }
  }
  stats->next_seq.store(next_seq, std::memory_order_relaxed);
  return rocksdb::Status::OK();
}

void store::impl::wake_port(size_t i) {
  const store_port& p = ports[i];
  if (p.wake == nullptr) return;
  // must_wake's seq_cst fence orders the ring publish before the read of the shard's
  // sleeping flag (Dekker; pairs with the shard's sleeper::prepare).
  if (p.consumer == nullptr || p.consumer->must_wake()) p.wake(p.wake_ctx);
}

void store::impl::publish_port(size_t i) {
  const store_port& p = ports[i];
  const uint32_t n = p.events->publish() + p.articles->publish();
  if (n != 0) wake_port(i);
}

template <class T, class V>
bool store::impl::push(rt::spsc_ring<T>& r, size_t port, V&& v) {
  // try_stage constructs only on success, so v is still whole when it fails.
  if (r.try_stage(std::forward<V>(v))) [[likely]]
    return true;
  return push_slow(r, port, std::forward<V>(v));
}

// A full ring: publish what is staged, wake the shard, spin briefly, then sleep in short
// steps until it has room. Never drops; only a stop() gives up (returns false).
template <class T, class V>
bool store::impl::push_slow(rt::spsc_ring<T>& r, size_t port, V&& v) {
  stats->ring_full_waits.fetch_add(1, std::memory_order_relaxed);
  publish_port(port);
  for (uint32_t attempt = 0;; ++attempt) {
    if (r.try_stage(std::forward<V>(v))) return true;
    if (stop_requested.load(std::memory_order_relaxed)) return false;
    if (attempt < 256) {
      cpu_relax();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(attempt < 512 ? 20 : 200));
      // The shard may have gone to sleep after draining: make sure it is awake.
      if ((attempt & 63) == 0) wake_port(port);
    }
  }
}

uint64_t store::impl::replay_start() {
  for (const store_port& p : ports) {
    if (p.replay_need == nullptr) return opt.replay_from;
  }
  // Every port's event ring is empty (the caller drained them): each shard has run the
  // callbacks of its last records event. Acquire: with the relaxed loads of the rings'
  // heads that saw them empty, this synchronizes with the shards' release stores of those
  // heads, so their replay_need stores before them are visible (runtime::mesh).
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t need = UINT64_MAX;
  for (const store_port& p : ports) {
    // Relaxed: ordered by the fence above.
    need = std::min(need, p.replay_need->load(std::memory_order_relaxed));
  }
  need = std::min(need, first_recent_seq());
  return std::max(need, opt.replay_from);
}

// The first article sequenced at or after now - replay_window_s (next_seq when none is):
// a binary search on the sequencing time in each record's header, which grows with the
// sequence (the store stamps each group with its wall clock). A clock stepped back can
// make it start later than the window; the shards' recent index then lacks those
// articles, never a list (lists' needs come from replay_need).
uint64_t store::impl::first_recent_seq() {
  if (opt.replay_window_s == 0) return next_seq;
  const int64_t cutoff = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         int64_t{opt.replay_window_s} * 1000;
  std::unique_ptr<rocksdb::Iterator> it(
      db->NewIterator(rocksdb::ReadOptions(), cf[size_t(rt::kind::articles)]));
  // The time of the first stored article at or after sequence s (and that sequence), or
  // false past the last one.
  auto at = [&](uint64_t s, uint64_t* found, int64_t* ms) {
    char key[8];
    put_be64(s, key);
    it->Seek(rocksdb::Slice(key, 8));
    if (!it->Valid() || it->key().size() != 8) return false;
    *found = get_be64({it->key().data(), it->key().size()});
    // An unreadable header counts as recent: the replay decodes it and reports it.
    if (!rt::article::record_sequenced_ms({it->value().data(), it->value().size()}, ms))
      *ms = INT64_MAX;
    return true;
  };
  uint64_t lo = 1, hi = next_seq;  // the answer is in [lo, hi]
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t found = 0;
    int64_t ms = 0;
    if (!at(mid, &found, &ms) || ms >= cutoff) {
      hi = mid;  // nothing stored at or after mid, or the first one there is recent
    } else {
      lo = found + 1;  // that one is old, and so is everything before it
    }
  }
  return lo;
}

void store::impl::stream_startup() {
  // Records go to their owners in blocks (messages.h: append_record), and a shard's ring
  // holds at most blocks_ahead of them, so the scan runs at most ~8 MB ahead of a shard.
  // Why so many: the scan waits on the one shard whose ring is full while the others drain
  // theirs and sleep, and on a host where the store thread shares a core with a shard that
  // happens all the time; with 32 blocks (~13 ms of a shard's work) the shards slept 22% of
  // a 10M restart, with 512 3%, and the restart took 25.0 s instead of 33.6 (medians of
  // five alternated pairs: bench/RESULTS.md, "reflector: subscriptions at a million").
  constexpr size_t block_bytes = size_t{16} * 1024;
  constexpr uint32_t blocks_ahead = 512;
  // Waits until port i's event ring holds fewer than n items; false on stop().
  auto drain_to = [&](size_t i, uint32_t n) {
    for (uint32_t attempt = 0; ports[i].events->occupancy() >= n; ++attempt) {
      // Relaxed: a flag polled in a loop; stop() joins this thread, which orders the rest.
      if (stop_requested.load(std::memory_order_relaxed)) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(attempt < 64 ? 20 : 200));
      if ((attempt & 63) == 0) wake_port(i);
    }
    return true;
  };
  std::vector<std::string> blocks(ports.size());
  // One sequential pass over each kind: its blocks are read once, so they need not go
  // through the block cache, and a large readahead keeps the disk ahead of the scan.
  rocksdb::ReadOptions scan;
  scan.fill_cache = false;
  scan.readahead_size = size_t{4} << 20;
  auto send_block = [&](size_t i) {
    if (blocks[i].empty()) return true;
    if (!drain_to(i, blocks_ahead)) return false;
    rt::store_event ev;
    ev.type = rt::store_event::records;
    ev.block = std::move(blocks[i]);
    blocks[i] = std::string();
    if (!push(*ports[i].events, i, std::move(ev))) return false;
    publish_port(i);  // a shard applies each block as it comes, while the scan goes on
    return true;
  };
  for (size_t k = 0; k < k_kinds; ++k) {
    const rt::kind kk = rt::kind(k);
    if (kk == rt::kind::meta || kk == rt::kind::articles) continue;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(scan, cf[k]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (ports.empty()) break;
      const std::string_view key(it->key().data(), it->key().size());
      const size_t i = owner(kk, key) % ports.size();
      if (blocks[i].capacity() < block_bytes) blocks[i].reserve(block_bytes + 1024);
      rt::append_record(blocks[i], kk, key,
                        std::string_view(it->value().data(), it->value().size()));
      // Relaxed: a statistic read by tests and /metrics, ordering nothing.
      stats->records_streamed.fetch_add(1, std::memory_order_relaxed);
      if (blocks[i].size() >= block_bytes && !send_block(i)) return;
    }
    if (!it->status().ok())
      fail("start-up scan of " + std::string(rt::kind_name(kk)) + ": " + it->status().ToString());
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!send_block(i)) return;
  }
  if (opt.replay_from != 0 && !ports.empty()) {
    // Every shard applies all its records before the first replayed article. Records and
    // articles travel on different rings and a shard drains a bounded batch of each per
    // turn, so a subscription streamed late would otherwise miss the articles replayed
    // before it. A ring's head moves only after the shard ran the callbacks, and the shard
    // sees an article only after this thread published it, after it saw the head: the
    // records come first.
    for (size_t i = 0; i < ports.size(); ++i) {
      publish_port(i);
      if (!drain_to(i, 1)) return;
    }
    const uint64_t first = replay_start();
    stats->replay_first.store(first, std::memory_order_relaxed);
    char from[8];
    put_be64(first, from);
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), cf[size_t(rt::kind::articles)]));
    for (it->Seek(rocksdb::Slice(from, 8)); it->Valid(); it->Next()) {
      std::string err;
      rt::article_ref a =
          rt::article::decode(std::string_view(it->value().data(), it->value().size()), &err);
      const uint64_t key_seq =
          it->key().size() == 8 ? get_be64({it->key().data(), it->key().size()}) : 0;
      if (!a) {
        fail("article " + std::to_string(key_seq) + " is unreadable: " + err);
        break;
      }
      // A record under another sequence than its own would be applied out of order.
      if (a->seq() != key_seq) {
        fail("article record under key " + std::to_string(key_seq) + " holds sequence " +
             std::to_string(a->seq()));
        break;
      }
      for (size_t i = 0; i < ports.size(); ++i) {
        if (!push(*ports[i].articles, i, a)) return;
        if (ports[i].articles->unpublished() >= 256) publish_port(i);
      }
      stats->articles_replayed.fetch_add(1, std::memory_order_relaxed);
      stats->replay_last.store(key_seq, std::memory_order_relaxed);  // relaxed, as above
    }
    if (first > 1) {
      // Relaxed: this thread's own counter.
      std::fprintf(
          stderr,
          "feedplane: store: replayed %llu articles from sequence %llu (the lists' "
          "snapshots and the recent window need none before it)\n",
          static_cast<unsigned long long>(stats->articles_replayed.load(std::memory_order_relaxed)),
          static_cast<unsigned long long>(first));
    }
  }
  // Relaxed: published with `streamed` below (its event's ring release, and the flag's).
  stats->replay_end.store(next_seq, std::memory_order_relaxed);
  for (size_t i = 0; i < ports.size(); ++i) {
    rt::store_event ev;
    ev.type = rt::store_event::streamed;
    if (!push(*ports[i].events, i, std::move(ev))) return;
    publish_port(i);
  }
  // Release: every start-up record pushed above happens-before any thread that sees
  // `streamed` true with an acquire load (diagnostics, tests). Shards do not read it: they
  // learn it from the `streamed` event on their own ring, ordered behind the records.
  stats->streamed.store(true, std::memory_order_release);
}

// Takes up to max_group writes, round robin, at most max_per_ring per ring per pass; the
// crawl lane's rings only when crawl_lane (not while a broadcast waits).
size_t store::impl::gather(bool crawl_lane) {
  group.clear();
  group_api = 0;
  gather_more(crawl_lane);
  return group.size();
}

// Group commit: while syncs run back to back (the last began under the window ago), wait
// for the rest of the window and take what arrived. Why: a sync costs the store thread
// ~175 us of CPU here whatever it carries (fdatasync, the block layer, the VM's exit), and
// back-to-back syncs under a crawl carried 3 writes each. A group of crawl-lane writes
// alone (nobody waits on their acknowledgement; their articles reach the shards a few ms
// later) waits for crawl_commit_us instead, in one sleep that api-lane writes end early
// (api_self: crawl writes do not wake it); the group then waits only for group_commit_us.
void store::impl::hold_for_group(bool crawl_lane) {
  // Relaxed: stop_requested publishes no data (see its declaration).
  while (!stop_requested.load(std::memory_order_relaxed)) {
    if (group.size() >= opt.max_group) return;
    const bool crawl_only = group_api == 0 && opt.crawl_commit_us > opt.group_commit_us;
    const uint32_t window = crawl_only ? opt.crawl_commit_us : opt.group_commit_us;
    if (window == 0) return;
    const auto until = last_write + std::chrono::microseconds(window);
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return;
    if (!crawl_only) {
      std::this_thread::sleep_for(until - now);
    } else {
      // Sleep protocol (sleeper.h), on the api rings only.
      api_self->prepare();
      // Relaxed: prepare()'s seq_cst fence orders it after the flag; stop() stores it and
      // then takes the flag (must_wake's fence), so one of the two sees the other.
      bool api = stop_requested.load(std::memory_order_relaxed);
      for (const store_port& p : ports)
        api = api || (p.api_in != nullptr && p.api_in->has_published());
      if (!api) api_self->wait_for(until - now);
      api_self->cancel();
    }
    gather_more(crawl_lane);
    if (!crawl_only) return;
  }
}

void store::impl::gather_more(bool crawl_lane) {
  const size_t n = ports.size();
  const auto take = [&](rt::write_ring* r) -> size_t {
    if (r == nullptr || group.size() >= opt.max_group) return 0;
    const size_t room = std::min<size_t>(opt.max_per_ring, opt.max_group - group.size());
    return r->consume([&](rt::write_ptr& w) { group.push_back(std::move(w)); }, room);
  };
  bool progress = true;
  while (progress && group.size() < opt.max_group) {
    progress = false;
    for (size_t j = 0; j < n && group.size() < opt.max_group; ++j) {
      const size_t i = (rr + j) % n;
      const size_t api = take(ports[i].api_in);
      group_api += api;
      size_t got = api;
      if (crawl_lane) got += take(ports[i].in);
      progress = progress || got != 0;
    }
  }
  if (n != 0) rr = (rr + 1) % n;
}

void store::impl::fail(const std::string& why) {
  if (failed) return;
  failed = true;
  stats->failed_reason = why;
  // release: the reason above is complete before a reader that sees the flag reads it.
  stats->failed.store(true, std::memory_order_release);
}

namespace {

// Starts loading an op's key and the first 256 bytes of its value.
[[gnu::always_inline]] inline void prefetch_op(const rt::store_op& op) {
  __builtin_prefetch(op.key.data());
  const char* v = op.value.data();
  const size_t n = std::min<size_t>(op.value.size(), 256);
  for (size_t at = 0; at < n; at += 64) __builtin_prefetch(v + at);
}

}  // namespace

void store::impl::commit() {
  batch.Clear();
  const uint64_t seq0 = next_seq;
  uint64_t ops = 0;
  int64_t group_ms = 0;  // wall clock, read once per group that sequences articles
  for (rt::write_ptr& w : group) {
    w->first_seq = 0;
    w->status = 0;
    if (failed) {
      w->status = int32_t(store_errc::failed);
      continue;
    }
    // An api-lane write passes a waiting broadcast, so it may carry no articles.
    bool ok = w->lane == rt::write_lane::crawl || w->articles.empty();
    for (const rt::store_op& op : w->ops) ok = ok && shard_writable(op.k);
    for (const rt::article_ref& a : w->articles) ok = ok && bool(a);
    if (!ok) {
      w->status = int32_t(store_errc::bad_write);
      continue;
    }
    // Why it is fast: the ops' strings were written by a shard on another core, so each
    // is a run of cache misses; those of the op four ahead are fetched while this one is
    // copied (a bulk group copies ~5,000 records of ~250 bytes each).
    constexpr size_t ahead = 4;
    for (size_t i = 0; i < std::min(ahead, w->ops.size()); ++i) prefetch_op(w->ops[i]);
    for (size_t i = 0; i < w->ops.size(); ++i) {
      if (i + ahead < w->ops.size()) prefetch_op(w->ops[i + ahead]);
      const rt::store_op& op = w->ops[i];
      rocksdb::ColumnFamilyHandle* h = cf[size_t(op.k)];
      // WriteBatch Put/Delete only fail on a batch over 4 GiB, which max_group prevents.
      if (op.erase) {
        batch.Delete(h, slice(op.key)).PermitUncheckedError();
      } else {
        batch.Put(h, slice(op.key), slice(op.value)).PermitUncheckedError();
      }
    }
    ops += w->ops.size();
    if (!w->articles.empty()) {
      if (group_ms == 0) {
        group_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
      }
      w->first_seq = next_seq;
      for (rt::article_ref& a : w->articles) {
        // The store holds the only reference (the shard moved its reference in), so
        // writing the sequence is race-free; the article ring's release publishes it.
        a.mutable_get()->set_seq(next_seq, group_ms);
        char key[8];
        put_be64(next_seq, key);
        const std::string_view rec = a->record();
        batch.Put(cf[size_t(rt::kind::articles)], rocksdb::Slice(key, 8), slice(rec))
            .PermitUncheckedError();
        ++next_seq;
      }
    }
  }

  bool durable = false;
  if (batch.Count() > 0) {
    if (next_seq != seq0) {
      char b[8];
      put_be64(next_seq, b);
      batch.Put(cf[size_t(rt::kind::meta)], slice(k_next_seq_key), rocksdb::Slice(b, 8))
          .PermitUncheckedError();
    }
    const auto t0 = std::chrono::steady_clock::now();
    last_write = t0;
    const rocksdb::Status s = db->Write(sync_write, &batch);
    const auto t1 = std::chrono::steady_clock::now();
    stats->fsync_us.add(
        uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
    if (s.ok()) {
      durable = true;
      stats->groups.fetch_add(1, std::memory_order_relaxed);
      stats->group_writes.add(group.size());
      stats->ops_written.fetch_add(ops, std::memory_order_relaxed);
      stats->articles_sequenced.fetch_add(next_seq - seq0, std::memory_order_relaxed);
      stats->next_seq.store(next_seq, std::memory_order_relaxed);
    } else {
      // Whatever RocksDB would say on a retry, the data may be gone: never acknowledge
      // again until restart (DESIGN.md section 9, Durability).
      fail("durable write failed: " + s.ToString());
      next_seq = seq0;
      for (rt::write_ptr& w : group) {
        if (w->status == 0) w->status = int32_t(store_errc::write_failed);
        w->first_seq = 0;
      }
    }
  } else {
    durable = !failed;  // nothing to write (empty writes): durable as they stand
  }

  bool reports = false;
  for (rt::write_ptr& w : group) {
    if (w->gc && w->status == 0 && w->origin_shard < gc_reports.size()) {
      gc_reports[w->origin_shard] = std::move(w->gc);
      reports = true;
    }
  }
  // Before the acks: the ack of the report that completes a set comes after its collection.
  if (reports && !failed &&
      std::all_of(gc_reports.begin(), gc_reports.end(), [](const auto& r) { return bool(r); }))
    collect();

  // API-lane writes are acknowledged now. The crawl lane's wait until their group's
  // articles are on every shard's ring: a shard that reads such an ack finds the articles
  // already there, and while a shard takes no articles its crawlers wait behind them.
  const bool broadcast = durable && next_seq != seq0;
  const bool stalled = !held.empty();  // wait_for_room() commits api-lane groups only
  for (rt::write_ptr& w : group) {
    if (w->lane == rt::write_lane::api) {
      // Relaxed: a counter read by /metrics, ordered with nothing.
      if (stalled) stats->writes_past_stall.fetch_add(1, std::memory_order_relaxed);
      ack(std::move(w));
    } else if (broadcast) {
      held.push_back(std::move(w));
    } else {
      ack(std::move(w));
    }
  }
  if (broadcast && !held.empty() && !advance_broadcast()) {
    // Full: a shard is behind. Give it a moment (the common case: it is draining), then
    // leave the rest to run(), which keeps serving the api lanes meanwhile.
    stats->ring_full_waits.fetch_add(1, std::memory_order_relaxed);  // a counter, as above
    for (uint32_t spin = 0; spin < 256 && !advance_broadcast(); ++spin) cpu_relax();
  }
  for (size_t i = 0; i < ports.size(); ++i) publish_port(i);
}

// Deletes the articles no list of any shard holds below every shard's bound (and the
// store's own recent window), in one synced batch with the new collection record. The
// stored articles below the bound are the ones kept last time and those from gc_base on;
// a run of 16 or more deleted sequences is one range deletion, shorter runs point
// deletions. RocksDB frees the space as its compactions pass the tombstones; the range
// is suggested to them at once.
void store::impl::collect() {
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t bound = std::min(next_seq, first_recent_seq());
  std::vector<uint64_t> listed;
  for (auto& r : gc_reports) {
    bound = std::min(bound, r->bound);
    listed.insert(listed.end(), r->held.begin(), r->held.end());
  }
  for (auto& r : gc_reports) r.reset();
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  listed.erase(std::lower_bound(listed.begin(), listed.end(), bound), listed.end());
  // A bound below gc_base (a longer window since the last collection) reaches only the
  // kept articles below it: the reports say nothing of the lists' sequences above it.
  if (bound <= gc_base && (gc_kept.empty() || gc_kept.front() >= bound)) return;

  batch.Clear();
  rocksdb::ColumnFamilyHandle* h = cf[size_t(rt::kind::articles)];
  uint64_t deleted = 0;
  std::vector<uint64_t> kept;
  auto erase_one = [&](uint64_t seq) {
    char key[8];
    put_be64(seq, key);
    batch.Delete(h, rocksdb::Slice(key, 8)).PermitUncheckedError();
    ++deleted;
  };
  // What was kept last time stays only if a list still holds it.
  for (uint64_t seq : gc_kept) {
    if (seq >= bound || std::binary_search(listed.begin(), listed.end(), seq)) {
      kept.push_back(seq);
    } else {
      erase_one(seq);
    }
  }
  // [gc_base, bound): every sequence is stored; keep the listed ones.
  auto erase_run = [&](uint64_t from, uint64_t to) {
    if (to - from >= 16) {
      char a[8], b[8];
      put_be64(from, a);
      put_be64(to, b);
      batch.DeleteRange(h, rocksdb::Slice(a, 8), rocksdb::Slice(b, 8)).PermitUncheckedError();
      deleted += to - from;
    } else {
      for (uint64_t seq = from; seq < to; ++seq) erase_one(seq);
    }
  };
  uint64_t at = gc_base;
  for (auto it = std::lower_bound(listed.begin(), listed.end(), gc_base); it != listed.end();
       ++it) {
    erase_run(at, *it);
    kept.push_back(*it);
    at = *it + 1;
  }
  erase_run(at, std::max(at, bound));
  bound = std::max(bound, gc_base);
  std::sort(kept.begin(), kept.end());
  batch.Put(cf[size_t(rt::kind::meta)], slice(k_gc_key), slice(encode_gc(bound, kept)))
      .PermitUncheckedError();
  const rocksdb::Status s = db->Write(sync_write, &batch);
  if (!s.ok()) {
    fail("durable write of an article collection failed: " + s.ToString());
    return;
  }
  const uint64_t first = gc_kept.empty() ? gc_base : std::min(gc_kept.front(), gc_base);
  gc_base = bound;
  gc_kept = std::move(kept);
  // Relaxed: gauges and counters read by /metrics and tests, ordered with nothing.
  stats->gc_runs.fetch_add(1, std::memory_order_relaxed);
  stats->articles_deleted.fetch_add(deleted, std::memory_order_relaxed);
  stats->gc_base.store(gc_base, std::memory_order_relaxed);
  stats->articles_kept.store(gc_kept.size(), std::memory_order_relaxed);
  char a[8], b[8];
  put_be64(first, a);
  put_be64(bound, b);
  const rocksdb::Slice from(a, 8), to(b, 8);
  // A hint: RocksDB marks the files in the range for compaction by its background threads.
  db->SuggestCompactRange(h, &from, &to).PermitUncheckedError();
  if (deleted != 0) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::fprintf(stderr,
                 "feedplane: store: collected %llu articles below sequence %llu (lists hold %zu "
                 "older ones) in %.1f ms\n",
                 static_cast<unsigned long long>(deleted), static_cast<unsigned long long>(bound),
                 gc_kept.size(), double(us) / 1000.0);
  }
}

void store::impl::ack(rt::write_ptr w) {
  // Relaxed: counters read by /metrics; the ack itself travels on the event ring.
  (w->status == 0 ? stats->writes_acked : stats->writes_refused)
      .fetch_add(1, std::memory_order_relaxed);
  const size_t i = w->origin_shard < ports.size() ? w->origin_shard : 0;
  rt::store_event ev;
  ev.type = rt::store_event::ack;
  ev.write = std::move(w);
  // Event rings are always drained (a paused shard still reads them); false only on stop.
  push(*ports[i].events, i, std::move(ev));
}

// Puts the held group's articles on every shard's ring in sequence order, from where the
// last call stopped, without waiting; once all are on, acknowledges the held writes.
// Returns true when nothing is held any more.
bool store::impl::advance_broadcast() {
  for (; bc_port < ports.size(); ++bc_port, bc_write = 0) {
    rt::article_ring& r = *ports[bc_port].articles;
    for (; bc_write < held.size(); ++bc_write, bc_article = 0) {
      const rt::store_write& w = *held[bc_write];
      if (w.status != 0) continue;
      for (; bc_article < w.articles.size(); ++bc_article) {
        // One reference per shard; try_stage copies only when there is room.
        if (!r.try_stage(w.articles[bc_article])) {
          publish_port(bc_port);
          return false;
        }
      }
    }
  }
  for (rt::write_ptr& w : held) ack(std::move(w));
  held.clear();
  bc_port = bc_write = bc_article = 0;
  return true;
}

// A broadcast waits for a shard that takes no articles (memory pressure) or is far
// behind: poll its ring in short sleeps, waking it now and then in case it slept, and
// write the api lanes' writes meanwhile. Never drops; only a stop() leaves.
void store::impl::wait_for_room() {
  // Relaxed: stop_requested publishes no data (see its declaration).
  for (uint32_t attempt = 0; !stop_requested.load(std::memory_order_relaxed); ++attempt) {
    if (advance_broadcast()) {
      for (size_t i = 0; i < ports.size(); ++i) publish_port(i);
      return;
    }
    if (gather(false) != 0) {
      hold_for_group(false);
      commit();
      group.clear();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(attempt < 256 ? 20 : 200));
    if ((attempt & 63) == 0) wake_port(bc_port);
  }
}

void store::impl::run() {
  stream_startup();
  while (!stop_requested.load(std::memory_order_relaxed)) {
    if (!held.empty()) {
      wait_for_room();
      continue;
    }
    if (gather(true) != 0) {
      hold_for_group(true);
      commit();
      group.clear();
      continue;
    }
    // Sleep protocol (sleeper.h): flag, seq_cst fence, re-check every write ring.
    self->prepare();
    bool work = stop_requested.load(std::memory_order_relaxed);
    for (const store_port& p : ports) {
      work = work || p.in->has_published() || (p.api_in != nullptr && p.api_in->has_published());
    }
    if (work) {
      self->cancel();
      continue;
    }
    stats->sleeps.fetch_add(1, std::memory_order_relaxed);
    // Returns once a producer's must_wake() has swapped the flag to 0 and notified.
    self->word().wait(1, std::memory_order_acquire);
    self->cancel();
  }
}

store::store(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  impl_->stats = &stats_;
  impl_->self = &sleeper_;
  impl_->api_self = &api_sleeper_;
}

store::~store() { stop(); }

std::unique_ptr<store> store::open(const store_options& opt, std::vector<store_port> ports,
                                   owner_fn owner, std::string* error) {
  for (const store_port& p : ports) {
    if (p.in == nullptr || p.events == nullptr || p.articles == nullptr) {
      *error = "store: every port needs its write, event and article rings";
      return nullptr;
    }
  }
  auto p = std::make_unique<impl>();
  p->opt = opt;
  if (p->opt.max_group == 0) p->opt.max_group = 1;
  if (p->opt.max_per_ring == 0) p->opt.max_per_ring = 1;
  p->ports = std::move(ports);
  p->owner = owner ? std::move(owner) : [](rt::kind, std::string_view) { return uint32_t{0}; };
  p->group.reserve(p->opt.max_group);
  p->gc_reports.resize(p->ports.size());
  p->sync_write.sync = true;
  std::unique_ptr<store> s(new store(std::move(p)));
  if (!s->impl_->open_db(error).ok()) return nullptr;
  return s;
}

void store::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "store");  // for ps, top and the load harness
    impl_->run();
  });
}

void store::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->stop_requested.store(true, std::memory_order_relaxed);
  // must_wake's seq_cst fence orders the store above before reading the sleeping flag;
  // the thread's prepare() fence orders its flag before re-reading stop_requested.
  if (sleeper_.must_wake()) wake_store();
  if (api_sleeper_.must_wake()) api_sleeper_.wake();  // a crawl group's hold
  impl_->thread.join();
}

void store::wake_store() { sleeper_.word().notify_one(); }

uint64_t store::memtable_bytes() const {
  uint64_t v = 0;
  if (!impl_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &v))
    return 0;
  return v;
}

uint64_t store::article_file_bytes() const {
  uint64_t v = 0;
  if (!impl_->db->GetIntProperty(impl_->cf[size_t(rt::kind::articles)],
                                 rocksdb::DB::Properties::kTotalSstFilesSize, &v))
    return 0;
  return v;
}

bool store::checkpoint(const std::string& dir, std::string* error) const {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(impl_->db.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  // log_size_for_flush 0: the memtables are flushed first, so the copy needs no log replay
  // beyond what was written during the flush (RocksDB copies that part of the log).
  if (s.ok()) s = cp->CreateCheckpoint(dir, 0);
  if (s.ok()) return true;
  *error = s.ToString();
  return false;
}

uint64_t store::queue_depth() const {
  uint64_t n = 0;
  for (const store_port& p : impl_->ports) {
    n += p.in->occupancy() + (p.api_in != nullptr ? p.api_in->occupancy() : 0);
  }
  return n;
}

bool store::get(rt::kind k, std::string_view key, std::string* value, std::string* error) const {
  error->clear();
  if (size_t(k) >= k_kinds) {
    *error = "no such kind";
    return false;
  }
  const rocksdb::Status s =
      impl_->db->Get(rocksdb::ReadOptions(), impl_->cf[size_t(k)], slice(key), value);
  if (s.ok()) return true;
  if (!s.IsNotFound()) *error = s.ToString();
  return false;
}

bool store::read_article_record(uint64_t seq, std::string* record, std::string* error) const {
  char key[8];
  put_be64(seq, key);
  return get(rt::kind::articles, std::string_view(key, 8), record, error);
}

rt::article_ref store::read_article(uint64_t seq, std::string* error) const {
  std::string rec;
  if (!read_article_record(seq, &rec, error)) return {};
  return rt::article::decode(rec, error);
}

std::vector<rt::article_ref> store::read_articles(uint64_t first, size_t limit,
                                                  std::string* error) const {
  error->clear();
  std::vector<rt::article_ref> out;
  char key[8];
  put_be64(first, key);
  std::unique_ptr<rocksdb::Iterator> it(
      impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf[size_t(rt::kind::articles)]));
  for (it->Seek(rocksdb::Slice(key, 8)); it->Valid() && out.size() < limit; it->Next()) {
    rt::article_ref a = rt::article::decode({it->value().data(), it->value().size()}, error);
    if (!a) {
      *error = "article " + std::to_string(get_be64({it->key().data(), it->key().size()})) + ": " +
               *error;
      return out;
    }
    out.push_back(std::move(a));
  }
  if (!it->status().ok()) *error = it->status().ToString();
  return out;
}

std::vector<store_port> ports_from_mesh(runtime::mesh& m) {
  std::vector<store_port> ports(m.size());
  for (uint32_t i = 0; i < m.size(); ++i) {
    ports[i].in = &m.writes(i);
    ports[i].api_in = &m.api_writes(i);
    ports[i].events = &m.events(i);
    ports[i].articles = &m.articles(i);
    ports[i].consumer = &m.shard_sleeper(i);
    // Any thread: the eventfd path (the store thread has no io_uring of its own).
    ports[i].wake = [](void* slot) {
      // Acquire pairs with the shard's release store of its loop into the slot when the loop
      // starts, so the loop it sees is fully built; null before then (nothing to wake).
      auto* loop_slot = static_cast<std::atomic<net::loop*>*>(slot);
      // Acquire: pairs with the shard's release store of its loop (above).
      if (net::loop* l = loop_slot->load(std::memory_order_acquire)) {
        l->wake_from_any_thread();
      }
    };
    ports[i].wake_ctx = m.loop_slot(i);
    ports[i].replay_need = &m.replay_need(i);
  }
  return ports;
}

}  // namespace feedplane::store
