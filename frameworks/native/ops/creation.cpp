// Native creation kernels: fill, arange, uniform, normal, over views of any
// strides. The random kernels follow the OpCall convention exactly (element
// k of the row-major logical order draws Philox counter i1 + k under key i0)
// so the same seed gives the same tensor on every framework. Philox itself
// runs vectorised (philox_simd-inl.h, best SIMD target picked at run time).

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in activation.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/philox_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/philox_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/convert.hpp"
#include "xylem/plugin/half.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

HWY_EXPORT(PhiloxBlock);

namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::saturate;

// Cheap per-element work (fill, arange) is worth splitting only in large
// pieces; random numbers cost more per element (Philox, and log and cos for
// normal), so smaller pieces already pay off.
constexpr std::int64_t kFillGrain = 32 * 1024;
constexpr std::int64_t kRandomGrain = 4 * 1024;

// Storage type and conversion from double, per dtype. f16 and bf16 round
// the float value to nearest even (xylem/plugin/half.hpp, shared with the core);
// integers saturate (plugin/convert.hpp).
template <DType D>
struct Element;
template <class I>
struct IntegerElement {
  using type = I;
  static type from(double v) noexcept { return saturate<type>(v); }
};
template <>
struct Element<DType::f16> {
  using type = std::uint16_t;
  static type from(double v) noexcept { return detail::float_to_half(static_cast<float>(v)); }
};
template <>
struct Element<DType::bf16> {
  using type = std::uint16_t;
  static type from(double v) noexcept { return detail::float_to_bf16(static_cast<float>(v)); }
};
template <>
struct Element<DType::f32> {
  using type = float;
  static type from(double v) noexcept { return static_cast<float>(v); }
};
template <>
struct Element<DType::f64> {
  using type = double;
  static type from(double v) noexcept { return v; }
};
template <>
struct Element<DType::i32> : IntegerElement<std::int32_t> {};
template <>
struct Element<DType::i64> : IntegerElement<std::int64_t> {};
template <>
struct Element<DType::u8> : IntegerElement<std::uint8_t> {};
template <>
struct Element<DType::boolean> {
  using type = std::uint8_t;
  static type from(double v) noexcept { return v != 0.0 ? 1 : 0; }
};
// A complex fill is value + 0i.
template <>
struct Element<DType::c64> {
  using type = std::complex<float>;
  static type from(double v) noexcept { return {static_cast<float>(v), 0.0f}; }
};
template <>
struct Element<DType::c128> {
  using type = std::complex<double>;
  static type from(double v) noexcept { return {v, 0.0}; }
};

template <DType D>
void fill_kernel(const OpCall& call) {
  using T = typename Element<D>::type;
  const auto args = plugin::unpack<plugin::args::creation_fill>(call);
  const T value = Element<D>::from(args.value);
  T* base = element_ptr<T>(args.y);
  const auto layout = make_layout<1>({&args.y.view});
  const std::int64_t stride = layout.inner_stride(0);
  parallel_runs(layout, kFillGrain, [&](const std::array<std::int64_t, 1>& offsets, std::int64_t count, std::int64_t) {
    T* out = base + offsets[0];
    if (stride == 1) {
      std::fill_n(out, count, value);
    } else {
      for (std::int64_t j = 0; j < count; ++j) out[j * stride] = value;
    }
  });
}

// start + k*step is formed in double and rounded once to the dtype.
template <DType D>
void arange_kernel(const OpCall& call) {
  using T = typename Element<D>::type;
  const auto args = plugin::unpack<plugin::args::creation_arange>(call);
  const double start = args.start, step = args.step;
  T* base = element_ptr<T>(args.y);
  const auto layout = make_layout<1>({&args.y.view});
  const std::int64_t stride = layout.inner_stride(0);
  parallel_runs(layout, kFillGrain,
                [&](const std::array<std::int64_t, 1>& offsets, std::int64_t count, std::int64_t first) {
                  T* out = base + offsets[0];
                  for (std::int64_t j = 0; j < count; ++j)
                    out[j * stride] = Element<D>::from(start + static_cast<double>(first + j) * step);
                });
}

// y[k] = transform(xy_philox(seed, offset + k)) for every logical index k
// of the view y: the words come a block at a time from the SIMD Philox,
// the numbers from math.h's conversions. (uniform and normal have the same
// y, seed and offset.)
template <class T, class Transform>
void random_fill(const plugin::TensorArg& y, std::int64_t seed_arg, std::int64_t offset, Transform transform) {
  const auto seed = static_cast<xy_u64>(seed_arg), counter = static_cast<xy_u64>(offset);
  T* base = element_ptr<T>(y);
  const auto layout = make_layout<1>({&y.view});
  const std::int64_t stride = layout.inner_stride(0);
  parallel_runs(layout, kRandomGrain,
                [&](const std::array<std::int64_t, 1>& offsets, std::int64_t count, std::int64_t first) {
                  T* out = base + offsets[0];
                  alignas(64) std::uint64_t words[4][kPhiloxBlock];
                  for (std::int64_t b = 0; b < count; b += std::int64_t(kPhiloxBlock)) {
                    HWY_DYNAMIC_DISPATCH(PhiloxBlock)
                    (seed, counter + static_cast<xy_u64>(first + b), words[0], words[1], words[2], words[3]);
                    const std::int64_t m = std::min(std::int64_t(kPhiloxBlock), count - b);
                    for (std::int64_t j = 0; j < m; ++j) {
                      xy_philox_out r;
                      for (int w = 0; w < 4; ++w) r.v[w] = static_cast<xy_u32>(words[w][j]);
                      out[(b + j) * stride] = transform(r);
                    }
                  }
                });
}

// low + (high - low) * u, in the dtype's own precision (float for f32) so
// frameworks without fp64 compute the same bits.
void uniform_f32(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::creation_uniform>(call);
  const float low = static_cast<float>(a.low);
  const float span = static_cast<float>(a.high) - low;
  random_fill<float>(a.y, a.seed, a.offset, [=](const xy_philox_out& r) { return low + span * xy_uniform01_f(r); });
}

void uniform_f64(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::creation_uniform>(call);
  const double low = a.low, span = a.high - a.low;
  random_fill<double>(a.y, a.seed, a.offset, [=](const xy_philox_out& r) { return low + span * xy_uniform01_d(r); });
}

void normal_f32(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::creation_normal>(call);
  const float mean = static_cast<float>(a.mean), stddev = static_cast<float>(a.stddev);
  random_fill<float>(a.y, a.seed, a.offset, [=](const xy_philox_out& r) { return mean + stddev * xy_normal_f(r); });
}

void normal_f64(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::creation_normal>(call);
  const double mean = a.mean, stddev = a.stddev;
  random_fill<double>(a.y, a.seed, a.offset, [=](const xy_philox_out& r) { return mean + stddev * xy_normal_d(r); });
}

template <DType D>
void register_fill_arange(KernelTable& table) {
  table.set(OpId::creation_fill, D, &fill_kernel<D>);
  if constexpr (D != DType::boolean && !is_complex(D)) table.set(OpId::creation_arange, D, &arange_kernel<D>);
}

}  // namespace

void register_creation(KernelTable& table) {
#define XYLEM_NATIVE_FILL(e, n, b, f) register_fill_arange<DType::e>(table);
  XYLEM_DTYPES(XYLEM_NATIVE_FILL)
#undef XYLEM_NATIVE_FILL
  table.set(OpId::creation_uniform, DType::f32, &uniform_f32);
  table.set(OpId::creation_uniform, DType::f64, &uniform_f64);
  table.set(OpId::creation_normal, DType::f32, &normal_f32);
  table.set(OpId::creation_normal, DType::f64, &normal_f64);
}

}  // namespace xylem::native
#endif  // HWY_ONCE
