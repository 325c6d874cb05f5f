// nn::lrn and nn::lrn_grad across channels (conventions in plugin.hpp):
// scale = k + alpha/size * sum of x^2 over channels [c - (size-1)/2, c + size/2],
// y = x * scale^-beta. One thread per element; the gradient first stores
// every element's scale in temporary memory, so each thread then reads
// `size` scales instead of recomputing `size` windows.
#include <algorithm>

#include "nchw.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kThreads = 256;

template <class A>
struct LrnParams {
  std::int64_t size, C;
  A alpha_over_size, beta, k;
};

// Args: nn_lrn's or nn_lrn_grad's, which share size, alpha, beta and k.
template <DType D, class Args>
LrnParams<ComputeT<D>> params_of(const Args& a) {
  using A = ComputeT<D>;
  return {a.size, a.x.view.dims()[1], A(a.alpha / double(a.size)), A(a.beta), A(a.k)};
}

template <DType D>
__device__ __forceinline__ ComputeT<D> lrn_scale(const View4<const StorageT<D>>& x, const LrnParams<ComputeT<D>>& p,
                                                 const Coord4& i) {
  using A = ComputeT<D>;
  const std::int64_t lo = std::max<std::int64_t>(0, i.i1 - (p.size - 1) / 2);
  const std::int64_t hi = std::min<std::int64_t>(p.C - 1, i.i1 + p.size / 2);
  A sum = 0;
  for (std::int64_t c = lo; c <= hi; ++c) {
    const A v = Real<D>::load(x.at(i.i0, c, i.i2, i.i3));
    sum += v * v;
  }
  return p.k + p.alpha_over_size * sum;
}

template <DType D>
__global__ void __launch_bounds__(kThreads) lrn_forward(View4<const StorageT<D>> x, View4<StorageT<D>> y,
                                                        LrnParams<ComputeT<D>> p, Split4 split, std::int64_t total) {
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 i = split(k);
    const ComputeT<D> scale = lrn_scale<D>(x, p, i);
    y.at(i.i0, i.i1, i.i2, i.i3) = Real<D>::store(Real<D>::load(x.at(i.i0, i.i1, i.i2, i.i3)) * pow(scale, -p.beta));
  }
}

// scales[k], k row-major over [N, C, H, W].
template <DType D>
__global__ void __launch_bounds__(kThreads) lrn_scales(View4<const StorageT<D>> x, ComputeT<D>* scales,
                                                       LrnParams<ComputeT<D>> p, Split4 split, std::int64_t total) {
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x)
    scales[k] = lrn_scale<D>(x, p, split(k));
}

// dx = dy*scale^-beta - 2*alpha*beta/size * x * sum over the channels c'
// whose window holds c (c - size/2 <= c' <= c + (size-1)/2) of dy*y/scale.
template <DType D>
__global__ void __launch_bounds__(kThreads) lrn_backward(View4<const StorageT<D>> x, View4<const StorageT<D>> y,
                                                         View4<const StorageT<D>> dy, const ComputeT<D>* scales,
                                                         View4<StorageT<D>> dx, LrnParams<ComputeT<D>> p,
                                                         Split4 split, std::int64_t total) {
  using A = ComputeT<D>;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 i = split(k);
    const std::int64_t plane = split.d2 * split.d3;  // k steps by this per channel
    const std::int64_t lo = std::max<std::int64_t>(0, i.i1 - p.size / 2);
    const std::int64_t hi = std::min<std::int64_t>(p.C - 1, i.i1 + (p.size - 1) / 2);
    A sum = 0;
    for (std::int64_t c = lo; c <= hi; ++c)
      sum += Real<D>::load(dy.at(i.i0, c, i.i2, i.i3)) * Real<D>::load(y.at(i.i0, c, i.i2, i.i3)) /
             scales[k + (c - i.i1) * plane];
    const A x_here = Real<D>::load(x.at(i.i0, i.i1, i.i2, i.i3));
    const A dy_here = Real<D>::load(dy.at(i.i0, i.i1, i.i2, i.i3));
    dx.at(i.i0, i.i1, i.i2, i.i3) =
        Real<D>::store(dy_here * pow(scales[k], -p.beta) - A(2) * p.alpha_over_size * p.beta * x_here * sum);
  }
}

template <DType D>
void lrn(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  const auto args = plugin::unpack<plugin::args::nn_lrn>(c);
  const TensorArg &x = args.x, &y = args.y;
  const std::int64_t total = x.view.numel();
  if (total == 0) return;
  lrn_forward<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
      view4<const S>(x), view4<S>(y), params_of<D>(args), Split4(x.view.dims(), total), total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::lrn");
}

template <DType D>
void lrn_grad(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const auto args = plugin::unpack<plugin::args::nn_lrn_grad>(c);
  const TensorArg& x = args.x;
  const std::int64_t total = x.view.numel();
  if (total == 0) return;
  const LrnParams<A> p = params_of<D>(args);
  const Split4 split(x.view.dims(), total);
  TempBuffer scales = ctx.temp(std::size_t(total) * sizeof(A));
  lrn_scales<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(view4<const S>(x), scales.as<A>(), p,
                                                                             split, total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::lrn_grad");
  lrn_backward<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
      view4<const S>(x), view4<const S>(args.y), view4<const S>(args.dy), scales.as<A>(), view4<S>(args.dx), p, split,
      total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::lrn_grad");
}

}  // namespace

void register_lrn(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(OpId::nn_lrn, D, &lrn<D>);
    table.set(OpId::nn_lrn_grad, D, &lrn_grad<D>);
  });
}

}  // namespace xylem::cuda
