// nn::cross_entropy and its gradient over logits x [N, C] (any strides):
// the lanes of a block share each row (lanes.cuh), fold it with the online
// max/sum (max_sum.cuh) in one read, then the loss is logsumexp - x[target]
// and the gradient (softmax - onehot)*dloss, in the compute type. A target
// equal to ignore_index gives 0, one outside [0, C) NaN (the loss, or the
// row of the gradient). Ignored rows still fold their statistics: the lanes
// of a row combine them together, so none may leave early.
#include <cuda_runtime.h>

#include <cmath>

#include "block.cuh"
#include "lanes.cuh"
#include "max_sum.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

struct LossArgs {
  std::int64_t n, c;
  std::int64_t xs0, xs1;  // x (and dx: ds0, ds1)
  std::int64_t ts;        // target
  std::int64_t ls;        // loss, or dloss
  std::int64_t ds0, ds1;  // dx
  std::int64_t ignore;    // the ignored target value
};

// The row's statistics, in every lane of its group.
template <DType D>
__device__ MaxSum<ComputeT<D>> row_stats(const StorageT<D>* xr, const LossArgs& a, const LanePos& p) {
  MaxSum<ComputeT<D>> st = MaxSum<ComputeT<D>>::empty();
  if (p.valid) fold_max_sum<Real<D>>(st, xr, a.xs1, p.lane, a.c, p.lanes);
  return combine_lanes(st, p, MergeMaxSum{});
}

template <DType D>
__global__ void __launch_bounds__(kLaneThreads)
    cross_entropy_rows(const StorageT<D>* x, const std::int64_t* target, StorageT<D>* loss, LossArgs a) {
  using C = ComputeT<D>;
  const LanePos p = lane_pos(true, a.n, 1);
  const StorageT<D>* xr = x + (p.valid ? p.o * a.xs0 : 0);
  const MaxSum<C> st = row_stats<D>(xr, a, p);
  if (!p.valid || p.lane != 0) return;
  const std::int64_t t = target[p.o * a.ts];
  // (m - x[t]) + log(s): adding log(s) to a huge m first would lose it.
  const C value = t == a.ignore             ? C(0)
                  : (t < 0 || t >= a.c) ? C(NAN)
                                        : (st.m - Real<D>::load(xr[t * a.xs1])) + log(st.s);
  loss[p.o * a.ls] = Real<D>::store(value);
}

template <DType D>
__global__ void __launch_bounds__(kLaneThreads)
    cross_entropy_grad_rows(const StorageT<D>* x, const std::int64_t* target, const StorageT<D>* dloss,
                            StorageT<D>* dx, LossArgs a) {
  using C = ComputeT<D>;
  const LanePos p = lane_pos(true, a.n, 1);
  const StorageT<D>* xr = x + (p.valid ? p.o * a.xs0 : 0);
  const MaxSum<C> st = row_stats<D>(xr, a, p);
  if (!p.valid) return;
  const std::int64_t t = target[p.o * a.ts];
  const bool ignored = t == a.ignore, bad = !ignored && (t < 0 || t >= a.c);
  const C g = Real<D>::load(dloss[p.o * a.ls]), scale = C(1) / st.s;
  StorageT<D>* out = dx + p.o * a.ds0;
  for (std::int64_t j = p.lane; j < a.c; j += p.lanes) {
    const C prob = exp(Real<D>::load(xr[j * a.xs1]) - st.m) * scale;
    out[j * a.ds1] = Real<D>::store(ignored ? C(0) : bad ? C(NAN) : (prob - (j == t ? C(1) : C(0))) * g);
  }
}

// x, target and the per-row loss (cross_entropy) or dloss (its gradient).
LossArgs loss_args(const plugin::TensorArg& x, const plugin::TensorArg& target, const plugin::TensorArg& per_row) {
  LossArgs a{};
  a.n = x.view.dims()[0], a.c = x.view.dims()[1];
  a.xs0 = x.view.strides()[0], a.xs1 = x.view.strides()[1];
  a.ts = target.view.strides()[0];
  a.ls = per_row.view.strides()[0];
  return a;
}

template <DType D>
void cross_entropy(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_cross_entropy>(c);
  LossArgs a = loss_args(args.x, args.target, args.loss);
  a.ignore = args.ignore_index;
  if (a.n == 0) return;
  const LanePlan plan = plan_lanes(a.c, a.n, 1, sizeof(StorageT<D>), 0);
  cross_entropy_rows<D><<<unsigned(plan.blocks(a.n, 1)), plan.block(), 0, ctx.stream>>>(
      element_ptr<const StorageT<D>>(args.x), element_ptr<const std::int64_t>(args.target),
      element_ptr<StorageT<D>>(args.loss), a);
  XY_CUDA_LAUNCHED(ctx.device, "nn::cross_entropy");
}

template <DType D>
void cross_entropy_grad(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_cross_entropy_grad>(c);
  LossArgs a = loss_args(args.x, args.target, args.dloss);
  a.ds0 = args.dx.view.strides()[0], a.ds1 = args.dx.view.strides()[1];
  a.ignore = args.ignore_index;
  if (a.n == 0 || a.c == 0) return;
  const LanePlan plan = plan_lanes(a.c, a.n, 1, sizeof(StorageT<D>), 0);
  cross_entropy_grad_rows<D><<<unsigned(plan.blocks(a.n, 1)), plan.block(), 0, ctx.stream>>>(
      element_ptr<const StorageT<D>>(args.x), element_ptr<const std::int64_t>(args.target),
      element_ptr<const StorageT<D>>(args.dloss), element_ptr<StorageT<D>>(args.dx), a);
  XY_CUDA_LAUNCHED(ctx.device, "nn::cross_entropy_grad");
}

}  // namespace

void register_cross_entropy(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::nn_cross_entropy, D, &cross_entropy<D>);
    table.set(plugin::OpId::nn_cross_entropy_grad, D, &cross_entropy_grad<D>);
  });
}

}  // namespace xylem::cuda
