#pragma once
// Float64 references for the fuzzers and the soak test, computed on the host
// from the logical (row-major) values of each argument. Each returns the
// expected values with, per element, the magnitude of the terms that made it
// (sum |terms|), which scales the tolerance the way the conformance suite's
// reduction tolerances do (tests/conformance/conformance.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "xylem/dtype.hpp"

namespace xylem_ref {

using Dims = std::vector<std::int64_t>;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A host array: dims and row-major values.
struct Array {
  Dims dims;
  std::vector<double> v;
};

// Expected values and the magnitude behind each.
struct Expect {
  std::vector<double> v, mag;
  void push(double value, double magnitude) {
    v.push_back(value);
    mag.push_back(magnitude);
  }
};

inline std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto x : d) n *= x;
  return n;
}

// Row-major multi-index of element k, and back.
inline Dims unravel(const Dims& dims, std::int64_t k) {
  Dims idx(dims.size());
  for (std::size_t a = dims.size(); a-- > 0;) {
    idx[a] = dims[a] ? k % dims[a] : 0;
    k = dims[a] ? k / dims[a] : 0;
  }
  return idx;
}
inline std::int64_t ravel(const Dims& dims, const Dims& idx) {
  std::int64_t k = 0;
  for (std::size_t a = 0; a < dims.size(); ++a) k = k * dims[a] + idx[a];
  return k;
}

// Tolerances as the conformance suite's (tol() in tests/conformance/dtypes.cpp):
// elem relative to the result, reduce relative to the terms' magnitude, and
// an absolute floor (f16's subnormal step, else the compute type's smallest
// normal). Integer and boolean results are exact.
inline double allowed(xylem::DType t, double expect, double mag) {
  using xylem::DType;
  switch (t) {
    case DType::f16: return 2e-3 * std::abs(expect) + 1e-4 * mag + 0x1p-24;
    case DType::bf16: return 1e-2 * std::abs(expect) + 1e-4 * mag + 0x1p-126;
    case DType::f32: return 1e-5 * std::abs(expect) + 1e-4 * mag + 0x1p-126;
    case DType::f64: return 1e-13 * std::abs(expect) + 1e-12 * mag + 0x1p-1022;
    default: return 0;
  }
}
inline bool matches(xylem::DType t, double expect, double mag, double got) {
  if (std::isnan(expect)) return std::isnan(got);
  if (std::isinf(expect)) return got == expect;
  return std::isfinite(got) && std::abs(got - expect) <= allowed(t, expect, mag);
}

// NumPy broadcasting; nullopt when the shapes do not broadcast.
inline std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}
// The element of `in` that broadcasts to element k of `out`.
inline double broadcast_at(const Array& in, const Dims& out, std::int64_t k) {
  const Dims o = unravel(out, k);
  Dims idx(in.dims.size());
  for (std::size_t a = 0; a < idx.size(); ++a) idx[a] = in.dims[a] == 1 ? 0 : o[o.size() - idx.size() + a];
  return in.v[static_cast<std::size_t>(ravel(in.dims, idx))];
}

// cast: float to integer truncates toward zero and saturates (NaN -> 0), to
// boolean is x != 0; float to float is exact for the values the fuzzers make.
inline double cast_value(double x, xylem::DType to) {
  using xylem::DType;
  const auto saturate = [&](double lo, double hi) { return std::isnan(x) ? 0.0 : std::clamp(std::trunc(x), lo, hi); };
  switch (to) {
    case DType::i32: return saturate(-2147483648.0, 2147483647.0);
    case DType::i64: return saturate(-9223372036854775808.0, 9223372036854775807.0);
    case DType::u8: return saturate(0, 255);
    case DType::boolean: return x != 0 ? 1 : 0;
    case DType::f32: return static_cast<float>(x);
    default: return x;
  }
}

// Reductions over sorted, distinct axes.
enum class Reduce { sum, mean, max, min, argmax, argmin, var };
inline Dims reduced_dims(const Dims& x, const std::vector<int>& axes, bool keepdim) {
  Dims out;
  for (std::size_t a = 0; a < x.size(); ++a) {
    const bool reduced = std::find(axes.begin(), axes.end(), int(a)) != axes.end();
    if (!reduced) out.push_back(x[a]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}
inline Expect reduce(Reduce op, const Array& x, const std::vector<int>& axes, int correction = 0) {
  const Dims kept = reduced_dims(x.dims, axes, false);
  Dims rdims;
  for (int a : axes) rdims.push_back(x.dims[std::size_t(a)]);
  const auto n_out = static_cast<std::size_t>(numel(kept));
  const std::int64_t n = numel(rdims);
  // Each output's terms, in row-major order of the reduced axes.
  std::vector<std::vector<double>> terms(n_out);
  for (std::int64_t k = 0; k < numel(x.dims); ++k) {
    const Dims idx = unravel(x.dims, k);
    Dims ko, ro;
    for (std::size_t a = 0; a < idx.size(); ++a)
      (std::find(axes.begin(), axes.end(), int(a)) != axes.end() ? ro : ko).push_back(idx[a]);
    terms[static_cast<std::size_t>(ravel(kept, ko))].push_back(x.v[std::size_t(k)]);
  }
  Expect e;
  for (const auto& t : terms) {
    double sum = 0, abs_sum = 0;
    for (double v : t) sum += v, abs_sum += std::abs(v);
    switch (op) {
      case Reduce::sum: e.push(sum, abs_sum); break;
      case Reduce::mean: e.push(n ? sum / double(n) : kNaN, n ? abs_sum / double(n) : 0); break;
      case Reduce::max:
      case Reduce::min: {
        const bool mx = op == Reduce::max;
        double best = t[0];
        for (double v : t) best = mx ? std::max(best, v) : std::min(best, v);
        e.push(best, 0);
        break;
      }
      case Reduce::argmax:
      case Reduce::argmin: {
        std::size_t best = 0;
        for (std::size_t i = 1; i < t.size(); ++i)
          if (op == Reduce::argmax ? t[i] > t[best] : t[i] < t[best]) best = i;
        e.push(double(best), 0);
        break;
      }
      case Reduce::var: {
        if (n == 0) {
          e.push(kNaN, 0);
          break;
        }
        const double mean = sum / double(n);
        double m2 = 0, sq = 0;
        for (double v : t) m2 += (v - mean) * (v - mean), sq += v * v;
        const double d = double(n - correction);
        e.push(m2 / d, sq / std::abs(d));
        break;
      }
    }
  }
  return e;
}

// softmax / log_softmax along `axis` (non-negative).
inline Expect softmax(const Array& x, int axis, bool log) {
  const auto ax = std::size_t(axis);
  std::int64_t inner = 1;
  for (std::size_t a = ax + 1; a < x.dims.size(); ++a) inner *= x.dims[a];
  const std::int64_t r = x.dims[ax], outer = numel(x.dims) / std::max<std::int64_t>(1, r * inner);
  Expect e;
  e.v.assign(x.v.size(), 0);
  e.mag.assign(x.v.size(), 0);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t j) { return std::size_t((o * r + j) * inner + i); };
      double m = -INFINITY, s = 0;
      for (std::int64_t j = 0; j < r; ++j) m = std::max(m, x.v[at(j)]);
      for (std::int64_t j = 0; j < r; ++j) s += std::exp(x.v[at(j)] - m);
      for (std::int64_t j = 0; j < r; ++j) {
        const double z = x.v[at(j)] - m;
        e.v[at(j)] = log ? z - std::log(s) : std::exp(z) / s;
        e.mag[at(j)] = log ? std::abs(x.v[at(j)]) + std::abs(m) + std::log(s) : 1;
      }
    }
  return e;
}

// One matrix of a (possibly batched, possibly transposed) gemm operand:
// element (i, j) of op(m) in batch b.
inline double op_at(const Array& m, bool trans, std::int64_t b, std::int64_t i, std::int64_t j) {
  const std::size_t r = m.dims.size();
  const std::int64_t rows = m.dims[r - 2], cols = m.dims[r - 1];
  const std::int64_t batch = r == 3 && m.dims[0] > 1 ? b : 0;
  const std::int64_t ii = trans ? j : i, jj = trans ? i : j;
  return m.v[std::size_t((batch * rows + ii) * cols + jj)];
}
// c = alpha op(a) op(b) + beta c, rank 2 or 3 (batch in c.dims[0]).
inline Expect gemm(bool ta, bool tb, double alpha, const Array& a, const Array& b, double beta, const Array& c) {
  const std::size_t r = c.dims.size();
  const std::int64_t batch = r == 3 ? c.dims[0] : 1, m = c.dims[r - 2], n = c.dims[r - 1];
  const std::int64_t k = ta ? a.dims[a.dims.size() - 2] : a.dims.back();
  Expect e;
  for (std::int64_t q = 0; q < batch; ++q)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (std::int64_t l = 0; l < k; ++l) {
          const double t = op_at(a, ta, q, i, l) * op_at(b, tb, q, l, j);
          s += t, mag += std::abs(t);
        }
        const double c0 = beta == 0 ? 0 : beta * c.v[std::size_t((q * m + i) * n + j)];
        e.push(alpha * s + c0, std::abs(alpha) * mag + std::abs(c0));
      }
  return e;
}

struct ConvParams {
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
};
// x [N, C, H, W], w [K, C/groups, R, S] -> [N, K, P, Q] (cross-correlation).
inline Expect conv2d(const Array& x, const Array& w, const ConvParams& p, const Dims& y) {
  const std::int64_t C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t K = w.dims[0], Cg = w.dims[1], R = w.dims[2], S = w.dims[3];
  const std::int64_t Kg = K / p.groups;
  Expect e;
  for (std::int64_t k = 0; k < numel(y); ++k) {
    const Dims o = unravel(y, k);  // n, kk, pp, qq
    const std::int64_t g = o[1] / Kg;
    double s = 0, mag = 0;
    for (std::int64_t c = 0; c < Cg; ++c)
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t t = 0; t < S; ++t) {
          const std::int64_t h = o[2] * p.stride_h - p.pad_h + r * p.dilation_h;
          const std::int64_t ww = o[3] * p.stride_w - p.pad_w + t * p.dilation_w;
          if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
          const double term = x.v[std::size_t(((o[0] * C + g * Cg + c) * H + h) * W + ww)] *
                              w.v[std::size_t(((o[1] * Cg + c) * R + r) * S + t)];
          s += term, mag += std::abs(term);
        }
    e.push(s, mag);
  }
  return e;
}

struct PoolParams {
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;
};
// Max or average pooling of x [N, C, H, W] into dims y.
inline Expect pool2d(const Array& x, const PoolParams& p, bool max, const Dims& y) {
  const std::int64_t H = x.dims[2], W = x.dims[3];
  Expect e;
  for (std::int64_t k = 0; k < numel(y); ++k) {
    const Dims o = unravel(y, k);
    double best = -INFINITY, s = 0, mag = 0;
    std::int64_t real = 0;
    for (int r = 0; r < p.kernel_h; ++r)
      for (int t = 0; t < p.kernel_w; ++t) {
        const std::int64_t h = o[2] * p.stride_h - p.pad_h + r, w = o[3] * p.stride_w - p.pad_w + t;
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        const double v = x.v[std::size_t(((o[0] * x.dims[1] + o[1]) * H + h) * W + w)];
        best = std::max(best, v), s += v, mag += std::abs(v), ++real;
      }
    // PyTorch's count: the window clipped to the padded input.
    const std::int64_t h0 = o[2] * p.stride_h - p.pad_h, w0 = o[3] * p.stride_w - p.pad_w;
    const std::int64_t hs = std::min<std::int64_t>(h0 + p.kernel_h, H + p.pad_h) - h0;
    const std::int64_t ws = std::min<std::int64_t>(w0 + p.kernel_w, W + p.pad_w) - w0;
    const double count = p.count_include_pad ? double(hs * ws) : double(real);
    if (max) e.push(best, 0);
    else e.push(s / count, mag / count);
  }
  return e;
}

// layer_norm over the last `nrank` axes; gamma/beta empty means 1 and 0.
inline Expect layer_norm(const Array& x, int nrank, const std::vector<double>& gamma, const std::vector<double>& beta,
                         double eps) {
  std::int64_t n = 1;
  for (std::size_t a = x.dims.size() - std::size_t(nrank); a < x.dims.size(); ++a) n *= x.dims[a];
  Expect e;
  for (std::size_t row = 0; n > 0 && row * std::size_t(n) < x.v.size(); ++row) {
    const double* v = &x.v[row * std::size_t(n)];
    double mean = 0, var = 0, top = 0;
    for (std::int64_t i = 0; i < n; ++i) mean += v[i], top = std::max(top, std::abs(v[i]));
    mean /= double(n);
    for (std::int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    const double rstd = 1 / std::sqrt(var / double(n) + eps);
    for (std::int64_t i = 0; i < n; ++i) {
      const double g = gamma.empty() ? 1 : gamma[std::size_t(i)], b = beta.empty() ? 0 : beta[std::size_t(i)];
      const double xh = (v[i] - mean) * rstd;
      e.push(xh * g + b, std::abs(g) * (rstd * top + std::abs(xh)) + std::abs(b));
    }
  }
  return e;
}

}  // namespace xylem_ref
