#pragma once
// The ops fuzzer's nn and blas families: softmax, gemm, gemv, level-1 blas,
// conv2d, pooling and layer_norm.
#include <string>

#include "ops_math.hpp"

namespace xylem_fuzz {

inline void fuzz_softmax(Ctx& c) {
  const bool log = c.p.one_in(2);
  const int rank = int(c.p.pick(5));
  const int axis = int(c.p.pick(std::uint32_t(2 * rank + 2))) - rank - 1;  // one past each end too
  const int a = axis < 0 ? axis + rank : axis;
  const DType t = pick_dtype(c.p);
  const Arg x = make_arg(c.backend, c.p, t, pick_dims(c.p, rank));
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, x.dims), {&x});
  const bool valid = a >= 0 && a < rank && xylem::is_floating(t) && y.dtype == t && y.dims == x.dims;
  const char* name = log ? "nn::log_softmax" : "nn::softmax";
  run(name, std::string(name) + " axis " + std::to_string(axis) + " x " + x.describe() + " -> " + y.describe(), valid,
      {&x}, &y,
      [&] {
        Tensor w = y.view;
        log ? xylem::nn::log_softmax(c.backend, x.view, axis, w) : xylem::nn::softmax(c.backend, x.view, axis, w);
      },
      [&] { return xylem_ref::softmax(x.logical(), a, log); });
}

inline std::int64_t pick_extent(Picker& p) {
  static constexpr std::int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 0};
  return p.from(sizes);
}

inline void fuzz_gemm(Ctx& c) {
  static constexpr double scalars[] = {1, 0, -0.5, 2};
  const bool batched = c.p.one_in(4), ta = c.p.one_in(2), tb = c.p.one_in(2);
  const double alpha = c.p.from(scalars), beta = c.p.from(scalars);
  const std::int64_t m = pick_extent(c.p), n = pick_extent(c.p), batch = batched ? 1 + c.p.pick(3) : 1;
  std::int64_t k = pick_extent(c.p);
  while (batch * k * std::max(m, n) > kMaxElements) k /= 2;
  const auto operand = [&](std::int64_t rows, std::int64_t cols, bool trans) {
    Dims d = trans ? Dims{cols, rows} : Dims{rows, cols};
    if (batched) d.insert(d.begin(), c.p.one_in(3) ? 1 : batch);  // batch 1: one matrix for every batch
    return d;
  };
  const DType t = pick_dtype(c.p);
  Dims ad = operand(m, k, ta), bd = operand(k, n, tb);
  if (c.p.one_in(12)) ad[c.p.pick(std::uint32_t(ad.size()))] += 1;
  const Arg a = make_arg(c.backend, c.p, t, ad);
  const Arg b = make_arg(c.backend, c.p, c.p.one_in(16) ? pick_dtype(c.p, 2) : t, bd);
  const Dims cd = batched ? Dims{batch, m, n} : Dims{m, n};
  const Arg o = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, cd), {&a, &b});
  const bool dtype_ok = t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
  // The rule, from the shapes as they are: c [batch, m, n] or [m, n]; op(a)
  // [m, k] and op(b) [k, n], each with c's batch or batch 1 in front.
  const auto shapes_ok = [&] {
    const std::size_t r = o.dims.size();
    if ((r != 2 && r != 3) || a.dims.size() != r || b.dims.size() != r) return false;
    const auto rows = [&](const Dims& d, bool tr) { return d[r - (tr ? 1 : 2)]; };
    const auto cols = [&](const Dims& d, bool tr) { return d[r - (tr ? 2 : 1)]; };
    const bool batch_ok = r == 2 || ((a.dims[0] == o.dims[0] || a.dims[0] == 1) && (b.dims[0] == o.dims[0] || b.dims[0] == 1));
    return batch_ok && cols(a.dims, ta) == rows(b.dims, tb) && rows(a.dims, ta) == o.dims[r - 2] &&
           cols(b.dims, tb) == o.dims[r - 1];
  };
  const bool valid = dtype_ok && b.dtype == t && o.dtype == t && shapes_ok();
  const std::string what = "blas::gemm ta " + std::to_string(ta) + " tb " + std::to_string(tb) + " alpha " +
                           std::to_string(alpha) + " beta " + std::to_string(beta) + " a " + a.describe() + ", b " +
                           b.describe() + ", c " + o.describe();
  run("blas::gemm", what, valid, {&a, &b}, &o,
      [&] {
        Tensor w = o.view;
        xylem::blas::gemm(c.backend, ta ? xylem::blas::Transpose::yes : xylem::blas::Transpose::no,
                          tb ? xylem::blas::Transpose::yes : xylem::blas::Transpose::no, alpha, a.view, b.view, beta,
                          w);
      },
      [&] { return xylem_ref::gemm(ta, tb, alpha, a.logical(), b.logical(), beta, o.logical()); });
}

inline void fuzz_gemv(Ctx& c) {
  static constexpr double scalars[] = {1, 0, -0.5, 2};
  const bool ta = c.p.one_in(2);
  const double alpha = c.p.from(scalars), beta = c.p.from(scalars);
  const std::int64_t rows = pick_extent(c.p), cols = pick_extent(c.p);
  const DType t = pick_dtype(c.p);
  const Arg a = make_arg(c.backend, c.p, t, ta ? Dims{cols, rows} : Dims{rows, cols});
  const Arg x = make_arg(c.backend, c.p, t, maybe_wrong(c.p, Dims{cols}));
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, Dims{rows}), {&a, &x});
  const bool valid = (t == DType::f32 || t == DType::f64) && y.dtype == t && x.dims == Dims{cols} && y.dims == Dims{rows};
  run("blas::gemv",
      "blas::gemv ta " + std::to_string(ta) + " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) +
          " a " + a.describe() + ", x " + x.describe() + ", y " + y.describe(),
      valid, {&a, &x}, &y,
      [&] {
        Tensor w = y.view;
        xylem::blas::gemv(c.backend, ta ? xylem::blas::Transpose::yes : xylem::blas::Transpose::no, alpha, a.view,
                          x.view, beta, w);
      },
      [&] {
        auto xa = x.logical();
        xa.dims = {cols, 1};
        auto ya = y.logical();
        ya.dims = {rows, 1};
        return xylem_ref::gemm(ta, false, alpha, a.logical(), xa, beta, ya);
      });
}

// Level 1: dot, asum, nrm2 (as futures), axpy, scal, copy.
inline void fuzz_blas1(Ctx& c) {
  static constexpr const char* names[] = {"blas::dot", "blas::asum", "blas::nrm2", "blas::axpy", "blas::scal",
                                          "blas::copy"};
  const auto which = c.p.pick(std::size(names));
  const double alpha = c.p.value(DType::f64);
  const std::int64_t n = pick_extent(c.p) * (c.p.one_in(3) ? 31 : 1);
  const DType t = pick_dtype(c.p, 6);
  // scal writes x: no stride-0 view there.
  const Arg x = make_arg(c.backend, c.p, t, c.p.one_in(16) ? pick_dims(c.p, 2) : Dims{n}, which != 4);
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), c.p.one_in(16) ? Dims{n + 1} : Dims{n}, {&x});
  const bool vectors_ok = (t == DType::f32 || t == DType::f64) && x.dims == Dims{n};
  const bool pair_ok = vectors_ok && y.dtype == t && y.dims == Dims{n};
  const std::string what = std::string(names[which]) + " alpha " + std::to_string(alpha) + " x " + x.describe() +
                           ", y " + y.describe();
  const auto xs = x.logical().v;
  if (which <= 2) {  // a scalar through a Future
    double got = 0;
    bool ran = false;
    run(names[which], what, which == 0 ? pair_ok : vectors_ok, {&x, &y}, nullptr,
        [&] {
          if (which == 0) got = xylem::blas::dot(c.backend, x.view, y.view).get();
          if (which == 1) got = xylem::blas::asum(c.backend, x.view).get();
          if (which == 2) got = xylem::blas::nrm2(c.backend, x.view).get();
          ran = true;
        },
        [] { return xylem_ref::Expect{}; });
    if (!ran) return;
    double e = 0, mag = 0;
    const auto ys = y.logical().v;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double term = which == 0 ? xs[i] * ys[i] : which == 1 ? std::abs(xs[i]) : xs[i] * xs[i];
      e += term, mag += std::abs(term);
    }
    if (which == 2) e = std::sqrt(e), mag = std::sqrt(mag);
    if (!xylem_ref::matches(t, e, mag, got))
      finding(what, " gave " + std::to_string(got) + ", expected " + std::to_string(e));
    return;
  }
  const auto ys = y.logical().v;
  run(names[which], what, which == 4 ? vectors_ok : pair_ok, {&x}, which == 4 ? &x : &y,
      [&] {
        Tensor w = y.view, v = x.view;
        if (which == 3) xylem::blas::axpy(c.backend, alpha, x.view, w);
        if (which == 4) xylem::blas::scal(c.backend, alpha, v);
        if (which == 5) xylem::blas::copy(c.backend, x.view, w);
      },
      [&] {
        xylem_ref::Expect e;
        for (std::size_t i = 0; i < xs.size(); ++i) {
          if (which == 3) e.push(alpha * xs[i] + ys[i], std::abs(alpha * xs[i]) + std::abs(ys[i]));
          if (which == 4) e.push(alpha * xs[i], 0);
          if (which == 5) e.push(xs[i], 0);
        }
        return e;
      });
}

inline void fuzz_conv2d(Ctx& c) {
  xylem::nn::Conv2d p;
  xylem_ref::ConvParams rp;
  p.stride_h = rp.stride_h = int(c.p.pick(4)) + (c.p.one_in(16) ? -1 : 0) + 1;
  p.stride_w = rp.stride_w = int(c.p.pick(3)) + 1;
  p.pad_h = rp.pad_h = int(c.p.pick(3)) - (c.p.one_in(16) ? 1 : 0);
  p.pad_w = rp.pad_w = int(c.p.pick(3));
  p.dilation_h = rp.dilation_h = int(c.p.pick(2)) + (c.p.one_in(16) ? 0 : 1);
  p.dilation_w = rp.dilation_w = int(c.p.pick(2)) + 1;
  p.groups = rp.groups = int(c.p.pick(3)) + (c.p.one_in(16) ? 0 : 1);
  const std::int64_t g = std::max(p.groups, 1);
  const std::int64_t N = c.p.pick(3), C = g * std::int64_t(c.p.pick(4)), K = g * (1 + std::int64_t(c.p.pick(3)));
  const std::int64_t H = 1 + c.p.pick(9), W = 1 + c.p.pick(9), R = c.p.one_in(16) ? 0 : 1 + c.p.pick(3), S = 1 + c.p.pick(3);
  const DType t = pick_dtype(c.p, 16);
  const Arg x = make_arg(c.backend, c.p, t, c.p.one_in(16) ? Dims{N, C, H} : Dims{N, C, H, W});
  const Arg w = make_arg(c.backend, c.p, c.p.one_in(16) ? pick_dtype(c.p, 2) : t,
                         Dims{K, c.p.one_in(16) ? C : C / g, R, S});
  const auto extent = [](std::int64_t in, std::int64_t k, int stride, int pad, int dil) {
    const std::int64_t span = dil * (k - 1) + 1;
    return in + 2 * pad >= span && stride >= 1 ? (in + 2 * pad - span) / stride + 1 : -1;
  };
  const std::int64_t P = extent(H, R, p.stride_h, p.pad_h, p.dilation_h);
  const std::int64_t Q = extent(W, S, p.stride_w, p.pad_w, p.dilation_w);
  const Dims yd{N, K, P, Q};
  const bool params_ok = p.stride_h >= 1 && p.pad_h >= 0 && p.dilation_h >= 1 && p.groups >= 1 && P >= 0 && Q >= 0;
  // A filter with an empty window is invalid (nothing to slide).
  const bool valid_in = params_ok && R >= 1 && x.dims.size() == 4 && xylem::is_floating(t) && w.dtype == t &&
                        w.dims[1] == C / g;
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, valid_in ? yd : Dims{N, K, H, W}), {&x, &w});
  const bool valid = valid_in && y.dtype == t && y.dims == yd;
  run("nn::conv2d",
      "nn::conv2d stride " + std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + " pad " +
          std::to_string(p.pad_h) + "x" + std::to_string(p.pad_w) + " dilation " + std::to_string(p.dilation_h) +
          "x" + std::to_string(p.dilation_w) + " groups " + std::to_string(p.groups) + " x " + x.describe() +
          ", w " + w.describe() + " -> " + y.describe(),
      valid, {&x, &w}, &y, [&] { Tensor o = y.view; xylem::nn::conv2d(c.backend, x.view, w.view, o, p); },
      [&] { return xylem_ref::conv2d(x.logical(), w.logical(), rp, yd); });
}

inline void fuzz_pool(Ctx& c) {
  const bool max = c.p.one_in(2);
  xylem::nn::Pool2d p;
  xylem_ref::PoolParams rp;
  p.kernel_h = rp.kernel_h = int(c.p.pick(4)) + (c.p.one_in(16) ? 0 : 1);
  p.kernel_w = rp.kernel_w = int(c.p.pick(3)) + 1;
  p.stride_h = int(c.p.pick(4));
  p.stride_w = int(c.p.pick(3));
  rp.stride_h = p.stride_h ? p.stride_h : p.kernel_h;
  rp.stride_w = p.stride_w ? p.stride_w : p.kernel_w;
  p.pad_h = rp.pad_h = int(c.p.pick(3));
  p.pad_w = rp.pad_w = int(c.p.pick(2));
  p.count_include_pad = rp.count_include_pad = c.p.one_in(2);
  const std::int64_t N = c.p.pick(3), C = c.p.pick(4), H = 1 + c.p.pick(9), W = 1 + c.p.pick(9);
  const DType t = pick_dtype(c.p, 16);
  const Arg x = make_arg(c.backend, c.p, t, c.p.one_in(16) ? Dims{N, C, H} : Dims{N, C, H, W});
  const auto extent = [](std::int64_t in, int k, int stride, int pad) {
    return in + 2 * pad >= k ? (in + 2 * pad - k) / stride + 1 : -1;
  };
  const bool params_ok = p.kernel_h >= 1 && 2 * p.pad_h <= p.kernel_h && 2 * p.pad_w <= p.kernel_w;
  const std::int64_t P = params_ok ? extent(H, rp.kernel_h, rp.stride_h, rp.pad_h) : -1;
  const std::int64_t Q = params_ok ? extent(W, rp.kernel_w, rp.stride_w, rp.pad_w) : -1;
  const Dims yd{N, C, P, Q};
  const bool valid_in = params_ok && P >= 0 && Q >= 0 && x.dims.size() == 4 && xylem::is_floating(t);
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, valid_in ? yd : Dims{N, C, H, W}), {&x});
  const char* name = max ? "nn::max_pool2d" : "nn::avg_pool2d";
  run(name,
      std::string(name) + " kernel " + std::to_string(p.kernel_h) + "x" + std::to_string(p.kernel_w) + " stride " +
          std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + " pad " + std::to_string(p.pad_h) + "x" +
          std::to_string(p.pad_w) + " count_include_pad " + std::to_string(p.count_include_pad) + " x " +
          x.describe() + " -> " + y.describe(),
      valid_in && y.dtype == t && y.dims == yd, {&x}, &y,
      [&] {
        Tensor o = y.view;
        max ? xylem::nn::max_pool2d(c.backend, x.view, o, p) : xylem::nn::avg_pool2d(c.backend, x.view, o, p);
      },
      [&] { return xylem_ref::pool2d(x.logical(), rp, max, yd); });
}

inline void fuzz_layer_norm(Ctx& c) {
  static constexpr double epsilons[] = {1e-5, 1e-3, 0.5, -1};
  const double eps = c.p.from(epsilons);
  const int rank = int(c.p.pick(5));
  const int nrank = int(c.p.pick(std::uint32_t(rank) + 2));
  const DType t = pick_dtype(c.p, 16);
  const Arg x = make_arg(c.backend, c.p, t, pick_dims(c.p, rank));
  const bool rank_ok = nrank >= 1 && nrank <= rank;
  const Dims features = rank_ok ? Dims(x.dims.end() - nrank, x.dims.end()) : Dims{4};
  Arg gamma, beta;
  const auto optional_arg = [&](Arg& a) {
    if (!c.p.one_in(3)) a = make_arg(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, features));
  };
  optional_arg(gamma);
  optional_arg(beta);
  const auto arg_ok = [&](const Arg& a) { return !a.base.defined() || (a.dtype == t && a.dims == features); };
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, x.dims), {&x});
  const bool valid = rank_ok && eps >= 0 && xylem::is_floating(t) && arg_ok(gamma) && arg_ok(beta) &&
                     y.dtype == t && y.dims == x.dims;
  std::vector<const Arg*> ins{&x};
  if (gamma.base.defined()) ins.push_back(&gamma);
  if (beta.base.defined()) ins.push_back(&beta);
  run("nn::layer_norm",
      "nn::layer_norm normalized_rank " + std::to_string(nrank) + " eps " + std::to_string(eps) + " x " +
          x.describe() + (gamma.base.defined() ? ", gamma " + gamma.describe() : "") +
          (beta.base.defined() ? ", beta " + beta.describe() : "") + " -> " + y.describe(),
      valid, ins, &y,
      [&] { Tensor o = y.view; (void)xylem::nn::layer_norm(c.backend, x.view, nrank, gamma.view, beta.view, eps, o); },
      [&] {
        return xylem_ref::layer_norm(x.logical(), nrank, gamma.base.defined() ? gamma.logical().v : std::vector<double>{},
                                     beta.base.defined() ? beta.logical().v : std::vector<double>{}, eps);
      });
}

}  // namespace xylem_fuzz
