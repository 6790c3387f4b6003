// Compiled into every executable that links feedplane_allocator (cmake/deps.cmake): backs
// the heap with transparent huge pages (2 MiB) where the allocator can do it.
//
// Why: the matcher walks posting blocks spread over tens of MiB and the reflector appends
// to lists spread over GBs, and on this project's hosts (virtual machines with nested
// paging) a TLB miss costs a two-dimensional page walk. At 1M subscriptions a shard's match
// of an article with its list appends ran 1.7x faster with the heap on 2 MiB pages, the
// index alone 1.2x (bench/RESULTS.md, "Huge pages, measured with the switch working"). The
// kernel must allow it: /sys/kernel/mm/transparent_hugepage/enabled set to "madvise" or
// "always"; with "never" this changes nothing. The cost is resident memory: mimalloc never
// returns a huge-page segment's free pages, so what a burst frees stays resident
// (bench/RESULTS.md, "crawler: memory per feed").
//
// Opt out with the allocator's own switch: MIMALLOC_LARGE_OS_PAGES=0 (mimalloc), or
// MALLOC_CONF=thp:default (jemalloc; the environment overrides the built-in default).
#if defined(FEEDPLANE_ALLOCATOR_MIMALLOC)
#include <mimalloc.h>

#include <string_view>

namespace {

// mimalloc maps its first region before any constructor of ours runs, and only regions
// mapped after the option is set are advised as huge; .preinit_array runs before every
// shared library's initialiser, so the option is set before mimalloc's first mapping.
// The environment is read from the envp argument the dynamic loader passes to preinit
// functions: `environ` is not set yet at that point, so getenv() would return null
// (tests/e2e/cli.sh checks the opt-out).
//
// Also: freed pages go back to the OS after 1 s instead of mimalloc's 25 ms. On this
// project's virtual machines a page's first touch costs ~25x a later write of it (0.78 GB/s
// against 21 GB/s on 2 MiB pages, 0.22 GB/s on 4 KiB ones, on the Zen 5 guest), and a
// thread that frees and allocates again within a second paid it each time: the store
// thread, whose start-up blocks the shards free, released 758 MiB with MADV_DONTNEED during
// a 10M restart and took it back; with the delay its CPU in that restart fell from 7.2 to
// 4.8 s (bench/RESULTS.md, "reflector: subscriptions at a million", 2026-12-02). Resident
// memory follows a drop (the reflector's memory pressure, which reads it) a second later.
bool user_set(char** envp, std::string_view var) {
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with(var)) return true;
  }
  return false;
}

void enable_huge_pages(int /*argc*/, char** /*argv*/, char** envp) {
  if (!user_set(envp, "MIMALLOC_DECOMMIT_DELAY=")) mi_option_set(mi_option_decommit_delay, 1000);
  if (user_set(envp, "MIMALLOC_LARGE_OS_PAGES=")) return;  // the user decides
  mi_option_enable(mi_option_large_os_pages);
}

[[gnu::section(".preinit_array"),
  gnu::used]] void (*const k_enable_huge_pages)(int, char**, char**) = enable_huge_pages;

}  // namespace

#elif defined(FEEDPLANE_ALLOCATOR_JEMALLOC)

// jemalloc reads this before its first allocation; MALLOC_CONF in the environment is
// applied after it and wins.
extern "C" {
[[gnu::used]] const char* malloc_conf = "thp:always,metadata_thp:auto";
}

#endif
