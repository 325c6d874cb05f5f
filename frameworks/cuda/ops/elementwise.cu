// math::unary, binary, compare and where, f16/bf16/f32/f64 (the native
// framework's ops/elementwise.cpp): y = f(x) for every XY_UN_* code of
// math.h (the activations among them), y = f(a, b) for every XY_BIN_* code
// (arithmetic, maximum/minimum, the activation gradients), y = a <op> b as
// a 0/1 byte for every XY_CMP_* code, and y = cond ? a : b. One kernel per
// (dtype, code): the code's switch folds away and the inner loop stays
// branch-free. Broadcast inputs arrive with stride 0 and take the map's
// strided path. A code outside math.h's lists is refused on the host,
// before any launch. i32 and i64 take math.h's integer codes (wrapping add,
// sub, mul; maximum, minimum; neg, abs; every comparison; where), one
// kernel per (type, code) too.
#include <string>

#include "map.cuh"
#include "real.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

template <DType D, int Code>
struct Unary {
  using R = Real<D>;
  typename R::compute p0, p1;
  __device__ typename R::storage operator()(std::int64_t, typename R::storage x) const {
    return R::store(unary_of(Code, R::load(x), p0, p1));
  }
};

template <DType D, int Code>
struct Binary {
  using R = Real<D>;
  typename R::compute p0, p1;
  __device__ typename R::storage operator()(std::int64_t, typename R::storage a, typename R::storage b) const {
    return R::store(binary_of(Code, R::load(a), R::load(b), p0, p1));
  }
};

template <DType D, int Code>
struct Compare {
  using R = Real<D>;
  __device__ std::uint8_t operator()(std::int64_t, typename R::storage a, typename R::storage b) const {
    return compare_of(Code, R::load(a), R::load(b)) ? 1 : 0;
  }
};

// Moves storage values: one kernel per storage size serves every dtype.
struct Select {
  template <class T>
  __device__ T operator()(std::int64_t, T a, T b, std::uint8_t cond) const {
    return cond != 0 ? a : b;
  }
};

[[noreturn]] void unknown_code(const char* op, std::int64_t code) {
  throw Error(ErrorCode::invalid_argument, std::string(op) + ": unknown code " + std::to_string(code));
}

template <DType D>
void unary(const OpCall& c, const Context& ctx) {
  using C = typename Real<D>::compute;
  const auto args = plugin::unpack<plugin::args::math_unary>(c);
  const C p0 = static_cast<C>(args.param0), p1 = static_cast<C>(args.param1);
  const bool known = with_code<XY_UN_COUNT>(args.code, [&]<int Code>() {
    map<typename Real<D>::storage>(ctx, "math::unary", Unary<D, Code>{p0, p1}, args.y, args.x);
  });
  if (!known) unknown_code("math::unary", args.code);
}

template <DType D>
void binary(const OpCall& c, const Context& ctx) {
  using C = typename Real<D>::compute;
  const auto args = plugin::unpack<plugin::args::math_binary>(c);
  const C p0 = static_cast<C>(args.param0), p1 = static_cast<C>(args.param1);
  const bool known = with_code<XY_BIN_COUNT>(args.code, [&]<int Code>() {
    map<typename Real<D>::storage>(ctx, "math::binary", Binary<D, Code>{p0, p1}, args.y, args.a, args.b);
  });
  if (!known) unknown_code("math::binary", args.code);
}

// y is boolean.
template <DType D>
void compare(const OpCall& c, const Context& ctx) {
  using S = typename Real<D>::storage;
  const auto args = plugin::unpack<plugin::args::math_compare>(c);
  const bool known = with_code<XY_CMP_COUNT>(args.code, [&]<int Code>() {
    map_as<std::uint8_t, S, S>(ctx, "math::compare", Compare<D, Code>{}, args.y, args.a, args.b);
  });
  if (!known) unknown_code("math::compare", args.code);
}

// cond is boolean.
template <DType D>
void where(const OpCall& c, const Context& ctx) {
  using S = typename Real<D>::storage;
  const auto args = plugin::unpack<plugin::args::math_where>(c);
  map_as<S, S, S, std::uint8_t>(ctx, "math::where", Select{}, args.y, args.a, args.b, args.cond);
}

// ---- i32 and i64 ---------------------------------------------------------
template <class T, int Code>
struct IntUnary {
  __device__ T operator()(std::int64_t, T x) const { return int_unary_of(Code, x); }
};
template <class T, int Code>
struct IntBinary {
  __device__ T operator()(std::int64_t, T a, T b) const { return int_binary_of(Code, a, b); }
};
template <class T, int Code>
struct IntCompare {
  __device__ std::uint8_t operator()(std::int64_t, T a, T b) const { return int_compare_of(Code, a, b) ? 1 : 0; }
};

// Calls body.template operator()<code>() for the code of a math.h X-list
// equal to `code`; false for a code outside it.
#define XYLEM_CUDA_INT_CASE(c, expression) \
  case c:                                  \
    body.template operator()<c>();         \
    return true;
template <class Body>
bool with_int_unary_code(std::int64_t code, Body&& body) {
  switch (code) {
    XY_INT_UNARY_FORMULAS(XYLEM_CUDA_INT_CASE, , , )
    default: return false;
  }
}
template <class Body>
bool with_int_binary_code(std::int64_t code, Body&& body) {
  switch (code) {
    XY_INT_BINARY_FORMULAS(XYLEM_CUDA_INT_CASE, , , , )
    default: return false;
  }
}
#undef XYLEM_CUDA_INT_CASE

template <class T>
void int_unary(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_unary>(c);
  const bool known = with_int_unary_code(
      args.code, [&]<int Code>() { map<T>(ctx, "math::unary", IntUnary<T, Code>{}, args.y, args.x); });
  if (!known) unknown_code("math::unary", args.code);
}

template <class T>
void int_binary(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_binary>(c);
  const bool known = with_int_binary_code(
      args.code, [&]<int Code>() { map<T>(ctx, "math::binary", IntBinary<T, Code>{}, args.y, args.a, args.b); });
  if (!known) unknown_code("math::binary", args.code);
}

template <class T>
void int_compare(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_compare>(c);
  const bool known = with_code<XY_CMP_COUNT>(args.code, [&]<int Code>() {
    map_as<std::uint8_t, T, T>(ctx, "math::compare", IntCompare<T, Code>{}, args.y, args.a, args.b);
  });
  if (!known) unknown_code("math::compare", args.code);
}

template <class T>
void int_where(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_where>(c);
  map_as<T, T, T, std::uint8_t>(ctx, "math::where", Select{}, args.y, args.a, args.b, args.cond);
}

}  // namespace

void register_elementwise(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::math_unary, D, &unary<D>);
    table.set(plugin::OpId::math_binary, D, &binary<D>);
    table.set(plugin::OpId::math_compare, D, &compare<D>);
    table.set(plugin::OpId::math_where, D, &where<D>);
  });
  for_each_integer([&]<DType D, class T>() {
    table.set(plugin::OpId::math_unary, D, &int_unary<T>);
    table.set(plugin::OpId::math_binary, D, &int_binary<T>);
    table.set(plugin::OpId::math_compare, D, &int_compare<T>);
    table.set(plugin::OpId::math_where, D, &int_where<T>);
  });
}

}  // namespace xylem::cuda
