// math::cast natively: every dtype to every dtype, over views of any
// strides. Each (source, target) pair is its own loop with the conversion
// inlined; the frequent dense f32 <-> f16/bf16 casts run vectorised
// (cast_simd-inl.h, best SIMD target chosen at run time).
//
// Rounding follows the convention: one rounding to nearest even from the
// exact value. Conversions that would round twice through an intermediate
// type (f64 -> f16/bf16 through f32, i64 -> a narrow float) round once
// explicitly instead (round_to_odd, round_integer below).

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in elementwise.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/cast_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/cast_simd-inl.h"

#if HWY_ONCE
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "frameworks/native/ops/convert.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/convert.hpp"

namespace xylem::native {

HWY_EXPORT(WidenF16);
HWY_EXPORT(WidenBF16);
HWY_EXPORT(NarrowF16);
HWY_EXPORT(NarrowBF16);

namespace {

using plugin::OpCall;
using plugin::OpId;

// About 256 KiB of output per chunk: conversion is cheap per element.
constexpr std::int64_t kGrain = 64 * 1024;

// boolean storage: one byte, 0 or 1 (a distinct type from u8).
struct Bool8 {
  std::uint8_t v;
};

template <DType D>
struct StorageOf;
template <> struct StorageOf<DType::f16> { using type = hwy::float16_t; };
template <> struct StorageOf<DType::bf16> { using type = hwy::bfloat16_t; };
template <> struct StorageOf<DType::f32> { using type = float; };
template <> struct StorageOf<DType::f64> { using type = double; };
template <> struct StorageOf<DType::i32> { using type = std::int32_t; };
template <> struct StorageOf<DType::i64> { using type = std::int64_t; };
template <> struct StorageOf<DType::u8> { using type = std::uint8_t; };
template <> struct StorageOf<DType::boolean> { using type = Bool8; };

template <class T>
constexpr bool kHalf = std::is_same_v<T, hwy::float16_t> || std::is_same_v<T, hwy::bfloat16_t>;
template <class T>
constexpr bool kFloat = kHalf<T> || std::is_floating_point_v<T>;

// Significand bits (with the implicit one) of a float storage type.
template <class T>
constexpr int kPrecision = std::is_same_v<T, hwy::float16_t> ? 11 : std::is_same_v<T, hwy::bfloat16_t> ? 8 : std::is_same_v<T, float> ? 24 : 53;

// The float nearest d with its last bit set when d is not exact ("round to
// odd"): rounding that to fewer than 23 bits then gives the same result as
// rounding d directly, so f64 -> f16/bf16 rounds once.
float round_to_odd(double d) noexcept {
  float f = static_cast<float>(d);
  if (std::isnan(d) || std::isinf(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // toward zero
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

// An integer rounded to nearest even at `bits` significant bits: exact in a
// double, so the conversion to a float type afterwards is exact (or
// overflows to Inf, as rounding the value directly would).
double round_integer(std::int64_t x, int bits) noexcept {
  const bool negative = x < 0;
  std::uint64_t u = negative ? 0 - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
  const int width = 64 - std::countl_zero(u);
  if (width > bits) {
    const int drop = width - bits;
    const std::uint64_t half = std::uint64_t{1} << (drop - 1), mask = (std::uint64_t{1} << drop) - 1;
    const std::uint64_t rest = u & mask;
    u >>= drop;
    if (rest > half || (rest == half && (u & 1))) ++u;
    const double magnitude = std::ldexp(static_cast<double>(u), drop);
    return negative ? -magnitude : magnitude;
  }
  return negative ? -static_cast<double>(u) : static_cast<double>(u);
}

template <class S, class D>
inline D convert(S v) noexcept {
  if constexpr (std::is_same_v<D, Bool8>) {
    if constexpr (std::is_same_v<S, Bool8>) return v;
    else if constexpr (kFloat<S>) return Bool8{static_cast<std::uint8_t>(to_compute(v) != 0)};
    else return Bool8{static_cast<std::uint8_t>(v != 0)};
  } else if constexpr (kFloat<S>) {
    if constexpr (std::is_integral_v<D>) {
      return plugin::saturate<D>(static_cast<double>(to_compute(v)));
    } else if constexpr (std::is_same_v<S, double> && kHalf<D>) {
      return from_compute<D>(round_to_odd(v));
    } else {
      // Widening is exact; f32 -> f16/bf16 and f64 -> f32 round once.
      return from_compute<D>(static_cast<ComputeOf<D>>(to_compute(v)));
    }
  } else {
    std::int64_t x;
    if constexpr (std::is_same_v<S, Bool8>) x = v.v;
    else x = v;
    if constexpr (std::is_integral_v<D>) {
      if constexpr (std::is_same_v<D, std::int64_t>) return x;
      else return plugin::saturate<D>(static_cast<double>(x));  // exact: |x| < 2^53 or saturating anyway
    } else {
      return from_compute<D>(static_cast<ComputeOf<D>>(round_integer(x, kPrecision<D>)));
    }
  }
}

// The dense vectorised conversions, where this pair has one.
template <class S, class D>
bool convert_dense_simd(const S* in, D* out, std::size_t n) {
  if constexpr (kHalf<S> && std::is_same_v<D, float>) {
    widen(in, out, n);
    return true;
  } else if constexpr (std::is_same_v<S, float> && kHalf<D>) {
    narrow(in, out, n);
    return true;
  } else {
    (void)in, (void)out, (void)n;
    return false;
  }
}

template <DType SD, DType DD>
void cast_kernel(const plugin::args::math_cast<>& args) {
  using S = typename StorageOf<SD>::type;
  using D = typename StorageOf<DD>::type;
  const S* x = element_ptr<const S>(args.x);
  D* y = element_ptr<D>(args.y);
  const auto layout = make_layout<2>({&args.x.view, &args.y.view});
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
    const S* in = x + offsets[0];
    D* out = y + offsets[1];
    if (sx == 1 && sy == 1) {
      if (convert_dense_simd(in, out, std::size_t(count))) return;
      for (std::int64_t j = 0; j < count; ++j) out[j] = convert<S, D>(in[j]);
    } else {
      for (std::int64_t j = 0; j < count; ++j) out[j * sy] = convert<S, D>(in[j * sx]);
    }
  });
}

// One table entry per source dtype; the target dtype picks the loop.
template <DType SD>
void cast_from(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::math_cast>(call);
  switch (args.y.dtype) {
#define XYLEM_NATIVE_CAST_CASE(e, n, b, f) \
  case DType::e:                           \
    return cast_kernel<SD, DType::e>(args);
    XYLEM_REAL_DTYPES(XYLEM_NATIVE_CAST_CASE)
#undef XYLEM_NATIVE_CAST_CASE
    default:
      break;  // complex targets: not in the table, so the core never sends one
  }
}

}  // namespace

void widen(const hwy::float16_t* in, float* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(WidenF16)(in, out, n); }
void widen(const hwy::bfloat16_t* in, float* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(WidenBF16)(in, out, n); }
void narrow(const float* in, hwy::float16_t* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(NarrowF16)(in, out, n); }
void narrow(const float* in, hwy::bfloat16_t* out, std::size_t n) { HWY_DYNAMIC_DISPATCH(NarrowBF16)(in, out, n); }

void register_cast(KernelTable& table) {
#define XYLEM_NATIVE_CAST_REGISTER(e, n, b, f) table.set(OpId::math_cast, DType::e, &cast_from<DType::e>);
  XYLEM_REAL_DTYPES(XYLEM_NATIVE_CAST_REGISTER)
#undef XYLEM_NATIVE_CAST_REGISTER
}

}  // namespace xylem::native
#endif  // HWY_ONCE
