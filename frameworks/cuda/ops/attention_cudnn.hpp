#pragma once
// nn::attention and nn::attention_grad through cuDNN's fused attention (its
// flash kernels for Hopper and later; attention_cudnn.cpp), taken by
// attention.cu ahead of its own kernels when the call suits it.
#include "kernels.hpp"

namespace xylem::cuda {

// Each enqueues its op through cuDNN and returns true when cuDNN is loaded
// and takes the call: f16 or bf16, no mask, no dropout, operands on 16
// bytes with strides of whole 16-byte vectors, and an engine of cuDNN's
// that builds for the layout (head dimensions multiples of 8 up to 256 on
// Hopper). Otherwise it returns false having enqueued nothing; the answer
// for a layout is kept, so later calls of it cost a lookup.
// XYLEM_CUDA_CUDNN_ATTENTION=0 turns both off.
//
// Both go through graphs of matmuls, a mask and a softmax that cuDNN fuses
// into one flash kernel each. The backward wants the heads of q and k
// alike, and with cuDNN 9.15 or older (a known bug there) a key count that
// is a multiple of 128.
#if XYLEM_HAVE_CUDNN
[[nodiscard]] bool attention_forward_cudnn(const plugin::OpCall& call, const Context& ctx);
[[nodiscard]] bool attention_grad_cudnn(const plugin::OpCall& call, const Context& ctx);
#else
[[nodiscard]] inline bool attention_forward_cudnn(const plugin::OpCall&, const Context&) { return false; }
[[nodiscard]] inline bool attention_grad_cudnn(const plugin::OpCall&, const Context&) { return false; }
#endif

}  // namespace xylem::cuda
