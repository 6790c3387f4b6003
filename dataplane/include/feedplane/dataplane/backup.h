// Online backups of a running `feedplane serve` (DESIGN.md 9, Placement: "a RocksDB
// checkpoint plus the latest list snapshots, an admin route").
//
// A backup is a directory laid out as a data directory (db/, lists/, public/, and
// BACKUP.json describing it): `feedplane serve --data COPY` starts from a copy of it. It is
// made on a thread of its own while the shards and the store go on:
//   1. the latest list snapshots and word counts (lists/) are hard-linked (copied on
//      another file system) and the static files (public/) copied: the snapshot writers
//      replace a file by a rename, never rewrite it, so a link holds one complete snapshot
//      for good;
//   2. then the database is checkpointed (store::checkpoint): every article and record up
//      to that moment, so the copied snapshots' articles and everything after them are in
//      it, and a start from the backup replays the log's tail behind each snapshot exactly
//      as a start after a crash at that moment would;
//   3. every file and directory is made durable (one syncfs, each directory fsynced), and
//      the directory, built as ".NAME.tmp", is renamed to NAME: a crash leaves a complete
//      backup or none (a stale ".NAME.tmp" is removed at the next start).
// On the same file system as the data directory the database's and the lists' files are
// hard links (neither is rewritten in place), so a backup costs little disk until the data
// moves on (each file it still holds then stays); copy it to another disk or host to
// survive the loss of this one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace feedplane::store {
class store;
}

namespace feedplane::dataplane {

struct backup_options {
  std::string data_dir;
  std::string backup_dir;  // created when the first backup is made
  // Subdirectories of data_dir taken before the checkpoint. `link`: files only ever
  // replaced by a rename (the list snapshots and word counts: write_files_durably), so
  // hard-linked where the file system allows, else copied. `copy`: copied (static files an
  // operator may edit in place).
  std::vector<std::string> link = {"lists"};
  std::vector<std::string> copy = {"public"};
};

struct backup_info {
  std::string name;
  std::string path;   // backup_dir/name once complete
  std::string state;  // "running", "complete" or "failed"
  std::string error;  // why it failed
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  // Every article with a sequence up to this one is in the backup (read before the
  // checkpoint; later ones may be too).
  uint64_t articles_through = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;  // as the files' sizes (hard-linked ones included)
  std::string to_json() const;
};

enum class backup_start { started, running, bad_name, exists, bad_dir };

class backup_manager {
 public:
  // Removes stale ".NAME.tmp" directories a crash left in backup_dir.
  backup_manager(store::store& db, backup_options opt);
  ~backup_manager();  // waits for a running backup to end
  backup_manager(const backup_manager&) = delete;
  backup_manager& operator=(const backup_manager&) = delete;

  // Starts a backup named `name` (empty: "backup-YYYYMMDDTHHMMSSZ", UTC) and fills *info
  // with its first state; otherwise says why not in *why. One runs at a time. Any thread.
  backup_start start(std::string name, backup_info* info, std::string* why);
  // The running or last backup (from memory) or a complete one (its BACKUP.json). Any thread.
  bool find(std::string_view name, backup_info* info) const;
  // Every complete backup in backup_dir (by name), and the running or failed last one.
  std::vector<backup_info> list() const;
  const std::string& dir() const;

  // For /metrics: backups this process completed and failed, whether one runs, and the
  // newest complete one's end and duration, this process's or one found on disk at start
  // (0: none). Any thread.
  struct counts {
    uint64_t completed = 0;
    uint64_t failed = 0;
    bool running = false;
    int64_t last_complete_ms = 0;
    int64_t last_duration_ms = 0;
  };
  counts stats() const;

  // 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'.
  static bool valid_name(std::string_view name);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace feedplane::dataplane
