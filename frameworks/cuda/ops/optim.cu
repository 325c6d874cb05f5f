// optim::sgd_step and adam_step: one grid-stride kernel per call over the
// contiguous tensors, in place, each element by math.h's formula.
#include "map.cuh"
#include "real.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

// math.h's updates, chosen by the element type.
template <class T>
__device__ __forceinline__ T sgd_of(T p, T g, T* b, T lr, T momentum, T dampening, T wd, int nesterov, int first) {
  if constexpr (sizeof(T) == 4)
    return xy_sgd_step_f(p, g, b, lr, momentum, dampening, wd, nesterov, first);
  else
    return xy_sgd_step_d(p, g, b, lr, momentum, dampening, wd, nesterov, first);
}
template <class T>
__device__ __forceinline__ T adam_of(T p, T g, T* m, T* v, T lr, T beta1, T beta2, T eps, T wd, T bc1, T bc2,
                                     int decoupled) {
  if constexpr (sizeof(T) == 4)
    return xy_adam_step_f(p, g, m, v, lr, beta1, beta2, eps, wd, bc1, bc2, decoupled);
  else
    return xy_adam_step_d(p, g, m, v, lr, beta1, beta2, eps, wd, bc1, bc2, decoupled);
}

// Without a momentum buffer (momentum 0) b is null and never touched.
template <class T>
__global__ void sgd_kernel(std::int64_t n, T* p, const T* g, T* b, T lr, T momentum, T dampening, T weight_decay,
                           int nesterov, int first) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    T buf = b != nullptr ? b[i] : T(0);
    p[i] = sgd_of<T>(p[i], g[i], &buf, lr, momentum, dampening, weight_decay, nesterov, first);
    if (b != nullptr) b[i] = buf;
  }
}

template <class T>
__global__ void adam_kernel(std::int64_t n, T* p, const T* g, T* m, T* v, T lr, T beta1, T beta2, T eps, T wd, T bc1,
                            T bc2, int decoupled) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    T mi = m[i], vi = v[i];
    p[i] = adam_of<T>(p[i], g[i], &mi, &vi, lr, beta1, beta2, eps, wd, bc1, bc2, decoupled);
    m[i] = mi;
    v[i] = vi;
  }
}

template <class T>
void sgd(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::optim_sgd_step>(c);
  const std::int64_t n = a.param.view.numel();
  if (n == 0) return;
  T* b = a.momentum_buffer.data != nullptr ? element_ptr<T>(a.momentum_buffer) : nullptr;
  static const int per_sm = blocks_per_multiprocessor(sgd_kernel<T>);
  sgd_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, element_ptr<T>(a.param), element_ptr<const T>(a.grad), b, T(a.lr), T(a.momentum), T(a.dampening),
      T(a.weight_decay), a.nesterov != 0, a.first_step != 0);
  XY_CUDA_LAUNCHED(ctx.device, "optim::sgd_step");
}

template <class T>
void adam(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::optim_adam_step>(c);
  const std::int64_t n = a.param.view.numel();
  if (n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(adam_kernel<T>);
  adam_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, element_ptr<T>(a.param), element_ptr<const T>(a.grad), element_ptr<T>(a.exp_avg), element_ptr<T>(a.exp_avg_sq),
      T(a.lr), T(a.beta1), T(a.beta2), T(a.eps), T(a.weight_decay), T(a.bias_correction1), T(a.bias_correction2),
      a.decoupled != 0);
  XY_CUDA_LAUNCHED(ctx.device, "optim::adam_step");
}

}  // namespace

void register_optim(KernelTable& table) {
  table.set(plugin::OpId::optim_sgd_step, DType::f32, &sgd<float>);
  table.set(plugin::OpId::optim_sgd_step, DType::f64, &sgd<double>);
  table.set(plugin::OpId::optim_adam_step, DType::f32, &adam<float>);
  table.set(plugin::OpId::optim_adam_step, DType::f64, &adam<double>);
}

}  // namespace xylem::cuda
