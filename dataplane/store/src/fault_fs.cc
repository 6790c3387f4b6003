#include "feedplane/store/fault_fs.h"

#include <unistd.h>

#include <utility>
#include <vector>

namespace feedplane::store {

namespace rdb = rocksdb;

namespace {

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  std::string dir = path.substr(0, slash);
  return dir.empty() ? "/" : dir;
}

std::string strip_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// A writable file whose appends and syncs fault_fs accounts for.
class fault_writable final : public rdb::FSWritableFileOwnerWrapper {
 public:
  fault_writable(std::unique_ptr<rdb::FSWritableFile> t, fault_fs* fs,
                 std::shared_ptr<fault_fs::file_state> st, bool real_sync)
      : FSWritableFileOwnerWrapper(std::move(t)),
        fs_(fs),
        st_(std::move(st)),
        real_sync_(real_sync) {}

  rdb::IOStatus Append(const rdb::Slice& data, const rdb::IOOptions& o,
                       rdb::IODebugContext* dbg) override {
    std::lock_guard l(fs_->mutex());
    rdb::IOStatus s = fs_->on_append(data.size());
    if (s.ok()) s = target()->Append(data, o, dbg);
    if (s.ok()) st_->size += data.size();
    return s;
  }
  rdb::IOStatus Append(const rdb::Slice& data, const rdb::IOOptions& o,
                       const rdb::DataVerificationInfo& /*info*/,
                       rdb::IODebugContext* dbg) override {
    return Append(data, o, dbg);
  }
  rdb::IOStatus PositionedAppend(const rdb::Slice& data, uint64_t offset, const rdb::IOOptions& o,
                                 rdb::IODebugContext* dbg) override {
    std::lock_guard l(fs_->mutex());
    rdb::IOStatus s = fs_->on_append(data.size());
    if (s.ok()) s = target()->PositionedAppend(data, offset, o, dbg);
    if (s.ok() && offset + data.size() > st_->size) st_->size = offset + data.size();
    return s;
  }
  rdb::IOStatus PositionedAppend(const rdb::Slice& data, uint64_t offset, const rdb::IOOptions& o,
                                 const rdb::DataVerificationInfo& /*info*/,
                                 rdb::IODebugContext* dbg) override {
    return PositionedAppend(data, offset, o, dbg);
  }
  rdb::IOStatus Truncate(uint64_t size, const rdb::IOOptions& o,
                         rdb::IODebugContext* dbg) override {
    std::lock_guard l(fs_->mutex());
    rdb::IOStatus s = fs_->on_append(0);
    if (s.ok()) s = target()->Truncate(size, o, dbg);
    if (s.ok()) {
      st_->size = size;
      if (st_->synced > size) st_->synced = size;
    }
    return s;
  }
  rdb::IOStatus Flush(const rdb::IOOptions& o, rdb::IODebugContext* dbg) override {
    {
      std::lock_guard l(fs_->mutex());
      rdb::IOStatus s = fs_->before_change();
      if (!s.ok()) return s;
    }
    return target()->Flush(o, dbg);
  }
  rdb::IOStatus Sync(const rdb::IOOptions& o, rdb::IODebugContext* dbg) override {
    return sync(o, dbg, false);
  }
  rdb::IOStatus Fsync(const rdb::IOOptions& o, rdb::IODebugContext* dbg) override {
    return sync(o, dbg, true);
  }
  rdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rdb::IOOptions& o,
                          rdb::IODebugContext* dbg) override {
    // sync_file_range starts write-back; it makes nothing durable, so the model ignores it.
    if (!real_sync_) return rdb::IOStatus::OK();
    return target()->RangeSync(offset, nbytes, o, dbg);
  }
  // Close always closes the descriptor, even after a crash: revive() corrects whatever it
  // did to the file (a preallocated file is cut back to its logical size on close).
  rdb::IOStatus Close(const rdb::IOOptions& o, rdb::IODebugContext* dbg) override {
    return target()->Close(o, dbg);
  }

 private:
  rdb::IOStatus sync(const rdb::IOOptions& o, rdb::IODebugContext* dbg, bool full) {
    uint64_t size_at_start = 0;
    rdb::IOStatus s = fs_->before_sync(*st_, &size_at_start);
    if (!s.ok()) return s;
    if (real_sync_) s = full ? target()->Fsync(o, dbg) : target()->Sync(o, dbg);
    return fs_->after_sync(*st_, size_at_start, s);
  }

  fault_fs* fs_;
  std::shared_ptr<fault_fs::file_state> st_;
  bool real_sync_;
};

class fault_dir final : public rdb::FSDirectoryWrapper {
 public:
  fault_dir(std::unique_ptr<rdb::FSDirectory> t, fault_fs* fs, std::string name)
      : FSDirectoryWrapper(std::move(t)), fs_(fs), name_(std::move(name)) {}
  void set_inner(rdb::FSDirectory* t) { inner_ = t; }

  rdb::IOStatus Fsync(const rdb::IOOptions& o, rdb::IODebugContext* dbg) override {
    return fs_->dir_sync(name_, *inner_, o, dbg);
  }
  rdb::IOStatus FsyncWithDirOptions(const rdb::IOOptions& o, rdb::IODebugContext* dbg,
                                    const rdb::DirFsyncOptions& /*opts*/) override {
    return fs_->dir_sync(name_, *inner_, o, dbg);
  }

 private:
  fault_fs* fs_;
  std::string name_;
  rdb::FSDirectory* inner_ = nullptr;  // owned by the base wrapper
};

}  // namespace

fault_fs::fault_fs(const std::shared_ptr<rdb::FileSystem>& base, bool real_sync)
    : FileSystemWrapper(base), real_sync_(real_sync) {}

fault_fs::~fault_fs() = default;

void fault_fs::set_fail_sync(bool on) {
  std::lock_guard l(mu_);
  fail_sync_ = on;
}
void fault_fs::set_no_space(bool on) {
  std::lock_guard l(mu_);
  no_space_ = on;
}
void fault_fs::set_block_sync(bool on) {
  {
    std::lock_guard l(mu_);
    block_sync_ = on;
  }
  sync_cv_.notify_all();
}
uint32_t fault_fs::blocked_syncs() const {
  std::lock_guard l(mu_);
  return blocked_;
}
uint64_t fault_fs::syncs() const {
  std::lock_guard l(mu_);
  return syncs_;
}
bool fault_fs::crashed() const {
  std::lock_guard l(mu_);
  return crashed_;
}

void fault_fs::crash() {
  {
    std::lock_guard l(mu_);
    crashed_ = true;
  }
  sync_cv_.notify_all();
}

bool fault_fs::revive() {
  std::lock_guard l(mu_);
  if (!crashed_) return true;
  bool all = true;
  const rdb::IOOptions io;
  for (const auto& [path, st] : files_) {
    if (!st->entry_durable) {
      const rdb::IOStatus s = target_->DeleteFile(path, io, nullptr);
      all = (s.ok() || s.IsPathNotFound() || s.IsNotFound()) && all;
      continue;
    }
    uint64_t real = 0;
    if (target_->GetFileSize(path, io, &real, nullptr).ok() && real != st->synced &&
        !target_->Truncate(path, st->synced, io, nullptr).ok()) {
      // RocksDB's posix file system does not implement Truncate by name.
      all = ::truncate(path.c_str(), off_t(st->synced)) == 0 && all;
    }
  }
  // What is left is what a machine would find after the power came back: all durable.
  files_.clear();
  crashed_ = false;
  return all;
}

rdb::IOStatus fault_fs::refused_locked() const {
  return rdb::IOStatus::IOError("fault_fs: simulated power loss");
}

rdb::IOStatus fault_fs::before_change() const {
  if (crashed_) return refused_locked();
  return rdb::IOStatus::OK();
}

rdb::IOStatus fault_fs::on_append(uint64_t bytes) {
  if (crashed_) return refused_locked();
  if (no_space_ && bytes > 0) return rdb::IOStatus::NoSpace("fault_fs: simulated full disk");
  return rdb::IOStatus::OK();
}

rdb::IOStatus fault_fs::before_sync(file_state& st, uint64_t* size_at_start) {
  std::unique_lock l(mu_);
  if (block_sync_ && !crashed_) {
    ++blocked_;
    sync_cv_.wait(l, [&] { return !block_sync_ || crashed_; });
    --blocked_;
  }
  if (crashed_) return refused_locked();
  if (fail_sync_) return rdb::IOStatus::IOError("fault_fs: simulated fsync failure (EIO)");
  *size_at_start = st.size;
  return rdb::IOStatus::OK();
}

rdb::IOStatus fault_fs::after_sync(file_state& st, uint64_t size_at_start, rdb::IOStatus s) {
  std::lock_guard l(mu_);
  // A sync that was still running when the power went did not finish.
  if (crashed_) return refused_locked();
  if (!s.ok()) return s;
  if (size_at_start > st.synced) st.synced = size_at_start;
  ++syncs_;
  return s;
}

rdb::IOStatus fault_fs::dir_sync(const std::string& dir, rdb::FSDirectory& target,
                                 const rdb::IOOptions& opts, rdb::IODebugContext* dbg) {
  std::vector<std::shared_ptr<file_state>> entries;
  {
    std::lock_guard l(mu_);
    if (crashed_) return refused_locked();
    if (fail_sync_) return rdb::IOStatus::IOError("fault_fs: simulated fsync failure (EIO)");
    // Only the entries that exist when the sync starts become durable by it.
    for (const auto& [path, st] : files_) {
      if (!st->entry_durable && parent_dir(path) == dir) entries.push_back(st);
    }
  }
  rdb::IOStatus s = real_sync_ ? target.Fsync(opts, dbg) : rdb::IOStatus::OK();
  std::lock_guard l(mu_);
  if (crashed_) return refused_locked();
  if (s.ok()) {
    for (const auto& st : entries) st->entry_durable = true;
  }
  return s;
}

rdb::IOStatus fault_fs::wrap_writable(const std::string& f, bool fresh, bool existed,
                                      std::unique_ptr<rdb::FSWritableFile>* r) {
  uint64_t size = 0;
  if (!fresh) target_->GetFileSize(f, rdb::IOOptions(), &size, nullptr).PermitUncheckedError();
  std::lock_guard l(mu_);
  auto& st = files_[f];
  if (st == nullptr) {
    st = std::make_shared<file_state>();
    // An untracked file that already exists is durable as it stands.
    st->entry_durable = existed;
    st->size = st->synced = size;
  } else if (fresh) {
    st->size = st->synced = 0;
  }
  *r = std::make_unique<fault_writable>(std::move(*r), this, st, real_sync_);
  return rdb::IOStatus::OK();
}

rdb::IOStatus fault_fs::NewWritableFile(const std::string& f, const rdb::FileOptions& opts,
                                        std::unique_ptr<rdb::FSWritableFile>* r,
                                        rdb::IODebugContext* dbg) {
  {
    std::lock_guard l(mu_);
    if (crashed_) return refused_locked();
  }
  const bool existed = target_->FileExists(f, rdb::IOOptions(), dbg).ok();
  rdb::IOStatus s = target_->NewWritableFile(f, opts, r, dbg);
  if (!s.ok()) return s;
  return wrap_writable(f, true, existed, r);
}

rdb::IOStatus fault_fs::ReopenWritableFile(const std::string& f, const rdb::FileOptions& opts,
                                           std::unique_ptr<rdb::FSWritableFile>* r,
                                           rdb::IODebugContext* dbg) {
  {
    std::lock_guard l(mu_);
    if (crashed_) return refused_locked();
  }
  const bool existed = target_->FileExists(f, rdb::IOOptions(), dbg).ok();
  rdb::IOStatus s = target_->ReopenWritableFile(f, opts, r, dbg);
  if (!s.ok()) return s;
  return wrap_writable(f, false, existed, r);
}

// Log recycling (recycle_log_file_num) overwrites a file in place; the model does not
// follow that, and the store does not use it.
rdb::IOStatus fault_fs::ReuseWritableFile(const std::string& /*f*/, const std::string& /*old_f*/,
                                          const rdb::FileOptions& /*opts*/,
                                          std::unique_ptr<rdb::FSWritableFile>* /*r*/,
                                          rdb::IODebugContext* /*dbg*/) {
  return rdb::IOStatus::NotSupported("fault_fs: ReuseWritableFile");
}

rdb::IOStatus fault_fs::NewRandomRWFile(const std::string& f, const rdb::FileOptions& opts,
                                        std::unique_ptr<rdb::FSRandomRWFile>* r,
                                        rdb::IODebugContext* dbg) {
  {
    std::lock_guard l(mu_);
    if (crashed_) return refused_locked();
  }
  return target_->NewRandomRWFile(f, opts, r, dbg);
}

rdb::IOStatus fault_fs::NewDirectory(const std::string& name, const rdb::IOOptions& opts,
                                     std::unique_ptr<rdb::FSDirectory>* r,
                                     rdb::IODebugContext* dbg) {
  std::unique_ptr<rdb::FSDirectory> t;
  rdb::IOStatus s = target_->NewDirectory(name, opts, &t, dbg);
  if (!s.ok()) return s;
  rdb::FSDirectory* raw = t.get();
  auto d = std::make_unique<fault_dir>(std::move(t), this, strip_slashes(name));
  d->set_inner(raw);
  *r = std::move(d);
  return s;
}

rdb::IOStatus fault_fs::DeleteFile(const std::string& f, const rdb::IOOptions& opts,
                                   rdb::IODebugContext* dbg) {
  std::lock_guard l(mu_);
  if (crashed_) return refused_locked();
  rdb::IOStatus s = target_->DeleteFile(f, opts, dbg);
  if (s.ok()) files_.erase(f);
  return s;
}

rdb::IOStatus fault_fs::RenameFile(const std::string& s, const std::string& t,
                                   const rdb::IOOptions& opts, rdb::IODebugContext* dbg) {
  std::lock_guard l(mu_);
  if (crashed_) return refused_locked();
  rdb::IOStatus st = target_->RenameFile(s, t, opts, dbg);
  if (!st.ok()) return st;
  auto it = files_.find(s);
  if (it != files_.end()) {
    auto moved = std::move(it->second);
    files_.erase(it);
    moved->entry_durable = true;  // see the simplifications at the top of the header
    files_[t] = std::move(moved);
  } else {
    files_.erase(t);
  }
  return st;
}

rdb::IOStatus fault_fs::LinkFile(const std::string& s, const std::string& t,
                                 const rdb::IOOptions& opts, rdb::IODebugContext* dbg) {
  std::lock_guard l(mu_);
  if (crashed_) return refused_locked();
  return target_->LinkFile(s, t, opts, dbg);
}

rdb::IOStatus fault_fs::Truncate(const std::string& f, size_t size, const rdb::IOOptions& opts,
                                 rdb::IODebugContext* dbg) {
  std::lock_guard l(mu_);
  if (crashed_) return refused_locked();
  rdb::IOStatus s = target_->Truncate(f, size, opts, dbg);
  auto it = files_.find(f);
  if (s.ok() && it != files_.end()) {
    it->second->size = size;
    if (it->second->synced > size) it->second->synced = size;
  }
  return s;
}

}  // namespace feedplane::store
