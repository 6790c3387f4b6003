// Counts every heap byte of the binary it is linked into: malloc and friends are replaced
// here and forward to glibc, each block counted at its malloc_usable_size (what the
// allocator really gives, rounding included; its 8-byte header is not counted). For the
// memory tests only: a sanitizer owns malloc, so tests/CMakeLists.txt builds them only
// without sanitizers.
#include "counting_malloc.h"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define FEEDPLANE_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FEEDPLANE_COUNT_MALLOC 0
#endif
#endif
#ifndef FEEDPLANE_COUNT_MALLOC
#define FEEDPLANE_COUNT_MALLOC 1
#endif
#if !FEEDPLANE_COUNT_MALLOC
#error \
    "counting_malloc counts malloc, which a sanitizer owns: tests/CMakeLists.txt builds it only without sanitizers"
#endif

namespace {
// Relaxed throughout: each counter is a sum (and a running maximum) read by the test
// thread after the allocations it measures, on that same thread; no other memory is
// published through them.
std::atomic<int64_t> g_live{0};  // bytes held now (malloc_usable_size of each block)
std::atomic<int64_t> g_peak{0};  // highest g_live since reset_peak()

[[maybe_unused]] void on_alloc(void* p) {
  if (p == nullptr) return;
  const auto n = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t now = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
[[maybe_unused]] void on_free(void* p) {
  if (p != nullptr)
    g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}
}  // namespace

// glibc's own entry points, which the replacements below forward to.
extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  on_alloc(p);
  return p;
}
void free(void* p) {
  on_free(p);
  __libc_free(p);
}
void* calloc(size_t n, size_t m) {
  void* p = __libc_calloc(n, m);
  on_alloc(p);
  return p;
}
void* realloc(void* old, size_t n) {
  on_free(old);
  void* p = __libc_realloc(old, n);
  if (p == nullptr && n != 0) {
    on_alloc(old);  // failed: the old block stays
    return nullptr;
  }
  on_alloc(p);
  return p;
}
void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  on_alloc(p);
  return p;
}
void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void** out, size_t align, size_t n) {
  void* p = memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

namespace feedplane::test {
// Relaxed: the counters are read by the thread that allocated (tests measure one thread).
int64_t heap_live() { return g_live.load(std::memory_order_relaxed); }
int64_t heap_peak() { return g_peak.load(std::memory_order_relaxed); }
void reset_heap_peak() {
  g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed);
}
}  // namespace feedplane::test
