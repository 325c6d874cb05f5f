// xylem.nn.scaled_dot_product_attention, its training form and its
// gradients, with PyTorch's argument names (attn_mask, is_causal, scale,
// dropout_p).
#include <nanobind/stl/optional.h>

#include "xylem/attention.hpp"
#include "def_op.hpp"

namespace xylem::python {
namespace {

nn::Attention options(const std::optional<Tensor>& mask, bool causal, std::optional<double> scale, double p,
                      Generator* gen) {
  nn::Attention o;
  o.mask = mask.value_or(Tensor{});
  o.causal = causal;
  o.scale = scale;
  o.dropout_p = p;
  o.generator = gen;
  return o;
}

// The forward, in either form, with the generator (the default one when
// none is given) held for the call.
template <auto F>
auto run_forward(const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask, bool causal,
             std::optional<double> scale, double p, Generator* gen, std::optional<Backend> b) {
  const auto g = p > 0 ? generator_or_default(gen) : nullptr;
  return F(resolve(b), q, k, v, options(mask, causal, scale, p, g.get()));
}

constexpr const char* kDoc =
    "softmax(q k^T scale + mask) v per batch and head: q [B, H, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv], H a "
    "multiple of Hkv (query head h uses kv head h // (H // Hkv)). attn_mask: bool (True attends) or q's dtype "
    "(added), broadcastable to [B, H, Sq, Sk]; is_causal leaves out keys j > i; scale defaults to 1/sqrt(D); "
    "dropout_p drops attention weights (drawn from `generator`). Tiled: no [Sq, Sk] matrix is made.";

}  // namespace

void bind_attention(nb::module_& m) {
  nb::class_<nn::AttentionForward>(m, "AttentionForward",
                                   "scaled_dot_product_attention_forward's result, for the backward.")
      .def_ro("out", &nn::AttentionForward::out, "[B, H, Sq, Dv], q's dtype.")
      .def_ro("lse", &nn::AttentionForward::lse, "[B, H, Sq]: each row's logsumexp of scores (-inf: no key).")
      .def_ro("dropout", &nn::AttentionForward::dropout, "The counters the dropout mask came from.");
  nb::class_<nn::AttentionGrads>(m, "AttentionGrads", "scaled_dot_product_attention_grad's result.")
      .def_ro("dq", &nn::AttentionGrads::dq, "q's shape and dtype.")
      .def_ro("dk", &nn::AttentionGrads::dk, "k's shape and dtype.")
      .def_ro("dv", &nn::AttentionGrads::dv, "v's shape and dtype.");
  m.def(
      "scaled_dot_product_attention",
      &run_forward<nn::scaled_dot_product_attention>,
      "q"_a, "k"_a, "v"_a, "attn_mask"_a = nb::none(), nb::kw_only(), "is_causal"_a = false, "scale"_a = nb::none(),
      "dropout_p"_a = 0.0, "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(), kDoc);
  m.def(
      "scaled_dot_product_attention_forward",
      &run_forward<nn::scaled_dot_product_attention_forward>,
      "q"_a, "k"_a, "v"_a, "attn_mask"_a = nb::none(), nb::kw_only(), "is_causal"_a = false, "scale"_a = nb::none(),
      "dropout_p"_a = 0.0, "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "scaled_dot_product_attention for training: out, the row statistics and the dropout counters.");
  m.def(
      "scaled_dot_product_attention_grad",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const nn::AttentionForward& forward, const Tensor& dout,
         std::optional<Tensor> mask, bool causal, std::optional<double> scale, std::optional<Backend> b) {
        return nn::scaled_dot_product_attention_grad(resolve(b), q, k, v, forward, dout,
                                                     options(mask, causal, scale, forward.dropout.p, nullptr));
      },
      "q"_a, "k"_a, "v"_a, "forward"_a, "dout"_a, "attn_mask"_a = nb::none(), nb::kw_only(), "is_causal"_a = false,
      "scale"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "dq, dk, dv from dout and the forward's result; the mask, is_causal and scale must be the forward's.");
}

}  // namespace xylem::python
