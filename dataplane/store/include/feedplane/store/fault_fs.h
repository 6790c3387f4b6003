// fault_fs: a RocksDB file system that can lose power, fail a sync, run out of space and
// hold a sync back, for testing durability honestly (DESIGN.md section 9, "Testing
// durability honestly"). Modelled on RocksDB's own FaultInjectionTestFS, which Debian's
// librocksdb-dev does not ship.
//
// What it models. Every file written through it is tracked: its appended size, the size
// it had when its last Sync/Fsync began (the durable prefix), and whether its directory
// entry is durable (the file existed before, or its directory was fsynced after it was
// created). crash() is the power loss: from then on every change (append, sync, create,
// rename, delete) fails with IOError, so nothing the process does afterwards reaches the
// "disk". revive(), called once the database is closed, applies the loss: each tracked
// file is cut back to its durable prefix, and a file whose directory entry never became
// durable is removed. Then the file system works again.
//
// Simplifications, each making a crash no worse than a real one: a rename or a delete is
// durable at once (RocksDB fsyncs the directory right after each rename it relies on);
// directories themselves never vanish; the info LOG is not tracked.
//
// Lives in feedplane::store rather than tests/support: `feedplane serve` can run on it
// behind a debug flag, to show by hand what a failed fsync does to /healthz.
#pragma once

#include <rocksdb/file_system.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace feedplane::store {

class fault_fs : public rocksdb::FileSystemWrapper {
 public:
  // real_sync = false skips the disk's fsync (the model alone decides what survives
  // crash()): tests that crash many times run at memory speed.
  explicit fault_fs(
      const std::shared_ptr<rocksdb::FileSystem>& base = rocksdb::FileSystem::Default(),
      bool real_sync = true);
  ~fault_fs() override;

  // ---- control, from any thread ----
  // Sync and Fsync of files and directories return IOError while set.
  void set_fail_sync(bool on);
  // Appends return NoSpace (ENOSPC) while set: a full disk.
  void set_no_space(bool on);
  // File syncs wait while set; clearing it releases them.
  void set_block_sync(bool on);
  // File syncs waiting behind set_block_sync now.
  uint32_t blocked_syncs() const;
  // File syncs that completed successfully.
  uint64_t syncs() const;
  // Power loss: see the top of the file. Releases blocked syncs (they fail).
  void crash();
  // After the database using this file system is closed: drops what was not durable at
  // crash() and accepts changes again. Without a crash, does nothing. False when a file
  // could not be cut back or removed (the crash then kept more than it should have).
  bool revive();
  bool crashed() const;

  // ---- rocksdb::FileSystem ----
  const char* Name() const override { return "feedplane_fault_fs"; }
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old_f,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& opts,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& s, const std::string& t,
                               const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& s, const std::string& t,
                             const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& opts,
                             rocksdb::IODebugContext* dbg) override;

  // ---- for the file and directory wrappers (fault_fs.cc) ----
  struct file_state {
    uint64_t size = 0;           // bytes appended (the file's logical size)
    uint64_t synced = 0;         // durable prefix
    bool entry_durable = false;  // survives a crash as a directory entry
  };
  // Each of these expects mu_ held by the caller, except before_sync/after_sync/dir_sync.
  rocksdb::IOStatus on_append(uint64_t bytes);
  rocksdb::IOStatus before_sync(file_state& st, uint64_t* size_at_start);
  rocksdb::IOStatus after_sync(file_state& st, uint64_t size_at_start, rocksdb::IOStatus s);
  rocksdb::IOStatus before_change() const;
  rocksdb::IOStatus dir_sync(const std::string& dir, rocksdb::FSDirectory& target,
                             const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg);
  std::mutex& mutex() { return mu_; }

 private:
  rocksdb::IOStatus wrap_writable(const std::string& f, bool fresh, bool existed,
                                  std::unique_ptr<rocksdb::FSWritableFile>* r);
  rocksdb::IOStatus refused_locked() const;

  bool real_sync_;
  // Guards everything below and every file_state. Held across an append's write to the
  // file, so crash() sees each append either wholly before or wholly after it.
  mutable std::mutex mu_;
  std::condition_variable sync_cv_;
  bool crashed_ = false;
  bool fail_sync_ = false;
  bool no_space_ = false;
  bool block_sync_ = false;
  uint32_t blocked_ = 0;
  uint64_t syncs_ = 0;
  // Tracked files by path; shared with their open handles, so a rename keeps them in step.
  std::map<std::string, std::shared_ptr<file_state>> files_;
};

}  // namespace feedplane::store
