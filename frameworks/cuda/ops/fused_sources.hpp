#pragma once
// Text embedded in the CUDA plugin at build time (the OpenCL plugin's
// cmake/embed_sources.cmake): what NVRTC compiles with each fused kernel.
#include <string_view>

namespace xylem::cuda::sources {

extern const std::string_view math_h;  // include/xylem/plugin/math.h

}  // namespace xylem::cuda::sources
