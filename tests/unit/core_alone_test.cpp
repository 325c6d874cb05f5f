// The core with no framework linked in: this executable links xylem_core's
// objects only (no libxylem, so no native, no oneTBB, Highway or OpenBLAS).
// A tiny framework of its own, "toy", registered as built in through the
// plugin interface, holds host memory as native does in libxylem: tensors
// are made, an op runs through dispatch and results are read back, every
// read going through the toy device's launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "xylem/plugin/builtin.hpp"
#include "xylem/plugin/math.h"
#include "xylem/plugin/plugin.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem::Backend;
using xylem::DType;
using xylem::Error;
using xylem::ErrorCode;
using xylem::EventPtr;
using xylem::Layout;
using xylem::Tensor;
using xylem::plugin::Deps;
using xylem::plugin::OpCall;
using xylem::plugin::OpId;

void wait_for(Deps deps) {
  for (const auto& event : deps)
    if (event) event->wait();
}

// Where the k-th element of a view lies (row-major logical order).
std::int64_t element_at(const Layout& view, std::int64_t k) {
  std::int64_t at = view.offset();
  for (int axis = view.rank() - 1; axis >= 0; --axis) {
    const auto u = static_cast<std::size_t>(axis);
    at += k % view.dims()[u] * view.strides()[u];
    k /= view.dims()[u];
  }
  return at;
}

float& f32_at(const xylem::plugin::TensorArg& arg, std::int64_t k) {
  return static_cast<float*>(arg.data)[element_at(arg.view, k)];
}

// Host memory and f32 kernels that run at once on the calling thread, so
// every event is born complete.
class ToyDevice final : public xylem::plugin::Device {
 public:
  ToyDevice() {
    hardware_.framework = "toy";
    hardware_.name = "toy host heap";
    hardware_.kind = xylem::HardwareKind::cpu;
    hardware_.memory_bytes = std::uint64_t{1} << 30;
  }

  const xylem::Hardware& hardware() const noexcept override { return hardware_; }
  void* allocate(std::size_t bytes) override {
    void* data = std::malloc(bytes);
    if (data == nullptr) throw Error(ErrorCode::out_of_memory, "toy: malloc failed");
    return data;
  }
  void release(void* data, Deps after) noexcept override {
    wait_for(after);
    std::free(data);
  }
  EventPtr upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) override {
    wait_for(deps);
    std::memcpy(dst, host_src, bytes);
    return xylem::ready_event();
  }
  EventPtr download(void* host_dst, const void* src, std::size_t bytes, Deps deps) override {
    return upload(host_dst, src, bytes, deps);
  }
  bool supports(OpId op, DType dtype) const noexcept override {
    return dtype == DType::f32 && (op == OpId::core_copy_view || op == OpId::creation_fill || op == OpId::math_binary);
  }
  EventPtr launch(const OpCall& call, Deps deps) override {
    wait_for(deps);
    const std::int64_t n = call.t[0].view.numel();
    switch (call.op) {
      case OpId::core_copy_view:
        for (std::int64_t k = 0; k < n; ++k) f32_at(call.t[1], k) = f32_at(call.t[0], k);
        break;
      case OpId::creation_fill:
        for (std::int64_t k = 0; k < n; ++k) f32_at(call.t[0], k) = static_cast<float>(call.f[0]);
        break;
      case OpId::math_binary:
        if (call.i[0] != XY_BIN_ADD) throw Error(ErrorCode::unsupported, "toy: only adds");
        for (std::int64_t k = 0; k < call.t[2].view.numel(); ++k)
          f32_at(call.t[2], k) = f32_at(call.t[0], k) + f32_at(call.t[1], k);
        break;
      default:
        throw Error(ErrorCode::unsupported, "toy: no kernel for " + std::string(xylem::plugin::op_name(call.op)));
    }
    ++launches[static_cast<std::size_t>(call.op)];
    return xylem::ready_event();
  }
  EventPtr host_task(std::function<void()> fn, Deps deps) override {
    wait_for(deps);
    fn();
    return xylem::ready_event();
  }
  void synchronize() override {}

  std::array<int, xylem::plugin::kOpCount> launches{};

 private:
  xylem::Hardware hardware_;
};

class ToyFramework final : public xylem::plugin::Framework {
 public:
  ToyFramework() : hardware_{device_.hardware()} {}
  std::string name() const override { return "toy"; }
  const std::vector<xylem::Hardware>& hardware() const noexcept override { return hardware_; }
  xylem::plugin::Device& device(std::size_t index) override {
    if (index != 0) throw Error(ErrorCode::invalid_argument, "toy has one device");
    return device_;
  }
  ToyDevice device_;

 private:
  std::vector<xylem::Hardware> hardware_;
};

ToyFramework* g_toy = nullptr;

const XylemPluginInfo kToyEntry{xylem::plugin::kApiVersion, "toy", [](const char**) -> xylem::plugin::Framework* {
                                  g_toy = new ToyFramework();
                                  return g_toy;
                                }};

// Registered as libxylem registers native: before main, as host memory.
// No plugin is loaded here: each links libxylem, a core of its own.
[[maybe_unused]] const bool toy_registered =
    (unsetenv("XYLEM_PLUGIN_PATH"), xylem::plugin::register_builtin(kToyEntry, xylem::plugin::BuiltinMemory::host),
     true);

int copy_view_launches() { return g_toy->device_.launches[static_cast<std::size_t>(OpId::core_copy_view)]; }

TEST(CoreAlone, MakesTensorsRunsAnOpAndReadsBack) {
  const Backend toy = Backend::open("toy");
  EXPECT_EQ(toy.framework(), "toy");
  const auto a = Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, Layout{2, 3});
  const Tensor b = xylem::full(toy, Layout{2, 3}, xylem::f32, 0.5);
  const int reads_before = copy_view_launches();
  const Tensor sum = xylem::add(toy, a, b);
  EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
  // A transposed view is gathered by the device's copy_view, like every read.
  EXPECT_EQ(a.transpose(0, 1).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(copy_view_launches(), reads_before + 2);
  EXPECT_EQ(sum.transfers(), 0u);  // host memory is the toy device's: nothing moved
}

TEST(CoreAlone, AnOpTheFrameworkLacksIsUnsupported) {
  const Backend toy = Backend::open("toy");
  const auto x = Tensor::from(std::vector<float>{1, 2});
  try {
    (void)xylem::mul(toy, x, x);
    FAIL() << "mul ran on a framework that only adds";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
}

TEST(CoreAlone, FrameworksListNativeAsAbsent) {
  std::vector<std::string> names;
  for (const auto& status : Backend::frameworks()) {
    names.push_back(status.name);
    if (status.name == "native") {
      EXPECT_FALSE(status.available);
      EXPECT_NE(status.reason.find("libxylem_native.so not found"), std::string::npos) << status.reason;
    }
    if (status.name == "toy") {
      EXPECT_TRUE(status.available) << status.reason;
      EXPECT_EQ(status.source, "built in");
      ASSERT_EQ(status.hardware.size(), 1u);
      EXPECT_EQ(status.hardware[0].name, "toy host heap");
    }
  }
  // The known names in order of preference, then the built-in framework.
  const std::vector<std::string> expected{"cuda", "opencl", "native", "toy"};
  ASSERT_GE(names.size(), expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), names.begin()));
  try {
    (void)Backend::native();
    FAIL() << "Backend::native() worked without native";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::plugin_unavailable) << e.what();
  }
}

TEST(CoreAlone, RegistrationClosesOnceFrameworksAreListed) {
  (void)Backend::frameworks();
  static const XylemPluginInfo late{xylem::plugin::kApiVersion, "late",
                                    [](const char**) -> xylem::plugin::Framework* { return nullptr; }};
  try {
    xylem::plugin::register_builtin(late, xylem::plugin::BuiltinMemory::device);
    FAIL() << "registered after the frameworks were listed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal) << e.what();
  }
}

}  // namespace
