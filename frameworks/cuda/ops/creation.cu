// creation::fill, arange, uniform, normal, over views of any strides. The
// values follow native's definitions exactly (frameworks/native/ops/
// creation.cpp): integers saturate, f16/bf16 round to nearest even, element
// k draws Philox counter offset + k under key seed, and the final affine step is
// rounded as native rounds it (no fused multiply-add), so uniform numbers
// and arange match native bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "map.cuh"
#include "xylem/plugin/math.h"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;

template <class I>
__host__ __device__ I saturate(double v, I lo, I hi) {
  if (v != v) return 0;  // NaN
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<I>(v);
}

// Storage type of each dtype, and the conversion from double.
template <DType D>
struct Element;
template <> struct Element<DType::f16> {
  using type = std::uint16_t;
  __host__ __device__ static type from(double v) { return __half_as_ushort(__float2half_rn(static_cast<float>(v))); }
};
template <> struct Element<DType::bf16> {
  using type = std::uint16_t;
  __host__ __device__ static type from(double v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)));
  }
};
template <> struct Element<DType::f32> {
  using type = float;
  __host__ __device__ static type from(double v) { return static_cast<float>(v); }
};
template <> struct Element<DType::f64> {
  using type = double;
  __host__ __device__ static type from(double v) { return v; }
};
template <> struct Element<DType::i32> {
  using type = std::int32_t;
  __host__ __device__ static type from(double v) { return saturate<type>(v, INT32_MIN, INT32_MAX); }
};
template <> struct Element<DType::i64> {
  using type = std::int64_t;
  __host__ __device__ static type from(double v) { return saturate<type>(v, INT64_MIN, INT64_MAX); }
};
template <> struct Element<DType::u8> {
  using type = std::uint8_t;
  __host__ __device__ static type from(double v) { return saturate<type>(v, 0, UINT8_MAX); }
};
template <> struct Element<DType::boolean> {
  using type = std::uint8_t;
  __host__ __device__ static type from(double v) { return v != 0.0 ? 1 : 0; }
};
// A complex fill is value + 0i, stored as (real, imaginary).
template <> struct Element<DType::c64> {
  using type = float2;
  __host__ __device__ static type from(double v) { return make_float2(static_cast<float>(v), 0.0f); }
};
template <> struct Element<DType::c128> {
  using type = double2;
  __host__ __device__ static type from(double v) { return make_double2(v, 0.0); }
};

template <class T>
struct Constant {
  T value;
  __device__ T operator()(std::int64_t) const { return value; }
};

template <DType D>
struct Arange {
  double start, step;
  __device__ typename Element<D>::type operator()(std::int64_t k) const {
    return Element<D>::from(__dadd_rn(start, __dmul_rn(static_cast<double>(k), step)));
  }
};

struct UniformF {
  xy_u64 seed, counter;
  float low, span;
  __device__ float operator()(std::int64_t k) const {
    return __fadd_rn(low, __fmul_rn(span, xy_uniform01_f(xy_philox(seed, counter + static_cast<xy_u64>(k)))));
  }
};
struct UniformD {
  xy_u64 seed, counter;
  double low, span;
  __device__ double operator()(std::int64_t k) const {
    return __dadd_rn(low, __dmul_rn(span, xy_uniform01_d(xy_philox(seed, counter + static_cast<xy_u64>(k)))));
  }
};
struct NormalF {
  xy_u64 seed, counter;
  float mean, stddev;
  __device__ float operator()(std::int64_t k) const {
    return __fadd_rn(mean, __fmul_rn(stddev, xy_normal_f(xy_philox(seed, counter + static_cast<xy_u64>(k)))));
  }
};
struct NormalD {
  xy_u64 seed, counter;
  double mean, stddev;
  __device__ double operator()(std::int64_t k) const {
    return __dadd_rn(mean, __dmul_rn(stddev, xy_normal_d(xy_philox(seed, counter + static_cast<xy_u64>(k)))));
  }
};

template <DType D>
void fill(const OpCall& c, const Context& ctx) {
  using T = typename Element<D>::type;
  const auto args = plugin::unpack<plugin::args::creation_fill>(c);
  map<T>(ctx, "creation::fill", Constant<T>{Element<D>::from(args.value)}, args.y);
}

template <DType D>
void arange(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::creation_arange>(c);
  map<typename Element<D>::type>(ctx, "creation::arange", Arange<D>{args.start, args.step}, args.y);
}

// The Philox stream's key and first counter, as the kernels take them.
template <class Args>
xy_u64 seed(const Args& a) {
  return static_cast<xy_u64>(a.seed);
}
template <class Args>
xy_u64 counter(const Args& a) {
  return static_cast<xy_u64>(a.offset);
}

void uniform_f32(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::creation_uniform>(c);
  const float low = static_cast<float>(args.low);
  const float span = static_cast<float>(args.high) - low;
  map<float>(ctx, "creation::uniform", UniformF{seed(args), counter(args), low, span}, args.y);
}
void uniform_f64(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::creation_uniform>(c);
  map<double>(ctx, "creation::uniform", UniformD{seed(args), counter(args), args.low, args.high - args.low}, args.y);
}
void normal_f32(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::creation_normal>(c);
  map<float>(ctx, "creation::normal",
             NormalF{seed(args), counter(args), static_cast<float>(args.mean), static_cast<float>(args.stddev)},
             args.y);
}
void normal_f64(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::creation_normal>(c);
  map<double>(ctx, "creation::normal", NormalD{seed(args), counter(args), args.mean, args.stddev}, args.y);
}

template <DType D>
void register_fill_arange(KernelTable& table) {
  table.set(OpId::creation_fill, D, &fill<D>);
  if constexpr (D != DType::boolean && !is_complex(D)) table.set(OpId::creation_arange, D, &arange<D>);
}

}  // namespace

void register_creation(KernelTable& table) {
#define XYLEM_CUDA_FILL(e, n, b, f) register_fill_arange<DType::e>(table);
  XYLEM_DTYPES(XYLEM_CUDA_FILL)
#undef XYLEM_CUDA_FILL
  table.set(OpId::creation_uniform, DType::f32, &uniform_f32);
  table.set(OpId::creation_uniform, DType::f64, &uniform_f64);
  table.set(OpId::creation_normal, DType::f32, &normal_f32);
  table.set(OpId::creation_normal, DType::f64, &normal_f64);
}

}  // namespace xylem::cuda
