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

// out = the kept elements of in, scaled by 1/(1-p). The gradient applies
// the same mask and scale.
template <DType D>
void apply_mask(const Context& ctx, std::string_view what, const plugin::TensorArg& in, const plugin::TensorArg& out,
                std::int64_t seed, std::int64_t offset, double p) {
  using C = typename Real<D>::compute;
  const Dropout<D> f{static_cast<xy_u64>(seed), static_cast<xy_u64>(offset), static_cast<float>(p),
                     C(1) - static_cast<C>(p)};
  map<typename Real<D>::storage>(ctx, what, f, out, in);
}

template <DType D>
void dropout(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_dropout>(c);
  apply_mask<D>(ctx, "nn::dropout", a.x, a.y, a.seed, a.offset, a.p);
}

template <DType D>
void dropout_grad(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_dropout_grad>(c);
  apply_mask<D>(ctx, "nn::dropout_grad", a.dy, a.dx, a.seed, a.offset, a.p);
}

}  // namespace

void register_dropout(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::nn_dropout, D, &dropout<D>);
    table.set(plugin::OpId::nn_dropout_grad, D, &dropout_grad<D>);
  });
}

}  // namespace xylem::cuda
