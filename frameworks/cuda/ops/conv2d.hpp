#pragma once
// nn::conv2d and its two gradients (conventions in plugin.hpp), shared by
// the two engines: cuDNN (conv2d_cudnn*.cpp, when cuDNN's header was found
// at build time and its library loads at run time; its graph and legacy
// APIs, see cudnn_package.hpp) and our own im2col plus
// cuBLAS (conv2d_im2col.cu, always built). conv2d.cpp stages strided
// operands into dense NCHW copies and picks the engine.
#include <cstdint>
#include <string>

#include "kernels.hpp"

namespace xylem::cuda {

struct ConvShape {
  std::int64_t N, C, H, W;  // input x / dx
  std::int64_t K, R, S;     // filter w / dw: [K, C/groups, R, S]
  std::int64_t P, Q;        // output y / dy: [N, K, P, Q]
  std::int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
};

enum class ConvPass { forward, grad_data, grad_filter };

// Dense NCHW operands of one pass, in the op's argument order:
// forward (x, w -> y), grad_data (dy, w -> dx), grad_filter (x, dy -> dw).
struct ConvOperands {
  const void* in0;
  const void* in1;
  void* out;
};

// f32 convolutions may use TF32 tensor cores, as PyTorch allows by default
// for convolutions (torch.backends.cudnn.allow_tf32 = True); set
// XYLEM_CUDA_CONV_TF32=0 for full f32 products. Read at each call.
[[nodiscard]] bool conv_tf32_allowed() noexcept;

#if XYLEM_HAVE_CUDNN
// Runs the pass with cuDNN; false (nothing enqueued) when cuDNN is not
// available on this machine, disabled (XYLEM_CUDA_CUDNN=0), or cannot take
// this shape; errors of an available cuDNN throw.
[[nodiscard]] bool conv_cudnn(ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
                              const Context& ctx);
#endif

// Which engine runs convolutions here, for `xylem info`; loads cuDNN.
[[nodiscard]] std::string conv2d_engine_description();

void conv_im2col(ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops, const Context& ctx);

}  // namespace xylem::cuda
