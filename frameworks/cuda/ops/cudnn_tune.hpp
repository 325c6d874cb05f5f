#pragma once
// The cuDNN convolutions' entries in the tuning cache (xylem/plugin/tune.hpp).
// With tuning on (XYLEM_TUNE=1, `xylem tune`) a shape's first call times
// both engines as XYLEM_CUDA_CUDNN_FIND=1 does, and the outcome is stored:
// which engine won ("graph" or "legacy", op "cuda cudnn engine <pass>")
// and the legacy engine's algorithm and math mode ("algo 1 math 2", op
// "cuda cudnn legacy <pass>"). With tuning off, a stored outcome replaces
// the heuristics' choice for the shape.
#include <optional>
#include <string>

#include "cudnn_package.hpp"
#include "xylem/plugin/tune.hpp"

namespace xylem::cuda {

enum class CudnnTuned { engine, legacy_algo };

// The key of a shape's entry: the device's name, the driver and cuDNN
// versions, the pass, dtype, sizes and math mode.
[[nodiscard]] plugin::tune::Key cudnn_tune_key(const CudnnPackage& pkg, CudnnTuned what, ConvPass pass, DType dtype,
                                               const ConvShape& s);

struct LegacyAlgo {
  int algo;  // of the pass's cudnnConvolution*Algo_t
  int math;  // cudnnMathType_t
};
[[nodiscard]] std::string legacy_algo_name(LegacyAlgo a);
// nullopt for anything legacy_algo_name does not write.
[[nodiscard]] std::optional<LegacyAlgo> parse_legacy_algo(const std::string& choice);

}  // namespace xylem::cuda
