// Interop with CUDA memory and streams the application made with its own
// CUDA runtime, as PyTorch, CuPy or JAX do: cudaMalloc'd memory wrapped as
// a tensor and released once, and work ordered between the application's
// streams and xylem's with import_from / export_to, on the device, while
// the host waits for nothing. Without a usable CUDA device the tests say
// "[  SKIPPED ] cuda: <why>".
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/support.hpp"
#include "xylem/interop.hpp"
#include "xylem/math.hpp"

namespace {

using xylem::Backend;
using xylem::DType;
using xylem::Layout;
using xylem::Tensor;
namespace interop = xylem::interop;

constexpr std::size_t kCount = 1 << 20;
constexpr auto kStall = std::chrono::milliseconds(300);

void check(cudaError_t err, const char* what) {
  ASSERT_EQ(err, cudaSuccess) << what << ": " << cudaGetErrorString(err);
}

// Holds a stream back on the device: a host function that sleeps.
void CUDART_CB stall(void*) { std::this_thread::sleep_for(kStall); }

class CudaInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      backend.emplace(Backend::open("cuda"));
    } catch (const xylem::Error& e) {
      std::cout << "[  SKIPPED ] cuda: " << e.what() << std::endl;
      GTEST_SKIP() << "cuda: " << e.what();
    }
    check(cudaSetDevice(backend->hardware().index), "cudaSetDevice");
    check(cudaMalloc(reinterpret_cast<void**>(&device), kCount * sizeof(float)), "cudaMalloc");
    check(cudaMallocHost(reinterpret_cast<void**>(&pinned), kCount * sizeof(float)), "cudaMallocHost");
    check(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), "cudaStreamCreate");
    values = xylem_test::random_vector<float>(rng, kCount, -1, 1);
  }
  void TearDown() override {
    if (!backend) return;
    backend->synchronize();
    if (producer != nullptr) (void)cudaStreamDestroy(producer);
    if (consumer != nullptr) (void)cudaStreamDestroy(consumer);
    if (pinned != nullptr) (void)cudaFreeHost(pinned);
    if (device != nullptr && releases.load() == 0) (void)cudaFree(device);
  }

  // The application's memory as a tensor; the release frees it.
  Tensor wrap() {
    return interop::wrap(*backend, device, Layout{static_cast<std::int64_t>(kCount)}, DType::f32, [this] {
      (void)cudaFree(device);
      releases.fetch_add(1);
    });
  }
  std::vector<float> pinned_values() const { return {pinned, pinned + kCount}; }
  static std::vector<float> negated(std::vector<float> v) {
    for (float& x : v) x = -x;
    return v;
  }

  std::optional<Backend> backend;
  float* device = nullptr;
  float* pinned = nullptr;
  cudaStream_t producer = nullptr;
  cudaStream_t consumer = nullptr;
  std::atomic<int> releases{0};
  std::uint64_t seed = xylem_test::fresh_seed();
  std::mt19937_64 rng{seed};
  std::vector<float> values;
};

TEST_F(CudaInterop, wrap_cuda_malloc) {
  check(cudaMemcpy(device, values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  {
    Tensor t = wrap();
    EXPECT_TRUE(t.is_current_on(*backend));
    EXPECT_EQ(interop::data_pointer(t, *backend), device);
    EXPECT_EQ(t.to_vector<float>(), values);
    xylem::neg(*backend, t, t);
    interop::synchronize(t, *backend);
    check(cudaMemcpy(pinned, device, kCount * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    EXPECT_EQ(pinned_values(), negated(values));
    EXPECT_EQ(interop::data_pointer(t.slice(0, 5, 9), *backend), device + 5);
  }
  backend->synchronize();
  EXPECT_EQ(releases.load(), 1);
}

// producer writes (late) -> xylem negates in place -> consumer reads: right
// only if each side waited for the other on the device; the host returns
// from every call at once.
TEST_F(CudaInterop, streams_in_and_out_without_host_sync) {
  check(cudaMemset(device, 0, kCount * sizeof(float)), "cudaMemset");
  std::copy(values.begin(), values.end(), pinned);
  Tensor t = wrap();
  const auto start = std::chrono::steady_clock::now();
  check(cudaLaunchHostFunc(producer, stall, nullptr), "cudaLaunchHostFunc");
  check(cudaMemcpyAsync(device, pinned, kCount * sizeof(float), cudaMemcpyHostToDevice, producer), "cudaMemcpyAsync");
  interop::import_from(t, *backend, producer);
  interop::mark_modified(t, *backend);
  xylem::neg(*backend, t, t);
  interop::export_to(t, *backend, consumer);
  check(cudaMemcpyAsync(pinned, device, kCount * sizeof(float), cudaMemcpyDeviceToHost, consumer), "cudaMemcpyAsync");
  const auto queued = std::chrono::steady_clock::now() - start;
  EXPECT_LT(queued, kStall / 2) << "a call waited on the host for the stalled producer";
  check(cudaStreamSynchronize(consumer), "cudaStreamSynchronize");
  EXPECT_EQ(pinned_values(), negated(values));
}

// consumer reads (late) -> xylem overwrites: the write must wait for the
// read once import_from says so.
TEST_F(CudaInterop, xylem_writes_after_a_consumer_read) {
  check(cudaMemcpy(device, values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  Tensor t = wrap();
  interop::export_to(t, *backend, consumer);
  check(cudaLaunchHostFunc(consumer, stall, nullptr), "cudaLaunchHostFunc");
  check(cudaMemcpyAsync(pinned, device, kCount * sizeof(float), cudaMemcpyDeviceToHost, consumer), "cudaMemcpyAsync");
  interop::import_from(t, *backend, consumer);
  xylem::fill(*backend, t, 7.0);
  check(cudaStreamSynchronize(consumer), "cudaStreamSynchronize");
  EXPECT_EQ(pinned_values(), values);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(kCount, 7.0f));
}

TEST_F(CudaInterop, native_queue_is_a_stream) {
  check(cudaMemcpy(device, values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  Tensor t = wrap();
  xylem::neg(*backend, t, t);
  // Work on xylem's own stream follows its ops with no export needed: the
  // ops before native_queue's call (automatic fusion may still hold the
  // neg until then).
  auto* stream = static_cast<cudaStream_t>(interop::native_queue(*backend));
  ASSERT_NE(stream, nullptr);
  check(cudaMemcpyAsync(pinned, device, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  EXPECT_EQ(pinned_values(), negated(values));
}

}  // namespace
