// nn::batch_norm_* (conventions in plugin.hpp): x, y, dy, dx are [N, C, S].
//
// Per-channel sums (stats, grad_params): a grid of (channel, part) blocks,
// each summing a slice of the channel's N*S elements into a pair of partial
// sums, then one thread per channel adds its parts in a fixed order
// (deterministic). Statistics use sums shifted by the channel's first
// element, so a large mean does not cancel the variance away.
// apply, grad_input: one coefficient set per channel, then an elementwise
// pass out = a*(x - mean) + b*dy + d, 16 bytes at a time where the
// tensors are dense.
#include <algorithm>
#include <optional>

#include "block.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kThreads = 256;

// A [N, C, S] view.
template <class T>
struct NCS {
  T* p = nullptr;
  std::int64_t sn = 0, sc = 0, ss = 0;
  __device__ __forceinline__ T& at(std::int64_t n, std::int64_t c, std::int64_t s) const {
    return p[n * sn + c * sc + s * ss];
  }
};

template <class T>
NCS<T> ncs(const TensorArg& a) {
  const auto st = a.view.strides();
  return {element_ptr<T>(a), st[0], st[1], st[2]};
}

// A rank-1 per-channel view, absent allowed.
template <class T>
struct PerChannel {
  T* p = nullptr;
  std::int64_t stride = 0;
  __device__ __forceinline__ T& operator[](std::int64_t c) const { return p[c * stride]; }
};

template <class T>
PerChannel<T> per_channel(const TensorArg& a) {
  return {optional_ptr<T>(a), stride_of(a, 0)};
}

// ---- per-channel sums ---------------------------------------------------------
enum class SumKind { stats, grad };

template <DType D>
struct SumArgs {
  NCS<const StorageT<D>> x, dy;                 // dy: grad only
  PerChannel<const ComputeT<D>> mean;           // grad only
  std::int64_t N, S, per_part;                  // elements of a channel per block
  ComputeT<D>* partial;                         // [C, parts, 2]
};

// stats: (x - x0, (x - x0)^2) with x0 the channel's first element;
// grad:  (dy, dy*(x - mean)).
template <DType D, SumKind Kind>
__global__ void __launch_bounds__(kThreads) channel_partial_sums(SumArgs<D> a) {
  using A = ComputeT<D>;
  const std::int64_t c = blockIdx.x, part = blockIdx.y;
  const std::int64_t total = a.N * a.S;
  const std::int64_t first = part * a.per_part, last = std::min(total, first + a.per_part);
  const A shift = Kind == SumKind::stats ? Real<D>::load(a.x.at(0, c, 0)) : a.mean[c];
  A s1 = 0, s2 = 0;
  std::int64_t m = first + threadIdx.x;
  std::int64_t n = m / a.S, s = m % a.S;
  const std::int64_t step_n = blockDim.x / a.S, step_s = blockDim.x % a.S;
#pragma unroll 4
  for (; m < last; m += blockDim.x) {
    const A v = Real<D>::load(a.x.at(n, c, s)) - shift;
    if constexpr (Kind == SumKind::stats) {
      s1 += v;
      s2 += v * v;
    } else {
      const A d = Real<D>::load(a.dy.at(n, c, s));
      s1 += d;
      s2 += d * v;
    }
    s += step_s;
    n += step_n;
    if (s >= a.S) s -= a.S, ++n;
  }
  block_sum2(s1, s2);
  if (threadIdx.x == 0) {
    A* out = a.partial + (c * gridDim.y + part) * 2;
    out[0] = s1;
    out[1] = s2;
  }
}

template <DType D>
struct FinishArgs {
  const ComputeT<D>* partial;
  int parts;
  std::int64_t C, M;  // M = N*S
  // stats
  NCS<const StorageT<D>> x;
  PerChannel<ComputeT<D>> mean_out, var_out;
  // grad
  PerChannel<const ComputeT<D>> var;
  ComputeT<D> eps;
  PerChannel<StorageT<D>> dgamma, dbeta;
};

template <DType D, SumKind Kind>
__global__ void channel_finish(FinishArgs<D> a) {
  using A = ComputeT<D>;
  for (std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < a.C;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    A s1 = 0, s2 = 0;
    for (int p = 0; p < a.parts; ++p)
      s1 += a.partial[(c * a.parts + p) * 2], s2 += a.partial[(c * a.parts + p) * 2 + 1];
    if constexpr (Kind == SumKind::stats) {
      const A shift = Real<D>::load(a.x.at(0, c, 0)), mean = s1 / A(a.M);
      a.mean_out[c] = shift + mean;
      a.var_out[c] = max(A(0), s2 / A(a.M) - mean * mean);
    } else {
      const A rstd = A(1) / sqrt(a.var[c] + a.eps);
      if (a.dbeta.p) a.dbeta[c] = Real<D>::store(s1);
      if (a.dgamma.p) a.dgamma[c] = Real<D>::store(s2 * rstd);
    }
  }
}

template <DType D, SumKind Kind>
void channel_sums(const Context& ctx, std::string_view what, SumArgs<D> a, FinishArgs<D> f) {
  using A = ComputeT<D>;
  const std::int64_t total = a.N * a.S;
  // About 8 blocks per multiprocessor in all, each with at least 8 elements
  // per thread.
  const std::int64_t wanted = std::max<std::int64_t>(1, 8 * ctx.multiprocessors / std::max<std::int64_t>(f.C, 1));
  const std::int64_t parts =
      std::clamp<std::int64_t>(std::min(wanted, (total + kThreads * 8 - 1) / (kThreads * 8)), 1, 65535);
  a.per_part = (total + parts - 1) / parts;
  a.S = std::max<std::int64_t>(a.S, 1);  // no division by zero when there is nothing to sum
  TempBuffer partial = ctx.temp(std::size_t(f.C * parts * 2) * sizeof(A));
  a.partial = partial.as<A>();
  f.partial = a.partial;
  f.parts = int(parts);
  channel_partial_sums<D, Kind><<<dim3(unsigned(f.C), unsigned(parts)), kThreads, 0, ctx.stream>>>(a);
  XY_CUDA_LAUNCHED(ctx.device, what);
  const int grid = int(std::min<std::int64_t>((f.C + kThreads - 1) / kThreads, 1024));
  channel_finish<D, Kind><<<grid, kThreads, 0, ctx.stream>>>(f);
  XY_CUDA_LAUNCHED(ctx.device, what);
}

template <DType D>
void batch_norm_stats(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_stats>(c);
  const TensorArg& x = args.x;
  const std::int64_t N = x.view.dims()[0], C = x.view.dims()[1], Sp = x.view.dims()[2];
  if (C == 0) return;
  SumArgs<D> a{ncs<const S>(x), {}, {}, N, Sp, 0, nullptr};
  FinishArgs<D> f{};
  f.C = C;
  f.M = N * Sp;
  f.x = a.x;
  f.mean_out = per_channel<A>(args.mean);
  f.var_out = per_channel<A>(args.var);
  channel_sums<D, SumKind::stats>(ctx, "nn::batch_norm_stats", a, f);
}

template <DType D>
void batch_norm_grad_params(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_params>(c);
  const TensorArg& x = args.x;
  const std::int64_t N = x.view.dims()[0], C = x.view.dims()[1], Sp = x.view.dims()[2];
  if (C == 0 || (args.dgamma.data == nullptr && args.dbeta.data == nullptr)) return;
  SumArgs<D> a{ncs<const S>(x), ncs<const S>(args.dy), per_channel<const A>(args.mean), N, Sp, 0, nullptr};
  FinishArgs<D> f{};
  f.C = C;
  f.M = N * Sp;
  f.var = per_channel<const A>(args.var);
  f.eps = A(args.eps);
  f.dgamma = per_channel<S>(args.dgamma);
  f.dbeta = per_channel<S>(args.dbeta);
  channel_sums<D, SumKind::grad>(ctx, "nn::batch_norm_grad_params", a, f);
}

// ---- elementwise: out = a*(x - mean) + b*dy + d per channel -----------------
template <class A>
struct Coef {
  A mean, a, b, d;
};

template <DType D>
struct CoefArgs {
  std::int64_t C, M;
  PerChannel<const ComputeT<D>> mean, var;
  PerChannel<const StorageT<D>> gamma, beta, dgamma, dbeta;
  ComputeT<D> eps;
  int mode;  // 0: apply, 1: grad_input training, 2: grad_input inference
  Coef<ComputeT<D>>* out;
};

template <DType D>
__global__ void channel_coefficients(CoefArgs<D> a) {
  using A = ComputeT<D>;
  for (std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < a.C;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    const A rstd = A(1) / sqrt(a.var[c] + a.eps);
    const A g = a.gamma.p ? Real<D>::load(a.gamma[c]) : A(1);
    Coef<A> k{a.mean[c], 0, 0, 0};
    if (a.mode == 0) {
      k.a = g * rstd;
      k.d = a.beta.p ? Real<D>::load(a.beta[c]) : A(0);
    } else {
      k.b = g * rstd;
      if (a.mode == 1) {
        // gamma*rstd*(dy - dbeta/M - xh*dgamma/M), xh = (x - mean)*rstd
        k.a = -g * rstd * rstd * Real<D>::load(a.dgamma[c]) / A(a.M);
        k.d = -g * rstd * Real<D>::load(a.dbeta[c]) / A(a.M);
      }
    }
    a.out[c] = k;
  }
}

template <DType D>
struct ApplyArgs {
  NCS<const StorageT<D>> x, dy;
  NCS<StorageT<D>> out;
  const Coef<ComputeT<D>>* coef;
  std::int64_t C, S, chunks;
  FastDivider div_s, div_c;  // used when Small
};

// Which of out = a*(x - mean) + b*dy + d's inputs a pass reads: inference's
// gradient does not read x (an Inf in x must not turn dx into NaN).
enum class Inputs { x, x_dy, dy };

// W elements per chunk (W > 1: every tensor dense and aligned, S % W == 0,
// so a chunk lies within one channel's row). Small: every index < 2^31.
template <DType D, int W, Inputs In, bool Small>
__global__ void __launch_bounds__(kThreads) channel_affine(ApplyArgs<D> a) {
  using A = ComputeT<D>;
  using St = StorageT<D>;
  for (std::int64_t q = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < a.chunks;
       q += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t k = q * W;
    std::int64_t s, row, c, n;
    if constexpr (Small) {
      row = a.div_s.div(std::uint32_t(k));
      s = k - row * a.S;
      n = a.div_c.div(std::uint32_t(row));
      c = row - n * a.C;
    } else {
      row = k / a.S;
      s = k - row * a.S;
      n = row / a.C;
      c = row - n * a.C;
    }
    const Coef<A> co = a.coef[c];
    constexpr bool has_x = In != Inputs::dy, has_dy = In != Inputs::x;
    if constexpr (W == 1) {
      A v = co.d;
      if constexpr (has_x) v += co.a * (Real<D>::load(a.x.at(n, c, s)) - co.mean);
      if constexpr (has_dy) v += co.b * Real<D>::load(a.dy.at(n, c, s));
      a.out.at(n, c, s) = Real<D>::store(v);
    } else {
      Pack16<St> x{}, dy{}, y;
      if constexpr (has_x) x = load_pack<true>(a.x.p + k);
      if constexpr (has_dy) dy = load_pack<true>(a.dy.p + k);
#pragma unroll
      for (int e = 0; e < W; ++e) {
        A v = co.d;
        if constexpr (has_x) v += co.a * (Real<D>::load(x.v[e]) - co.mean);
        if constexpr (has_dy) v += co.b * Real<D>::load(dy.v[e]);
        y.v[e] = Real<D>::store(v);
      }
      store_pack(a.out.p + k, y);
    }
  }
}

template <DType D>
void channel_affine_launch(const Context& ctx, std::string_view what, CoefArgs<D> k, const TensorArg& x,
                           const TensorArg* dy, const TensorArg& out) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const std::int64_t N = x.view.dims()[0], C = x.view.dims()[1], Sp = x.view.dims()[2];
  const std::int64_t numel = N * C * Sp;
  if (numel == 0) return;
  TempBuffer coef = ctx.temp(std::size_t(C) * sizeof(Coef<A>));
  k.out = coef.as<Coef<A>>();
  channel_coefficients<D><<<int(std::min<std::int64_t>((C + kThreads - 1) / kThreads, 1024)), kThreads, 0,
                            ctx.stream>>>(k);
  XY_CUDA_LAUNCHED(ctx.device, what);

  ApplyArgs<D> a{ncs<const S>(x), dy ? ncs<const S>(*dy) : NCS<const S>{}, ncs<S>(out), k.out, C, Sp, 0, {}, {}};
  constexpr int V = Pack16<S>::size;
  bool dense = Sp % V == 0 && x.view.is_contiguous() && out.view.is_contiguous() && aligned16(a.x.p) &&
               aligned16(a.out.p);
  if (dy) dense = dense && dy->view.is_contiguous() && aligned16(a.dy.p);
  const bool small = numel < (std::int64_t{1} << 31);
  if (small) a.div_s = FastDivider(std::uint32_t(Sp)), a.div_c = FastDivider(std::uint32_t(C));
  auto run = [&]<int W, Inputs In, bool Small>() {
    a.chunks = numel / W;
    const int grid = int(std::clamp<std::int64_t>((a.chunks + kThreads - 1) / kThreads, 1,
                                                  std::int64_t(ctx.multiprocessors) * 16));
    channel_affine<D, W, In, Small><<<grid, kThreads, 0, ctx.stream>>>(a);
  };
  auto with_inputs = [&]<Inputs In>() {
    if (dense && small) run.template operator()<V, In, true>();
    else if (dense) run.template operator()<V, In, false>();
    else if (small) run.template operator()<1, In, true>();
    else run.template operator()<1, In, false>();
  };
  if (!dy) with_inputs.template operator()<Inputs::x>();
  else if (k.mode == 1) with_inputs.template operator()<Inputs::x_dy>();
  else with_inputs.template operator()<Inputs::dy>();
  XY_CUDA_LAUNCHED(ctx.device, what);
}

template <DType D>
void batch_norm_apply(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_apply>(c);
  CoefArgs<D> k{args.x.view.dims()[1], 0, per_channel<const A>(args.mean), per_channel<const A>(args.var),
                per_channel<const S>(args.gamma), per_channel<const S>(args.beta), {}, {}, A(args.eps), 0, nullptr};
  channel_affine_launch<D>(ctx, "nn::batch_norm_apply", k, args.x, nullptr, args.y);
}

template <DType D>
void batch_norm_grad_input(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_input>(c);
  const auto dims = args.x.view.dims();
  CoefArgs<D> k{dims[1], dims[0] * dims[2], per_channel<const A>(args.mean), per_channel<const A>(args.var),
                per_channel<const S>(args.gamma), {}, per_channel<const S>(args.dgamma),
                per_channel<const S>(args.dbeta), A(args.eps), args.training != 0 ? 1 : 2, nullptr};
  channel_affine_launch<D>(ctx, "nn::batch_norm_grad_input", k, args.x, &args.dy, args.dx);
}

}  // namespace

void register_batch_norm(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(OpId::nn_batch_norm_stats, D, &batch_norm_stats<D>);
    table.set(OpId::nn_batch_norm_apply, D, &batch_norm_apply<D>);
    table.set(OpId::nn_batch_norm_grad_params, D, &batch_norm_grad_params<D>);
    table.set(OpId::nn_batch_norm_grad_input, D, &batch_norm_grad_input<D>);
  });
}

}  // namespace xylem::cuda
