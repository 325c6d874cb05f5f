// nn::dropout and nn::dropout_grad: element k (row-major logical index) is
// kept when xy_uniform01_f(xy_philox(seed, offset + k)) >= (float)p, the same draw
// as the native and OpenCL frameworks, so all three drop the same elements;
// kept elements are scaled by 1/(1-p) in the compute type.
#include "map.cuh"
#include "real.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

template <DType D>
struct Dropout {
  using R = Real<D>;
  using C = typename R::compute;
  xy_u64 seed, offset;
  float p;       // compared in f32, as devices without fp64 must
  C one_minus_p;  // kept elements are x/(1-p)
  __device__ typename R::storage operator()(std::int64_t k, typename R::storage x) const {
    const bool keep = xy_uniform01_f(xy_philox(seed, offset + static_cast<xy_u64>(k))) >= p;
    return R::store(keep ? R::load(x) / one_minus_p : C(0));
  }
};

// t0=x (or dy), t1=y (or dx); f0 = p; i0 = seed, i1 = counter offset. The
// gradient applies the same mask and scale.
template <DType D>
void dropout(const OpCall& c, const Context& ctx) {
  using C = typename Real<D>::compute;
  const Dropout<D> f{static_cast<xy_u64>(c.i[0]), static_cast<xy_u64>(c.i[1]), static_cast<float>(c.f[0]), C(1) - static_cast<C>(c.f[0])};
  map<typename Real<D>::storage>(ctx, plugin::op_name(c.op), f, c.t[1], c.t[0]);
}

}  // namespace

void register_dropout(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::nn_dropout, D, &dropout<D>);
    table.set(plugin::OpId::nn_dropout_grad, D, &dropout<D>);
  });
}

}  // namespace xylem::cuda
