#pragma once
// The OpenCL C sources embedded in the plugin at build time
// (cmake/embed_sources.cmake turns each file into a string literal).
#include <string_view>

namespace xylem::opencl::sources {

extern const std::string_view math_h;      // include/xylem/plugin/math.h
extern const std::string_view common;      // kernels/common.cl
extern const std::string_view creation;    // kernels/creation.cl
extern const std::string_view copy;        // kernels/copy.cl
extern const std::string_view blas;        // kernels/blas.cl
extern const std::string_view activation;  // kernels/activation.cl
extern const std::string_view gemm;        // kernels/gemm.cl
extern const std::string_view convert;     // kernels/convert.cl

}  // namespace xylem::opencl::sources
