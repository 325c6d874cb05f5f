// The main of every xylem test executable.
#include <gtest/gtest.h>

#include <cstdlib>

// Under AddressSanitizer an allocation far larger than memory must fail as
// the allocator returning null (which xylem turns into out_of_memory), not
// abort the test. ASAN_OPTIONS in the environment still wins.
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}

int main(int argc, char** argv) {
#ifdef XYLEM_TEST_PLUGIN_DIR
  // ctest sets XYLEM_PLUGIN_PATH; this makes a direct run of the binary find
  // the test plugins too.
  setenv("XYLEM_PLUGIN_PATH", XYLEM_TEST_PLUGIN_DIR, 0);
#endif
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
