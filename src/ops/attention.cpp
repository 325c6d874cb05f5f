// xylem::nn::scaled_dot_product_attention: checks, the empty cases, and the
// launches (one forward kernel; the backward as per-row statistics, then
// dq, then dk and dv, so no kernel needs atomics, or as one fused call where
// the framework has one: cuDNN's).
#include "xylem/attention.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

DType stat_dtype(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

// The problem's sizes, read from q, k and v once they are checked.
struct Dims {
  std::int64_t B, H, Hkv, Sq, Sk, D, Dv;
};

Dims check_qkv(std::string_view name, const Tensor& q, const Tensor& k, const Tensor& v) {
  ops::require_float(name, "q", q);
  ops::require_defined(name, "k", k);
  ops::require_defined(name, "v", v);
  ops::require_same_dtype(name, "q", q, "k", k);
  ops::require_same_dtype(name, "q", q, "v", v);
  ops::require_rank(name, "q", q, 4);
  ops::require_rank(name, "k", k, 4);
  ops::require_rank(name, "v", v, 4);
  const auto qd = q.layout().dims(), kd = k.layout().dims(), vd = v.layout().dims();
  const Dims d{qd[0], qd[1], kd[1], qd[2], kd[2], qd[3], vd[3]};
  const auto mismatch = [&](const std::string& what) {
    return Error(ErrorCode::shape_mismatch, std::string(name) + ": q " + q.layout().dims_string() + ", k " +
                                                k.layout().dims_string() + ", v " + v.layout().dims_string() +
                                                ": " + what);
  };
  if (kd[0] != d.B || vd[0] != d.B) throw mismatch("the batch sizes differ");
  if (vd[1] != d.Hkv || vd[2] != d.Sk) throw mismatch("k and v must have the same heads and keys");
  if (kd[3] != d.D) throw mismatch("q and k must have the same head dimension");
  if (d.Hkv == 0 ? d.H != 0 : d.H % d.Hkv != 0)
    throw mismatch("q's heads must be a multiple of k's and v's");
  ops::require_argument(d.D >= 1 && d.Dv >= 1, name, "the head dimensions must be at least 1");
  return d;
}

// The mask as the kernels take it, [B, H, Sq, Sk] with stride 0 along its
// broadcast axes, or an empty handle.
Tensor check_mask(std::string_view name, const Tensor& q, const Attention& o, const Dims& d) {
  ops::require_argument(o.dropout_p >= 0 && o.dropout_p < 1, name,
                        [&] { return "dropout_p must be in [0, 1), not " + std::to_string(o.dropout_p); });
  if (!o.mask.defined()) return {};
  ops::require_argument(!o.causal, name, "a mask and causal cannot be given together (as in PyTorch)");
  if (o.mask.dtype() != DType::boolean && o.mask.dtype() != q.dtype())
    throw Error(ErrorCode::dtype_mismatch, std::string(name) + ": the mask is " + ops::describe(o.mask) +
                                               "; expected bool or q's dtype " + std::string(xylem::name(q.dtype())));
  const Layout full{d.B, d.H, d.Sq, d.Sk};
  if (o.mask.rank() > 4 || !ops::broadcast(name, o.mask.layout(), full).same_dims(full))
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": the mask " + o.mask.layout().dims_string() +
                                               " does not broadcast to [B, H, Sq, Sk] = " + full.dims_string());
  return ops::expand(o.mask, full);
}

// The kernels take rows of unit stride.
Tensor unit_rows(const Backend& b, const Tensor& t) {
  if (t.layout().dims()[3] <= 1 || t.layout().stride(3) == 1) return t;
  return contiguous(b, t);
}

double scale_of(const Attention& o, const Dims& d) {
  return o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(d.D));
}

}  // namespace

AttentionForward scaled_dot_product_attention_forward(const Backend& b, const Tensor& q, const Tensor& k,
                                                      const Tensor& v, const Attention& options) {
  constexpr std::string_view name = "nn::scaled_dot_product_attention";
  const Dims d = check_qkv(name, q, k, v);
  const Tensor mask = check_mask(name, q, options, d);
  ops::require_argument(options.dropout_p == 0 || options.generator != nullptr, name,
                        "dropout_p > 0 needs a generator");
  AttentionForward r{Tensor(Layout{d.B, d.H, d.Sq, d.Dv}, q.dtype()), Tensor(Layout{d.B, d.H, d.Sq}, stat_dtype(q.dtype())),
                     DropoutMask{}};
  if (options.dropout_p > 0) {
    r.dropout = DropoutMask{options.dropout_p, options.generator->seed(),
                            options.generator->advance(std::uint64_t(d.B * d.H * d.Sq * d.Sk))};
  }
  if (r.lse.numel() == 0 || d.Sk == 0) {  // no rows, or rows over no keys: out 0, lse -Inf
    ops::fill_output(b, name, r.out);
    ops::fill_output(b, name, r.lse, -std::numeric_limits<double>::infinity());
    return r;
  }
  detail::launch(b,
                 detail::args::nn_attention<Tensor>{.q = unit_rows(b, q),
                                                    .k = unit_rows(b, k),
                                                    .v = unit_rows(b, v),
                                                    .mask = mask,
                                                    .out = r.out,
                                                    .lse = r.lse,
                                                    .causal = options.causal ? 1 : 0,
                                                    .seed = std::int64_t(r.dropout.seed),
                                                    .offset = std::int64_t(r.dropout.offset),
                                                    .scale = scale_of(options, d),
                                                    .p = r.dropout.p},
                 name);
  return r;
}

Tensor scaled_dot_product_attention(const Backend& b, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Attention& options) {
  return scaled_dot_product_attention_forward(b, q, k, v, options).out;
}

AttentionGrads scaled_dot_product_attention_grad(const Backend& b, const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const AttentionForward& forward, const Tensor& dout,
                                                 const Attention& options) {
  constexpr std::string_view name = "nn::scaled_dot_product_attention_grad";
  const Dims d = check_qkv(name, q, k, v);
  Attention checked = options;
  checked.dropout_p = forward.dropout.p;
  const Tensor mask = check_mask(name, q, checked, d);
  const Layout out_dims{d.B, d.H, d.Sq, d.Dv};
  ops::require_dims(name, "out", forward.out, out_dims);
  ops::require_dims(name, "dout", dout, out_dims);
  ops::require_same_dtype(name, "q", q, "out", forward.out);
  ops::require_same_dtype(name, "q", q, "dout", dout);
  ops::require_dims(name, "lse", forward.lse, Layout{d.B, d.H, d.Sq});
  ops::require_dtype(name, "lse", forward.lse, stat_dtype(q.dtype()));
  AttentionGrads g{ops::new_like(name, "q", q), ops::new_like(name, "k", k), ops::new_like(name, "v", v)};
  if (forward.lse.numel() == 0 || d.Sk == 0) {  // nothing flows: every gradient is 0 (or empty)
    ops::fill_output(b, name, g.dq);
    ops::fill_output(b, name, g.dk);
    ops::fill_output(b, name, g.dv);
    return g;
  }
  const Tensor qu = unit_rows(b, q), ku = unit_rows(b, k), vu = unit_rows(b, v), du = unit_rows(b, dout);
  const Tensor lse = forward.lse.layout().is_contiguous() ? forward.lse : contiguous(b, forward.lse);
  if (!mask.defined() && forward.dropout.p == 0 && b.supports(OpId::nn_attention_grad, q.dtype())) {
    detail::launch(b,
                   detail::args::nn_attention_grad<Tensor>{.q = qu,
                                                           .k = ku,
                                                           .v = vu,
                                                           .out = unit_rows(b, forward.out),
                                                           .dout = du,
                                                           .lse = lse,
                                                           .dq = g.dq,
                                                           .dk = g.dk,
                                                           .dv = g.dv,
                                                           .causal = options.causal ? 1 : 0,
                                                           .scale = scale_of(options, d)},
                   name);
    return g;
  }
  Tensor stats(Layout{d.B, d.H, d.Sq, 2}, stat_dtype(q.dtype()));
  detail::launch(b,
                 detail::args::nn_attention_grad_rows<Tensor>{
                     .out = unit_rows(b, forward.out), .dout = du, .lse = lse, .stats = stats},
                 name);
  // The two gradient ops read the same tensors and settings.
  const auto inputs = [&](auto args) {
    args.q = qu;
    args.k = ku;
    args.v = vu;
    args.mask = mask;
    args.dout = du;
    args.stats = stats;
    args.causal = options.causal ? 1 : 0;
    args.seed = std::int64_t(forward.dropout.seed);
    args.offset = std::int64_t(forward.dropout.offset);
    args.scale = scale_of(options, d);
    args.p = forward.dropout.p;
    return args;
  };
  auto grad_q = inputs(detail::args::nn_attention_grad_q<Tensor>{});
  grad_q.dq = g.dq;
  detail::launch(b, grad_q, name);
  auto grad_kv = inputs(detail::args::nn_attention_grad_kv<Tensor>{});
  grad_kv.dk = g.dk;
  grad_kv.dv = g.dv;
  detail::launch(b, grad_kv, name);
  return g;
}

}  // namespace xylem::nn
