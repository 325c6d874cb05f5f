// math::binary: y = f(a, b) for every XY_BIN_* code of math.h (arithmetic,
// maximum/minimum, the activation gradients), f16/bf16/f32/f64. Broadcast
// inputs arrive with stride 0 and take the map's strided path.
#include <string>

#include "map.cuh"
#include "real.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

template <DType D, int Code>
struct Binary {
  using R = Real<D>;
  typename R::compute p0, p1;
  __device__ typename R::storage operator()(std::int64_t, typename R::storage a, typename R::storage b) const {
    return R::store(binary_of(Code, R::load(a), R::load(b), p0, p1));
  }
};

// t0=a, t1=b, t2=y; i0 = code; f0 (and f1 for softplus_grad) = parameters.
template <DType D>
void binary(const OpCall& c, const Context& ctx) {
  using C = typename Real<D>::compute;
  const C p0 = static_cast<C>(c.f[0]), p1 = static_cast<C>(c.f[1]);
  const bool known = with_code<XY_BIN_COUNT>(c.i[0], [&]<int Code>() {
    map<typename Real<D>::storage>(ctx, "math::binary", Binary<D, Code>{p0, p1}, c.t[2], c.t[0], c.t[1]);
  });
  if (!known) throw Error(ErrorCode::invalid_argument, "math::binary: unknown code " + std::to_string(c.i[0]));
}

}  // namespace

void register_binary(KernelTable& table) {
  for_each_real([&]<DType D>() { table.set(plugin::OpId::math_binary, D, &binary<D>); });
}

}  // namespace xylem::cuda
