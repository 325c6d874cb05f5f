#pragma once
/// @file
/// Whole recurrent stacks over a sequence in one op each (nn::rnn_sequence
/// and its gradients): cuDNN's RNN API on CUDA, oneDNN's RNN primitives on
/// native (f32), which layers::Recurrent uses where the backend supports
/// them (Backend::supports), and its per-step path elsewhere. OpenCL does
/// not support these ops.
#include <cstdint>

#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

/// A stack of PyTorch's nn.LSTM or nn.GRU layers.
struct RnnStack {
  bool lstm = true;            ///< LSTM (gates i, f, g, o) or GRU (r, z, n)
  std::int64_t hidden = 1;     ///< H
  std::int64_t layers = 1;     ///< L
  bool bidirectional = false;  ///< D = 2 when set
  /// The flat weights' element count for input size I: per layer and
  /// direction weight_ih, weight_hh, bias_ih, bias_hh, in PyTorch's order.
  [[nodiscard]] std::int64_t weight_count(std::int64_t input) const noexcept;
};

/// The reserve bytes rnn_sequence needs for x [T, N, I] (f32 or f64). Reads
/// the answer on the host. unsupported where the backend (or cuDNN, or
/// XYLEM_CUDA_CUDNN_RNN=0, or XYLEM_NATIVE_ONEDNN_RNN=0) does not run the
/// stack.
[[nodiscard]] std::int64_t rnn_sequence_reserve(const Backend& b, const Tensor& x, const RnnStack& stack);
/// Forward: x [T, N, I]; states [S, L*D, N, H] (h, then c for an LSTM:
/// S = 2, else 1); w the flat weights; writes y [T, N, D*H], states_out
/// (the final states, states' shape) and reserve (u8, rnn_sequence_reserve
/// bytes at least), which the gradients read. Every tensor contiguous, of
/// x's dtype but reserve (invalid_argument, dtype_mismatch, shape_mismatch).
void rnn_sequence(const Backend& b, const Tensor& x, const Tensor& states, const Tensor& w, const RnnStack& stack,
                  Tensor& y, Tensor& states_out, Tensor& reserve);
/// Data gradient, before rnn_sequence_grad_weights: from y and its gradient
/// dy, the final states' gradient dstates_out, writes dx and dstates.
void rnn_sequence_grad_data(const Backend& b, const Tensor& y, const Tensor& dy, const Tensor& dstates_out,
                            const Tensor& states, const Tensor& w, const RnnStack& stack, Tensor& reserve, Tensor& dx,
                            Tensor& dstates);
/// Weight gradient, after rnn_sequence_grad_data: writes dw (w's layout).
void rnn_sequence_grad_weights(const Backend& b, const Tensor& x, const Tensor& states, const Tensor& y,
                               const Tensor& reserve, const RnnStack& stack, Tensor& dw);

}  // namespace xylem::nn
