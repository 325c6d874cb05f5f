#pragma once
// Float dtypes as the nn kernels see them, and the row helpers those kernels
// share. A kernel is written once as a template over its DType: it loads
// rows of the storage type (any stride) into contiguous buffers of the
// compute type (f32 for f16/bf16/f32, f64 for f64), or uses them in place
// when they already are that, works there with loops the compiler
// vectorises, and rounds back on store (nearest even).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/dtype.hpp"
#include "xylem/plugin/half.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

template <DType D>
struct FloatType;
template <>
struct FloatType<DType::f32> {
  using Storage = float;
  using Compute = float;
  static Compute load(Storage v) noexcept { return v; }
  static Storage store(Compute v) noexcept { return v; }
};
template <>
struct FloatType<DType::f64> {
  using Storage = double;
  using Compute = double;
  static Compute load(Storage v) noexcept { return v; }
  static Storage store(Compute v) noexcept { return v; }
};
template <>
struct FloatType<DType::f16> {
  using Storage = std::uint16_t;
  using Compute = float;
  static Compute load(Storage v) noexcept { return detail::half_to_float(v); }
  static Storage store(Compute v) noexcept { return detail::float_to_half(v); }
};
template <>
struct FloatType<DType::bf16> {
  using Storage = std::uint16_t;
  using Compute = float;
  // math.h's bit conversions are inline, so bf16 rows convert at memory speed.
  static Compute load(Storage v) noexcept { return std::bit_cast<float>(xy_bf16_to_f32_bits(v)); }
  static Storage store(Compute v) noexcept {
    return static_cast<Storage>(xy_f32_bits_to_bf16(std::bit_cast<xy_u32>(v)));
  }
};

template <DType D>
using StorageType = typename FloatType<D>::Storage;
// The compute type is also the "stat" dtype of the norms (mean, rstd, var).
template <DType D>
using ComputeType = typename FloatType<D>::Compute;

// Calls f(std::integral_constant<DType, D>{}) for each float dtype, so a
// family registers its kernel templates in one line per op.
template <class F>
void for_float_dtypes(F&& f) {
  f(std::integral_constant<DType, DType::f16>{});
  f(std::integral_constant<DType, DType::bf16>{});
  f(std::integral_constant<DType, DType::f32>{});
  f(std::integral_constant<DType, DType::f64>{});
}

// dst[j] = src[j*stride] as the compute type, j < n.
template <DType D>
void load_row(const StorageType<D>* src, std::int64_t stride, std::int64_t n, ComputeType<D>* dst) noexcept {
  if (stride == 1) {
    for (std::int64_t j = 0; j < n; ++j) dst[j] = FloatType<D>::load(src[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) dst[j] = FloatType<D>::load(src[j * stride]);
  }
}

// dst[j*stride] = src[j] rounded to the storage type, j < n.
template <DType D>
void store_row(const ComputeType<D>* src, std::int64_t n, StorageType<D>* dst, std::int64_t stride) noexcept {
  if (stride == 1) {
    for (std::int64_t j = 0; j < n; ++j) dst[j] = FloatType<D>::store(src[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) dst[j * stride] = FloatType<D>::store(src[j]);
  }
}

// A rank-1 view: element i at first[i*stride] (stat tensors, per-channel
// parameters).
template <class V>
struct StridedVec {
  V* first = nullptr;
  std::int64_t stride = 0;
  V& operator[](std::int64_t i) const noexcept { return first[i * stride]; }
};
template <class V>
[[nodiscard]] StridedVec<V> strided_vec(const plugin::TensorArg& t) noexcept {
  return {element_ptr<V>(t), t.view.strides()[0]};
}

// An optional rank-1 parameter (gamma, beta) of n elements in the compute
// type; every element is `fallback` when the tensor is absent.
template <DType D>
[[nodiscard]] std::vector<ComputeType<D>> load_param(const plugin::TensorArg& t, std::int64_t n,
                                                     ComputeType<D> fallback) {
  std::vector<ComputeType<D>> out(std::size_t(n), fallback);
  if (t.data != nullptr) load_row<D>(element_ptr<const StorageType<D>>(t), t.view.strides()[0], n, out.data());
  return out;
}

// Sums: blocks of kSumBlock terms accumulate in kSumLanes independent lanes
// of the compute type (a vectorisable loop: no reassociation of one chain),
// and the blocks add up in double, so the rounding error grows with the
// block length, not the row length.
inline constexpr int kSumLanes = 16;
inline constexpr std::int64_t kSumBlock = 256;

// sum_j f(j) over j < n; f returns the compute type Acc.
template <class Acc, class F>
[[nodiscard]] double lane_sum(std::int64_t n, F f) noexcept {
  double total = 0;
  for (std::int64_t begin = 0; begin < n; begin += kSumBlock) {
    const std::int64_t end = std::min(n, begin + kSumBlock);
    Acc lanes[kSumLanes] = {};
    std::int64_t j = begin;
    for (; j + kSumLanes <= end; j += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) lanes[l] += f(j + l);
    for (; j < end; ++j) lanes[0] += f(j);
    Acc block = 0;
    for (Acc lane : lanes) block += lane;
    total += double(block);
  }
  return total;
}

// A row as contiguous compute-type values: the row itself when it already
// is (f32/f64 with unit stride), else `buffer` loaded from it.
template <DType D>
[[nodiscard]] const ComputeType<D>* row_in(const StorageType<D>* src, std::int64_t stride, std::int64_t n,
                                           ComputeType<D>* buffer) noexcept {
  if constexpr (std::is_same_v<StorageType<D>, ComputeType<D>>) {
    if (stride == 1) return src;
  }
  load_row<D>(src, stride, n, buffer);
  return buffer;
}

// Where to compute an output row: the row itself when it can hold the
// compute type densely, else `buffer` (then store_row_out writes it back).
template <DType D>
[[nodiscard]] ComputeType<D>* row_out(StorageType<D>* dst, std::int64_t stride, ComputeType<D>* buffer) noexcept {
  if constexpr (std::is_same_v<StorageType<D>, ComputeType<D>>) {
    if (stride == 1) return dst;
  }
  return buffer;
}
template <DType D>
void store_row_out(const ComputeType<D>* row, std::int64_t n, StorageType<D>* dst, std::int64_t stride) noexcept {
  if (static_cast<const void*>(row) != static_cast<const void*>(dst)) store_row<D>(row, n, dst, stride);
}

// Mean and sum of squared deviations of a contiguous row, two passes (the
// row is cache-resident, and two passes avoid the cancellation of sum x^2).
struct RowMoments {
  double mean = 0;
  double m2 = 0;  // sum of (x - mean)^2
};

template <class T>
[[nodiscard]] RowMoments row_moments(const T* x, std::int64_t n) noexcept {
  RowMoments out;
  out.mean = lane_sum<T>(n, [x](std::int64_t j) { return x[j]; }) / double(n);
  const T mean = T(out.mean);
  out.m2 = lane_sum<T>(n, [x, mean](std::int64_t j) {
    const T d = x[j] - mean;
    return d * d;
  });
  return out;
}

}  // namespace xylem::native
