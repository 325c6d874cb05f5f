// Backend::memory(): tensor bytes in use and their peak, counted by the core
// for every framework (native and the test framework "mirror").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/support.hpp"
#include "xylem/plugin/plugin.hpp"
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

// The native block cache keeps the sizes in use: blocks of earlier work
// that fill it make room for a newly freed size (the longest-cached go
// back to the system), so a loop of that size takes no new allocation each
// turn. The cache refused the newcomer before: one_hot after the rows
// before it in the host benchmark faulted in 32 MiB afresh each call.
TEST(NativeBlockCache, NewSizesEvictTheOldest) {
  const Backend be = Backend::native();
  const auto allocations = [&] { return plugin::device_of(be).memory_stats().device_allocations; };
  {
    // Earlier work: many blocks of one size, all freed into the cache.
    std::vector<Tensor> earlier;
    for (int i = 0; i < 8; ++i) {
      earlier.emplace_back(Layout{1 << 18}, f32);  // 1 MiB each
      fill(be, earlier.back(), 1.0);
    }
    be.synchronize();
  }
  be.synchronize();
  // A new size, 3 MiB, in a loop: at most a few new allocations at first,
  // then the cached block serves every turn.
  for (int i = 0; i < 3; ++i) {
    Tensor t(Layout{3 << 18}, f32);
    fill(be, t, 2.0);
    be.synchronize();
  }
  const std::uint64_t before = allocations();
  for (int i = 0; i < 20; ++i) {
    Tensor t(Layout{3 << 18}, f32);
    fill(be, t, 3.0);
    be.synchronize();
  }
  EXPECT_EQ(allocations(), before);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Memory, ::testing::Values("native", "mirror:0"),
                         [](const auto& p) { return std::string(p.param == "native" ? "native" : "mirror"); });

}  // namespace
