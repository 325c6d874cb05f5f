// The f32 recurrent cells of rnn.cpp, one row of a batch at a time: the
// units of a row are dense within each gate block, so whole vectors of
// units go through at once. Per step, the cell is the only work besides
// the recurrent gemm; with libm's expf and tanhf per element it cost as
// much as that gemm (an LSTM step of 32 x 256 units: three sigmoids and
// two tanh each).
//
// The sigmoids and tanh are elementwise_math_simd-inl.h's LeanExp and
// LeanTanh. A vector with a lane outside their domain (a sigmoid argument
// below -88.3, a NaN anywhere, which LeanTanh would not propagate) goes
// through rnn_math.h's formula lane by lane instead, the same as before:
// such lanes are rare and must stay exact.

#if defined(XYLEM_NATIVE_RNN_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_RNN_SIMD_INL_H_
#undef XYLEM_NATIVE_RNN_SIMD_INL_H_
#else
#define XYLEM_NATIVE_RNN_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "frameworks/native/ops/elementwise_math_simd-inl.h"
#include "hwy/highway.h"
#include "xylem/plugin/rnn_math.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 1 / (1 + exp(-x)); exp(-x) below LeanExp's domain is clamped, which
// leaves the result at 1 all the same. Exact where RnnSigmoidOk holds.
template <class D>
HWY_INLINE hn::Vec<D> RnnSigmoid(D d, hn::Vec<D> x) {
  const auto one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, LeanExp(d, hn::Max(hn::Neg(x), hn::Set(d, kLeanExpLow)))));
}
template <class D>
HWY_INLINE hn::Mask<D> RnnSigmoidOk(D d, hn::Vec<D> x) {
  return hn::Ge(x, hn::Set(d, -kLeanExpHigh));  // false for NaN
}
template <class D>
HWY_INLINE hn::Mask<D> NotNaN(D, hn::Vec<D> x) {
  return hn::Eq(x, x);
}

// One row of nn::lstm_cell: gates [4H] (i, f, g, o pre-activations, left
// activated), c_prev, c, h [H].
inline void LstmRowF32(float* gates, const float* c_prev, float* c,
                       float* h, std::int64_t hidden) {
  const hn::ScalableTag<float> d;
  const auto n = static_cast<std::int64_t>(hn::Lanes(d));
  float *gi = gates, *gf = gates + hidden, *gg = gates + 2 * hidden, *go = gates + 3 * hidden;
  const auto one = [&](std::int64_t j) { xy_lstm_cell_f(gi + j, gf + j, gg + j, go + j, c_prev[j], c + j, h + j); };
  std::int64_t j = 0;
  for (; j + n <= hidden; j += n) {
    const auto i = hn::LoadU(d, gi + j), f = hn::LoadU(d, gf + j), g = hn::LoadU(d, gg + j), o = hn::LoadU(d, go + j);
    const auto si = RnnSigmoid(d, i), sf = RnnSigmoid(d, f), tg = LeanTanh(d, g), so = RnnSigmoid(d, o);
    const auto cv = hn::MulAdd(sf, hn::LoadU(d, c_prev + j), hn::Mul(si, tg));
    const auto ok = hn::And(hn::And(RnnSigmoidOk(d, i), RnnSigmoidOk(d, f)),
                            hn::And(hn::And(RnnSigmoidOk(d, o), NotNaN(d, g)), NotNaN(d, cv)));
    if (!hn::AllTrue(d, ok)) [[unlikely]] {
      for (std::int64_t k = j; k < j + n; ++k) one(k);
      continue;
    }
    hn::StoreU(si, d, gi + j);
    hn::StoreU(sf, d, gf + j);
    hn::StoreU(tg, d, gg + j);
    hn::StoreU(so, d, go + j);
    hn::StoreU(cv, d, c + j);
    hn::StoreU(hn::Mul(so, LeanTanh(d, cv)), d, h + j);
  }
  for (; j < hidden; ++j) one(j);
}

// One row of nn::lstm_cell_grad: the activated gates [4H] and c_prev, c,
// dy, dh, dc [H] in; dgates [4H] and dc_prev [H] out.
inline void LstmGradRowF32(const float* gates, const float* c_prev,
                           const float* c, const float* dy, const float* dh,
                           const float* dc, float* dgates, float* dc_prev,
                           std::int64_t hidden) {
  const hn::ScalableTag<float> d;
  const auto n = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t h2 = 2 * hidden, h3 = 3 * hidden;
  const auto one = [&](std::int64_t j) {
    const float* g = gates + j;
    float* dg = dgates + j;
    xy_lstm_cell_grad_f(g[0], g[hidden], g[h2], g[h3], c_prev[j], c[j], dy[j], dh[j], dc[j], dg, dg + hidden,
                        dg + h2, dg + h3, dc_prev + j);
  };
  const auto v1 = hn::Set(d, 1.0f);
  std::int64_t j = 0;
  for (; j + n <= hidden; j += n) {
    const auto cv = hn::LoadU(d, c + j);
    if (!hn::AllTrue(d, NotNaN(d, cv))) [[unlikely]] {
      for (std::int64_t k = j; k < j + n; ++k) one(k);
      continue;
    }
    const auto i = hn::LoadU(d, gates + j), f = hn::LoadU(d, gates + hidden + j);
    const auto g = hn::LoadU(d, gates + h2 + j), o = hn::LoadU(d, gates + h3 + j);
    const auto tc = LeanTanh(d, cv);
    const auto dht = hn::Add(hn::LoadU(d, dy + j), hn::LoadU(d, dh + j));
    const auto dct = hn::MulAdd(hn::Mul(dht, o), hn::NegMulAdd(tc, tc, v1), hn::LoadU(d, dc + j));
    hn::StoreU(hn::Mul(hn::Mul(dct, g), hn::Mul(i, hn::Sub(v1, i))), d, dgates + j);
    hn::StoreU(hn::Mul(hn::Mul(dct, hn::LoadU(d, c_prev + j)), hn::Mul(f, hn::Sub(v1, f))), d, dgates + hidden + j);
    hn::StoreU(hn::Mul(hn::Mul(dct, i), hn::NegMulAdd(g, g, v1)), d, dgates + h2 + j);
    hn::StoreU(hn::Mul(hn::Mul(dht, tc), hn::Mul(o, hn::Sub(v1, o))), d, dgates + h3 + j);
    hn::StoreU(hn::Mul(dct, f), d, dc_prev + j);
  }
  for (; j < hidden; ++j) one(j);
}

// One row of nn::gru_cell: xg [3H] (x W_ih^T + b_ih, left as r, z, n), hg
// [3H] (h W_hh^T + b_hh), h_prev and h [H].
inline void GruRowF32(float* xg, const float* hg, const float* h_prev,
                      float* h, std::int64_t hidden) {
  const hn::ScalableTag<float> d;
  const auto n = static_cast<std::int64_t>(hn::Lanes(d));
  float *xr = xg, *xz = xg + hidden, *xn = xg + 2 * hidden;
  const float *hr = hg, *hz = hg + hidden, *hn_ = hg + 2 * hidden;
  const auto one = [&](std::int64_t j) { h[j] = xy_gru_cell_f(xr + j, xz + j, xn + j, hr[j], hz[j], hn_[j], h_prev[j]); };
  std::int64_t j = 0;
  for (; j + n <= hidden; j += n) {
    const auto ar = hn::Add(hn::LoadU(d, xr + j), hn::LoadU(d, hr + j));
    const auto az = hn::Add(hn::LoadU(d, xz + j), hn::LoadU(d, hz + j));
    const auto r = RnnSigmoid(d, ar), z = RnnSigmoid(d, az);
    const auto an = hn::MulAdd(r, hn::LoadU(d, hn_ + j), hn::LoadU(d, xn + j));
    const auto ok = hn::And(hn::And(RnnSigmoidOk(d, ar), RnnSigmoidOk(d, az)), NotNaN(d, an));
    if (!hn::AllTrue(d, ok)) [[unlikely]] {
      for (std::int64_t k = j; k < j + n; ++k) one(k);
      continue;
    }
    const auto nv = LeanTanh(d, an);
    hn::StoreU(r, d, xr + j);
    hn::StoreU(z, d, xz + j);
    hn::StoreU(nv, d, xn + j);
    // (1 - z) n + z h_prev
    hn::StoreU(hn::MulAdd(z, hn::LoadU(d, h_prev + j), hn::NegMulAdd(z, nv, nv)), d, h + j);
  }
  for (; j < hidden; ++j) one(j);
}

// One row of nn::gru_cell_grad: the activated gates [3H] (r, z, n), hg
// [3H] and h_prev, dy, dh [H] in; dxg, dhg [3H] and dh_prev [H] out. The
// formula has no transcendental: every lane is plain arithmetic.
inline void GruGradRowF32(const float* gates, const float* hg,
                          const float* h_prev, const float* dy, const float* dh,
                          float* dxg, float* dhg, float* dh_prev,
                          std::int64_t hidden) {
  const hn::ScalableTag<float> d;
  const auto n = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t h2 = 2 * hidden;
  const auto v1 = hn::Set(d, 1.0f);
  std::int64_t j = 0;
  for (; j + n <= hidden; j += n) {
    const auto r = hn::LoadU(d, gates + j), z = hn::LoadU(d, gates + hidden + j), nv = hn::LoadU(d, gates + h2 + j);
    const auto dv = hn::Add(hn::LoadU(d, dy + j), hn::LoadU(d, dh + j));
    const auto one_z = hn::Sub(v1, z);
    const auto a_n = hn::Mul(hn::Mul(dv, one_z), hn::NegMulAdd(nv, nv, v1));
    const auto d_r = hn::Mul(hn::Mul(a_n, hn::LoadU(d, hg + h2 + j)), hn::Mul(r, hn::Sub(v1, r)));
    const auto d_z = hn::Mul(hn::Mul(dv, hn::Sub(hn::LoadU(d, h_prev + j), nv)), hn::Mul(z, one_z));
    hn::StoreU(d_r, d, dxg + j);
    hn::StoreU(d_z, d, dxg + hidden + j);
    hn::StoreU(a_n, d, dxg + h2 + j);
    hn::StoreU(d_r, d, dhg + j);
    hn::StoreU(d_z, d, dhg + hidden + j);
    hn::StoreU(hn::Mul(a_n, r), d, dhg + h2 + j);
    hn::StoreU(hn::Mul(dv, z), d, dh_prev + j);
  }
  for (; j < hidden; ++j) {
    const float* g = gates + j;
    float* dx = dxg + j;
    float* dr = dhg + j;
    dh_prev[j] = xy_gru_cell_grad_f(g[0], g[hidden], g[h2], hg[h2 + j], h_prev[j], dy[j], dh[j], dx, dx + hidden,
                                    dx + h2, dr + h2);
    dr[0] = dx[0];
    dr[hidden] = dx[hidden];
  }
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle
