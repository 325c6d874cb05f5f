#pragma once
// nn::attention and its gradients on tensor cores (attention_mma.cu,
// attention_mma_grad.cu), taken by attention.cu's kernels when the call
// suits them.
#include "kernels.hpp"

namespace xylem::cuda {

// Launches nn::attention on tensor cores and returns true when the call
// suits them: f16 or bf16, no dropout, head dimensions multiples of 8 up
// to 256, q, k, v and out 16-byte aligned with row, head and batch strides
// multiples of 8 elements, B and H at most 65535, and a kernel built for
// sm_80 or later on this device with the shared memory it needs. Otherwise
// returns false having launched nothing.
[[nodiscard]] bool attention_forward_mma(const plugin::OpCall& call, const Context& ctx);

// nn::attention_grad_q and nn::attention_grad_kv the same way, for head
// dimensions up to 128 (and the stats 8-byte aligned).
[[nodiscard]] bool attention_grad_q_mma(const plugin::OpCall& call, const Context& ctx);
[[nodiscard]] bool attention_grad_kv_mma(const plugin::OpCall& call, const Context& ctx);

}  // namespace xylem::cuda
