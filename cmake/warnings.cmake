# Warnings for every target of ours. Third-party headers come in as SYSTEM includes
# (imported targets), so their warnings do not count.
add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
                    -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-missing-field-initializers)
endif()
# Warnings are errors in the project's own builds (scripts/build turns this on, so CI and
# every engineer's build fail on a new warning). Off by default: a user's plain
# `cmake -B b && cmake --build b` with a compiler we have not tried (and its false
# positives, such as g++ 12's -Wrestrict inside libstdc++'s string code) still builds.
option(FEEDPLANE_WERROR "treat compiler warnings as errors" OFF)
if(FEEDPLANE_WERROR)
  add_compile_options(-Werror)
endif()
