// optim::sgd_step and optim::adam_step natively, f32 and f64, contiguous
// views: one parallel loop over the elements, each updated by math.h's
// formula (the one every framework runs).
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;

// A few loads and a division or square root per element: chunks of this
// many amortise a task's start.
constexpr std::int64_t kGrain = 16 * 1024;

template <class T>
inline T sgd_step(T p, T g, T* b, T lr, T momentum, T dampening, T wd, int nesterov, int first) {
  if constexpr (sizeof(T) == 4)
    return xy_sgd_step_f(p, g, b, lr, momentum, dampening, wd, nesterov, first);
  else
    return xy_sgd_step_d(p, g, b, lr, momentum, dampening, wd, nesterov, first);
}
template <class T>
inline T adam_step(T p, T g, T* m, T* v, const plugin::args::optim_adam_step<>& a) {
  const T lr = T(a.lr), b1 = T(a.beta1), b2 = T(a.beta2), eps = T(a.eps), wd = T(a.weight_decay);
  const T bc1 = T(a.bias_correction1), bc2 = T(a.bias_correction2);
  const int decoupled = a.decoupled != 0;
  if constexpr (sizeof(T) == 4)
    return xy_adam_step_f(p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2, decoupled);
  else
    return xy_adam_step_d(p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2, decoupled);
}

template <class T>
void sgd_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::optim_sgd_step>(call);
  T* param = element_ptr<T>(a.param);
  const T* grad = element_ptr<const T>(a.grad);
  T* buf = a.momentum_buffer.data != nullptr ? element_ptr<T>(a.momentum_buffer) : nullptr;
  const T lr = T(a.lr), momentum = T(a.momentum), dampening = T(a.dampening), wd = T(a.weight_decay);
  const int nesterov = a.nesterov != 0, first = a.first_step != 0;
  parallel_chunks(a.param.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    T unused = T(0);
    for (std::int64_t k = begin; k < end; ++k)
      param[k] = sgd_step<T>(param[k], grad[k], buf != nullptr ? buf + k : &unused, lr, momentum, dampening, wd,
                             nesterov, first);
  });
}

template <class T>
void adam_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::optim_adam_step>(call);
  T* param = element_ptr<T>(a.param);
  const T* grad = element_ptr<const T>(a.grad);
  T* m = element_ptr<T>(a.exp_avg);
  T* v = element_ptr<T>(a.exp_avg_sq);
  parallel_chunks(a.param.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) param[k] = adam_step<T>(param[k], grad[k], m + k, v + k, a);
  });
}

}  // namespace

void register_optim(KernelTable& table) {
  table.set(OpId::optim_sgd_step, DType::f32, &sgd_kernel<float>);
  table.set(OpId::optim_sgd_step, DType::f64, &sgd_kernel<double>);
  table.set(OpId::optim_adam_step, DType::f32, &adam_kernel<float>);
  table.set(OpId::optim_adam_step, DType::f64, &adam_kernel<double>);
}

}  // namespace xylem::native
