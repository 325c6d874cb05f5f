// cuDNN convolutions: the per-device package and the choice between the
// graph and legacy engines (see cudnn_package.hpp).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "../check.hpp"
#include "cudnn_package.hpp"
#include "cudnn_tune.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

enum class ApiChoice { automatic, graph_only, legacy_only };

bool flag_set(const char* name) noexcept {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// XYLEM_CUDA_CUDNN_API: unset or "auto" (the graph engine, the legacy one
// for shapes it has no plan for; with XYLEM_CUDA_CUDNN_FIND=1 or tuning on,
// whichever engine's timed plan is faster, stored in the tuning cache; with
// neither, the stored winner where there is one), "graph" (the graph
// engine alone: a shape it has no plan for raises unsupported, which shows
// where the fallback would act) or "legacy". Read at each call.
ApiChoice api_choice(int device) {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_API");
  const std::string_view s = v ? v : "";
  if (s.empty() || s == "auto") return ApiChoice::automatic;
  if (s == "graph") return ApiChoice::graph_only;
  if (s == "legacy") return ApiChoice::legacy_only;
  throw Error(ErrorCode::invalid_argument, "cuda:" + std::to_string(device) + " nn::conv2d: XYLEM_CUDA_CUDNN_API=" +
                                               std::string(s) + " is none of auto, graph, legacy");
}

// Whether the legacy engine's timed plan beats the graph engine's for the
// shape; both plans are made (and timed) on the shape's first call.
bool legacy_faster(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
                   const Context& ctx) {
  const CudnnKey key = cudnn_key(CudnnApi::either, pass, dtype, s, dtype == DType::f32 && conv_tf32_allowed(), true, ops);
  auto& known = pkg.legacy_faster();
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const float legacy_ms = conv_cudnn_legacy_timed_ms(pkg, pass, dtype, s, ops, ctx),
              graph_ms = conv_cudnn_graph_timed_ms(pkg, pass, dtype, s, ops, ctx);
  if (cudnn_log_wanted())
    std::fprintf(stderr, "xylem cudnn find: %s N%lld C%lld H%lld W%lld K%lld R%lld: graph %.3f ms, legacy %.3f ms\n",
                 conv_what(pass), (long long)s.N, (long long)s.C, (long long)s.H, (long long)s.W, (long long)s.K,
                 (long long)s.R, double(graph_ms), double(legacy_ms));
  const bool legacy = legacy_ms < graph_ms;
  // Only a race with a finisher is worth keeping.
  if (std::min(legacy_ms, graph_ms) < std::numeric_limits<float>::infinity())
    (void)plugin::tune::store(cudnn_tune_key(pkg, CudnnTuned::engine, pass, dtype, s),
                              {legacy ? "legacy" : "graph", double(std::min(legacy_ms, graph_ms)) * 1e-3});
  return known.emplace(key, legacy).first->second;
}

// Untimed: whether the tuning cache holds a race the legacy engine won for
// the shape (looked up once per shape, then remembered).
bool legacy_tuned(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops) {
  const bool tf32 = dtype == DType::f32 && conv_tf32_allowed();
  const CudnnKey key = cudnn_key(CudnnApi::either, pass, dtype, s, tf32, false, ops);
  auto& known = pkg.legacy_faster();
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const auto stored = plugin::tune::lookup(cudnn_tune_key(pkg, CudnnTuned::engine, pass, dtype, s));
  return known.emplace(key, stored && stored->choice == "legacy").first->second;
}

}  // namespace

CudnnPackage::CudnnPackage(int device, cudaStream_t stream) : device_(device), lib_(cudnn_library()) {
  if (lib_ == nullptr) return;
  XY_CUDA(cudaSetDevice(device), device, "cuDNN setup");
  cudnnHandle_t h = nullptr;
  if (lib_->cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) return;
  if (lib_->cudnnSetStream(h, stream) != CUDNN_STATUS_SUCCESS) {
    (void)lib_->cudnnDestroy(h);
    return;
  }
  handle_ = h;
  stream_ = stream;
}

void CudnnPackage::follow(cudaStream_t stream) {
  if (stream == stream_) return;
  if (lib_->cudnnSetStream(handle_, stream) != CUDNN_STATUS_SUCCESS)
    throw Error(ErrorCode::internal, "cuda:" + std::to_string(device_) + ": cudnnSetStream failed");
  stream_ = stream;
}

CudnnPackage::~CudnnPackage() {
  plans_.clear();
  rnn_plans_.clear();
  attention_plans_.clear();
  epilogue_plans_.clear();
  if (handle_) (void)lib_->cudnnDestroy(handle_);  // errors ignored: destructors run at exit too
}

bool cudnn_data_aligned(const ConvOperands& ops) noexcept {
  return alignment_of(ops.in0) == 16 && alignment_of(ops.in1) == 16 && alignment_of(ops.out) == 16;
}
bool cudnn_find_wanted(const ConvOperands& ops) noexcept {
  return (flag_set("XYLEM_CUDA_CUDNN_FIND") || plugin::tune::enabled()) && cudnn_data_aligned(ops);
}
bool cudnn_log_wanted() noexcept { return flag_set("XYLEM_CUDA_CUDNN_LOG"); }

bool conv_cudnn(ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  auto& pkg = ctx.packages->get<CudnnPackage>(kCudnnPackage, [&] {
    return std::make_unique<CudnnPackage>(ctx.device, ctx.stream);
  });
  if (!pkg.available()) return false;
  pkg.follow(ctx.stream);
  const ApiChoice api = api_choice(ctx.device);
  // Timed, both engines' fastest candidates compete: in full f32 the legacy
  // API's cudnnFind reaches Winograd algorithms that no graph-API engine
  // list offers (on the H100, Overfeat's 1024->1024 3x3 convolution ran in
  // 2.3 ms through it against 8.0 ms for the graph API's best).
  // A race run earlier, by this process or one before (the tuning cache),
  // decides the same way.
  if (api == ApiChoice::automatic &&
      (cudnn_find_wanted(ops) ? legacy_faster(pkg, pass, dtype, s, ops, ctx) : legacy_tuned(pkg, pass, dtype, s, ops)))
    return conv_cudnn_legacy(pkg, pass, dtype, s, ops, ctx);
  if (api != ApiChoice::legacy_only) {
    std::string why_not;
    if (conv_cudnn_graph(pkg, pass, dtype, s, ops, ctx, &why_not)) return true;
    if (api == ApiChoice::graph_only)
      throw Error(ErrorCode::unsupported, "cuda:" + std::to_string(ctx.device) + " " + conv_what(pass) +
                                              " (" + std::string(name(dtype)) + "): cuDNN's graph API: " + why_not);
  }
  return conv_cudnn_legacy(pkg, pass, dtype, s, ops, ctx);
}

}  // namespace xylem::cuda
