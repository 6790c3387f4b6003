# Every dependency is a Debian package installed by scripts/setup.
find_package(PkgConfig REQUIRED)
pkg_check_modules(uring REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(cares REQUIRED IMPORTED_TARGET libcares)
pkg_check_modules(deflate REQUIRED IMPORTED_TARGET libdeflate)
pkg_check_modules(xxhash REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(utf8proc REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(jemalloc IMPORTED_TARGET jemalloc)
# The provisioner's min-cost flow (LEMON's NetworkSimplex; header templates).
pkg_check_modules(lemon REQUIRED IMPORTED_TARGET lemon)
find_package(hwy REQUIRED)
find_package(simdjson REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(fmt REQUIRED)
find_package(pugixml REQUIRED)
find_package(absl REQUIRED)  # flat hash maps (absl::flat_hash_map) where node maps cost memory
find_package(mimalloc QUIET)
find_package(Threads REQUIRED)
if(FEEDPLANE_TESTS)
  find_package(GTest REQUIRED)
endif()
if(FEEDPLANE_BENCH)
  find_package(benchmark REQUIRED)
  # The NATS C client (Debian libnats-dev), for nats_bench's JetStream publisher and
  # consumers; the servers are Debian's nats-server, run as child processes.
  pkg_check_modules(nats REQUIRED IMPORTED_TARGET libnats)
endif()

# feedplane_allocator: link into executables only. The allocator replaces
# malloc process-wide, so libraries stay allocator-neutral.
add_library(feedplane_allocator INTERFACE)
if(FEEDPLANE_ALLOCATOR STREQUAL "mimalloc")
  if(NOT TARGET mimalloc)
    message(FATAL_ERROR "FEEDPLANE_ALLOCATOR=mimalloc but libmimalloc-dev is not installed")
  endif()
  target_link_libraries(feedplane_allocator INTERFACE mimalloc)
  target_compile_definitions(feedplane_allocator INTERFACE FEEDPLANE_ALLOCATOR_MIMALLOC)
elseif(FEEDPLANE_ALLOCATOR STREQUAL "jemalloc")
  target_link_libraries(feedplane_allocator INTERFACE PkgConfig::jemalloc)
  target_compile_definitions(feedplane_allocator INTERFACE FEEDPLANE_ALLOCATOR_JEMALLOC)
elseif(NOT FEEDPLANE_ALLOCATOR STREQUAL "system")
  message(FATAL_ERROR "FEEDPLANE_ALLOCATOR must be mimalloc, jemalloc or system, not '${FEEDPLANE_ALLOCATOR}'")
endif()
# Huge pages for the heap where the allocator supports it (see the file).
target_sources(feedplane_allocator INTERFACE ${CMAKE_SOURCE_DIR}/dataplane/src/allocator_setup.cc)

# feedplane_fuzz_target(name source MAX_LEN bytes libs...): a libFuzzer binary when
# FEEDPLANE_FUZZ is on. MAX_LEN is the longest input scripts/fuzz lets libFuzzer try (its
# default of 4096 cannot reach most parsers' limits); it is written beside the binary as
# name.max_len.
function(feedplane_fuzz_target name source)
  cmake_parse_arguments(F "" "MAX_LEN" "" ${ARGN})
  if(NOT F_MAX_LEN)
    message(FATAL_ERROR "feedplane_fuzz_target(${name}): say MAX_LEN, long enough to reach the parser's limits")
  endif()
  if(FEEDPLANE_FUZZ)
    add_executable(${name} ${source})
    target_link_libraries(${name} PRIVATE ${F_UNPARSED_ARGUMENTS})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    file(GENERATE OUTPUT $<TARGET_FILE_DIR:${name}>/${name}.max_len CONTENT "${F_MAX_LEN}\n")
  endif()
endfunction()
