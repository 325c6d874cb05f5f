// The vectorised activations, compiled once per SIMD target by Highway's
// foreach_target (activation.cpp includes it that way) and picked at run
// time, so one binary uses AVX-512 where the CPU has it and AVX2 or SSE4
// elsewhere. The formulas are math.h's, written with vector operations:
// keep the two in step.

// The op kinds are shared by every target, so they are defined once.
#ifndef XYLEM_NATIVE_ACTIVATION_KINDS_
#define XYLEM_NATIVE_ACTIVATION_KINDS_
#include <cstddef>
namespace xylem::native {
enum class Unary : int { sigmoid, relu, tanh };
enum class Grad : int { sigmoid, relu, tanh };
}  // namespace xylem::native
#endif

// Per-target part: re-included for each target (Highway's toggle guard).
#if defined(XYLEM_NATIVE_ACTIVATION_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_ACTIVATION_SIMD_INL_H_
#undef XYLEM_NATIVE_ACTIVATION_SIMD_INL_H_
#else
#define XYLEM_NATIVE_ACTIVATION_SIMD_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sigmoid = 1 / (1 + exp(-x)). Highway's Exp is valid only up to about
// +104 (f32) / +706 (f64), so -x is clamped to just below where exp
// overflows, and beyond that the result is the formula's limit, 0. The clamp
// would also turn NaN into a number, so NaN is passed through explicitly.
struct SigmoidOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    using T = hn::TFromD<D>;
    const V limit = hn::Set(d, static_cast<T>(sizeof(T) == 4 ? 88.72 : 706.0));
    const V one = hn::Set(d, T(1));
    const V t = hn::Neg(x);
    const V y = hn::Div(one, hn::Add(one, hn::Exp(d, hn::Min(t, limit))));
    return hn::IfThenElse(hn::IsNaN(x), x, hn::IfThenZeroElse(hn::Gt(t, limit), y));
  }
};

// relu = x > 0 ? x : 0 (so NaN and -0 give +0, as in math.h).
struct ReluOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x);
  }
};

struct TanhOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    return hn::IfThenElse(hn::IsNaN(x), x, hn::Tanh(d, x));
  }
};

// Gradients, associated as in math.h: dy * y * (1 - y) is (dy * y) * (1 - y).
struct SigmoidGradOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V y, V dy) const {
    return hn::Mul(hn::Mul(dy, y), hn::Sub(hn::Set(d, hn::TFromD<D>(1)), y));
  }
};

struct ReluGradOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x, V dy) const {
    return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), dy);
  }
};

struct TanhGradOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V y, V dy) const {
    return hn::Mul(dy, hn::Sub(hn::Set(d, hn::TFromD<D>(1)), hn::Mul(y, y)));
  }
};

// Drives one dense output of n elements: full(i) makes the vector for
// elements [i, i + lanes), partial(i, count) handles a shorter piece. With
// `stream`, the output goes out through non-temporal stores: for outputs
// larger than the caches this skips the read-for-ownership of each
// destination line, a third of an elementwise op's memory traffic. Streaming
// stores need aligned addresses, so a short head runs through `partial`.
template <class T, class Full, class Partial>
HWY_INLINE void drive(T* out, std::size_t n, bool stream, Full full, Partial partial) {
  const hn::ScalableTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  if (stream) {
    const std::size_t misalign = (reinterpret_cast<std::uintptr_t>(out) / sizeof(T)) % lanes;
    i = std::min(n, misalign ? lanes - misalign : 0);
    if (i > 0) partial(std::size_t{0}, i);
    for (; i + lanes <= n; i += lanes) hn::Stream(full(i), d, out + i);
  } else {
    for (; i + lanes <= n; i += lanes) hn::StoreU(full(i), d, out + i);
  }
  if (i < n) partial(i, n - i);
  // Streaming stores are weakly ordered: fence them before the queue
  // signals completion to another thread.
  if (stream) hwy::FlushStream();
}

// y[i] = op(x[i]). Each vector is loaded before it is stored, so x and y may
// be the same array. Pieces shorter than a vector go through a full-width
// buffer so they get the same formula (and bits) as the rest.
template <class T, class Op>
HWY_INLINE void map1(const T* x, T* y, std::size_t n, bool stream, Op op) {
  const hn::ScalableTag<T> d;
  drive(
      y, n, stream, [&](std::size_t i) HWY_ATTR { return op(d, hn::LoadU(d, x + i)); },
      [&](std::size_t i, std::size_t count) HWY_ATTR {
        HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
        std::memcpy(buf, x + i, count * sizeof(T));
        hn::Store(op(d, hn::Load(d, buf)), d, buf);
        std::memcpy(y + i, buf, count * sizeof(T));
      });
}

// out[i] = op(a[i], b[i]); out may be a or b.
template <class T, class Op>
HWY_INLINE void map2(const T* a, const T* b, T* out, std::size_t n, bool stream, Op op) {
  const hn::ScalableTag<T> d;
  drive(
      out, n, stream, [&](std::size_t i) HWY_ATTR { return op(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)); },
      [&](std::size_t i, std::size_t count) HWY_ATTR {
        HWY_ALIGN T buf_a[HWY_MAX_BYTES / sizeof(T)] = {};
        HWY_ALIGN T buf_b[HWY_MAX_BYTES / sizeof(T)] = {};
        std::memcpy(buf_a, a + i, count * sizeof(T));
        std::memcpy(buf_b, b + i, count * sizeof(T));
        hn::Store(op(d, hn::Load(d, buf_a), hn::Load(d, buf_b)), d, buf_a);
        std::memcpy(out + i, buf_a, count * sizeof(T));
      });
}

template <class T>
HWY_INLINE void unary(Unary kind, const T* x, T* y, std::size_t n, bool stream) {
  switch (kind) {
    case Unary::sigmoid:
      return map1(x, y, n, stream, SigmoidOp());
    case Unary::relu:
      return map1(x, y, n, stream, ReluOp());
    case Unary::tanh:
      return map1(x, y, n, stream, TanhOp());
  }
}

template <class T>
HWY_INLINE void grad(Grad kind, const T* a, const T* b, T* out, std::size_t n, bool stream) {
  switch (kind) {
    case Grad::sigmoid:
      return map2(a, b, out, n, stream, SigmoidGradOp());
    case Grad::relu:
      return map2(a, b, out, n, stream, ReluGradOp());
    case Grad::tanh:
      return map2(a, b, out, n, stream, TanhGradOp());
  }
}

// The exported entry points (HWY_EXPORT needs plain functions).
HWY_NOINLINE void UnaryF32(Unary kind, const float* x, float* y, std::size_t n, bool stream) {
  unary(kind, x, y, n, stream);
}
HWY_NOINLINE void UnaryF64(Unary kind, const double* x, double* y, std::size_t n, bool stream) {
  unary(kind, x, y, n, stream);
}
HWY_NOINLINE void GradF32(Grad kind, const float* a, const float* b, float* out, std::size_t n, bool stream) {
  grad(kind, a, b, out, n, stream);
}
HWY_NOINLINE void GradF64(Grad kind, const double* a, const double* b, double* out, std::size_t n, bool stream) {
  grad(kind, a, b, out, n, stream);
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle
