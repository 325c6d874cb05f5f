#pragma once
// The CUDA framework's kernel table: one slot per (op, dtype), filled by each
// op family file (creation.cu, copy.cu, blas.cu, elementwise.cu, ...) in its
// register_<family>(). A kernel enqueues its work on ctx.stream and returns;
// the device records the completion event.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <cstddef>
#include <mutex>

#include "../memory.hpp"
#include "xylem/plugin/kernel_table.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::cuda {

// The cuBLAS handle of one device, with its workspace; made on first use
// (creating a handle costs tens of milliseconds).
class BlasState {
 public:
  BlasState(int device, cudaStream_t stream) noexcept : device_(device), stream_(stream) {}
  ~BlasState();
  BlasState(const BlasState&) = delete;
  BlasState& operator=(const BlasState&) = delete;
  // The handle, its work going to `stream` (the compute stream, or a
  // recording's capture stream: recording.hpp). Launches are serialised
  // per device, so following the stream of the launch is safe.
  [[nodiscard]] cublasHandle_t handle(cudaStream_t stream);
  // The handle's workspace (kWorkspaceBytes), after handle(): cuBLASLt's
  // matmuls use it too, in the same stream order.
  [[nodiscard]] void* workspace() const noexcept { return workspace_->get(); }

  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

 private:
  int device_;
  cudaStream_t stream_;  // the one the handle's work goes to now
  std::once_flag once_;
  std::unique_ptr<DeviceBuffer> workspace_;
  cublasHandle_t handle_ = nullptr;
};

// Per-device library state built on first use (Context::packages): the
// cuDNN handle with its algorithm choices, the cuFFT plans.
enum PackageSlot : std::size_t { kCudnnPackage, kFftPackage, kPackageSlots };
using Packages = plugin::PackageCache<kPackageSlots>;

// What a kernel may use. Launches are serialised per device (under the
// compute stream's lock), so a kernel may use the scratch buffer freely.
struct Context {
  int device = 0;             // CUDA ordinal, for cudaSetDevice and error messages
  cudaStream_t stream = nullptr;
  int multiprocessors = 1;
  BlasState* blas = nullptr;
  void* scratch = nullptr;    // kScratchBytes of device memory, ordered on stream
  static constexpr std::size_t kScratchBytes = 64 << 10;
  // Temporary device memory for this launch, freed in stream order when the
  // kernel function returns (see TempBuffer); op_seq is the launching op's
  // compute sequence number, set by the device before each launch.
  CachingAllocator* memory = nullptr;
  std::uint64_t op_seq = 0;
  // True while a recording captures the launches (stream is then its
  // capture stream): temporaries come from the graph (TempBuffer).
  bool capturing = false;
  [[nodiscard]] TempBuffer temp(std::size_t bytes) const {
    return capturing ? TempBuffer(bytes, stream, device) : TempBuffer(*memory, bytes, op_seq);
  }
  Packages* packages = nullptr;
};

using Kernel = void (*)(const plugin::OpCall& call, const Context& ctx);

using KernelTable = plugin::KernelTable<Kernel>;
using plugin::dispatch_dtype;

void register_creation(KernelTable& table);
void register_copy(KernelTable& table);
void register_blas(KernelTable& table);
// ger, syrk, trsm and geam through cuBLAS (blas_extra.cu).
void register_blas_extra(KernelTable& table);
void register_layer_norm(KernelTable& table);
void register_batch_norm(KernelTable& table);
void register_pool(KernelTable& table);
void register_lrn(KernelTable& table);
void register_conv2d(KernelTable& table);
void register_matrix(KernelTable& table);
void register_elementwise(KernelTable& table);
void register_cast(KernelTable& table);
void register_reduce(KernelTable& table);
void register_softmax(KernelTable& table);
void register_dropout(KernelTable& table);
void register_cross_entropy(KernelTable& table);
void register_optim(KernelTable& table);
void register_rnn(KernelTable& table);
void register_rnn_cudnn(KernelTable& table);
// Indexing along an axis: gather, scatter and their index check.
void register_index(KernelTable& table);
// Scaled dot-product attention: the forward and the gradients.
void register_attention(KernelTable& table);
// Discrete Fourier transforms (cuFFT, fft.cu); is_fft says which ops need cuFFT.
void register_fft(KernelTable& table);
// math::fused: chains compiled at run time by NVRTC (fused.cpp).
void register_fused(KernelTable& table);
// blas::gemm_epilogue: one cuBLASLt matmul where its epilogues cover the
// tail, else cuBLAS's gemm, then the fused tail (gemm_epilogue.cpp).
void register_gemm_epilogue(KernelTable& table);
// nn::softmax_epilogue: a row's softmax and its tail in one NVRTC-compiled
// kernel (softmax_epilogue.cpp).
void register_softmax_epilogue(KernelTable& table);
[[nodiscard]] bool is_fft(plugin::OpId op) noexcept;

// The table with every family registered (built once).
[[nodiscard]] const KernelTable& kernels();

}  // namespace xylem::cuda
