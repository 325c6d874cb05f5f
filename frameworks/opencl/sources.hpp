#pragma once
// The OpenCL C sources embedded in the plugin at build time
// (cmake/embed_sources.cmake turns each file into a string literal).
#include <string_view>

namespace xylem::opencl::sources {

extern const std::string_view math_h;  // include/xylem/plugin/math.h
extern const std::string_view common;  // kernels/common.cl
extern const std::string_view storage;  // kernels/storage.cl
extern const std::string_view nn_common;  // kernels/nn_common.cl
extern const std::string_view rows;  // kernels/rows.cl
extern const std::string_view exp_sums;  // kernels/exp_sums.cl
extern const std::string_view creation;  // kernels/creation.cl
extern const std::string_view copy;  // kernels/copy.cl
extern const std::string_view blas;  // kernels/blas.cl
extern const std::string_view blas_extra;  // kernels/blas_extra.cl
extern const std::string_view gemm;  // kernels/gemm.cl
extern const std::string_view convert;  // kernels/convert.cl
extern const std::string_view elementwise;  // kernels/elementwise.cl
extern const std::string_view cast;  // kernels/cast.cl
extern const std::string_view reduce;  // kernels/reduce.cl
extern const std::string_view integer;  // kernels/integer.cl
extern const std::string_view softmax;  // kernels/softmax.cl
extern const std::string_view cross_entropy;  // kernels/cross_entropy.cl
extern const std::string_view dropout;  // kernels/dropout.cl
extern const std::string_view layer_norm;  // kernels/layer_norm.cl
extern const std::string_view batch_norm;  // kernels/batch_norm.cl
extern const std::string_view conv2d;  // kernels/conv2d.cl
extern const std::string_view pool;  // kernels/pool.cl
extern const std::string_view lrn;  // kernels/lrn.cl
extern const std::string_view optim;  // kernels/optim.cl
extern const std::string_view index_walk;  // kernels/index_walk.cl
extern const std::string_view index;  // kernels/index.cl
extern const std::string_view index_add;  // kernels/index_add.cl
extern const std::string_view attention;  // kernels/attention.cl
extern const std::string_view rnn_math_h;  // include/xylem/plugin/rnn_math.h
extern const std::string_view rnn;  // kernels/rnn.cl

}  // namespace xylem::opencl::sources
