// The cuDNN convolutions' entries in the tuning cache (see cudnn_tune.hpp).
#include "cudnn_tune.hpp"

#include <cstdio>

namespace xylem::cuda {

namespace {

// Bumped when what the choices mean changes.
constexpr std::uint32_t kCudnnChoicesVersion = 1;

std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();  // the name only labels the entry: no error of its own
    return "cuda:" + std::to_string(device);
  }
  return prop.name;
}

const char* pass_name(ConvPass pass) {
  return pass == ConvPass::forward ? "forward" : pass == ConvPass::grad_data ? "grad_data" : "grad_filter";
}

}  // namespace

plugin::tune::Key cudnn_tune_key(const CudnnPackage& pkg, CudnnTuned what, ConvPass pass, DType dtype,
                                 const ConvShape& s) {
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError();
  char shape[256];
  std::snprintf(shape, sizeof shape,
                "%s%s N%lld C%lld H%lld W%lld K%lld R%lld S%lld st%lldx%lld pad%lldx%lld dil%lldx%lld g%lld",
                std::string(name(dtype)).c_str(), dtype == DType::f32 && conv_tf32_allowed() ? " tf32" : "",
                (long long)s.N, (long long)s.C, (long long)s.H, (long long)s.W, (long long)s.K, (long long)s.R,
                (long long)s.S, (long long)s.stride_h, (long long)s.stride_w, (long long)s.pad_h, (long long)s.pad_w,
                (long long)s.dil_h, (long long)s.dil_w, (long long)s.groups);
  return {device_name(pkg.device()),
          "driver " + std::to_string(driver) + ", cuDNN " + std::to_string(pkg.lib().cudnnGetVersion()),
          std::string(what == CudnnTuned::engine ? "cuda cudnn engine " : "cuda cudnn legacy ") + pass_name(pass),
          shape, kCudnnChoicesVersion};
}

std::string legacy_algo_name(LegacyAlgo a) {
  return "algo " + std::to_string(a.algo) + " math " + std::to_string(a.math);
}

std::optional<LegacyAlgo> parse_legacy_algo(const std::string& choice) {
  LegacyAlgo a{};
  int used = 0;
  if (std::sscanf(choice.c_str(), "algo %d math %d%n", &a.algo, &a.math, &used) != 2 ||
      static_cast<std::size_t>(used) != choice.size() || a.algo < 0 || a.math < 0)
    return std::nullopt;
  return a;
}

}  // namespace xylem::cuda
