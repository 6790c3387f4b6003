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
void enable_huge_pages(int /*argc*/, char** /*argv*/, char** envp) {
  constexpr std::string_view k_var = "MIMALLOC_LARGE_OS_PAGES=";
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with(k_var)) return;  // the user decides
  }
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
