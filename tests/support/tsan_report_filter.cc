// Linked into every executable of the ThreadSanitizer build (CMakeLists.txt, FEEDPLANE_TSAN):
// keeps TSan from failing a run on a race that lies wholly inside an uninstrumented
// library's own state, and nothing else.
//
// Why such reports happen. The executable instantiates std:: templates (vector<string>'s
// _M_realloc_insert, unordered_map<string, unsigned long>, string's _M_mutate, ...) with TSan
// instrumentation. librocksdb.so and libstdc++.so define the same weak symbols, and the
// dynamic linker binds their calls to the executable's copies, so RocksDB's own containers
// are read and written through instrumented code, while the locks and atomics that order
// those accesses run uninstrumented inside the library (and tsan.supp's called_from_lib hides
// its pthread calls). TSan then sees accesses with no order between them. The shadow stack of
// such an access holds only std:: frames (uninstrumented callers leave none), so
// tsan.supp's `race:rocksdb::` cannot match it. Measured, not assumed: three threads writing
// to one RocksDB through the executable's string code give six such reports per run
// (tests/support/tsan_filter_check.cc, ctest tsan_filter_library); CI saw one once in
// e2e_backup (stop 46's note).
//
// The rule. The project's sources are compiled with -fdebug-prefix-map=SOURCE=. , so every
// frame of ours names a relative file ("./dataplane/src/store.cc") or one under the source
// tree (FEEDPLANE_TSAN_SOURCE_DIR); headers and libraries have other absolute paths or none. A data
// race is not counted when one of its access stacks is non-empty and has no frame of ours: that
// access was made by library code on library state. A race of ours has our frames in both stacks
// (our threads start in our code), so it still fails the run (ctest tsan_filter_own checks that).
// Each report not counted prints one line naming its top frame, so it stays visible.
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

// ThreadSanitizer's report accessors (compiler-rt tsan_debugging.cpp, the interface debuggers
// use); the report pointer is the one OnReport receives.
extern "C" int __tsan_get_report_data(void* report, const char** description, int* count,
                                      int* stack_count, int* mop_count, int* loc_count,
                                      int* mutex_count, int* thread_count, int* unique_tid_count,
                                      void** sleep_trace, size_t trace_size);
extern "C" int __tsan_get_report_mop(void* report, size_t idx, int* tid, void** addr, int* size,
                                     int* write, int* atomic, void** trace, size_t trace_size);

// -Wl,--undefined of this symbol (CMakeLists.txt) pulls this file out of its archive into
// every executable, where its strong OnReport replaces the runtime's weak one.
extern "C" {
extern const int feedplane_tsan_report_filter;
const int feedplane_tsan_report_filter = 1;
}

namespace {

// A stack this deep or deeper is counted: our frames may lie past what was read.
constexpr size_t max_frames = 256;

// Whether pc, or a frame inlined at it, is in a source file of the project. No allocation:
// this runs inside the runtime's report path.
bool is_project_frame(void* pc) {
  char files[4096];
  __sanitizer_symbolize_pc(pc, "%s", files, sizeof files);
  // One '\0'-terminated name per (inlined) frame, then an empty one.
  for (const char* f = files; *f != '\0'; f += std::strlen(f) + 1) {
    if (f[0] != '/' && f[0] != '<') return true;  // ./dataplane/... (the prefix map)
    // The symbolizer may put the compilation directory before a relative name; a tree
    // compiled without the prefix map names its files absolutely.
    const size_t root = sizeof FEEDPLANE_TSAN_SOURCE_DIR - 1;
    if (std::strncmp(f, FEEDPLANE_TSAN_SOURCE_DIR, root) == 0 && f[root] == '/') return true;
  }
  return false;
}

void say_not_counted(void* top) {
  char line[512] =
      "ThreadSanitizer: not counted, a race inside a library's own state (no "
      "feedplane frame in one access; tests/support/tsan_report_filter.cc) at ";
  size_t used = std::strlen(line);
  __sanitizer_symbolize_pc(top, "%f %s:%l", line + used, sizeof line - used - 1);
  used += std::strlen(line + used);
  line[used++] = '\n';
  (void)!::write(2, line, used);
}

}  // namespace

namespace __tsan {

struct ReportDesc;
bool OnReport(const ReportDesc* rep, bool suppressed);

// Called by the runtime before it prints a report; true drops the report.
bool OnReport(const ReportDesc* rep, bool suppressed) {
  if (suppressed) return true;
  void* report = const_cast<ReportDesc*>(rep);
  const char* description = nullptr;
  int count = 0, stacks = 0, mops = 0, locs = 0, mutexes = 0, threads = 0, tids = 0;
  void* sleep_trace[1];
  if (__tsan_get_report_data(report, &description, &count, &stacks, &mops, &locs, &mutexes,
                             &threads, &tids, sleep_trace, 1) == 0 ||
      description == nullptr || std::strcmp(description, "data-race") != 0)
    return false;
  for (int i = 0; i < mops; ++i) {
    int tid = 0, size = 0, write = 0, atomic = 0;
    void* addr = nullptr;
    void* trace[max_frames] = {};
    if (__tsan_get_report_mop(report, static_cast<size_t>(i), &tid, &addr, &size, &write, &atomic,
                              trace, max_frames) == 0)
      return false;
    size_t n = 0;
    while (n < max_frames && trace[n] != nullptr) ++n;
    bool ours = false;  // symbolizing stops at the first frame of ours
    for (size_t k = 0; k < n && !ours; ++k) ours = is_project_frame(trace[k]);
    if (n > 0 && n < max_frames && !ours) {
      say_not_counted(trace[0]);
      return true;
    }
  }
  return false;
}

}  // namespace __tsan
