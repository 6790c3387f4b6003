# Every public header compiles on its own: one translation unit per header under
# <folder>/include/feedplane/, compiled with only its own target's usage requirements (so a
# missing #include or a missing link dependency shows), and included twice (so a missing
# #pragma once shows). Part of the normal build: CI builds it with every other target.
option(FEEDPLANE_HEADER_CHECK "compile each public header on its own" ON)

# feedplane_check_headers(target include_dir): checks include_dir/feedplane/**/*.h against
# target (skipped when the target does not exist in this configuration).
function(feedplane_check_headers target include_dir)
  if(NOT FEEDPLANE_HEADER_CHECK OR NOT TARGET ${target})
    return()
  endif()
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS "${include_dir}/feedplane/*.h")
  set(sources)
  set(all "")
  foreach(h IN LISTS headers)
    file(RELATIVE_PATH rel "${include_dir}" "${h}")
    string(MAKE_C_IDENTIFIER "${rel}" id)
    set(src "${CMAKE_BINARY_DIR}/header_check/${id}.cc")
    file(CONFIGURE OUTPUT "${src}" CONTENT "#include \"${rel}\"\n#include \"${rel}\"\n" @ONLY)
    list(APPEND sources "${src}")
    string(APPEND all "#include \"${rel}\"\n")
  endforeach()
  if(sources)
    set(src "${CMAKE_BINARY_DIR}/header_check/${target}_all.cc")
    file(CONFIGURE OUTPUT "${src}" CONTENT "${all}" @ONLY)
    list(APPEND sources "${src}")
    add_library(${target}_header_check OBJECT ${sources})
    target_link_libraries(${target}_header_check PRIVATE ${target})
  endif()
endfunction()

# Each folder's public headers, checked against the folder's own target. A folder with an
# include/ directory that is not listed here is reported at configure time.
set(feedplane_public_headers
  "feedplane_base:base/include"
  "feedplane_net:net/include"
  "feedplane_matcher:matcher/include"
  "feedplane_feed:dataplane/feed/include"
  "feedplane_runtime:dataplane/runtime/include"
  "feedplane_store:dataplane/store/include"
  "feedplane_crawler:dataplane/crawler/include"
  "feedplane_reflector:dataplane/reflector/include"
  "feedplane_dataplane:dataplane/include"
  "feedplane_workload:bench/workload/include"
  "feedplane_farm:bench/farm/include"
  "feedplane_load_check:bench/load/include"
  "feedplane_provisioner:provisioner/include")
set(checked_dirs)
foreach(entry IN LISTS feedplane_public_headers)
  string(REPLACE ":" ";" pair "${entry}")
  list(GET pair 0 target)
  list(GET pair 1 dir)
  feedplane_check_headers(${target} "${PROJECT_SOURCE_DIR}/${dir}")
  list(APPEND checked_dirs "${PROJECT_SOURCE_DIR}/${dir}")
endforeach()
file(GLOB include_dirs LIST_DIRECTORIES true "${PROJECT_SOURCE_DIR}/*/include"
     "${PROJECT_SOURCE_DIR}/*/*/include")
foreach(dir IN LISTS include_dirs)
  if(IS_DIRECTORY "${dir}" AND NOT dir IN_LIST checked_dirs AND NOT dir MATCHES "/build")
    message(WARNING "${dir}: public headers not checked; add the folder to cmake/header_check.cmake")
  endif()
endforeach()
