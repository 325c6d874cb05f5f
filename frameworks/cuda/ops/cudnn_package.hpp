#pragma once
// What the cuDNN users share (the two convolution engines of conv2d.hpp,
// the recurrent stacks, attention): the
// per-device cuDNN handle, bound to the compute stream, and the plans chosen
// per shape, in the device's package cache.
//
// The engines: conv2d_cudnn_graph.cpp (cuDNN's graph API, engine heuristics
// as PyTorch uses them; the default) and conv2d_cudnn_legacy.cpp (the
// cudnnConvolution* functions; XYLEM_CUDA_CUDNN_API=legacy, the fallback
// for shapes the graph API gives no plan for, and the faster of the two when
// both are timed). conv2d_cudnn.cpp picks between them.
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "conv2d.hpp"
#include "cudnn_library.hpp"
#include "cudnn_tail.hpp"

namespace xylem::cuda {

// `either`: the choice between the two engines' timed plans.
enum class CudnnApi : std::int64_t { graph, legacy, either };

// Everything a plan depends on: API, pass, dtype, sizes, parameters, math
// mode, how it was chosen (heuristics or timing) and the operands' pointer
// alignment.
struct CudnnKey {
  std::int64_t v[22];
  bool operator==(const CudnnKey& o) const noexcept { return std::memcmp(v, o.v, sizeof v) == 0; }
};
struct CudnnKeyHash {
  std::size_t operator()(const CudnnKey& k) const noexcept {
    std::size_t h = 1469598103934665603ull;  // FNV-1a over the fields
    for (std::int64_t x : k.v) h = (h ^ std::size_t(x)) * 1099511628211ull;
    return h;
  }
};

// The largest power of two (up to 16) that divides the address.
[[nodiscard]] inline int alignment_of(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a % 16 == 0 ? 16 : a % 8 == 0 ? 8 : a % 4 == 0 ? 4 : 2;
}

[[nodiscard]] inline CudnnKey cudnn_key(CudnnApi api, ConvPass pass, DType dtype, const ConvShape& s, bool tf32,
                                        bool timed, const ConvOperands& ops) noexcept {
  return {{std::int64_t(api), std::int64_t(pass), std::int64_t(dtype), s.N, s.C, s.H, s.W, s.K, s.R, s.S,
           s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dil_h, s.dil_w, s.groups, std::int64_t(tf32), std::int64_t(timed),
           alignment_of(ops.in0), alignment_of(ops.in1), alignment_of(ops.out)}};
}

[[nodiscard]] inline const char* conv_what(ConvPass p) noexcept {
  return p == ConvPass::forward ? "nn::conv2d" : p == ConvPass::grad_data ? "nn::conv2d_grad_data"
                                                                          : "nn::conv2d_grad_filter";
}

// A plan of either engine; one without a usable algorithm is kept too, so
// that the next call of the shape goes straight to the fallback.
struct CudnnPlan {
  virtual ~CudnnPlan() = default;
  [[nodiscard]] virtual bool usable() const noexcept = 0;
};

class CudnnPackage final : public plugin::Package {
 public:
  // A cuDNN that loads but cannot serve this device (an architecture it
  // does not know, a driver too old) leaves the package unavailable:
  // convolutions there use im2col.
  CudnnPackage(int device, cudaStream_t stream);
  ~CudnnPackage() override;
  CudnnPackage(const CudnnPackage&) = delete;
  CudnnPackage& operator=(const CudnnPackage&) = delete;

  [[nodiscard]] bool available() const noexcept { return handle_ != nullptr; }
  [[nodiscard]] const CudnnLibrary& lib() const noexcept { return *lib_; }
  [[nodiscard]] cudnnHandle_t handle() const noexcept { return handle_; }
  // Sends the handle's work to `stream` (the launch's: the compute stream,
  // or a recording's capture stream); launches are serialised per device.
  void follow(cudaStream_t stream);
  [[nodiscard]] int device() const noexcept { return device_; }
  // Launches are serialised per device (the compute stream's lock), so the
  // plans need no lock of their own.
  std::unordered_map<CudnnKey, std::unique_ptr<CudnnPlan>, CudnnKeyHash>& plans() noexcept { return plans_; }
  // Per shape (keys of CudnnApi::either), whether the legacy engine's timed
  // plan beat the graph engine's.
  std::unordered_map<CudnnKey, bool, CudnnKeyHash>& legacy_faster() noexcept { return legacy_faster_; }
  // The recurrent stacks' descriptors per shape (rnn_cudnn.cpp), keyed as
  // that file's RnnKey says.
  std::map<std::array<std::int64_t, 10>, std::unique_ptr<CudnnPlan>>& rnn_plans() noexcept { return rnn_plans_; }
  // Attention's fused plans per call layout (attention_cudnn.cpp's key_of).
  std::map<std::vector<std::int64_t>, std::unique_ptr<CudnnPlan>>& attention_plans() noexcept {
    return attention_plans_;
  }
  // Convolutions with an elementwise tail per shape and tail (the graph
  // engine's tail_key).
  std::map<std::vector<std::int64_t>, std::unique_ptr<CudnnPlan>>& epilogue_plans() noexcept {
    return epilogue_plans_;
  }

 private:
  int device_;
  const CudnnLibrary* lib_;
  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unordered_map<CudnnKey, std::unique_ptr<CudnnPlan>, CudnnKeyHash> plans_;
  std::unordered_map<CudnnKey, bool, CudnnKeyHash> legacy_faster_;
  std::map<std::array<std::int64_t, 10>, std::unique_ptr<CudnnPlan>> rnn_plans_;
  std::map<std::vector<std::int64_t>, std::unique_ptr<CudnnPlan>> attention_plans_;
  std::map<std::vector<std::int64_t>, std::unique_ptr<CudnnPlan>> epilogue_plans_;
};

// The two engines: each returns false (nothing enqueued) when it has no
// algorithm for the shape (the graph engine then says why); errors of an
// available cuDNN throw.
[[nodiscard]] bool conv_cudnn_graph(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                    const ConvOperands& ops, const Context& ctx, std::string* why_not);
[[nodiscard]] bool conv_cudnn_legacy(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                     const ConvOperands& ops, const Context& ctx);

// nn::conv2d_epilogue's tail as the graph engine fuses it: the program, its
// inputs 1..3 and y0 as cuDNN is told them (cudnn_tail.hpp), and the inputs'
// data (ops.out of the forward pass is y0).
struct ConvTail {
  plugin::fused::Words words{};
  std::array<std::optional<TailTensor>, 3> inputs;
  std::array<const void*, 3> input_data{};
  TailTensor y0;
};

// The forward pass with its tail fused in by the graph engine; false
// (nothing enqueued) where cuDNN is unavailable or has no plan for the
// fused graph (`why_not` says why).
[[nodiscard]] bool conv_cudnn_fused(DType dtype, const ConvShape& s, const ConvOperands& ops, const ConvTail& tail,
                                    const Context& ctx, std::string* why_not);

// With XYLEM_CUDA_CUDNN_FIND=1, the time of each engine's fastest candidate
// for the shape (its plan is made on the first call and kept); infinity
// where the engine has no plan or did not time it.
[[nodiscard]] float conv_cudnn_graph_timed_ms(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                              const ConvOperands& ops, const Context& ctx);
[[nodiscard]] float conv_cudnn_legacy_timed_ms(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                               const ConvOperands& ops, const Context& ctx);

// XYLEM_CUDA_CUDNN_FIND=1: time the candidates on the call's own tensors
// instead of taking the heuristics' first (torch.backends.cudnn.benchmark).
// Timed choices (cudnnFind, the graph API's timed engines) and the tuning
// cache's stored algorithms are only used on data at 16-byte aligned
// addresses: one chosen there may fault on a view at an odd address (the
// H100 reported a misaligned address), so such calls keep the heuristics'.
[[nodiscard]] bool cudnn_data_aligned(const ConvOperands& ops) noexcept;
[[nodiscard]] bool cudnn_find_wanted(const ConvOperands& ops) noexcept;
// XYLEM_CUDA_CUDNN_LOG=1: print each timed candidate's time to stderr.
[[nodiscard]] bool cudnn_log_wanted() noexcept;

// The largest workspace a convolution may take.
inline constexpr std::size_t kMaxCudnnWorkspace = std::size_t{1} << 30;

}  // namespace xylem::cuda
