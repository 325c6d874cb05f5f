// cuDNN convolutions: the per-device package and the choice between the
// graph and legacy engines (see cudnn_package.hpp).
#include <cstdlib>
#include <string>
#include <string_view>

#include "../check.hpp"
#include "cudnn_package.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

enum class ApiChoice { automatic, graph_only, legacy_only };

// XYLEM_CUDA_CUDNN_API: unset or "auto" (the graph engine, the legacy one
// for shapes it has no plan for), "graph" (the graph engine alone: a shape
// it has no plan for raises unsupported, which shows where the fallback
// would act) or "legacy". Read at each call.
ApiChoice api_choice(int device) {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_API");
  const std::string_view s = v ? v : "";
  if (s.empty() || s == "auto") return ApiChoice::automatic;
  if (s == "graph") return ApiChoice::graph_only;
  if (s == "legacy") return ApiChoice::legacy_only;
  throw Error(ErrorCode::invalid_argument, "cuda:" + std::to_string(device) + " nn::conv2d: XYLEM_CUDA_CUDNN_API=" +
                                               std::string(s) + " is none of auto, graph, legacy");
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
}

CudnnPackage::~CudnnPackage() {
  plans_.clear();
  if (handle_) (void)lib_->cudnnDestroy(handle_);  // errors ignored: destructors run at exit too
}

bool cudnn_find_wanted() noexcept {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_FIND");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

bool conv_cudnn(ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  auto& pkg = ctx.packages->get<CudnnPackage>(kCudnnPackage, [&] {
    return std::make_unique<CudnnPackage>(ctx.device, ctx.stream);
  });
  if (!pkg.available()) return false;
  const ApiChoice api = api_choice(ctx.device);
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
