#pragma once
// nn::conv2d and its two gradients on the host (conventions in plugin.hpp),
// shared by the two engines: oneDNN (conv2d_onednn.cpp, f32, built when
// oneDNN 2.x was found at build time) and our own im2col + OpenBLAS
// (conv2d_im2col.cpp, f32 and f64, always built). conv2d.cpp makes the
// operands dense and picks the engine.
#include <string>

#include "frameworks/native/ops/im2col.hpp"

namespace xylem::native {

enum class ConvPass { forward, grad_data, grad_filter };

// Dense NCHW operands of one pass (filters [K, C/groups, R, S]), in the op's
// argument order: forward (x, w -> y), grad_data (dy, w -> dx), grad_filter
// (x, dy -> dw). The output is written whole, never accumulated into.
template <class T>
struct ConvOperands {
  const T* in0;
  const T* in1;
  T* out;
};

// Explicitly instantiated for float and double.
template <class T>
void conv_im2col(ConvPass pass, const ConvGeometry& g, const ConvOperands<T>& ops);

#if XYLEM_HAVE_ONEDNN
// Runs the pass with oneDNN; false (nothing written) when oneDNN's kernel
// for this geometry is not expected to beat conv_im2col. oneDNN's errors
// (out of memory...) throw Error.
[[nodiscard]] bool conv_onednn(ConvPass pass, const ConvGeometry& g, const ConvOperands<float>& ops);
// "oneDNN 2.6.3": the library loaded at run time.
[[nodiscard]] std::string onednn_version();
#endif

// Which engine f32 convolutions use by default, for `xylem info`.
[[nodiscard]] std::string conv2d_engine_description();

}  // namespace xylem::native
