// The prefix-sorted vector memtable (store/memtable.h) inside a real RocksDB: whatever is
// written, overwritten and deleted reads back exactly as a std::map says, forwards,
// backwards, by seeks, by gets, at a snapshot, from the memtable, after a flush (whose
// table builder refuses keys out of order) and after a reopen that replays the log.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "feedplane/store/memtable.h"
#include "temp_dir.h"

namespace {

using feedplane::test::temp_dir;

using ref_map = std::map<std::string, std::string>;

// Keys that stress the prefix sort: lengths 0-40 over a tiny alphabet with the extreme
// bytes, so many keys share their first 16 bytes, are prefixes of one another, or end in
// zero bytes (which the prefix pads with).
std::string random_key(std::mt19937_64& rng) {
  static constexpr char alphabet[] = {'\0', '\x01', 'a', 'b', '\x7f', '\x80', '\xff'};
  const size_t n = rng() % 41;
  // Half the keys share a 16-byte stem, so their order is decided past the prefix.
  std::string k = rng() % 2 == 0 && n >= 16 ? std::string("stem-0123456789a") : std::string();
  while (k.size() < n) k.push_back(alphabet[rng() % sizeof(alphabet)]);
  return k;
}

class memtable_db {
 public:
  explicit memtable_db(const std::string& dir) : dir_(dir) { open(); }
  ~memtable_db() { db_.reset(); }
  void open() {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.memtable_factory = feedplane::store::make_prefix_vector_memtable();
    o.allow_concurrent_memtable_write = false;
    o.write_buffer_size = size_t{64} << 20;  // everything stays in one memtable until Flush
    o.avoid_flush_during_recovery = true;    // a reopen replays the log into this memtable
    rocksdb::DB* raw = nullptr;
    const rocksdb::Status s = rocksdb::DB::Open(o, dir_, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    db_.reset(raw);
  }
  void reopen() {
    db_.reset();
    open();
  }
  rocksdb::DB& db() { return *db_; }

 private:
  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

// Reads everything back through every path and compares with the reference.
void expect_reads(rocksdb::DB& db, const ref_map& ref, std::mt19937_64& rng,
                  const rocksdb::Snapshot* snap = nullptr) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(ro));
  // Forwards.
  auto want = ref.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++want) {
    ASSERT_NE(want, ref.end()) << "an extra key";
    ASSERT_EQ(it->key().ToString(), want->first);
    ASSERT_EQ(it->value().ToString(), want->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  ASSERT_EQ(want, ref.end()) << "keys missing";
  // Backwards.
  auto back = ref.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++back) {
    ASSERT_NE(back, ref.rend());
    ASSERT_EQ(it->key().ToString(), back->first);
  }
  ASSERT_EQ(back, ref.rend());
  // Seeks to keys present and absent, both ways, and gets.
  for (int n = 0; n < 200; ++n) {
    const std::string k = random_key(rng);
    it->Seek(k);
    auto lb = ref.lower_bound(k);
    ASSERT_EQ(it->Valid(), lb != ref.end());
    if (lb != ref.end()) {
      ASSERT_EQ(it->key().ToString(), lb->first);
    }
    it->SeekForPrev(k);
    auto ub = ref.upper_bound(k);
    ASSERT_EQ(it->Valid(), ub != ref.begin());
    if (ub != ref.begin()) {
      ASSERT_EQ(it->key().ToString(), std::prev(ub)->first);
    }
    std::string v;
    const rocksdb::Status s = db.Get(ro, k, &v);
    auto f = ref.find(k);
    if (f == ref.end()) {
      ASSERT_TRUE(s.IsNotFound()) << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_EQ(v, f->second);
    }
  }
  // Gets of present keys, a sample (a get from a memtable still written sorts a copy).
  size_t i = 0;
  for (const auto& [k, v] : ref) {
    if (i++ % 16 != 0) continue;
    std::string got;
    ASSERT_TRUE(db.Get(ro, k, &got).ok());
    ASSERT_EQ(got, v);
  }
}

TEST(store_memtable, reads_back_in_order_from_memtable_flush_and_log) {
  temp_dir dir;
  memtable_db m(dir.path);
  std::mt19937_64 rng(20261127);
  ref_map ref;
  auto churn = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::string k = random_key(rng);
      if (rng() % 5 == 0) {
        ASSERT_TRUE(m.db().Delete(rocksdb::WriteOptions(), k).ok());
        ref.erase(k);
      } else {
        const std::string v = "v" + std::to_string(i) + "-" + std::to_string(rng() % 1000);
        ASSERT_TRUE(m.db().Put(rocksdb::WriteOptions(), k, v).ok());
        ref[k] = v;
      }
    }
  };
  churn(4000);
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));  // the memtable, still written

  // A snapshot sees the values before the overwrites that follow: entries of one key
  // must sort newest first.
  const rocksdb::Snapshot* snap = m.db().GetSnapshot();
  const ref_map before = ref;
  churn(2000);
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), before, rng, snap));
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));
  m.db().ReleaseSnapshot(snap);

  // The flush writes the memtable through its sorted iterator; RocksDB checks the order.
  ASSERT_TRUE(m.db().Flush(rocksdb::FlushOptions()).ok());
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));

  // More in a new memtable over the table file, then a reopen replays the log into it.
  churn(3000);
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));
  m.reopen();
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));
  ASSERT_TRUE(m.db().Flush(rocksdb::FlushOptions()).ok());
  ASSERT_TRUE(m.db().CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
  ASSERT_NO_FATAL_FAILURE(expect_reads(m.db(), ref, rng));
}

}  // namespace
