// The counting operator new and delete of counting_new.h.
#include "counting_new.h"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace feedplane::test {
// Relaxed loads and adds only (counting_new.h says why): no other data is published
// through them.
std::atomic<bool> new_counting{false};
std::atomic<uint64_t> new_calls{0};
}  // namespace feedplane::test

namespace {
using feedplane::test::new_calls;
using feedplane::test::new_counting;

// Every form of operator new is replaced (and every delete with it), so that none comes
// from the runtime's allocator and is freed here (sanitizers check that pairing).
void* counted_alloc(size_t n, size_t align = 0) noexcept {
  // Relaxed: see counting_new.h.
  if (new_counting.load(std::memory_order_relaxed)) {
    new_calls.fetch_add(1, std::memory_order_relaxed);
  }
  if (n == 0) n = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}
void* counted_or_throw(size_t n, size_t align = 0) {
  if (void* p = counted_alloc(n, align)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) { return counted_or_throw(n); }
void* operator new[](size_t n) { return counted_or_throw(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new(size_t n, std::align_val_t a) { return counted_or_throw(n, size_t(a)); }
void* operator new[](size_t n, std::align_val_t a) { return counted_or_throw(n, size_t(a)); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, size_t(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, size_t(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
