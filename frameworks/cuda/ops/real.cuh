#pragma once
// The float dtypes as kernels see them: a storage type (f16 and bf16 as
// their 16 raw bits), the type arithmetic runs in (f32 for the 16-bit
// types, as for f32; f64 for f64), and the conversions between the two,
// rounding to nearest even on the way back to storage (store_double: from
// an f64 accumulator, rounded once).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <utility>

#include "xylem/dtype.hpp"
#include "xylem/plugin/math.h"

namespace xylem::cuda {

template <DType D>
struct Real;

template <>
struct Real<DType::f16> {
  using storage = std::uint16_t;
  using compute = float;
  __host__ __device__ static compute load(storage v) { return __half2float(__ushort_as_half(v)); }
  __host__ __device__ static storage store(compute v) { return __half_as_ushort(__float2half_rn(v)); }
  __device__ static storage store_double(double v) { return __half_as_ushort(__double2half(v)); }
};
template <>
struct Real<DType::bf16> {
  using storage = std::uint16_t;
  using compute = float;
  __host__ __device__ static compute load(storage v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  __host__ __device__ static storage store(compute v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
  __device__ static storage store_double(double v) { return __bfloat16_as_ushort(__double2bfloat16(v)); }
};
template <>
struct Real<DType::f32> {
  using storage = float;
  using compute = float;
  __host__ __device__ static compute load(storage v) { return v; }
  __host__ __device__ static storage store(compute v) { return v; }
  __device__ static storage store_double(double v) { return static_cast<float>(v); }
};
template <>
struct Real<DType::f64> {
  using storage = double;
  using compute = double;
  __host__ __device__ static compute load(storage v) { return v; }
  __host__ __device__ static storage store(compute v) { return v; }
  __device__ static storage store_double(double v) { return v; }
};

// math.h's formulas, chosen by the compute type. With a constant code the
// switch inside folds away.
__device__ __forceinline__ float unary_of(int code, float x, float p0, float p1) { return xy_unary_f(code, x, p0, p1); }
__device__ __forceinline__ double unary_of(int code, double x, double p0, double p1) {
  return xy_unary_d(code, x, p0, p1);
}
__device__ __forceinline__ float binary_of(int code, float a, float b, float p0, float p1) {
  return xy_binary_f(code, a, b, p0, p1);
}
__device__ __forceinline__ double binary_of(int code, double a, double b, double p0, double p1) {
  return xy_binary_d(code, a, b, p0, p1);
}
__device__ __forceinline__ int compare_of(int code, float a, float b) { return xy_compare_f(code, a, b); }
__device__ __forceinline__ int compare_of(int code, double a, double b) { return xy_compare_d(code, a, b); }

// math.h's integer formulas (i32, i64), chosen by the type.
__device__ __forceinline__ std::int32_t int_unary_of(int code, std::int32_t x) { return xy_int_unary_i32(code, x); }
__device__ __forceinline__ std::int64_t int_unary_of(int code, std::int64_t x) { return xy_int_unary_i64(code, x); }
__device__ __forceinline__ std::int32_t int_binary_of(int code, std::int32_t a, std::int32_t b) {
  return xy_int_binary_i32(code, a, b);
}
__device__ __forceinline__ std::int64_t int_binary_of(int code, std::int64_t a, std::int64_t b) {
  return xy_int_binary_i64(code, a, b);
}
__device__ __forceinline__ int int_compare_of(int code, std::int32_t a, std::int32_t b) {
  return xy_int_compare_i32(code, a, b);
}
__device__ __forceinline__ int int_compare_of(int code, std::int64_t a, std::int64_t b) {
  return xy_int_compare_i64(code, a, b);
}

// Instantiates body for each integer dtype math takes:
// body.template operator()<D, T>() with T its element type.
template <class Body>
void for_each_integer(Body&& body) {
  body.template operator()<DType::i32, std::int32_t>();
  body.template operator()<DType::i64, std::int64_t>();
}

// Calls body.template operator()<C>() for the C in [0, Count) equal to
// code: one instantiation per code, chosen once per launch on the host.
// Returns false for a code outside the range.
template <int Count, class Body>
bool with_code(std::int64_t code, Body&& body) {
  return [&]<int... C>(std::integer_sequence<int, C...>) {
    return ((code == C ? (body.template operator()<C>(), true) : false) || ...);
  }(std::make_integer_sequence<int, Count>{});
}

// Instantiates body for each float dtype: body.template operator()<D>().
template <class Body>
void for_each_real(Body&& body) {
  body.template operator()<DType::f16>();
  body.template operator()<DType::bf16>();
  body.template operator()<DType::f32>();
  body.template operator()<DType::f64>();
}

}  // namespace xylem::cuda
