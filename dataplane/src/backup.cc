#include "feedplane/dataplane/backup.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "feedplane/base/json.h"
#include "feedplane/dataplane/file.h"
#include "feedplane/store/store.h"

namespace feedplane::dataplane {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_manifest = "BACKUP.json";

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "2026-12-02T10:15:00Z" (with compact: "20261202T101500Z", for names).
std::string utc(int64_t ms, bool compact) {
  const time_t t = time_t(ms / 1000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string errno_text(std::string_view what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

bool fsync_path(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) {
    *why = errno_text("open", path);
    return false;
  }
  const bool ok = ::fsync(fd) == 0;
  if (!ok) *why = errno_text("fsync", path);
  ::close(fd);
  return ok;
}

// Copies the tree at from (if it exists) into to: directories, and regular files (or
// links to them) as whole files, leaving out "*.tmp" (a snapshot being written). With link,
// a file is hard-linked instead where the file system allows it (else copied): for trees
// whose files are only ever replaced by a rename, never rewritten in place, so the link
// keeps the bytes it had (as RocksDB's checkpoint links its table files).
bool copy_tree(const fs::path& from, const fs::path& to, bool link, std::string* why) {
  std::error_code ec;
  if (!fs::exists(from, ec)) return true;
  fs::create_directory(to, ec);
  if (ec) {
    *why = fmt::format("create {}: {}", to.string(), ec.message());
    return false;
  }
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path dst = to / it->path().lexically_relative(from);
    if (it->is_directory(ec)) {
      fs::create_directory(dst, ec);
    } else if (it->is_regular_file(ec) && it->path().extension() != ".tmp") {
      if (link) fs::create_hard_link(it->path(), dst, ec);
      if (!link || (ec && ec != std::errc::no_such_file_or_directory)) {
        ec.clear();
        fs::copy_file(it->path(), dst, fs::copy_options::overwrite_existing, ec);
      }
      // A file replaced between the listing and the copy: the new one is taken under the
      // same name (the path is opened afresh); one deleted meanwhile is simply not there.
      if (ec == std::errc::no_such_file_or_directory) ec.clear();
    }
    if (ec) {
      *why = fmt::format("copy {}: {}", it->path().string(), ec.message());
      return false;
    }
  }
  if (ec) {
    *why = fmt::format("read {}: {}", from.string(), ec.message());
    return false;
  }
  return true;
}

bool read_manifest(const fs::path& dir, backup_info* info) {
  std::string bytes, why;
  if (read_file((dir / k_manifest).string(), 1 << 16, bytes, &why) != read_status::ok) return false;
  simdjson::padded_string padded(bytes);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(obj)) return false;
  backup_info b;
  for (auto field : obj) {
    std::string_view key, s;
    if (field.unescaped_key().get(key)) return false;
    auto v = field.value();
    uint64_t u = 0;
    if (key == "name" && !v.get_string().get(s)) {
      b.name = std::string(s);
    } else if (key == "started_ms" && !v.get_uint64().get(u)) {
      b.started_ms = int64_t(u);
    } else if (key == "finished_ms" && !v.get_uint64().get(u)) {
      b.finished_ms = int64_t(u);
    } else if (key == "articles_through" && !v.get_uint64().get(u)) {
      b.articles_through = u;
    } else if (key == "files" && !v.get_uint64().get(u)) {
      b.files = u;
    } else if (key == "bytes" && !v.get_uint64().get(u)) {
      b.bytes = u;
    }
  }
  if (b.name != dir.filename().string()) return false;  // not one of ours, or renamed
  b.state = "complete";
  b.path = dir.string();
  *info = std::move(b);
  return true;
}

}  // namespace

std::string backup_info::to_json() const {
  std::string out = "{\"name\": ";
  base::append_json_string(name, out);
  out += ", \"state\": ";
  base::append_json_string(state, out);
  if (!path.empty()) {
    out += ", \"path\": ";
    base::append_json_string(path, out);
  }
  fmt::format_to(std::back_inserter(out), ", \"started\": \"{}\", \"started_ms\": {}",
                 utc(started_ms, false), started_ms);
  if (state != "running") {
    fmt::format_to(std::back_inserter(out), ", \"finished\": \"{}\", \"finished_ms\": {}",
                   utc(finished_ms, false), finished_ms);
  }
  if (state == "complete") {
    fmt::format_to(std::back_inserter(out),
                   ", \"articles_through\": {}, \"files\": {}, \"bytes\": {}", articles_through,
                   files, bytes);
  }
  if (!error.empty()) {
    out += ", \"error\": ";
    base::append_json_string(error, out);
  }
  out += "}";
  return out;
}

bool backup_manager::valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

struct backup_manager::impl {
  impl(store::store& d, backup_options o) : db(d), opt(std::move(o)) {}
  store::store& db;
  backup_options opt;
  mutable std::mutex mu;  // guards everything below
  backup_info last;       // the running or last backup of this process (name empty: none)
  bool running = false;
  std::thread thread;
  uint64_t completed = 0, failed = 0;                     // by this process
  int64_t newest_started_ms = 0, newest_finished_ms = 0;  // the newest complete backup

  void saw_complete(const backup_info& b) {
    if (b.finished_ms <= newest_finished_ms) return;
    newest_started_ms = b.started_ms;
    newest_finished_ms = b.finished_ms;
  }

  void run(backup_info b);
  // phase_ms: the copy of the snapshots, the checkpoint, and the syncs and rename.
  bool make(backup_info& b, const fs::path& tmp, int64_t phase_ms[3], std::string* why);
};

backup_manager::backup_manager(store::store& db, backup_options opt)
    : impl_(std::make_unique<impl>(db, std::move(opt))) {
  std::error_code ec;
  // Absolute, so the paths the API reports mean the same wherever the reader stands.
  for (std::string* d : {&impl_->opt.data_dir, &impl_->opt.backup_dir}) {
    const fs::path abs = fs::absolute(*d, ec).lexically_normal();
    if (!ec) *d = abs.string();
    ec.clear();
  }
  for (auto it = fs::directory_iterator(impl_->opt.backup_dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() > 5 && n[0] == '.' && n.ends_with(".tmp") &&
        valid_name(std::string_view(n).substr(1, n.size() - 5))) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
      fmt::print(stderr, "feedplane: backup: removed {}, left by a backup that did not end\n",
                 it->path().string());
    }
  }
  // The newest complete backup on disk, so the age an operator alerts on survives restarts.
  for (const backup_info& b : list()) {
    if (b.state == "complete") impl_->saw_complete(b);
  }
}

backup_manager::~backup_manager() {
  std::thread t;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    t.swap(impl_->thread);
  }
  if (t.joinable()) t.join();
}

const std::string& backup_manager::dir() const { return impl_->opt.backup_dir; }

backup_start backup_manager::start(std::string name, backup_info* info, std::string* why) {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (impl_->running) {
    *why = fmt::format("backup {:?} is still running: one at a time", impl_->last.name);
    return backup_start::running;
  }
  std::error_code ec;
  fs::create_directories(impl_->opt.backup_dir, ec);
  if (ec || !fs::is_directory(impl_->opt.backup_dir, ec)) {
    *why = fmt::format("cannot create the backup directory {}: {}", impl_->opt.backup_dir,
                       ec ? ec.message() : "not a directory");
    return backup_start::bad_dir;
  }
  const int64_t t0 = now_ms();
  const fs::path dir(impl_->opt.backup_dir);
  if (name.empty()) {
    const std::string base = "backup-" + utc(t0, true);
    name = base;
    for (int i = 2; fs::exists(dir / name, ec); ++i) name = fmt::format("{}-{}", base, i);
  } else if (!valid_name(name)) {
    *why = "a backup's name is 1-64 of A-Z a-z 0-9 . _ - and does not start with . or -";
    return backup_start::bad_name;
  } else if (fs::exists(dir / name, ec)) {
    *why = fmt::format("{} exists: choose another name or remove it", (dir / name).string());
    return backup_start::exists;
  }
  if (impl_->thread.joinable()) impl_->thread.join();  // the last one, ended
  backup_info b;
  b.name = name;
  b.state = "running";
  b.started_ms = t0;
  impl_->last = b;
  impl_->running = true;
  *info = b;
  impl_->thread = std::thread([p = impl_.get(), b] { p->run(b); });
  return backup_start::started;
}

void backup_manager::impl::run(backup_info b) {
  pthread_setname_np(pthread_self(), "backup");
  const fs::path tmp = fs::path(opt.backup_dir) / ("." + b.name + ".tmp");
  std::string why;
  int64_t phase_ms[3] = {0, 0, 0};
  const bool ok = make(b, tmp, phase_ms, &why);
  b.finished_ms = now_ms();
  if (ok) {
    b.state = "complete";
    fmt::print(stderr,
               "feedplane: backup {} complete: {} files, {} bytes, {} ms (snapshots copied in "
               "{} ms, the store checkpointed in {} ms, synced in {} ms)\n",
               b.path, b.files, b.bytes, b.finished_ms - b.started_ms, phase_ms[0], phase_ms[1],
               phase_ms[2]);
  } else {
    b.state = "failed";
    b.error = why;
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fmt::print(stderr, "feedplane: backup {:?} failed: {}\n", b.name, why);
  }
  std::lock_guard<std::mutex> g(mu);
  if (ok) {
    ++completed;
    saw_complete(b);
  } else {
    ++failed;
  }
  last = std::move(b);
  running = false;
}

backup_manager::counts backup_manager::stats() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return {impl_->completed, impl_->failed, impl_->running, impl_->newest_finished_ms,
          impl_->newest_finished_ms - impl_->newest_started_ms};
}

bool backup_manager::impl::make(backup_info& b, const fs::path& tmp, int64_t phase_ms[3],
                                std::string* why) {
  int64_t t = now_ms();
  const auto phase = [&](int i) {
    const int64_t n = now_ms();
    phase_ms[i] = n - t;
    t = n;
  };
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) {
    *why = fmt::format("create {}: {}", tmp.string(), ec ? ec.message() : "exists");
    return false;
  }
  // The snapshots first, then the checkpoint: every article a copied snapshot holds, and
  // every one sequenced after it, is in the database's copy.
  for (const std::string& sub : opt.link) {
    if (!copy_tree(fs::path(opt.data_dir) / sub, tmp / sub, true, why)) return false;
  }
  for (const std::string& sub : opt.copy) {
    if (!copy_tree(fs::path(opt.data_dir) / sub, tmp / sub, false, why)) return false;
  }
  // Relaxed: a gauge read; every article below it was durable when it was read (the store
  // sequences after the sync), so the checkpoint that follows holds it.
  phase(0);
  b.articles_through = db.stats().next_seq.load(std::memory_order_relaxed) - 1;
  if (!db.checkpoint((tmp / "db").string(), why)) {
    *why = "checkpoint: " + *why;
    return false;
  }
  phase(1);
  std::vector<fs::path> dirs{tmp};
  for (auto it = fs::recursive_directory_iterator(tmp, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec)) {
      dirs.push_back(it->path());
    } else if (it->is_regular_file(ec)) {
      ++b.files;
      b.bytes += it->file_size(ec);
    }
    if (ec) break;
  }
  if (ec) {
    *why = fmt::format("read {}: {}", tmp.string(), ec.message());
    return false;
  }
  b.path = (fs::path(opt.backup_dir) / b.name).string();
  b.finished_ms = now_ms();
  {
    backup_info m = b;
    m.state = "complete";
    std::string json = m.to_json();
    json += "\n";
    const int fd =
        ::open((tmp / k_manifest).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      *why = errno_text("create", (tmp / k_manifest).string());
      return false;
    }
    const bool wrote = ::write(fd, json.data(), json.size()) == ssize_t(json.size());
    if (!wrote) *why = errno_text("write", (tmp / k_manifest).string());
    // One syncfs for every file of the backup (they are all on this file system): the
    // copies, the checkpoint's files and the manifest.
    const bool synced = wrote && ::syncfs(fd) == 0;
    if (wrote && !synced) *why = errno_text("syncfs", tmp.string());
    ::close(fd);
    if (!synced) return false;
    ++b.files;
    b.bytes += json.size();
  }
  for (const fs::path& d : dirs) {
    if (!fsync_path(d.string(), why)) return false;
  }
  if (::rename(tmp.c_str(), b.path.c_str()) != 0) {
    *why = errno_text("rename to", b.path);
    return false;
  }
  const bool ok = fsync_path(opt.backup_dir, why);
  phase(2);
  return ok;
}

bool backup_manager::find(std::string_view name, backup_info* info) const {
  if (!valid_name(name)) return false;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    if (impl_->last.name == name && impl_->last.state != "complete") {
      *info = impl_->last;
      return true;
    }
  }
  // A complete one is read from its directory, so one removed since is gone.
  return read_manifest(fs::path(impl_->opt.backup_dir) / std::string(name), info);
}

std::vector<backup_info> backup_manager::list() const {
  std::vector<backup_info> out;
  backup_info last;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    last = impl_->last;
  }
  std::error_code ec;
  for (auto it = fs::directory_iterator(impl_->opt.backup_dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    backup_info b;
    const std::string n = it->path().filename().string();
    if (valid_name(n) && (n != last.name || last.state == "complete") &&
        read_manifest(it->path(), &b))
      out.push_back(std::move(b));
  }
  if (!last.name.empty() && last.state != "complete") out.push_back(std::move(last));
  std::sort(out.begin(), out.end(),
            [](const backup_info& a, const backup_info& b) { return a.name < b.name; });
  return out;
}

}  // namespace feedplane::dataplane
