#pragma once
/// @file
/// xylem::nn::scaled_dot_product_attention: softmax(q k^T scale + mask) v with
/// PyTorch's semantics (torch.nn.functional.scaled_dot_product_attention),
/// forward and backward, on every backend.
///
/// Memory-efficient: every framework walks tiles of queries and keys with an
/// online softmax and keeps only each query row's logsumexp for the
/// backward, which recomputes the tiles; no [Sq, Sk] buffer is ever made
/// (the dropout mask is regenerated from the Generator's counters too).
///
/// Dtypes: f16, bf16 (products and the softmax in f32), f32 and f64. On
/// CUDA (sm_80 and later) f16 and bf16 without dropout, with head dimensions
/// multiples of 8 (up to 256 forward, 128 backward), run on tensor cores; the
/// weights are then rounded to q's dtype before they multiply v.
/// Errors, raised before any tensor changes: dtype_mismatch (q, k, v or dout
/// of different dtypes; a mask that is neither boolean nor q's dtype),
/// shape_mismatch (ranks other than 4, batch, head dimension or key counts
/// that differ, H not a multiple of Hkv, a mask that does not broadcast to
/// [B, H, Sq, Sk]), invalid_argument (a head dimension of 0, both a mask and
/// causal, dropout_p outside [0, 1) or without a generator).
#include <optional>

#include "xylem/backend.hpp"
#include "xylem/creation.hpp"
#include "xylem/nn.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

/// How attention weighs the keys: PyTorch's arguments of
/// scaled_dot_product_attention.
struct Attention {
  /// Empty handle: no mask. Otherwise broadcastable to [B, H, Sq, Sk]:
  /// boolean (true: the query attends to the key, as PyTorch) or of q's
  /// dtype (added to the scaled scores; -Inf leaves the key out).
  Tensor mask;
  /// Leave out keys j > i (top-left aligned when Sq != Sk, as PyTorch's
  /// is_causal); not together with a mask.
  bool causal = false;
  /// The scale of q k^T; 1/sqrt(D) when absent.
  std::optional<double> scale;
  /// Probability of dropping each attention weight (kept weights are scaled
  /// by 1/(1-p)), in [0, 1).
  double dropout_p = 0;
  /// Where the dropout mask is drawn from (required when dropout_p > 0);
  /// advanced by B*H*Sq*Sk counters, weight (b, h, i, j) taking counter
  /// ((b*H + h)*Sq + i)*Sk + j of the call, on every backend.
  Generator* generator = nullptr;
};

/// The forward's results, with what the backward needs.
struct AttentionForward {
  Tensor out;           ///< [B, H, Sq, Dv], q's dtype
  Tensor lse;           ///< [B, H, Sq]: each row's logsumexp of scores (f32; f64 for f64); -Inf where every key is left out
  DropoutMask dropout;  ///< the counters the dropout mask came from (p = 0: none)
};

/// The gradients of scaled_dot_product_attention.
struct AttentionGrads {
  Tensor dq;  ///< q's shape and dtype
  Tensor dk;  ///< k's shape and dtype (summed over the query heads sharing each kv head)
  Tensor dv;  ///< v's shape and dtype
};

/// out = softmax(q k^T scale + mask) v per (batch, head): q [B, H, Sq, D],
/// k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv], H a multiple of Hkv (grouped or
/// multi-query heads: query head h uses kv head h/(H/Hkv), as PyTorch's
/// enable_gqa). Returns out [B, H, Sq, Dv] of q's dtype. A query row whose
/// every key is left out gives 0 (as PyTorch 2.5+). Sk = 0 gives 0.
[[nodiscard]] Tensor scaled_dot_product_attention(const Backend& b, const Tensor& q, const Tensor& k,
                                                  const Tensor& v, const Attention& options = {});
/// scaled_dot_product_attention for training: out with the row statistics
/// and dropout counters its backward reads.
[[nodiscard]] AttentionForward scaled_dot_product_attention_forward(const Backend& b, const Tensor& q,
                                                                    const Tensor& k, const Tensor& v,
                                                                    const Attention& options = {});
/// dq, dk, dv from dout [B, H, Sq, Dv] and the forward's results; `options`
/// must be the forward's (its generator is not used: the dropout mask comes
/// back from forward.dropout). The mask gets no gradient.
[[nodiscard]] AttentionGrads scaled_dot_product_attention_grad(const Backend& b, const Tensor& q, const Tensor& k,
                                                               const Tensor& v, const AttentionForward& forward,
                                                               const Tensor& dout, const Attention& options = {});

}  // namespace xylem::nn
