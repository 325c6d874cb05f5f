// MultiheadAttention: self-attention through nn::linear and
// nn::scaled_dot_product_attention. The heads are views of the projection's
// output (a slice of its last axis split into [heads, E/heads] and
// transposed), so no copy is made on the way in; the gradients of q, k and v
// are written into the slices of one [N, L, 3E] tensor for the input
// projection's gradient.
#include <string>

#include "xylem/layers.hpp"
#include "xylem/math.hpp"

namespace xylem::layers {

MultiheadAttention::MultiheadAttention(const Backend& b, Generator& gen, std::int64_t embed_dim,
                                       std::int64_t num_heads, bool causal, bool with_bias,
                                       const ParameterOptions& options)
    : embed_(embed_dim), heads_(num_heads), causal_(causal) {
  if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0)
    throw Error(ErrorCode::invalid_argument, "MultiheadAttention: embed_dim " + std::to_string(embed_dim) +
                                                 " must be a positive multiple of num_heads " +
                                                 std::to_string(num_heads));
  in_proj_weight = {"in_proj_weight", Tensor(Layout{3 * embed_dim, embed_dim}, options.dtype), {}};
  init_weight(b, in_proj_weight.value, Init::xavier_uniform, gen);
  out_proj_weight = {"out_proj.weight", Tensor(Layout{embed_dim, embed_dim}, options.dtype), {}};
  init_weight(b, out_proj_weight.value, options.init, gen);
  if (with_bias) {
    in_proj_bias = {"in_proj_bias", Tensor(Layout{3 * embed_dim}, options.dtype), {}};
    fill(b, in_proj_bias.value, 0);
    out_proj_bias = {"out_proj.bias", Tensor(Layout{embed_dim}, options.dtype), {}};
    fill(b, out_proj_bias.value, 0);
  }
}

std::string MultiheadAttention::describe() const {
  return "MultiheadAttention(" + std::to_string(embed_) + ", " + std::to_string(heads_) +
         (causal_ ? ", causal)" : ")");
}

std::vector<Parameter*> MultiheadAttention::parameters() {
  if (in_proj_bias.value.defined()) return {&in_proj_weight, &in_proj_bias, &out_proj_weight, &out_proj_bias};
  return {&in_proj_weight, &out_proj_weight};
}

Layout MultiheadAttention::output_shape(const Layout& x) const {
  if (x.rank() != 3 || x.dim(-1) != embed_) bad_input(x, "[N, L, " + std::to_string(embed_) + "]");
  return x;
}

namespace {

// Part `part` (0: q, 1: k, 2: v) of a [N, L, 3E] tensor as [N, heads, L, E/heads].
Tensor head_view(const Tensor& packed, int part, std::int64_t embed, std::int64_t heads) {
  const std::int64_t n = packed.layout().dim(0), l = packed.layout().dim(1);
  return packed.slice(2, part * embed, (part + 1) * embed).reshape({n, l, heads, embed / heads}).transpose(1, 2);
}

}  // namespace

Tensor MultiheadAttention::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  const Tensor qkv = nn::linear(b, x, in_proj_weight.value, in_proj_bias.value);
  q_ = head_view(qkv, 0, embed_, heads_);
  k_ = head_view(qkv, 1, embed_, heads_);
  v_ = head_view(qkv, 2, embed_, heads_);
  nn::Attention options;
  options.causal = causal_;
  saved_ = nn::scaled_dot_product_attention_forward(b, q_, k_, v_, options);
  attention_ = contiguous(b, saved_.out.transpose(1, 2)).reshape({x.layout().dim(0), x.layout().dim(1), embed_});
  x_ = x;
  y_shape_ = y_shape;
  return nn::linear(b, attention_, out_proj_weight.value, out_proj_bias.value);
}

Tensor MultiheadAttention::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, y_shape_);
  const nn::LinearGrads out = nn::linear_grad(b, attention_, out_proj_weight.value, dy);
  accumulate(b, out_proj_weight, out.dw);
  if (out_proj_bias.value.defined()) accumulate(b, out_proj_bias, out.dbias);
  const std::int64_t n = dy.layout().dim(0), l = dy.layout().dim(1);
  const Tensor d_attention = out.dx.reshape({n, l, heads_, embed_ / heads_}).transpose(1, 2);
  nn::Attention options;
  options.causal = causal_;
  const nn::AttentionGrads g = nn::scaled_dot_product_attention_grad(b, q_, k_, v_, saved_, d_attention, options);
  Tensor dqkv(Layout{n, l, 3 * embed_}, dy.dtype());
  const Tensor* parts[] = {&g.dq, &g.dk, &g.dv};
  for (int part = 0; part < 3; ++part) {
    Tensor slice = head_view(dqkv, part, embed_, heads_);
    cast(b, *parts[part], slice);
  }
  const nn::LinearGrads in = nn::linear_grad(b, x_, in_proj_weight.value, dqkv);
  accumulate(b, in_proj_weight, in.dw);
  if (in_proj_bias.value.defined()) accumulate(b, in_proj_bias, in.dbias);
  x_ = q_ = k_ = v_ = attention_ = Tensor{};
  saved_ = {};
  return in.dx;
}

}  // namespace xylem::layers
