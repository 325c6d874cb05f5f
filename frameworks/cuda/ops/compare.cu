// math::compare (y = a <op> b as a 0/1 byte) for every XY_CMP_* code, and
// math::where (y = cond ? a : b), f16/bf16/f32/f64. Broadcast inputs arrive
// with stride 0 and take the map's strided path.
#include <string>

#include "map.cuh"
#include "real.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

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

// t0=a, t1=b, t2=y (boolean); i0 = code.
template <DType D>
void compare(const OpCall& c, const Context& ctx) {
  using S = typename Real<D>::storage;
  const bool known = with_code<XY_CMP_COUNT>(c.i[0], [&]<int Code>() {
    map_as<std::uint8_t, S, S>(ctx, "math::compare", Compare<D, Code>{}, c.t[2], c.t[0], c.t[1]);
  });
  if (!known) throw Error(ErrorCode::invalid_argument, "math::compare: unknown code " + std::to_string(c.i[0]));
}

// t0=a, t1=b, t2=cond (boolean), t3=y.
template <DType D>
void where(const OpCall& c, const Context& ctx) {
  using S = typename Real<D>::storage;
  map_as<S, S, S, std::uint8_t>(ctx, "math::where", Select{}, c.t[3], c.t[0], c.t[1], c.t[2]);
}

}  // namespace

void register_compare(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::math_compare, D, &compare<D>);
    table.set(plugin::OpId::math_where, D, &where<D>);
  });
}

}  // namespace xylem::cuda
