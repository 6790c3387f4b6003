// Linked into every test binary: exports where the sources, the feedplane binary and the
// shared corpus are, as environment variables, before main() runs. (ctest's per-test
// ENVIRONMENT does not survive gtest_discover_tests' list handling for more than one
// variable.) A value already in the environment wins, so a developer can point a test
// elsewhere by hand.
#include <cstdlib>

namespace {

struct export_test_env {
  export_test_env() {
    setenv("FEEDPLANE_SOURCE_DIR", FEEDPLANE_TEST_SOURCE_DIR, 0);
    setenv("FEEDPLANE_BINARY", FEEDPLANE_TEST_BINARY, 0);
    if (FEEDPLANE_TEST_CORPUS_DIR[0] != '\0')
      setenv("FEEDPLANE_CORPUS_DIR", FEEDPLANE_TEST_CORPUS_DIR, 0);
  }
};
const export_test_env exported;

}  // namespace
