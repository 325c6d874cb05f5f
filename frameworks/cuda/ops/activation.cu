// nn activations and their gradients; the formulas are math.h's.
#include "xylem/plugin/math.h"

#include "map.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;

struct Sigmoid {
  __device__ float operator()(std::int64_t, float x) const { return xy_sigmoid_f(x); }
  __device__ double operator()(std::int64_t, double x) const { return xy_sigmoid_d(x); }
};
struct Relu {
  __device__ float operator()(std::int64_t, float x) const { return xy_relu_f(x); }
  __device__ double operator()(std::int64_t, double x) const { return xy_relu_d(x); }
};
struct Tanh {
  __device__ float operator()(std::int64_t, float x) const { return xy_tanh_f(x); }
  __device__ double operator()(std::int64_t, double x) const { return xy_tanh_d(x); }
};
struct SigmoidGrad {
  __device__ float operator()(std::int64_t, float y, float dy) const { return xy_sigmoid_grad_f(y, dy); }
  __device__ double operator()(std::int64_t, double y, double dy) const { return xy_sigmoid_grad_d(y, dy); }
};
struct ReluGrad {
  __device__ float operator()(std::int64_t, float x, float dy) const { return xy_relu_grad_f(x, dy); }
  __device__ double operator()(std::int64_t, double x, double dy) const { return xy_relu_grad_d(x, dy); }
};
struct TanhGrad {
  __device__ float operator()(std::int64_t, float y, float dy) const { return xy_tanh_grad_f(y, dy); }
  __device__ double operator()(std::int64_t, double y, double dy) const { return xy_tanh_grad_d(y, dy); }
};

// t0=x, t1=y
template <class T, class F>
void forward(const OpCall& c, const Context& ctx) {
  map<T>(ctx, plugin::op_name(c.op), F{}, c.t[1], c.t[0]);
}
// t0=y or x, t1=dy, t2=dx
template <class T, class F>
void backward(const OpCall& c, const Context& ctx) {
  map<T>(ctx, plugin::op_name(c.op), F{}, c.t[2], c.t[0], c.t[1]);
}

template <class T>
void register_dtype(KernelTable& table) {
  constexpr DType dt = dtype_of_v<T>;
  table.set(OpId::nn_sigmoid, dt, forward<T, Sigmoid>);
  table.set(OpId::nn_relu, dt, forward<T, Relu>);
  table.set(OpId::nn_tanh, dt, forward<T, Tanh>);
  table.set(OpId::nn_sigmoid_grad, dt, backward<T, SigmoidGrad>);
  table.set(OpId::nn_relu_grad, dt, backward<T, ReluGrad>);
  table.set(OpId::nn_tanh_grad, dt, backward<T, TanhGrad>);
}

}  // namespace

void register_activation(KernelTable& table) {
  register_dtype<float>(table);
  register_dtype<double>(table);
}

}  // namespace xylem::cuda
