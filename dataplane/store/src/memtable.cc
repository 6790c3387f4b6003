#include "feedplane/store/memtable.h"

#include <rocksdb/memtablerep.h>
#include <rocksdb/slice.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

namespace feedplane::store {

namespace {

// An entry as RocksDB's memtable lays it out: varint32 length, the internal key (the user
// key, then 8 bytes little-endian: sequence << 8 | type), then the value.
rocksdb::Slice internal_key_of(const char* entry) { return rocksdb::GetLengthPrefixedSlice(entry); }

// The internal-key order under the bytewise comparator.
int compare_internal(const rocksdb::Slice& a, const rocksdb::Slice& b) {
  const size_t ua = a.size() >= 8 ? a.size() - 8 : 0, ub = b.size() >= 8 ? b.size() - 8 : 0;
  const int r = std::memcmp(a.data(), b.data(), std::min(ua, ub));
  if (r != 0) return r;
  if (ua != ub) return ua < ub ? -1 : 1;
  uint64_t ta = 0, tb = 0;  // a key too short to hold a trailer sorts as trailer 0
  if (a.size() >= 8) std::memcpy(&ta, a.data() + ua, 8);
  if (b.size() >= 8) std::memcpy(&tb, b.data() + ub, 8);
  return ta > tb ? -1 : ta < tb ? 1 : 0;  // newer first
}

uint64_t load_be(const char* p, size_t n) {  // n <= 8 bytes, zero-padded on the right
  uint8_t b[8] = {};
  std::memcpy(b, p, n);
  uint64_t v = 0;
  for (uint8_t x : b) v = v << 8 | x;
  return v;
}

// A key's first 16 bytes as two big-endian integers. Zero-padding keeps the prefix order
// consistent with the full order: a key that is a prefix of another pads with zeros, which
// no longer key's byte is below.
struct prefix {
  uint64_t k0, k1;
};
prefix prefix_of(const rocksdb::Slice& ikey) {
  const size_t u = ikey.size() >= 8 ? ikey.size() - 8 : 0;
  return {load_be(ikey.data(), std::min<size_t>(u, 8)),
          u > 8 ? load_be(ikey.data() + 8, std::min<size_t>(u - 8, 8)) : 0};
}

struct item : prefix {
  const char* entry;  // length-prefixed internal key, as the memtable holds it
};
struct probe : prefix {  // what a seek looks for
  rocksdb::Slice ikey;
};

// -1, 0, 1 on the prefixes; 0 leaves it to the full keys.
int compare_prefix(const prefix& a, const prefix& b) {
  if (a.k0 != b.k0) return a.k0 < b.k0 ? -1 : 1;
  if (a.k1 != b.k1) return a.k1 < b.k1 ? -1 : 1;
  return 0;
}

// Fast because nearly every call decides on the two integers already in the array (and a
// function object, unlike a function pointer, is inlined into the sort).
struct less_t {
  bool operator()(const item& a, const item& b) const {
    const int r = compare_prefix(a, b);
    return r != 0 ? r < 0
                  : compare_internal(internal_key_of(a.entry), internal_key_of(b.entry)) < 0;
  }
  bool operator()(const item& a, const probe& b) const {
    const int r = compare_prefix(a, b);
    return r != 0 ? r < 0 : compare_internal(internal_key_of(a.entry), b.ikey) < 0;
  }
  bool operator()(const probe& a, const item& b) const {
    const int r = compare_prefix(a, b);
    return r != 0 ? r < 0 : compare_internal(a.ikey, internal_key_of(b.entry)) < 0;
  }
};
constexpr less_t less;

using items = std::vector<item>;

// The memtable key (varint32 length, internal key) a LookupKey holds. Its class
// (db/dbformat.h) is not among the installed headers; since LevelDB it has begun with three
// pointers into its buffer: the memtable key's start, the internal key's start, the end.
// Those are read and checked against each other on every call, so a RocksDB laid out
// otherwise stops here with a clear message (store_memtable_test makes gets) instead of
// reading the wrong bytes.
const char* lookup_memtable_key(const rocksdb::LookupKey& k) {
  const char* p[3];
  std::memcpy(p, static_cast<const void*>(&k), sizeof p);
  const bool ok = p[0] != nullptr && p[1] > p[0] && p[1] - p[0] <= 5 && p[2] >= p[1] + 8 &&
                  internal_key_of(p[0]).data() == p[1] &&
                  internal_key_of(p[0]).size() == size_t(p[2] - p[1]);
  if (!ok) {
    std::fprintf(stderr,
                 "feedplane: store: this RocksDB's LookupKey is not laid out as 7.8's; the "
                 "subscriptions' memtable cannot read it\n");
    std::abort();
  }
  return p[0];
}

class prefix_vector_rep;

// Gives an arena-made iterator's storage back to its rep. The iterator's first member, so
// it runs after the others are destroyed.
struct slot_release {
  prefix_vector_rep* owner = nullptr;  // null: made with new, freed by delete
  size_t index = 0;
  slot_release() = default;
  slot_release(const slot_release&) = delete;
  slot_release& operator=(const slot_release&) = delete;
  ~slot_release();
};

class prefix_vector_iterator final : public rocksdb::MemTableRep::Iterator {
 public:
  // sorted_rep: the memtable whose own array v is, sorted once under its lock (immutable);
  // null for a private copy of a memtable still being written.
  // owner, slot: where it was made for an arena (owner null: made with new).
  prefix_vector_iterator(prefix_vector_rep* sorted_rep, std::shared_ptr<items> v,
                         prefix_vector_rep* owner = nullptr, size_t slot = 0)
      : rep_(sorted_rep), v_(std::move(v)) {
    slot_.owner = owner;
    slot_.index = slot;
  }
  bool Valid() const override { return sorted_ && pos_ < v_->size(); }
  const char* key() const override { return (*v_)[pos_].entry; }
  void Next() override {
    if (pos_ < v_->size()) ++pos_;
  }
  void Prev() override { pos_ = pos_ == 0 || pos_ > v_->size() ? v_->size() : pos_ - 1; }
  void Seek(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    sort();
    const probe t{prefix_of(internal_key), internal_key};
    pos_ = size_t(std::lower_bound(v_->begin(), v_->end(), t, less) - v_->begin());
  }
  void SeekForPrev(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    sort();
    const probe t{prefix_of(internal_key), internal_key};
    const size_t after = size_t(std::upper_bound(v_->begin(), v_->end(), t, less) - v_->begin());
    pos_ = after == 0 ? v_->size() : after - 1;
  }
  void SeekToFirst() override {
    sort();
    pos_ = 0;
  }
  void SeekToLast() override {
    sort();
    pos_ = v_->empty() ? 0 : v_->size() - 1;
  }

 private:
  void sort();

  slot_release slot_;  // first: destroyed last
  prefix_vector_rep* rep_;
  std::shared_ptr<items> v_;
  size_t pos_ = SIZE_MAX;  // not valid until positioned
  bool sorted_ = false;
};

class prefix_vector_rep final : public rocksdb::MemTableRep {
 public:
  explicit prefix_vector_rep(rocksdb::Allocator* a)
      : MemTableRep(a), items_(std::make_shared<items>()) {}

  void Insert(rocksdb::KeyHandle handle) override {
    const char* entry = static_cast<const char*>(handle);
    const item it{prefix_of(internal_key_of(entry)), entry};
    std::unique_lock l(mu_);
    items_->push_back(it);
    // Relaxed: a size for RocksDB's accounting, read without the lock (a flush's sort
    // holds it for a while); it orders nothing.
    bytes_.store(sizeof(*this) + items_->capacity() * sizeof(item), std::memory_order_relaxed);
  }

  bool Contains(const char* key) const override {
    const rocksdb::Slice k = internal_key_of(key);
    std::shared_lock l(mu_);
    return std::any_of(items_->begin(), items_->end(), [&](const item& it) {
      return compare_internal(internal_key_of(it.entry), k) == 0;
    });
  }

  void MarkReadOnly() override {
    std::unique_lock l(mu_);
    immutable_ = true;
  }

  // What the rep holds beside the arena. Fixed once immutable: the memtable list
  // subtracts at release what it added when the memtable joined it.
  size_t ApproximateMemoryUsage() override {
    // Relaxed: see Insert. Called by the writer on every write (ShouldFlushNow).
    return bytes_.load(std::memory_order_relaxed);
  }

  // RocksDB's default Get (MemTableRep::Get in 7.8) never deletes the iterator it makes:
  // every rep of its own overrides it, so this one does too.
  void Get(const rocksdb::LookupKey& k, void* callback_args,
           bool (*callback_func)(void* arg, const char* entry)) override {
    const char* memtable_key = lookup_memtable_key(k);
    std::unique_ptr<rocksdb::MemTableRep::Iterator> it(GetIterator(nullptr));
    for (it->Seek(internal_key_of(memtable_key), memtable_key);
         it->Valid() && callback_func(callback_args, it->key()); it->Next()) {
    }
  }

  rocksdb::MemTableRep::Iterator* GetIterator(rocksdb::Arena* arena) override {
    std::shared_ptr<items> v;
    prefix_vector_rep* rep = nullptr;
    {
      std::shared_lock l(mu_);
      if (immutable_) {
        v = items_;
        rep = this;
      } else {
        v = std::make_shared<items>(*items_);  // a snapshot of a memtable still written
      }
    }
    if (arena == nullptr) return new prefix_vector_iterator(rep, std::move(v));
    // RocksDB destroys an iterator made for an arena in place and never frees it (its
    // arena does). Without the Arena's declaration, and without growing the memtable's
    // own allocator (its memory use must not change once it is in the memtable list),
    // such iterators live in storage this rep keeps and reuses: a few per memtable (the
    // flush, each scan); the rep outlives them.
    std::lock_guard g(slots_mu_);
    size_t i = 0;
    while (i < slots_.size() && slots_[i]->used) ++i;
    if (i == slots_.size()) slots_.push_back(std::make_unique<slot>());
    slots_[i]->used = true;
    return new (slots_[i]->bytes) prefix_vector_iterator(rep, std::move(v), this, i);
  }

  void release(size_t i) {
    std::lock_guard g(slots_mu_);
    slots_[i]->used = false;
  }

 private:
  friend class prefix_vector_iterator;
  struct slot {
    alignas(prefix_vector_iterator) unsigned char bytes[sizeof(prefix_vector_iterator)];
    bool used = false;  // under slots_mu_
  };

  // Insert (the store thread) against readers (the flush, scans, gets). Uncontended in
  // the store's use: a memtable is written, then read once it is immutable.
  mutable std::shared_mutex mu_;
  std::shared_ptr<items> items_;
  std::atomic<size_t> bytes_{sizeof(*this)};  // what ApproximateMemoryUsage answers
  bool immutable_ = false;
  bool sorted_ = false;  // items_, once immutable
  std::mutex slots_mu_;
  std::vector<std::unique_ptr<slot>> slots_;
};

slot_release::~slot_release() {
  if (owner != nullptr) owner->release(index);
}

void prefix_vector_iterator::sort() {
  if (sorted_) return;
  if (rep_ != nullptr) {
    std::unique_lock l(rep_->mu_);
    if (!rep_->sorted_) std::sort(v_->begin(), v_->end(), less);
    rep_->sorted_ = true;
  } else {
    std::sort(v_->begin(), v_->end(), less);
  }
  sorted_ = true;
}

class prefix_vector_factory final : public rocksdb::MemTableRepFactory {
 public:
  using rocksdb::MemTableRepFactory::CreateMemTableRep;
  rocksdb::MemTableRep* CreateMemTableRep(const rocksdb::MemTableRep::KeyComparator&,
                                          rocksdb::Allocator* a, const rocksdb::SliceTransform*,
                                          rocksdb::Logger*) override {
    return new prefix_vector_rep(a);
  }
  const char* Name() const override { return "FeedplanePrefixVectorRepFactory"; }
};

}  // namespace

std::shared_ptr<rocksdb::MemTableRepFactory> make_prefix_vector_memtable() {
  return std::make_shared<prefix_vector_factory>();
}

}  // namespace feedplane::store
