// math::reduce over [outer, r, inner] views of any strides: sum, mean, max,
// min, argmax, argmin, var. One kernel per (dtype, code). Sums, means and
// variances accumulate in f64 for every dtype (memory-bound: the wider
// adds cost nothing measurable) and round once to the output; variance
// sums x - shift per thread (shift: the thread's first element), then
// merges the threads' (count, mean, M2) with Chan's formula. Each output's reduced axis is
// split over the lanes of a block (lanes.cuh) and, when there are too few
// outputs to fill the GPU, over several blocks whose partial states a
// second kernel merges in a fixed order: results never depend on timing.
// i32 and i64 (IntReducer): sum, max, min, argmax, argmin; sums accumulate
// in i64, wrapping modulo 2^64 (math.h), and an i32 sum's y is i64.
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "lanes.cuh"
#include "map.cuh"
#include "real.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

// nonfinite counts the infinite and NaN inputs: without any, a NaN result
// can only come from overflow (Inf - Inf inside the updates), where the
// variance itself overflows: Inf, as the two-pass formula gives.
struct Welford {
  double n, mean, m2, nonfinite;
};
// A thread's own share of a variance: sums of x - shift, shift = the
// output's first element (near the mean: the sums keep their digits at any
// offset, with no division per element), made a Welford state of x - shift
// before the lanes merge. Every thread and split of one output shares the
// shift, so the merged means stay small numbers and keep their digits too.
struct Shifted {
  double n, shift, sum, sumsq, nonfinite;
};
template <class C>
struct Extreme {
  C value;
  std::int64_t index;
};

constexpr bool is_max(int code) { return code == XY_RED_MAX || code == XY_RED_ARGMAX; }

// a is x's first NaN, or else greater (Max) or smaller, or equal with a
// smaller index: the first extreme wins, a NaN counting as the extreme.
template <bool Max, class C>
__device__ __forceinline__ bool beats(C a, std::int64_t ia, C b, std::int64_t ib) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || ia < ib);
  if (a != b) return Max ? a > b : a < b;
  return ia < ib;
}

// Per code: State, init, push (one element), merge, finish (the output).
template <DType D, int Code>
struct Reducer {
  using R = Real<D>;
  using C = typename R::compute;
  using In = typename R::storage;
  static constexpr bool kArg = Code == XY_RED_ARGMAX || Code == XY_RED_ARGMIN;
  using Out = std::conditional_t<kArg, std::int64_t, In>;
  using State = std::conditional_t<Code == XY_RED_VAR, Welford,
                                   std::conditional_t<kArg, Extreme<C>,
                                                      std::conditional_t<Code == XY_RED_MAX || Code == XY_RED_MIN, C,
                                                                         double>>>;

  // What one thread folds its elements into: the state itself, except for
  // the variance.
  using Acc = std::conditional_t<Code == XY_RED_VAR, Shifted, State>;
  static constexpr bool kShifted = Code == XY_RED_VAR;
  __device__ static Acc start([[maybe_unused]] C shift) {
    if constexpr (Code == XY_RED_VAR)
      return {0.0, double(shift), 0.0, 0.0, 0.0};
    else
      return init();
  }
  __device__ static void fold(Acc& a, C v, std::int64_t j) {
    if constexpr (Code == XY_RED_VAR) {
      const double d = double(v) - a.shift;
      a.n += 1.0;
      a.sum += d;
      a.sumsq += d * d;
      if (!isfinite(v)) a.nonfinite += 1.0;
    } else {
      push(a, v, j);
    }
  }
  __device__ static State finish_thread(const Acc& a) {
    if constexpr (Code == XY_RED_VAR) {
      if (a.n == 0.0) return init();
      const double m2 = a.sumsq - a.sum * (a.sum / a.n);
      return {a.n, a.sum / a.n, m2 > 0.0 ? m2 : (m2 != m2 ? m2 : 0.0), a.nonfinite};
    } else {
      return a;
    }
  }

  __device__ static State init() {
    if constexpr (Code == XY_RED_VAR) {
      return {0.0, 0.0, 0.0, 0.0};
    } else if constexpr (kArg) {
      return {is_max(Code) ? C(-INFINITY) : C(INFINITY), INT64_MAX};
    } else if constexpr (Code == XY_RED_MAX || Code == XY_RED_MIN) {
      return is_max(Code) ? C(-INFINITY) : C(INFINITY);
    } else {
      return 0.0;
    }
  }
  __device__ static State merge(const State& a, const State& b) {
    if constexpr (Code == XY_RED_VAR) {
      const double n = a.n + b.n;
      if (b.n == 0.0) return a;
      if (a.n == 0.0) return b;
      const double d = b.mean - a.mean;
      return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n), a.nonfinite + b.nonfinite};
    } else if constexpr (kArg) {
      return beats<is_max(Code)>(b.value, b.index, a.value, a.index) ? b : a;
    } else if constexpr (Code == XY_RED_MAX) {
      return xy_binary_max(a, b);
    } else if constexpr (Code == XY_RED_MIN) {
      return xy_binary_min(a, b);
    } else {
      return a + b;
    }
  }
  __device__ static void push(State& s, C v, std::int64_t j) {
    if constexpr (kArg) {
      if (beats<is_max(Code)>(v, j, s.value, s.index)) s = {v, j};
    } else if constexpr (Code == XY_RED_MAX || Code == XY_RED_MIN) {
      s = merge(s, v);
    } else {
      s += double(v);
    }
  }
  __device__ static Out finish(const State& s, std::int64_t r, std::int64_t correction) {
    if constexpr (Code == XY_RED_VAR) {
      const double denom = std::max<double>(double(r) - double(correction), 0.0);
      const double m2 = s.m2 != s.m2 && s.nonfinite == 0.0 ? INFINITY : s.m2;
      return R::store_double(m2 / denom);
    } else if constexpr (kArg) {
      return s.index;
    } else if constexpr (Code == XY_RED_MAX || Code == XY_RED_MIN) {
      return R::store(s);
    } else if constexpr (Code == XY_RED_MEAN) {
      return R::store_double(s / double(r));
    } else {
      return R::store_double(s);
    }
  }

 private:
  // maximum/minimum with NaN propagating (math.h's XY_BIN_MAXIMUM/MINIMUM).
  __device__ static C xy_binary_max(C a, C b) { return (a > b || a != a) ? a : b; }
  __device__ static C xy_binary_min(C a, C b) { return (a < b || a != a) ? a : b; }
};

// The element type as run_reduce loads it: an integer is its own compute type.
template <class T>
struct IntLoad {
  using storage = T;
  using compute = T;
  __device__ static T load(T v) { return v; }
};

// Reducer's interface for i32 and i64 (the core refuses mean and var).
template <class T, int Code>
struct IntReducer {
  using R = IntLoad<T>;
  using C = T;
  using In = T;
  static constexpr bool kArg = Code == XY_RED_ARGMAX || Code == XY_RED_ARGMIN;
  static constexpr bool kSum = Code == XY_RED_SUM;
  using Out = std::conditional_t<kArg || kSum, std::int64_t, T>;
  using State = std::conditional_t<kArg, Extreme<T>, std::conditional_t<kSum, std::int64_t, T>>;
  using Acc = State;
  static constexpr bool kShifted = false;

  __device__ static Acc start(C) { return init(); }
  __device__ static void fold(Acc& a, C v, std::int64_t j) { push(a, v, j); }
  __device__ static State finish_thread(const Acc& a) { return a; }
  __device__ static State init() {
    constexpr T lowest = std::numeric_limits<T>::lowest(), highest = std::numeric_limits<T>::max();
    if constexpr (kArg)
      return {is_max(Code) ? lowest : highest, INT64_MAX};
    else if constexpr (kSum)
      return 0;
    else
      return is_max(Code) ? lowest : highest;
  }
  __device__ static State merge(const State& a, const State& b) {
    if constexpr (kArg)
      return beats<is_max(Code)>(b.value, b.index, a.value, a.index) ? b : a;
    else if constexpr (kSum)
      return xy_int_binary_i64(XY_BIN_ADD, a, b);
    else
      return int_binary_of(is_max(Code) ? XY_BIN_MAXIMUM : XY_BIN_MINIMUM, a, b);
  }
  __device__ static void push(State& s, C v, std::int64_t j) {
    if constexpr (kArg) {
      if (beats<is_max(Code)>(v, j, s.value, s.index)) s = {v, j};
    } else {
      s = merge(s, State(v));
    }
  }
  __device__ static Out finish(const State& s, std::int64_t, std::int64_t) {
    if constexpr (kArg)
      return s.index;
    else
      return s;
  }
};

struct ReduceArgs {
  std::int64_t outer, r, inner;
  std::int64_t xs0, xs1, xs2;  // x's strides
  std::int64_t ys0, ys1;       // y's strides
  std::int64_t correction;
  int splits;  // blocks sharing each output's reduced axis (blockIdx.y)
};

template <class Red>
struct MergeOf {
  __device__ typename Red::State operator()(const typename Red::State& a, const typename Red::State& b) const {
    return Red::merge(a, b);
  }
};

// Each thread folds its lane's share of its split of the reduced axis; the
// lanes combine; lane 0 writes the output (or its split's partial state).
template <class Red>
__global__ void __launch_bounds__(kLaneThreads)
    reduce_kernel(const typename Red::In* x, typename Red::Out* y, ReduceArgs a, bool rows,
                  typename Red::State* partial) {
  using R = typename Red::R;
  const LanePos p = lane_pos(rows, a.outer, a.inner);
  const std::int64_t chunk = (a.r + a.splits - 1) / a.splits;
  const std::int64_t j0 = blockIdx.y * chunk, j1 = std::min(a.r, j0 + chunk);
  const typename Red::In* base = x + (p.valid ? p.o * a.xs0 + p.i * a.xs2 : 0);
  typename Red::Acc acc = Red::start(Red::kShifted ? R::load(base[0]) : typename R::compute(0));
  if (p.valid) {
#pragma unroll 4
    for (std::int64_t j = j0 + p.lane; j < j1; j += p.lanes) Red::fold(acc, R::load(base[j * a.xs1]), j);
  }
  const typename Red::State s = combine_lanes(Red::finish_thread(acc), p, MergeOf<Red>{});
  if (!p.valid || p.lane != 0) return;
  if (a.splits == 1)
    y[p.o * a.ys0 + p.i * a.ys1] = Red::finish(s, a.r, a.correction);
  else
    partial[(p.o * a.inner + p.i) * a.splits + blockIdx.y] = s;
}

// One thread per output: the splits' states merged in order.
template <class Red>
__global__ void reduce_finish(const typename Red::State* partial, typename Red::Out* y, ReduceArgs a) {
  const std::int64_t out = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (out >= a.outer * a.inner) return;
  const typename Red::State* s = partial + out * a.splits;
  typename Red::State acc = s[0];
  for (int k = 1; k < a.splits; ++k) acc = Red::merge(acc, s[k]);
  y[(out / a.inner) * a.ys0 + (out % a.inner) * a.ys1] = Red::finish(acc, a.r, a.correction);
}

template <class Red>
void run_reduce(const plugin::args::math_reduce<>& args, const Context& ctx) {
  const plugin::TensorArg &x = args.x, &y = args.y;
  ReduceArgs a{};
  a.outer = x.view.dims()[0], a.r = x.view.dims()[1], a.inner = x.view.dims()[2];
  a.xs0 = x.view.strides()[0], a.xs1 = x.view.strides()[1], a.xs2 = x.view.strides()[2];
  a.ys0 = y.view.strides()[0], a.ys1 = y.view.strides()[1];
  a.correction = args.correction;
  const std::int64_t outputs = a.outer * a.inner;
  if (outputs == 0) return;
  const std::int64_t target = std::int64_t(ctx.multiprocessors) * kBlocksPerMultiprocessor;
  const LanePlan plan = plan_lanes(a.r, a.outer, a.inner, sizeof(typename Red::In), target);
  const std::int64_t blocks = plan.blocks(a.outer, a.inner);
  // Split the reduced axis when the outputs alone leave the GPU idle, as
  // long as each split keeps 16 elements per lane and the partial states
  // fit the scratch buffer.
  std::int64_t splits = 1;
  if (blocks < target) {
    splits = (target + blocks - 1) / blocks;
    splits = std::min<std::int64_t>(splits, a.r / (std::int64_t(plan.lanes()) * 16));
    splits = std::min<std::int64_t>(splits, std::int64_t(Context::kScratchBytes / sizeof(typename Red::State)) / outputs);
    splits = std::clamp<std::int64_t>(splits, 1, 65535);
  }
  a.splits = int(splits);
  auto* partial = static_cast<typename Red::State*>(ctx.scratch);
  const auto* xp = element_ptr<const typename Red::In>(x);
  auto* yp = element_ptr<typename Red::Out>(y);
  reduce_kernel<Red><<<dim3(unsigned(blocks), unsigned(splits)), plan.block(), 0, ctx.stream>>>(xp, yp, a, plan.rows,
                                                                                                 partial);
  XY_CUDA_LAUNCHED(ctx.device, "math::reduce");
  if (splits > 1) {
    reduce_finish<Red><<<unsigned((outputs + 255) / 256), 256, 0, ctx.stream>>>(partial, yp, a);
    XY_CUDA_LAUNCHED(ctx.device, "math::reduce");
  }
}

// x [outer, r, inner], y [outer, inner].
template <DType D>
void reduce(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_reduce>(c);
  const bool known = with_code<XY_RED_COUNT>(args.code, [&]<int Code>() { run_reduce<Reducer<D, Code>>(args, ctx); });
  if (!known) throw Error(ErrorCode::invalid_argument, "math::reduce: unknown code " + std::to_string(args.code));
}

template <class T>
void int_reduce(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::math_reduce>(c);
  const auto run = [&]<int Code>() { run_reduce<IntReducer<T, Code>>(args, ctx); };
  switch (args.code) {
    case XY_RED_SUM: run.template operator()<XY_RED_SUM>(); break;
    case XY_RED_MAX: run.template operator()<XY_RED_MAX>(); break;
    case XY_RED_MIN: run.template operator()<XY_RED_MIN>(); break;
    case XY_RED_ARGMAX: run.template operator()<XY_RED_ARGMAX>(); break;
    case XY_RED_ARGMIN: run.template operator()<XY_RED_ARGMIN>(); break;
    default:
      throw Error(ErrorCode::invalid_argument,
                  "math::reduce: code " + std::to_string(args.code) + " has no integer form");
  }
}

}  // namespace

void register_reduce(KernelTable& table) {
  for_each_real([&]<DType D>() { table.set(plugin::OpId::math_reduce, D, &reduce<D>); });
  for_each_integer([&]<DType D, class T>() { table.set(plugin::OpId::math_reduce, D, &int_reduce<T>); });
}

}  // namespace xylem::cuda
