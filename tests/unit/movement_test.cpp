// Tensors moving between native and every other device present (OpenCL,
// CUDA, the test framework): written on one, read on the other and back,
// with the values checked and every transfer counted. Devices that are not
// present are reported as skipped by name.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string_view>

#include "common/support.hpp"

namespace {

using xylem::Backend;
using xylem::Layout;
using xylem::Tensor;

std::vector<std::string> device_ids() {
  std::vector<std::string> ids;
  for (const auto& fw : Backend::frameworks())
    if (fw.name != "native")
      for (const auto& hw : fw.hardware) ids.push_back(hw.id());
  for (const char* known : {"opencl:0", "cuda:0"})
    if (std::find(ids.begin(), ids.end(), known) == ids.end()) ids.emplace_back(known);
  return ids;
}

class Movement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      device = Backend::open(GetParam());
    } catch (const xylem::Error& e) {
      GTEST_SKIP() << GetParam() << ": " << e.what();
    }
  }
  std::optional<Backend> device;
  Backend native = Backend::native();
};

TEST_P(Movement, WrittenThereReadHereThenBack) {
  const auto seed = xylem_test::fresh_seed();
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2, 2);
  const std::int64_t n = 1000;
  std::vector<float> values(n);
  for (auto& v : values) v = dist(rng);
  const Tensor source = Tensor::from(values);

  // Written on the device: no transfer of x, no host copy of it yet.
  Tensor x(Layout{n}, xylem::f32);
  xylem::blas::copy(*device, source, x);
  EXPECT_EQ(source.transfers(), 1u);
  EXPECT_EQ(x.transfers(), 0u);
  EXPECT_TRUE(x.is_current_on(*device));
  EXPECT_FALSE(x.is_current_on(native));

  // Read on the host: one transfer; a second read moves nothing.
  const std::vector<float> first = x.to_vector<float>();
  EXPECT_EQ(first, values);
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_EQ(x.to_vector<float>(), first);
  EXPECT_EQ(x.transfers(), 1u);
  EXPECT_TRUE(x.is_current_on(*device)) << "a read must not make the device copy stale";

  // Written on native: the device copy goes stale; reading it there again
  // transfers once, and the values are native's.
  xylem::blas::scal(native, 2.0, x);
  EXPECT_FALSE(x.is_current_on(*device));
  Tensor y(Layout{n}, xylem::f32);
  xylem::nn::relu(*device, x, y);
  EXPECT_EQ(x.transfers(), 2u);
  EXPECT_EQ(y.transfers(), 0u) << "a write-only output needs no transfer";
  xylem::nn::relu(*device, x, y);
  EXPECT_EQ(x.transfers(), 2u) << "a current copy is never transferred again";

  const std::vector<float> result = y.to_vector<float>();
  EXPECT_EQ(y.transfers(), 1u);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(result[i], std::max(2.0f * first[i], 0.0f)) << "at " << i;

  // Both copies current after the device read: native reads cost nothing.
  EXPECT_TRUE(x.is_current_on(native));
  (void)x.to_vector<float>();
  EXPECT_EQ(x.transfers(), 2u);
}

TEST_P(Movement, ViewsOfDeviceDataReadOnTheHost) {
  auto host = Tensor::from(xylem_test::iota_vector<double>(12), Layout{3, 4});
  Tensor on_device(Layout{3, 4}, xylem::f64);
  if (!device->supports(xylem::Op::blas_copy, xylem::f64)) GTEST_SKIP() << "no f64 on " << GetParam();
  Tensor flat = on_device.reshape({12});
  xylem::blas::copy(*device, host.reshape({12}), flat);
  const auto transposed = on_device.transpose().to_vector<double>();
  EXPECT_EQ(transposed, (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Movement, ::testing::ValuesIn(device_ids()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// Two devices of one framework (cuda:0 and cuda:1, say): data written on
// the first and used on the second moves directly (a peer copy, or staged
// inside the framework), never through a host copy of the tensor.
class PeerMovement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      first = Backend::open(GetParam() + ":0");
      second = Backend::open(GetParam() + ":1");
    } catch (const xylem::Error& e) {
      GTEST_SKIP() << GetParam() << " has no second device here: " << e.what();
    }
  }
  std::optional<Backend> first, second;
};

// With peer access (and XYLEM_CUDA_PEER_ACCESS not 0), a tensor written on
// one device and read on another moves device to device; without, it is
// staged through its host copy. Either way the route counters say which.
TEST_P(PeerMovement, WrittenOnOneDeviceUsedOnAnother) {
  const bool peer = first->hardware().caps.peer_access;
  const char* switch_off = std::getenv("XYLEM_CUDA_PEER_ACCESS");
  if (GetParam() == "cuda" && switch_off != nullptr && std::string_view(switch_off) == "0") {
    EXPECT_FALSE(peer) << "XYLEM_CUDA_PEER_ACCESS=0 must turn peer access off";
  }
  std::cout << GetParam() << ": " << (peer ? "peer access: device to device" : "no peer access: staged") << "\n";
  const std::int64_t n = (1 << 20) + 3;
  const auto bytes = static_cast<std::uint64_t>(n) * sizeof(float);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i % 1000) - 500.0f;
  Tensor x(Layout{n}, xylem::f32);
  xylem::blas::copy(*first, Tensor::from(values), x);
  const xylem::TransferRoutes global_before = xylem::transfer_routes();
  Tensor y(Layout{n}, xylem::f32);
  xylem::nn::relu(*second, x, y);
  const xylem::TransferRoutes routes = x.transfer_routes();
  if (peer) {
    EXPECT_EQ(routes.device_to_device, 1u) << "one device-to-device transfer";
    EXPECT_EQ(routes.staged + routes.uploads + routes.downloads, 0u);
    EXPECT_EQ(routes.bytes, bytes);
    EXPECT_FALSE(x.is_current_on(Backend::native())) << "the data must not go through a host copy of the tensor";
  } else {
    EXPECT_EQ(routes.staged, 1u) << "one copy staged through the host";
    EXPECT_EQ(routes.downloads, 1u);
    EXPECT_EQ(routes.uploads, 1u);
    EXPECT_EQ(routes.device_to_device, 0u);
    EXPECT_EQ(routes.bytes, 2 * bytes);
  }
  const xylem::TransferRoutes global_after = xylem::transfer_routes();
  EXPECT_EQ(global_after.staged - global_before.staged, routes.staged) << "the process-wide counters agree";
  EXPECT_EQ(global_after.device_to_device - global_before.device_to_device, routes.device_to_device);
  EXPECT_EQ(x.transfers(), routes.total());
  EXPECT_TRUE(x.is_current_on(*first));
  EXPECT_TRUE(x.is_current_on(*second));
  const auto result = y.to_vector<float>();
  for (std::size_t i = 0; i < result.size(); ++i) ASSERT_EQ(result[i], std::max(values[i], 0.0f)) << "at " << i;
  // And back: written on the second, read on the first, by the same route.
  const std::uint64_t before_back = x.transfers();
  xylem::blas::scal(*second, -1.0, x);
  xylem::nn::relu(*first, x, y);
  EXPECT_EQ(x.transfers() - before_back, peer ? 1u : 2u);
  const auto back = y.to_vector<float>();
  for (std::size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], std::max(-values[i], 0.0f)) << "at " << i;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, PeerMovement, ::testing::Values("cuda", "opencl"));

}  // namespace
