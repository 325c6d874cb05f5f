// The vectorised elementwise ops (math::unary, binary, compare) and their
// dense and strided loops, compiled once per SIMD target by Highway's
// foreach_target and picked at run time: elementwise_simd-inl.h makes the
// kernels of math::unary, binary and compare from them, fused_simd-inl.h
// the tile evaluator of math::fused. Each op code is its own
// functor, so the inner loop of a kernel specialised on it holds no switch.
//
// The scalar formula of every code is math.h's X-list (XY_UNARY_FORMULAS
// ...), instantiated there as xy_unary_f/_d. The vector formulas below are
// its transcription into Highway operations, in the same order: Highway's
// vectors have no ?: (selects are IfThenElse on masks), and some formulas
// clamp the argument of an approximation that is only defined on a range
// (the lanes concerned are replaced anyway). f32 exp, sigmoid and tanh use
// elementwise_math_simd-inl.h's lean approximations. A code the vector
// tables here do not name runs math.h's formula lane by lane (Reach::none),
// so a code added to the X-list is right before it is fast. Where an approximation (LeanExp, Highway's Log, Sin, ...)
// is accurate only on a range, lanes outside it (NaN, Inf, overflow, log of
// <= 0) take math.h's scalar formula instead: exact semantics for the
// special values, vector speed for the rest (see Reach). Codes without a
// vector formula (gelu's erf, pow) run math.h's scalar formula lane by
// lane, still without a per-element switch.

// Shared by every target: what elementwise.cpp hands a chunk of work over.
#ifndef XYLEM_NATIVE_ELEMENTWISE_CALL_
#define XYLEM_NATIVE_ELEMENTWISE_CALL_
#include <array>
#include <cstdint>

#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
// Elements [begin, end) of one call with `In` inputs: views 0..In-1 are the
// inputs, view In the output. p0, p1 the code's parameters.
template <std::size_t In>
struct ElementwiseChunk {
  const StridedLayout<In + 1>* layout;
  std::array<const void*, In> in;  // element 0 of each input view
  void* out;
  int code;
  double p0, p1;
  bool stream;  // non-temporal stores for a dense output
  std::int64_t begin, end;
};
}  // namespace xylem::native
#endif

#if defined(XYLEM_NATIVE_ELEMENTWISE_OPS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_ELEMENTWISE_OPS_SIMD_INL_H_
#undef XYLEM_NATIVE_ELEMENTWISE_OPS_SIMD_INL_H_
#else
#define XYLEM_NATIVE_ELEMENTWISE_OPS_SIMD_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>

#include "frameworks/native/ops/convert_simd-inl.h"
#include "frameworks/native/ops/elementwise_math_simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "xylem/plugin/math.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// math.h's scalar formulas by compute type (the code a constant after
// inlining, so the switch folds away).
HWY_INLINE float ScalarUnary(int code, float x, float p0, float p1) { return xy_unary_f(code, x, p0, p1); }
HWY_INLINE double ScalarUnary(int code, double x, double p0, double p1) { return xy_unary_d(code, x, p0, p1); }
HWY_INLINE float ScalarBinary(int code, float a, float b, float p0, float p1) {
  return xy_binary_f(code, a, b, p0, p1);
}
HWY_INLINE double ScalarBinary(int code, double a, double b, double p0, double p1) {
  return xy_binary_d(code, a, b, p0, p1);
}
HWY_INLINE float ScalarCompare(int code, float a, float b) { return float(xy_compare_f(code, a, b)); }
HWY_INLINE double ScalarCompare(int code, double a, double b) { return double(xy_compare_d(code, a, b)); }

// Largest argument whose exp is finite (a little below, so Highway's Exp,
// valid up to 104 / 706, stays in range).
template <class C>
constexpr C kExpMax = sizeof(C) == 4 ? C(88.0) : C(709.0);
// Highway's Sin and Cos are accurate (3 ulp) on [-39000, 39000].
template <class C>
constexpr C kTrigMax = C(39000);

// `fast` computed for every lane; lanes where `ok` is false are recomputed
// with the scalar formula f (rare: the branch is almost never taken). A
// lane's result depends on its own value only, not on its neighbours.
template <class D, class F>
HWY_INLINE hn::Vec<D> Patch1(D d, hn::Mask<D> ok, hn::Vec<D> fast, hn::Vec<D> x, F f) {
  if (HWY_LIKELY(hn::AllTrue(d, ok))) return fast;
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf[HWY_MAX_BYTES / sizeof(C)];
  hn::Store(x, d, buf);
  for (std::size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = f(buf[i]);
  return hn::IfThenElse(ok, fast, hn::Load(d, buf));
}

template <class D, class F>
HWY_INLINE hn::Vec<D> Patch2(D d, hn::Mask<D> ok, hn::Vec<D> fast, hn::Vec<D> a, hn::Vec<D> b, F f) {
  if (HWY_LIKELY(hn::AllTrue(d, ok))) return fast;
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf_a[HWY_MAX_BYTES / sizeof(C)];
  HWY_ALIGN C buf_b[HWY_MAX_BYTES / sizeof(C)];
  hn::Store(a, d, buf_a);
  hn::Store(b, d, buf_b);
  for (std::size_t i = 0; i < hn::Lanes(d); ++i) buf_a[i] = f(buf_a[i], buf_b[i]);
  return hn::IfThenElse(ok, fast, hn::Load(d, buf_a));
}

// |x| finite (false for NaN): Highway's approximations are checked only
// on finite arguments, so Inf and NaN always take math.h's formula.
template <class D>
HWY_INLINE hn::Mask<D> Finite(D d, hn::Vec<D> x) {
  return hn::Le(hn::Abs(x), hn::Set(d, std::numeric_limits<hn::TFromD<D>>::max()));
}

// 1 / (1 + exp(-t)), for lanes with -t <= kExpMax (the caller patches others).
template <class D>
HWY_INLINE hn::Vec<D> SigmoidFast(D d, hn::Vec<D> t) {
  const auto one = hn::Set(d, hn::TFromD<D>(1));
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(t))));
}

// How far an op's vector formula reaches. every_lane: exact everywhere.
// checked: Fast is exact where Ok holds; other lanes (NaN, Inf, out of the
// approximation's range) take math.h's scalar formula. none: the scalar
// formula lane by lane.
enum class Reach { every_lane, checked, none };

// y = unary code K of x. operator() is exact for every lane; ComputeDense
// uses Fast and Ok directly so its vector loop holds no call.
template <int K, class C>
struct UnaryOp {
  C p0, p1;

  // f32 exp, sigmoid, tanh, silu and gelu_tanh use elementwise_math_simd-inl.h's lean forms.
  static constexpr bool kLean = std::is_same_v<C, float>;

  static constexpr Reach kReach =
      (K == XY_UN_EXP || K == XY_UN_LOG || K == XY_UN_SIN || K == XY_UN_COS || K == XY_UN_SIGMOID ||
       K == XY_UN_TANH || K == XY_UN_ELU || K == XY_UN_SOFTPLUS || (kLean && (K == XY_UN_SILU || K == XY_UN_GELU_TANH)))
          ? Reach::checked
          : (K == XY_UN_SQRT || K == XY_UN_RSQRT || K == XY_UN_ABS || K == XY_UN_NEG || K == XY_UN_CLAMP ||
             K == XY_UN_RELU || K == XY_UN_LEAKY_RELU)
                ? Reach::every_lane
                : Reach::none;  // gelu (erf); f64 silu and gelu_tanh

  // gelu_tanh's sigmoid argument, 2 sqrt(2/pi) (x + kappa x^3) (math.h's XY_GELU_TANH_S).
  template <class D>
  static HWY_INLINE hn::Vec<D> GeluTanhArg(D d, hn::Vec<D> x) {
    const auto cube = hn::Mul(hn::Mul(x, x), x);
    return hn::Mul(hn::Set(d, C(2.0 * XY_SQRT_2_OVER_PI)), hn::MulAdd(hn::Set(d, C(XY_GELU_KAPPA)), cube, x));
  }
  // 1 + exp(-t) with exp(-t) below 2^-125 clamped (LeanExp's domain), as the sigmoid's lean form.
  template <class D>
  static HWY_INLINE hn::Vec<D> OnePlusExpNeg(D d, hn::Vec<D> t) {
    return hn::Add(hn::Set(d, C(1)), LeanExp(d, hn::Max(hn::Neg(t), hn::Set(d, kLeanExpLow))));
  }

  C scalar(C x) const { return ScalarUnary(K, x, p0, p1); }

  template <class D>
  HWY_INLINE hn::Vec<D> Fast(D d, hn::Vec<D> x) const {
    const auto zero = hn::Zero(d);
    if constexpr (K == XY_UN_EXP) {
      if constexpr (kLean) return LeanExp(d, x);
      return hn::Exp(d, x);
    } else if constexpr (K == XY_UN_LOG) {
      return hn::Log(d, x);
    } else if constexpr (K == XY_UN_SQRT) {
      return hn::Sqrt(x);
    } else if constexpr (K == XY_UN_RSQRT) {
      return hn::Div(hn::Set(d, C(1)), hn::Sqrt(x));
    } else if constexpr (K == XY_UN_ABS) {
      return hn::Abs(x);
    } else if constexpr (K == XY_UN_NEG) {
      return hn::Neg(x);
    } else if constexpr (K == XY_UN_SIN) {
      return hn::Sin(d, x);
    } else if constexpr (K == XY_UN_COS) {
      return hn::Cos(d, x);
    } else if constexpr (K == XY_UN_CLAMP) {
      const auto lo = hn::Set(d, p0), hi = hn::Set(d, p1);
      return hn::IfThenElse(hn::Lt(x, lo), lo, hn::IfThenElse(hn::Gt(x, hi), hi, x));
    } else if constexpr (K == XY_UN_SIGMOID) {
      if constexpr (kLean) {  // exp(-x) below 2^-125 leaves 1 / (1 + it) at 1: clamp
        const auto one = hn::Set(d, C(1));
        return hn::Div(one, hn::Add(one, LeanExp(d, hn::Max(hn::Neg(x), hn::Set(d, kLeanExpLow)))));
      }
      return SigmoidFast(d, x);
    } else if constexpr (K == XY_UN_RELU) {
      return hn::IfThenZeroElse(hn::Lt(x, zero), x);  // NaN and -0 pass through
    } else if constexpr (K == XY_UN_TANH) {
      if constexpr (kLean) return LeanTanh(d, x);
      return hn::Tanh(d, x);
    } else if constexpr (K == XY_UN_LEAKY_RELU) {
      return hn::IfThenElse(hn::Lt(x, zero), hn::Mul(x, hn::Set(d, p0)), x);
    } else if constexpr (K == XY_UN_ELU) {
      const auto em1 = hn::Mul(hn::Set(d, p0), hn::Expm1(d, hn::Min(x, zero)));
      return hn::IfThenElse(hn::Gt(x, zero), x, em1);
    } else if constexpr (K == XY_UN_SILU) {  // x / (1 + exp(-x))
      return hn::Div(x, OnePlusExpNeg(d, x));
    } else if constexpr (K == XY_UN_GELU_TANH) {  // x sigmoid(2u)
      return hn::Div(x, OnePlusExpNeg(d, GeluTanhArg(d, x)));
    } else if constexpr (K == XY_UN_SOFTPLUS) {
      const auto beta = hn::Set(d, p0);
      const auto t = hn::Mul(x, beta);
      const auto soft = hn::Div(hn::Log1p(d, hn::Exp(d, hn::Min(t, hn::Set(d, kExpMax<C>)))), beta);
      return hn::IfThenElse(hn::Gt(t, hn::Set(d, p1)), x, soft);
    } else {
      return x;  // Reach::none: never used
    }
  }

  // Lanes where Fast is exact (Reach::checked only).
  template <class D>
  HWY_INLINE hn::Mask<D> Ok(D d, hn::Vec<D> x) const {
    if constexpr (K == XY_UN_EXP && kLean) {
      return hn::And(hn::Ge(x, hn::Set(d, kLeanExpLow)), hn::Le(x, hn::Set(d, kLeanExpHigh)));
    } else if constexpr (K == XY_UN_EXP) {
      return hn::And(Finite(d, x), hn::Le(x, hn::Set(d, kExpMax<C>)));
    } else if constexpr (K == XY_UN_LOG) {
      return hn::And(hn::Ge(x, hn::Set(d, std::numeric_limits<C>::min())),
                     hn::Le(x, hn::Set(d, std::numeric_limits<C>::max())));
    } else if constexpr (K == XY_UN_SIN || K == XY_UN_COS) {
      return hn::Le(hn::Abs(x), hn::Set(d, kTrigMax<C>));
    } else if constexpr (K == XY_UN_SIGMOID && kLean) {
      return hn::Ge(x, hn::Set(d, -kLeanExpHigh));  // +Inf included (gives 1); NaN not
    } else if constexpr (K == XY_UN_SILU) {  // -Inf (NaN in both) and NaN take the scalar form
      return hn::Ge(x, hn::Set(d, -kLeanExpHigh));
    } else if constexpr (K == XY_UN_GELU_TANH) {
      return hn::Ge(GeluTanhArg(d, x), hn::Set(d, -kLeanExpHigh));
    } else if constexpr (K == XY_UN_SIGMOID) {
      return hn::And(Finite(d, x), hn::Le(hn::Neg(x), hn::Set(d, kExpMax<C>)));
    } else if constexpr (K == XY_UN_TANH && kLean) {
      return hn::Eq(x, x);  // LeanTanh covers +-Inf; NaN takes tanh()
    } else if constexpr (K == XY_UN_SOFTPLUS) {
      const auto t = hn::Mul(x, hn::Set(d, p0));
      return hn::And(Finite(d, t), hn::Or(hn::Gt(t, hn::Set(d, p1)), hn::Le(t, hn::Set(d, kExpMax<C>))));
    } else {  // tanh, elu
      return Finite(d, x);
    }
  }

  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, hn::Vec<D> x) const {
    const auto s = [this](C v) { return scalar(v); };
    if constexpr (kReach == Reach::every_lane) return Fast(d, x);
    if constexpr (kReach == Reach::checked) return Patch1(d, Ok(d, x), Fast(d, x), x, s);
    return Patch1(d, hn::Lt(x, x), x, x, s);  // no lane is "ok": all scalar
  }
};

// y = binary code K of (a, b); the same three parts as UnaryOp.
template <int K, class C>
struct BinaryOp {
  C p0, p1;

  static constexpr Reach kReach =
      (K == XY_BIN_ELU_GRAD || K == XY_BIN_SOFTPLUS_GRAD) ? Reach::checked
      : (K == XY_BIN_ADD || K == XY_BIN_SUB || K == XY_BIN_MUL || K == XY_BIN_DIV || K == XY_BIN_MAXIMUM ||
         K == XY_BIN_MINIMUM || K == XY_BIN_SIGMOID_GRAD || K == XY_BIN_RELU_GRAD || K == XY_BIN_TANH_GRAD ||
         K == XY_BIN_LEAKY_RELU_GRAD)
          ? Reach::every_lane
          : Reach::none;  // pow, gelu_grad (erf)

  C scalar(C a, C b) const { return ScalarBinary(K, a, b, p0, p1); }

  template <class D>
  HWY_INLINE hn::Vec<D> Fast(D d, hn::Vec<D> a, hn::Vec<D> b) const {
    const auto zero = hn::Zero(d);
    const auto one = hn::Set(d, C(1));
    if constexpr (K == XY_BIN_ADD) {
      return hn::Add(a, b);
    } else if constexpr (K == XY_BIN_SUB) {
      return hn::Sub(a, b);
    } else if constexpr (K == XY_BIN_MUL) {
      return hn::Mul(a, b);
    } else if constexpr (K == XY_BIN_DIV) {
      return hn::Div(a, b);
    } else if constexpr (K == XY_BIN_MAXIMUM) {
      return hn::IfThenElse(hn::Or(hn::Gt(a, b), hn::IsNaN(a)), a, b);
    } else if constexpr (K == XY_BIN_MINIMUM) {
      return hn::IfThenElse(hn::Or(hn::Lt(a, b), hn::IsNaN(a)), a, b);
    } else if constexpr (K == XY_BIN_SIGMOID_GRAD) {
      return hn::Mul(hn::Mul(b, a), hn::Sub(one, a));
    } else if constexpr (K == XY_BIN_RELU_GRAD) {
      return hn::IfThenElseZero(hn::Gt(a, zero), b);
    } else if constexpr (K == XY_BIN_TANH_GRAD) {
      return hn::Mul(b, hn::Sub(one, hn::Mul(a, a)));
    } else if constexpr (K == XY_BIN_LEAKY_RELU_GRAD) {
      return hn::IfThenElse(hn::Gt(a, zero), b, hn::Mul(b, hn::Set(d, p0)));
    } else if constexpr (K == XY_BIN_ELU_GRAD) {
      const auto neg = hn::Mul(hn::Mul(b, hn::Set(d, p0)), hn::Exp(d, hn::Min(a, zero)));
      return hn::IfThenElse(hn::Gt(a, zero), b, neg);
    } else if constexpr (K == XY_BIN_SOFTPLUS_GRAD) {
      const auto t = hn::Mul(a, hn::Set(d, p0));
      return hn::IfThenElse(hn::Gt(t, hn::Set(d, p1)), b, hn::Mul(b, SigmoidFast(d, t)));
    } else {
      return a;  // Reach::none: never used
    }
  }

  template <class D>
  HWY_INLINE hn::Mask<D> Ok(D d, hn::Vec<D> a, hn::Vec<D>) const {
    if constexpr (K == XY_BIN_SOFTPLUS_GRAD) {
      const auto t = hn::Mul(a, hn::Set(d, p0));
      return hn::And(Finite(d, t), hn::Or(hn::Gt(t, hn::Set(d, p1)), hn::Le(hn::Neg(t), hn::Set(d, kExpMax<C>))));
    } else {  // elu_grad
      return Finite(d, a);
    }
  }

  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, hn::Vec<D> a, hn::Vec<D> b) const {
    const auto s = [this](C u, C v) { return scalar(u, v); };
    if constexpr (kReach == Reach::every_lane) return Fast(d, a, b);
    if constexpr (kReach == Reach::checked) return Patch2(d, Ok(d, a, b), Fast(d, a, b), a, b, s);
    return Patch2(d, hn::Lt(a, a), a, a, b, s);  // no lane is "ok": all scalar
  }
};

// 1 or 0 in the compute type; the output stage turns it into a boolean.
template <int K, class C>
struct CompareOp {
  static constexpr Reach kReach = K >= XY_CMP_EQ && K <= XY_CMP_GE ? Reach::every_lane : Reach::none;

  C scalar(C a, C b) const { return ScalarCompare(K, a, b); }

  template <class D>
  HWY_INLINE hn::Vec<D> Fast(D d, hn::Vec<D> a, hn::Vec<D> b) const {
    const auto one = hn::Set(d, C(1));
    if constexpr (K == XY_CMP_EQ) return hn::IfThenElseZero(hn::Eq(a, b), one);
    if constexpr (K == XY_CMP_NE) return hn::IfThenZeroElse(hn::Eq(a, b), one);
    if constexpr (K == XY_CMP_LT) return hn::IfThenElseZero(hn::Lt(a, b), one);
    if constexpr (K == XY_CMP_LE) return hn::IfThenElseZero(hn::Le(a, b), one);
    if constexpr (K == XY_CMP_GT) return hn::IfThenElseZero(hn::Gt(a, b), one);
    if constexpr (K == XY_CMP_GE) return hn::IfThenElseZero(hn::Ge(a, b), one);
    return hn::Zero(d);
  }

  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, hn::Vec<D> a, hn::Vec<D> b) const {
    if constexpr (kReach == Reach::every_lane) return Fast(d, a, b);
    const auto s = [this](C u, C v) { return scalar(u, v); };
    return Patch2(d, hn::Lt(a, a), a, a, b, s);  // no lane is "ok": all scalar
  }
};

// Op applied to one vector of each input: Fast (unchecked) or exact.
template <bool kFast, class D, class Op, std::size_t In>
HWY_INLINE hn::Vec<D> ApplyOp(D d, const Op& op, const std::array<hn::Vec<D>, In>& v) {
  if constexpr (In == 1)
    return kFast ? op.Fast(d, v[0]) : op(d, v[0]);
  else
    return kFast ? op.Fast(d, v[0], v[1]) : op(d, v[0], v[1]);
}

// Vectors per check block. A Reach::checked op runs Fast over a block into
// a buffer (in L1), checks Ok for every lane, redoes the block exactly in
// the rare case some lane is not Ok (its inputs are still intact even when
// the output is one of them), then writes the block out. The fallback (a
// call into libm) thus stays out of the vector loop: inside it, the call
// would clobber every vector register (none is callee-saved), and the loop
// would reload its constants from the stack on each iteration (exp measured
// 2.6x slower than Eigen's on one thread that way).
constexpr std::size_t kCheckVectors = 16;

// Whole vectors [0, count) (count a multiple of the lane count): input k
// at src[k] + i*step[k] (step 0: a vector of copies, for a broadcast input).
template <bool kStream, class C, std::size_t In, class Op>
HWY_INLINE void DenseVectors(const std::array<const C*, In>& src, const std::array<std::size_t, In>& step, C* dst,
                             std::size_t count, const Op& op) {
  const hn::ScalableTag<C> d;
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  const auto load = [&](std::size_t i) HWY_ATTR {
    std::array<V, In> v;
    for (std::size_t k = 0; k < In; ++k) v[k] = hn::LoadU(d, src[k] + i * step[k]);
    return v;
  };
  const auto put = [&](V y, std::size_t i) HWY_ATTR {
    if constexpr (kStream)
      hn::Stream(y, d, dst + i);
    else
      hn::StoreU(y, d, dst + i);
  };
  if constexpr (Op::kReach != Reach::checked) {
    for (std::size_t i = 0; i < count; i += lanes) put(ApplyOp<false>(d, op, load(i)), i);
  } else {
    HWY_ALIGN C block[kCheckVectors * HWY_MAX_BYTES / sizeof(C)];
    const std::size_t size = kCheckVectors * lanes;
    for (std::size_t b = 0; b < count; b += size) {
      const std::size_t m = std::min(size, count - b);
      auto ok = hn::FirstN(d, lanes);
      for (std::size_t j = 0; j < m; j += lanes) {
        const auto v = load(b + j);
        hn::Store(ApplyOp<true>(d, op, v), d, block + j);
        if constexpr (In == 1)
          ok = hn::And(ok, op.Ok(d, v[0]));
        else
          ok = hn::And(ok, op.Ok(d, v[0], v[1]));
      }
      if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
        for (std::size_t j = 0; j < m; j += lanes) hn::Store(ApplyOp<false>(d, op, load(b + j)), d, block + j);
      }
      for (std::size_t j = 0; j < m; j += lanes) put(hn::Load(d, block + j), b + j);
    }
  }
}

// Applies op to n dense elements of compute type. Input k is src[k][i], or
// the single value *src[k] for every i when splat[k] (a stride-0 input).
// With `stream` the output goes out through non-temporal stores (aligned:
// a short head goes through the partial path): for outputs larger than the
// caches this skips reading each destination line before overwriting it.
template <class C, std::size_t In, class Op>
HWY_INLINE void ComputeDense(const std::array<const C*, In>& src, const std::array<bool, In>& splat, C* dst,
                             std::size_t n, bool stream, const Op& op) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d);
  // A broadcast input reads a vector of copies, without moving: the vector
  // loop then has no branch on it.
  HWY_ALIGN C copies[In][HWY_MAX_BYTES / sizeof(C)];
  std::array<const C*, In> from = src;
  std::array<std::size_t, In> step{};
  for (std::size_t k = 0; k < In; ++k) {
    step[k] = splat[k] ? 0 : 1;
    if (splat[k]) {
      hn::Store(hn::Set(d, *src[k]), d, copies[k]);
      from[k] = copies[k];
    }
  }
  // Fewer than `lanes` elements: through full-width buffers, so they get the
  // same formula (and bits) as the rest.
  const auto partial = [&](std::size_t i, std::size_t count) HWY_ATTR {
    HWY_ALIGN C buf[In][HWY_MAX_BYTES / sizeof(C)] = {};
    std::array<hn::Vec<decltype(d)>, In> v;
    for (std::size_t k = 0; k < In; ++k) {
      std::memcpy(buf[k], from[k] + i * step[k], (splat[k] ? lanes : count) * sizeof(C));
      v[k] = hn::Load(d, buf[k]);
    }
    hn::Store(ApplyOp<false>(d, op, v), d, buf[0]);
    std::memcpy(dst + i, buf[0], count * sizeof(C));
  };
  const auto at = [&](std::size_t i) {
    std::array<const C*, In> p;
    for (std::size_t k = 0; k < In; ++k) p[k] = from[k] + i * step[k];
    return p;
  };
  std::size_t i = 0;
  if (stream) {
    const std::size_t misalign = (reinterpret_cast<std::uintptr_t>(dst) / sizeof(C)) % lanes;
    i = std::min(n, misalign ? lanes - misalign : 0);
    if (i > 0) partial(0, i);
  }
  const std::size_t whole = (n - i) / lanes * lanes;
  if (stream)
    DenseVectors<true, C, In>(at(i), step, dst + i, whole, op);
  else
    DenseVectors<false, C, In>(at(i), step, dst + i, whole, op);
  i += whole;
  if (i < n) partial(i, n - i);
}

// Elements per staging block: inputs or outputs that are strided or of a
// half type pass through buffers of this many compute-type elements.
constexpr std::size_t kStageBlock = 512;

// One run: `count` elements, input k at in[k] + j*in_stride[k], output at
// out + j*out_stride. T is the inputs' storage type, Out the output's (T,
// or std::uint8_t for a boolean result).
template <class T, class Out, std::size_t In, class Op>
HWY_INLINE void RunElements(const std::array<const T*, In>& in, const std::array<std::int64_t, In>& in_stride,
                            Out* out, std::int64_t out_stride, std::size_t count, bool stream, const Op& op) {
  using C = ComputeOf<T>;
  constexpr bool same_in = std::is_same_v<T, C>, same_out = std::is_same_v<Out, C>;
  HWY_ALIGN C stage_in[In][kStageBlock];
  HWY_ALIGN C stage_out[kStageBlock];
  std::array<bool, In> splat{}, direct{};
  std::array<C, In> splat_value{};
  bool all_direct = true;
  for (std::size_t k = 0; k < In; ++k) {
    splat[k] = in_stride[k] == 0;
    direct[k] = same_in && in_stride[k] == 1;
    if (splat[k]) splat_value[k] = to_compute(in[k][0]);
    all_direct = all_direct && (splat[k] || direct[k]);
  }
  const bool direct_out = same_out && out_stride == 1;
  // The common case, dense (or broadcast) in and out: no staging at all.
  std::array<const C*, In> src{};
  if (all_direct && direct_out) {
    for (std::size_t k = 0; k < In; ++k)
      src[k] = splat[k] ? &splat_value[k] : reinterpret_cast<const C*>(in[k]);
    ComputeDense<C, In>(src, splat, reinterpret_cast<C*>(out), count, stream, op);
    return;
  }
  for (std::size_t b = 0; b < count; b += kStageBlock) {
    const std::size_t n = std::min(kStageBlock, count - b);
    const auto jb = std::int64_t(b);
    for (std::size_t k = 0; k < In; ++k) {
      if (splat[k]) {
        src[k] = &splat_value[k];
      } else if (direct[k]) {
        src[k] = reinterpret_cast<const C*>(in[k]) + b;
      } else {
        WidenStrided(in[k] + jb * in_stride[k], in_stride[k], stage_in[k], n);
        src[k] = stage_in[k];
      }
    }
    if (direct_out) {
      ComputeDense<C, In>(src, splat, reinterpret_cast<C*>(out) + b, n, stream, op);
      continue;
    }
    ComputeDense<C, In>(src, splat, stage_out, n, false, op);
    Out* o = out + jb * out_stride;
    if constexpr (std::is_same_v<Out, std::uint8_t>) {
      for (std::size_t j = 0; j < n; ++j) o[std::int64_t(j) * out_stride] = stage_out[j] != C(0);
    } else {
      NarrowStrided(stage_out, o, out_stride, n);
    }
  }
}

// Walks a chunk's runs with one op.
template <class T, class Out, std::size_t In, class Op>
HWY_INLINE void RunChunk(const ElementwiseChunk<In>& c, const Op& op) {
  const auto& layout = *c.layout;
  std::array<const T*, In> base{}, run_in{};
  std::array<std::int64_t, In> stride{};
  for (std::size_t k = 0; k < In; ++k) {
    base[k] = static_cast<const T*>(c.in[k]);
    stride[k] = layout.inner_stride(k);
  }
  Out* out = static_cast<Out*>(c.out);
  const std::int64_t out_stride = layout.inner_stride(In);
  for_each_run(layout, c.begin, c.end,
               [&](const std::array<std::int64_t, In + 1>& offsets, std::int64_t count, std::int64_t) {
                 for (std::size_t k = 0; k < In; ++k) run_in[k] = base[k] + offsets[k];
                 RunElements<T, Out, In>(run_in, stride, out + offsets[In], out_stride, std::size_t(count),
                                         c.stream, op);
               });
  // Streaming stores are weakly ordered: fence them before the queue
  // signals completion to another thread.
  if (c.stream) hwy::FlushStream();
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle
