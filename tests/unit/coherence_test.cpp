// Tensor coherence across two devices (native and the test framework
// "mirror", whose memory is apart from native's): lazy allocation, versions,
// transfers counted per tensor and globally, stale copies, write-only outputs
// that need no transfer, partial writes that must keep the rest, and reads of
// data nobody wrote.
#include "common/support.hpp"
#include "xylem/plugin/plugin.hpp"

namespace {

using xylem::Backend;
using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;

class Coherence : public ::testing::Test {
 protected:
  Backend native = Backend::native();
  Backend mirror = xylem_test::mirror();
};

TEST_F(Coherence, NewTensorAllocatesNothing) {
  Tensor t(Layout{1000}, xylem::f32);
  EXPECT_EQ(t.version(), 0u);
  EXPECT_EQ(t.transfers(), 0u);
  EXPECT_FALSE(t.is_allocated_on(native));
  EXPECT_FALSE(t.is_allocated_on(mirror));
  EXPECT_FALSE(t.is_current_on(native));
  EXPECT_FALSE(t.is_current_on(mirror));
}

TEST_F(Coherence, FromHostLivesOnNative) {
  auto t = Tensor::from(std::vector<float>{1, 2, 3});
  EXPECT_EQ(t.version(), 1u);
  EXPECT_TRUE(t.is_current_on(native));
  EXPECT_TRUE(t.is_allocated_on(native));
  EXPECT_FALSE(t.is_allocated_on(mirror));
  EXPECT_EQ(t.transfers(), 0u);
}

TEST_F(Coherence, AllocatesOnFirstUseOnly) {
  const auto before = xylem::plugin::device_of(mirror).memory_stats().allocated;
  Tensor t(Layout{1000}, xylem::f64);
  xylem::fill(mirror, t, 2.5);
  EXPECT_TRUE(t.is_allocated_on(mirror));
  EXPECT_TRUE(t.is_current_on(mirror));
  EXPECT_FALSE(t.is_allocated_on(native));  // written on mirror only: no host copy yet
  EXPECT_EQ(t.transfers(), 0u);
  EXPECT_EQ(t.version(), 1u);
  mirror.synchronize();
  EXPECT_GE(xylem::plugin::device_of(mirror).memory_stats().allocated, before + 1000 * sizeof(double));
}

TEST_F(Coherence, ReadTwiceOnOneDeviceTransfersOnce) {
  auto x = Tensor::from(std::vector<float>{-1, 2, -3, 4});
  Tensor y1(x.layout(), xylem::f32), y2(x.layout(), xylem::f32);
  const auto global = xylem::transfer_count();
  xylem::nn::relu(mirror, x, y1);
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_TRUE(x.is_current_on(mirror));
  EXPECT_TRUE(x.is_current_on(native));  // a read leaves the source current
  xylem::nn::relu(mirror, x, y2);
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_EQ(xylem::transfer_count() - global, 1u);
  EXPECT_EQ(x.version(), 1u);
  EXPECT_EQ(y1.to_vector<float>(), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y2.to_vector<float>(), (std::vector<float>{0, 2, 0, 4}));
}

TEST_F(Coherence, WriteOnlyOutputNeedsNoTransfer) {
  auto x = Tensor::from(std::vector<double>{-1, 2});
  auto y = Tensor::from(std::vector<double>{7, 7});  // current on native only
  xylem::nn::relu(mirror, x, y);
  EXPECT_EQ(y.transfers(), 0u) << "a write-only output's stale data was moved";
  EXPECT_EQ(y.version(), 2u);
  EXPECT_TRUE(y.is_current_on(mirror));
  EXPECT_FALSE(y.is_current_on(native));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 2}));
}

TEST_F(Coherence, WriteOnMirrorMakesNativeStale) {
  auto x = Tensor::from(std::vector<float>{1, -2, 3});
  xylem::blas::scal(mirror, -2.0, x);  // read-write: uploads once
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_EQ(x.version(), 2u);
  EXPECT_TRUE(x.is_current_on(mirror));
  EXPECT_FALSE(x.is_current_on(native));

  const auto global = xylem::transfer_count();
  Tensor y(x.layout(), xylem::f32);
  xylem::nn::relu(native, x, y);  // native reads: one transfer back
  EXPECT_EQ(x.transfers(), 2u);
  EXPECT_TRUE(x.is_current_on(native));
  EXPECT_TRUE(x.is_current_on(mirror));
  EXPECT_EQ(x.version(), 2u);  // reading does not bump
  xylem::nn::relu(native, x, y);
  xylem::nn::sigmoid(native, x, y);
  EXPECT_EQ(x.transfers(), 2u) << "an up-to-date copy was transferred again";
  EXPECT_EQ(xylem::transfer_count() - global, 1u);
  EXPECT_EQ(y.to_vector<float>().size(), 3u);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-2, 4, -6}));
}

TEST_F(Coherence, PingPongKeepsValuesAndCountsTransfers) {
  auto x = Tensor::from(std::vector<double>{1, 2, 3, 4});
  for (int round = 0; round < 3; ++round) {
    xylem::blas::scal(mirror, 2.0, x);
    xylem::blas::scal(native, 3.0, x);
  }
  EXPECT_EQ(x.transfers(), 6u);  // each op found the other device's copy stale
  const xylem::TransferRoutes routes = x.transfer_routes();
  EXPECT_EQ(routes.uploads, 3u);
  EXPECT_EQ(routes.downloads, 3u);
  EXPECT_EQ(routes.device_to_device + routes.staged, 0u);
  EXPECT_EQ(routes.bytes, 6 * 4 * sizeof(double));
  EXPECT_EQ(x.version(), 7u);
  EXPECT_TRUE(x.is_current_on(native));
  EXPECT_FALSE(x.is_current_on(mirror));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{216, 432, 648, 864}));
}

TEST_F(Coherence, HostReadOfADeviceResult) {
  Tensor t(Layout{3}, xylem::f32);
  xylem::fill(mirror, t, 4);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{4, 4, 4}));
  EXPECT_EQ(t.version(), 1u);
  // A host read of a current copy does not make it stale.
  EXPECT_TRUE(t.is_current_on(mirror));
}

TEST_F(Coherence, ViewsShareCoherence) {
  auto base = Tensor::from(xylem_test::iota_vector<float>(6), Layout{2, 3});
  auto row = base.slice(0, 1, 2).reshape({3});
  xylem::blas::scal(mirror, 10.0, row);  // writes part of base on mirror
  EXPECT_FALSE(base.is_current_on(native));
  EXPECT_TRUE(base.is_current_on(mirror));
  EXPECT_EQ(base.version(), row.version());
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 2, 30, 40, 50}));
}

// A write-only op on part of a tensor must still bring the rest of it to the
// device first, or the elements outside the view are lost.
TEST_F(Coherence, PartialWriteKeepsTheRest) {
  auto x = Tensor::from(xylem_test::iota_vector<float>(10));
  auto even = x.slice(0, 0, 10, 2);
  xylem::fill(mirror, even, -1);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-1, 1, -1, 3, -1, 5, -1, 7, -1, 9}));

  auto y = Tensor::from(xylem_test::iota_vector<double>(6), Layout{2, 3});
  auto src = Tensor::from(std::vector<double>{-5, -6}, Layout{2, 1});
  auto column = y.slice(1, 1, 2);
  xylem::nn::relu(mirror, src, column);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 0, 2, 3, 0, 5}));
}

TEST_F(Coherence, WholeTensorWriteOnNativeAfterMirror) {
  Tensor t(Layout{4}, xylem::f32);
  xylem::fill(mirror, t, 1);
  xylem::fill(native, t, 2);  // write-only, whole tensor: no transfer
  EXPECT_EQ(t.transfers(), 0u);
  EXPECT_TRUE(t.is_current_on(native));
  EXPECT_FALSE(t.is_current_on(mirror));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
}

TEST_F(Coherence, InPlaceOnMirror) {
  auto x = Tensor::from(std::vector<double>{-1, 0.5, 2});
  xylem::nn::relu(mirror, x, x);  // in place: x is read, so it must be uploaded
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_EQ(x.version(), 2u);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 0.5, 2}));
}

TEST_F(Coherence, UninitializedRead) {
  Tensor never(Layout{4}, xylem::f32);
  auto y = Tensor::from(std::vector<float>{1, 2, 3, 4});
  for (const auto& b : {native, mirror}) {
    SCOPED_TRACE(b.id());
    const auto before = xylem_test::snapshot(y);
    auto what = XY_EXPECT_ERROR(ErrorCode::uninitialized_read, xylem::nn::relu(b, never, y));
    EXPECT_NE(what.find("relu"), std::string::npos) << what;
    XY_EXPECT_UNCHANGED(y, before);
    XY_EXPECT_ERROR(ErrorCode::uninitialized_read, xylem::blas::scal(b, 2.0, never));
    EXPECT_EQ(never.version(), 0u);
    EXPECT_FALSE(never.is_allocated_on(b));
  }
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read, (void)never.to_vector<float>());
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read, (void)never.to_doubles());
  // Writing it is fine, and then it can be read.
  xylem::fill(mirror, never, 3);
  EXPECT_EQ(never.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
}

}  // namespace
