#pragma once
// Kernels compiled at run time: CUDA C++ source through NVRTC
// (nvrtc_library.hpp, loaded like cuDNN) to a CUBIN for one GPU
// architecture, loaded with the runtime's library API (cudaLibraryLoadData,
// CUDA 12+) and kept on disk through the program cache the OpenCL plugin
// uses (frameworks/opencl/program_cache.hpp, no OpenCL in it), keyed by
// everything the CUBIN depends on. math::fused (fused.cpp) and
// nn::softmax_epilogue (softmax_epilogue.cpp) build theirs here; each keeps
// the kernels it got in memory.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace xylem::cuda {

struct NvrtcBuild {
  std::string what;    // the op, for errors: "math::fused"
  std::string label;   // what is built, for errors: "math::fused 0a1b... f32"
  std::string source;  // the whole translation unit
  std::string key;     // the disk cache's key, less the architecture, NVRTC and the source's hash
  std::vector<std::string> kernels;  // extern "C" names, in the order returned
};

// "sm_90" for the GPU of `device` (asked once per device).
[[nodiscard]] std::string nvrtc_architecture(int device);

// The build's kernels for `device`'s architecture: from the disk cache, else
// NVRTC. A loaded library serves every device of the process (the runtime
// loads it into each context on first launch). Error(unsupported) where
// NVRTC is missing, Error(compile_failed) with NVRTC's log where it fails.
[[nodiscard]] std::vector<cudaKernel_t> nvrtc_kernels(const NvrtcBuild& build, int device);

}  // namespace xylem::cuda
