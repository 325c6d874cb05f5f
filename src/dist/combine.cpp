// The arithmetic of host collectives, once per dtype: combining two ranks'
// values (every host transport) and turning a sum into an average (the core).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "dist/average.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/dist.hpp"
#include "xylem/plugin/half.hpp"

namespace xylem::plugin::dist {
namespace {

// f16 and bf16 values are computed in f32 and rounded once.
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
struct Half {
  using Storage = std::uint16_t;
  using Compute = float;
  static float load(std::uint16_t v) { return ToFloat(v); }
  static std::uint16_t store(float v) { return FromFloat(v); }
};
template <class T>
struct Plain {
  using Storage = T;
  using Compute = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

// Calls fn(Kind{}) with the storage/compute description of `dtype`;
// bool is its own case in each caller.
template <class F>
void visit(DType dtype, F&& fn) {
  switch (dtype) {
    case DType::f16:
      return fn(Half<xylem::detail::half_to_float, xylem::detail::float_to_half>{});
    case DType::bf16:
      return fn(Half<xylem::detail::bf16_to_float, xylem::detail::float_to_bf16>{});
    case DType::f32:
      return fn(Plain<float>{});
    case DType::f64:
      return fn(Plain<double>{});
    case DType::i32:
      return fn(Plain<std::int32_t>{});
    case DType::i64:
      return fn(Plain<std::int64_t>{});
    case DType::u8:
    case DType::boolean:
      return fn(Plain<std::uint8_t>{});
    case DType::c64:
    case DType::c128:
      break;  // refused by every collective before it gets here (communicator.cpp)
  }
  throw Error(ErrorCode::dtype_mismatch, "dist: " + std::string(name(dtype)) + " tensors cannot be combined");
}

template <class T>
T apply(T a, T b, Combine op) {
  switch (op) {
    case Combine::sum:
      // Integers wrap, as MPI's do, rather than overflow.
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      } else {
        return a + b;
      }
    case Combine::max:
      return std::max(a, b);
    case Combine::min:
      return std::min(a, b);
  }
  return a;
}

}  // namespace

void combine(void* into, const void* from, std::size_t count, DType dtype, Combine op) {
  if (dtype == DType::boolean) {
    // Bool: sum and max are "or", min is "and".
    auto* a = static_cast<std::uint8_t*>(into);
    const auto* b = static_cast<const std::uint8_t*>(from);
    for (std::size_t i = 0; i < count; ++i)
      a[i] = op == Combine::min ? (a[i] != 0 && b[i] != 0) : (a[i] != 0 || b[i] != 0);
    return;
  }
  visit(dtype, [&](auto kind) {
    using K = decltype(kind);
    auto* a = static_cast<typename K::Storage*>(into);
    const auto* b = static_cast<const typename K::Storage*>(from);
    // The operation is picked once, outside the loop, so that the loop
    // vectorises: the small all_reduce's exchange combines on the caller's
    // time (src/dist/mpi/transport.cpp).
    const auto each = [&](auto fixed) {
      for (std::size_t i = 0; i < count; ++i) a[i] = K::store(apply(K::load(a[i]), K::load(b[i]), fixed()));
    };
    switch (op) {
      case Combine::sum:
        return each([] { return Combine::sum; });
      case Combine::max:
        return each([] { return Combine::max; });
      case Combine::min:
        return each([] { return Combine::min; });
    }
  });
}

}  // namespace xylem::plugin::dist

namespace xylem::dist::detail {

void divide(void* data, std::size_t count, DType dtype, int n) {
  if (dtype == DType::boolean) throw Error(ErrorCode::invalid_argument, "dist: avg is not defined for bool tensors");
  plugin::dist::visit(dtype, [&](auto kind) {
    using K = decltype(kind);
    using C = typename K::Compute;
    auto* a = static_cast<typename K::Storage*>(data);
    for (std::size_t i = 0; i < count; ++i) a[i] = K::store(static_cast<C>(K::load(a[i]) / static_cast<C>(n)));
  });
}

}  // namespace xylem::dist::detail
