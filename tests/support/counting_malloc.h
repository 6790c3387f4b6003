// Heap counters of tests/support/counting_malloc.cc (linked only into the memory tests).
#pragma once

#include <cstdint>

namespace feedplane::test {
// Bytes held now: the usable size of every live block.
int64_t heap_live();
// The highest heap_live() since the last reset_heap_peak().
int64_t heap_peak();
void reset_heap_peak();
}  // namespace feedplane::test
