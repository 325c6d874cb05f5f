#pragma once
// nn::attention's forward through cuDNN's fused attention (its flash
// kernels for Hopper and later; attention_cudnn.cpp), taken by
// attention.cu ahead of its own kernels when the call suits it.
#include "kernels.hpp"

namespace xylem::cuda {

// Enqueues nn::attention through cuDNN and returns true when cuDNN (9.13
// or later, with its fused attention operation) is loaded and takes the
// call: f16 or bf16, no mask, not causal, no dropout, and an engine of
// cuDNN's that builds for the layout (head dimensions multiples of 8 up to
// 256 on Hopper). Otherwise returns false having enqueued nothing; the
// answer for a layout is kept, so later calls of it cost a lookup.
// XYLEM_CUDA_CUDNN_ATTENTION=0 turns it off.
#if XYLEM_HAVE_CUDNN
[[nodiscard]] bool attention_forward_cudnn(const plugin::OpCall& call, const Context& ctx);
#else
[[nodiscard]] inline bool attention_forward_cudnn(const plugin::OpCall&, const Context&) { return false; }
#endif

}  // namespace xylem::cuda
