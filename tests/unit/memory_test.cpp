// Backend::memory(): tensor bytes in use and their peak, counted by the core
// for every framework (native and the test framework "mirror").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/support.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem;

class Memory : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { be = Backend::open(GetParam()); }
  Backend be = Backend::native();
};

TEST_P(Memory, CountsFromFirstUseToLastHandle) {
  const MemoryUsage before = be.memory();
  {
    Tensor t(Layout{1000}, f64);
    EXPECT_EQ(be.memory().in_use, before.in_use);  // no memory before first use
    fill(be, t, 1.5);
    EXPECT_EQ(be.memory().in_use, before.in_use + 8000);
    const Tensor view = t.reshape({10, 100});  // the same storage: counted once
    EXPECT_EQ(be.memory().in_use, before.in_use + 8000);
    EXPECT_GE(be.memory().peak, before.in_use + 8000);
  }
  EXPECT_EQ(be.memory().in_use, before.in_use);
}

TEST_P(Memory, PeakSinceReset) {
  Tensor kept(Layout{256}, f32);
  fill(be, kept, 1.0);
  be.reset_peak_memory();
  const MemoryUsage start = be.memory();
  EXPECT_EQ(start.peak, start.in_use);
  {
    Tensor a(Layout{4096}, f32), b(Layout{1024}, f32);
    fill(be, a, 2.0);
    fill(be, b, 3.0);
  }
  {
    Tensor c(Layout{2048}, f32);
    fill(be, c, 4.0);
  }
  const MemoryUsage end = be.memory();
  EXPECT_EQ(end.in_use, start.in_use);
  EXPECT_EQ(end.peak, start.in_use + (4096 + 1024) * 4);  // a and b together, not c
  be.reset_peak_memory();
  EXPECT_EQ(be.memory().peak, end.in_use);
}

// A copy on each device counts on each.
TEST(MemoryAcross, EachDeviceCountsItsCopy) {
  const Backend native = Backend::native();
  const Backend mirror = xylem_test::mirror();
  const MemoryUsage native_before = native.memory(), mirror_before = mirror.memory();
  {
    const Tensor t = Tensor::from(std::vector<float>(500, 1.0f));
    EXPECT_EQ(native.memory().in_use, native_before.in_use + 2000);
    EXPECT_EQ(mirror.memory().in_use, mirror_before.in_use);
    const Tensor y = nn::relu(mirror, t);  // t's copy on mirror, and y
    EXPECT_EQ(mirror.memory().in_use, mirror_before.in_use + 4000);
  }
  EXPECT_EQ(native.memory().in_use, native_before.in_use);
  EXPECT_EQ(mirror.memory().in_use, mirror_before.in_use);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Memory, ::testing::Values("native", "mirror:0"),
                         [](const auto& p) { return std::string(p.param == "native" ? "native" : "mirror"); });

}  // namespace
