// The ThreadSanitizer build's report filter (tsan_report_filter.cc), checked both ways:
//   tsan_filter_check own      two threads of ours race on a counter: TSan must still
//                              report it and fail the run (exit 66).
//   tsan_filter_check library DIR  three threads write to one RocksDB, whose write group
//                              merges their batches through the executable's instrumented
//                              string code under the library's own (uninstrumented)
//                              synchronisation: the run must pass, saying "not counted".
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

long racy_counter = 0;  // deliberately unsynchronised: the race the filter must not hide

__attribute__((noinline)) void bump() {
  for (int i = 0; i < 100000; ++i) racy_counter = racy_counter + 1;
}

int own() {
  std::thread a(bump);
  std::thread b(bump);
  a.join();
  b.join();
  std::printf("counter %ld\n", racy_counter);
  return 0;
}

int library(const char* dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t)
    writers.emplace_back([db, t] {
      const std::string value(200, 'v');
      for (int i = 0; i < 20000; ++i)
        (void)db->Put(rocksdb::WriteOptions(), std::to_string(t) + ":" + std::to_string(i), value);
    });
  for (auto& w : writers) w.join();
  delete db;
  std::puts("library writes done");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "own") == 0) return own();
  if (argc == 3 && std::strcmp(argv[1], "library") == 0) return library(argv[2]);
  std::fprintf(stderr, "usage: tsan_filter_check own | library DIR\n");
  return 2;
}
