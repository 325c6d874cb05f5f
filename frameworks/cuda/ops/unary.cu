// math::unary: y = f(x) for every XY_UN_* code of math.h (the activations
// among them), f16/bf16/f32/f64. One kernel per (dtype, code): the code's
// switch folds away and the inner loop stays branch-free.
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

// t0=x, t1=y; i0 = code; f0, f1 = the code's parameters.
template <DType D>
void unary(const OpCall& c, const Context& ctx) {
  using C = typename Real<D>::compute;
  const C p0 = static_cast<C>(c.f[0]), p1 = static_cast<C>(c.f[1]);
  const bool known = with_code<XY_UN_COUNT>(c.i[0], [&]<int Code>() {
    map<typename Real<D>::storage>(ctx, "math::unary", Unary<D, Code>{p0, p1}, c.t[1], c.t[0]);
  });
  if (!known) throw Error(ErrorCode::invalid_argument, "math::unary: unknown code " + std::to_string(c.i[0]));
}

}  // namespace

void register_unary(KernelTable& table) {
  for_each_real([&]<DType D>() { table.set(plugin::OpId::math_unary, D, &unary<D>); });
}

}  // namespace xylem::cuda
