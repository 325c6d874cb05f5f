// math::cast between all eight dtypes, elementwise (the map's dense path for
// contiguous tensors, its strided path otherwise). Rules (plugin.hpp):
// float to integer truncates toward zero and saturates, NaN giving 0; to
// boolean is x != 0; to a float dtype rounds to nearest even once (never
// through an intermediate rounding). Integer to integer saturates too, as
// the native and OpenCL frameworks do (NumPy and PyTorch keep the low bits).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "map.cuh"
#include "real.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

template <DType D>
struct Cell;  // storage type and kind of every dtype
template <> struct Cell<DType::f16> { using type = std::uint16_t; };
template <> struct Cell<DType::bf16> { using type = std::uint16_t; };
template <> struct Cell<DType::f32> { using type = float; };
template <> struct Cell<DType::f64> { using type = double; };
template <> struct Cell<DType::i32> { using type = std::int32_t; };
template <> struct Cell<DType::i64> { using type = std::int64_t; };
template <> struct Cell<DType::u8> { using type = std::uint8_t; };
template <> struct Cell<DType::boolean> { using type = std::uint8_t; };

constexpr bool is_real(DType d) { return d == DType::f16 || d == DType::bf16 || d == DType::f32 || d == DType::f64; }

template <class I>
__device__ __forceinline__ I saturate(double v) {
  constexpr I lo = std::numeric_limits<I>::min(), hi = std::numeric_limits<I>::max();
  if (v != v) return 0;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;  // (double)INT64_MAX is 2^63: >= catches it
  return static_cast<I>(v);
}

// An integer as an f32 rounded to odd (truncate, then set the last bit when
// inexact): rounding that once more to a 16-bit float gives the correctly
// rounded result, where two nearest-even roundings may not.
__device__ __forceinline__ float to_f32_odd(long long v) {
  const float f = __ll2float_rz(v);
  return static_cast<long long>(f) == v ? f : __int_as_float(__float_as_int(f) | 1);
}

template <DType From, DType To>
struct Cast {
  using In = typename Cell<From>::type;
  using Out = typename Cell<To>::type;
  __device__ Out operator()(std::int64_t, In x) const {
    if constexpr (From == To) {
      return x;
    } else if constexpr (is_real(From)) {
      const auto v = Real<From>::load(x);  // exact: f32 (f16, bf16, f32) or f64
      if constexpr (To == DType::boolean) {
        return v != 0 ? 1 : 0;
      } else if constexpr (!is_real(To)) {
        return saturate<Out>(static_cast<double>(v));
      } else if constexpr (From == DType::f64 && To == DType::f16) {
        return __half_as_ushort(__double2half(v));
      } else if constexpr (From == DType::f64 && To == DType::bf16) {
        return __bfloat16_as_ushort(__double2bfloat16(v));
      } else {
        return Real<To>::store(static_cast<typename Real<To>::compute>(v));  // widening, or f64 -> f32 (cvt.rn)
      }
    } else {
      const long long v = From == DType::boolean ? (x != 0) : static_cast<long long>(x);
      if constexpr (To == DType::boolean) {
        return v != 0 ? 1 : 0;
      } else if constexpr (To == DType::f16 || To == DType::bf16) {
        return Real<To>::store(to_f32_odd(v));
      } else if constexpr (std::is_integral_v<Out>) {  // saturates, as on every framework
        constexpr long long lo = std::numeric_limits<Out>::min(), hi = std::numeric_limits<Out>::max();
        return static_cast<Out>(v < lo ? lo : (v > hi ? hi : v));
      } else {
        return static_cast<Out>(v);  // f32/f64: cvt.rn from s64
      }
    }
  }
};

// Dispatched on x's dtype, y's picks the kernel.
template <DType From>
void cast(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_cast>(c);
  const auto run = [&]<DType To>() {
    map_as<typename Cell<To>::type, typename Cell<From>::type>(ctx, "math::cast", Cast<From, To>{}, args.y, args.x);
  };
  switch (args.y.dtype) {
#define XYLEM_CUDA_CAST_TO(e, n, b, f) \
  case DType::e:                       \
    return run.template operator()<DType::e>();
    XYLEM_REAL_DTYPES(XYLEM_CUDA_CAST_TO)
#undef XYLEM_CUDA_CAST_TO
    default:
      break;  // complex targets: not in the table, so the core never sends one
  }
}

}  // namespace

void register_cast(KernelTable& table) {
#define XYLEM_CUDA_CAST_FROM(e, n, b, f) table.set(plugin::OpId::math_cast, DType::e, &cast<DType::e>);
  XYLEM_REAL_DTYPES(XYLEM_CUDA_CAST_FROM)
#undef XYLEM_CUDA_CAST_FROM
}

}  // namespace xylem::cuda
