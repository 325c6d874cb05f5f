// Zero-copy interop on the host (xylem/interop.hpp): wrapped memory is the
// tensor's native copy (same address in and out), writes on either side
// are seen by the other, the release callback runs once and only after the
// queued work on the memory, mark_modified makes other devices transfer
// again, and views the memory cannot back are refused with typed errors.
// "mirror" is the device apart from native: its memory is a handle to
// xylem (not addressable), so it also covers that branch.
#include <atomic>
#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "common/support.hpp"
#include "xylem/interop.hpp"
#include "xylem/testing.hpp"

namespace {

using xylem::Backend;
using xylem::DType;
using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;
namespace interop = xylem::interop;

class Interop : public ::testing::Test {
 protected:
  // The application's side of the contract: memory stays until released.
  // Tensors die with the test body; their releases (and any transfer
  // still writing the memory) are waited for here, before `memory` goes.
  void TearDown() override {
    mirror.synchronize();
    native.synchronize();
  }
  // Memory for a test, kept until the fixture is gone.
  std::vector<float>& keep(std::vector<float> values) { return memory.emplace_back(std::move(values)); }

  // A wrap of `host` on native that counts its releases.
  Tensor wrap(std::vector<float>& host, const Layout& view) {
    return interop::wrap(native, host.data(), view, DType::f32, [this] { releases.fetch_add(1); });
  }
  Tensor wrap(std::vector<float>& host) { return wrap(host, Layout{static_cast<std::int64_t>(host.size())}); }

  Backend native = Backend::native();
  Backend mirror = xylem_test::mirror();
  std::atomic<int> releases{0};
  std::deque<std::vector<float>> memory;  // a deque: references stay valid
};

TEST_F(Interop, WrapIsTheNativeCopy) {
  std::vector<float>& host = keep({1, 2, 3, 4});
  Tensor t = wrap(host);
  EXPECT_TRUE(t.is_current_on(native));
  EXPECT_EQ(t.version(), 1u);
  EXPECT_EQ(interop::data_pointer(t, native), host.data());
  EXPECT_EQ(t.to_vector<float>(), host);
  EXPECT_EQ(t.transfers(), 0u);
}

TEST_F(Interop, PointerOfAViewIsItsFirstElement) {
  std::vector<float>& host = keep(std::vector<float>(12));
  std::iota(host.begin(), host.end(), 0.0f);
  const std::int64_t dims[] = {2, 3}, strides[] = {4, 1};
  Tensor t = wrap(host, Layout::strided(dims, strides, 5));
  EXPECT_EQ(interop::data_pointer(t, native), host.data() + 5);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(interop::data_pointer(t.slice(1, 1, 3), native), host.data() + 6);
}

TEST_F(Interop, NegativeStridesFromTheLowestElement) {
  std::vector<float>& host = keep({0, 1, 2, 3, 4, 5});
  const std::int64_t dims[] = {3}, strides[] = {-2};
  Tensor t = wrap(host, Layout::strided(dims, strides, 5));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(interop::data_pointer(t, native), host.data() + 5);
}

TEST_F(Interop, XylemWritesAreSeenAfterSynchronize) {
  std::vector<float>& host = keep({1, -2, 3});
  Tensor t = wrap(host);
  xylem::neg(native, t, t);
  interop::synchronize(t, native);
  EXPECT_EQ(host, (std::vector<float>{-1, 2, -3}));
  EXPECT_EQ(interop::data_pointer(t, native), host.data());
}

TEST_F(Interop, WritesOnAnotherDeviceComeBackIntoTheMemory) {
  std::vector<float>& host = keep({1, -2, 3});
  Tensor t = wrap(host);
  xylem::neg(mirror, t, t);
  EXPECT_FALSE(t.is_current_on(native));
  EXPECT_EQ(interop::data_pointer(t, native), host.data());
  interop::synchronize(t, native);
  EXPECT_EQ(host, (std::vector<float>{-1, 2, -3}));
}

TEST_F(Interop, MarkModifiedMakesOtherDevicesTransferAgain) {
  std::vector<float>& host = keep({1, 2, 3});
  Tensor t = wrap(host);
  EXPECT_EQ(xylem::neg(mirror, t).to_vector<float>(), (std::vector<float>{-1, -2, -3}));
  const auto moved = t.transfers();
  EXPECT_TRUE(t.is_current_on(mirror));
  interop::synchronize(t, native);  // the upload to mirror has read the memory
  host = {10, 20, 30};               // same buffer: the vector keeps its capacity
  interop::mark_modified(t, native);
  EXPECT_FALSE(t.is_current_on(mirror));
  EXPECT_EQ(xylem::neg(mirror, t).to_vector<float>(), (std::vector<float>{-10, -20, -30}));
  EXPECT_EQ(t.transfers(), moved + 1);
}

TEST_F(Interop, HostWritesIntoAPointerOfANewTensor) {
  Tensor t(Layout{3}, DType::f32);
  auto* p = static_cast<float*>(interop::data_pointer(t, native));
  ASSERT_NE(p, nullptr);
  p[0] = 4, p[1] = 5, p[2] = 6;
  interop::mark_modified(t, native);
  EXPECT_EQ(xylem::neg(mirror, t).to_vector<float>(), (std::vector<float>{-4, -5, -6}));
}

TEST_F(Interop, ReleaseRunsOnceWithNoWorkPending) {
  std::vector<float>& host = keep({1, 2});
  {
    Tensor t = wrap(host);
    Tensor view = t.slice(0, 1, 2);
    t = Tensor();
    EXPECT_EQ(releases.load(), 0) << "released while a view still held the data";
  }
  EXPECT_EQ(releases.load(), 1);
}

TEST_F(Interop, ReleaseWaitsForQueuedWork) {
  std::vector<float>& host = keep({1, 2, 3});
  Tensor out(Layout{3}, DType::f32);
  {
    xylem::testing::Gate gate(native);
    {
      Tensor t = wrap(host);
      xylem::neg(native, t, out);  // queued behind the gate, reading the memory
    }
    EXPECT_EQ(releases.load(), 0) << "released while queued work still reads the memory";
    gate.open();
  }
  native.synchronize();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{-1, -2, -3}));
  EXPECT_EQ(releases.load(), 1);
}

TEST_F(Interop, ReleaseWaitsForAnotherDevice) {
  std::vector<float>& host = keep({1, 2, 3});
  {
    Tensor t = wrap(host);
    xylem::testing::Gate gate(mirror);
    xylem::neg(mirror, t, t);  // writes back into the memory after the gate
    t = Tensor();
    EXPECT_EQ(releases.load(), 0) << "released before the upload to mirror read the memory";
    gate.open();
  }
  mirror.synchronize();
  native.synchronize();
  EXPECT_EQ(releases.load(), 1);
}

TEST_F(Interop, WrappedMemoryIsNotXylems) {
  std::vector<float>& host = keep(std::vector<float>(1000, 1.0f));
  const std::uint64_t before = native.memory().in_use;
  {
    Tensor t = wrap(host);
    xylem::neg(native, t, t);
    EXPECT_EQ(native.memory().in_use, before) << "the application's memory counted as xylem's";
  }
  EXPECT_EQ(native.memory().in_use, before);
}

TEST_F(Interop, EmptyReleaseIsAllowed) {
  std::vector<float>& host = keep({1});
  Tensor t = interop::wrap(native, host.data(), Layout{1}, DType::f32, {});
  EXPECT_EQ(t.to_vector<float>(), host);
}

TEST_F(Interop, BadViewsAreRefusedWithoutRelease) {
  std::vector<double> host(8);
  const auto release = [this] { releases.fetch_add(1); };
  const std::int64_t dims[] = {3}, back[] = {-1}, forward[] = {1};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  (void)interop::wrap(native, host.data(), Layout::strided(dims, back, 1), DType::f64, release));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  (void)interop::wrap(native, host.data(), Layout::strided(dims, forward, -1), DType::f64, release));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  (void)interop::wrap(native, reinterpret_cast<unsigned char*>(host.data()) + 4, Layout{3},
                                      DType::f64, release));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)interop::wrap(native, nullptr, Layout{3}, DType::f64, release));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)interop::wrap(native, nullptr, Layout{0}, DType::f64, release));
  EXPECT_EQ(releases.load(), 0);
  Tensor empty = interop::wrap(native, host.data(), Layout{0}, DType::f64, release);
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.to_vector<double>().empty());
}

TEST_F(Interop, MarkModifiedNeedsACurrentCopy) {
  std::vector<float>& host = keep({1, 2});
  Tensor t = wrap(host);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, interop::mark_modified(t, mirror));  // no memory there
  xylem::neg(mirror, t, t);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, interop::mark_modified(t, native));  // stale
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, interop::mark_modified(Tensor(), native));
  (void)interop::data_pointer(t, native);
  interop::mark_modified(t, native);
  EXPECT_TRUE(t.is_current_on(native));
  EXPECT_FALSE(t.is_current_on(mirror));
}

TEST_F(Interop, HandlesAreNotOffset) {
  auto base = Tensor::from(std::vector<float>{1, 2, 3, 4});
  EXPECT_NE(interop::data_pointer(base, mirror), nullptr);
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)interop::data_pointer(base.slice(0, 1, 3), mirror));
}

TEST_F(Interop, QueuesAreUnsupportedOnTheHost) {
  std::vector<float>& host = keep({1});
  Tensor t = wrap(host);
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)interop::native_queue(native));
  XY_EXPECT_ERROR(ErrorCode::unsupported, interop::export_to(t, native, nullptr));
  XY_EXPECT_ERROR(ErrorCode::unsupported, interop::import_from(t, native, nullptr));
}

}  // namespace
