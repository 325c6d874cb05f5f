// nn::max_pool2d, nn::avg_pool2d and their gradients (conventions in
// plugin.hpp). Our own kernels rather than cuDNN's: the conventions fix the
// tie, NaN and padding rules, which cuDNN does not promise.
//
// Forward: one thread per output. Gradients gather rather than scatter: one
// thread per input element sums the outputs whose windows hold it, in a
// fixed order, so no atomics and no rounding of partial sums to f16/bf16.
// max_pool2d_grad first records each window's winner (its first maximum,
// a NaN beating any number) in temporary memory.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "nchw.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kThreads = 256;

struct Window {
  std::int64_t kh, kw, sh, sw, ph, pw;
  std::int64_t H, W, P, Q;  // input and output spatial sizes
};

// Args: any pooling op's, which share the window geometry.
template <class Args>
Window window_of(const Args& a, const TensorArg& input, const TensorArg& output) {
  return {a.window_h, a.window_w, a.stride_h, a.stride_w, a.pad_h, a.pad_w,
          input.view.dims()[2], input.view.dims()[3], output.view.dims()[2], output.view.dims()[3]};
}

// The outputs along one axis whose windows hold input position h:
// p*stride - pad <= h < p*stride - pad + k, clipped to [0, P). The
// divisions are 32-bit where every size fits (`Small`): a 64-bit division
// costs dozens of instructions, and the gradients do four per element.
template <bool Small>
__device__ __forceinline__ void covering(std::int64_t h, std::int64_t k, std::int64_t stride, std::int64_t pad,
                                         std::int64_t P, std::int64_t& first, std::int64_t& last) {
  using I = std::conditional_t<Small, std::int32_t, std::int64_t>;
  const I lo = I(h + pad - k + 1);  // p*stride >= lo
  first = lo <= 0 ? 0 : (lo + I(stride) - 1) / I(stride);
  last = std::min(P - 1, std::int64_t(I(h + pad) / I(stride)));
}

// Whether every position and size of a pooling fits the 32-bit divisions
// of covering().
[[nodiscard]] bool small_window(const Window& w) {
  const std::int64_t most = std::max({w.H + w.ph + w.kh, w.W + w.pw + w.kw, w.sh, w.sw});
  return most < (std::int64_t{1} << 31);
}

// ---- max ------------------------------------------------------------------
// Whether v takes the window's lead from `best` (none yet where `where` < 0):
// the first maximum in row-major order wins, a NaN beating any number.
template <class A>
__device__ __forceinline__ bool beats(A v, A best, int where) {
  return where < 0 || (!isnan(best) && (isnan(v) || v > best));
}

// Window (n, c, p, q)'s first maximum in row-major order, NaN the maximum:
// its value and its position r*kw + s within the window.
template <DType D>
__device__ __forceinline__ void window_max(const View4<const StorageT<D>>& x, const Window& w, std::int64_t n,
                                           std::int64_t c, std::int64_t p, std::int64_t q, ComputeT<D>& best,
                                           int& where) {
  using A = ComputeT<D>;
  best = A(-INFINITY);
  where = -1;
  const std::int64_t h0 = p * w.sh - w.ph, w0 = q * w.sw - w.pw;
  for (std::int64_t r = std::max<std::int64_t>(0, -h0); r < w.kh && h0 + r < w.H; ++r)
    for (std::int64_t s = std::max<std::int64_t>(0, -w0); s < w.kw && w0 + s < w.W; ++s) {
      const A v = Real<D>::load(x.at(n, c, h0 + r, w0 + s));
      if (beats(v, best, where)) best = v, where = int(r * w.kw + s);
    }
}

template <DType D>
__global__ void __launch_bounds__(kThreads) max_pool_forward(View4<const StorageT<D>> x, View4<StorageT<D>> y,
                                                             Window w, Split4 split, std::int64_t total) {
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 o = split(k);
    ComputeT<D> best;
    int where;
    window_max<D>(x, w, o.i0, o.i1, o.i2, o.i3, best, where);
    y.at(o.i0, o.i1, o.i2, o.i3) = Real<D>::store(best);
  }
}

// winners[k]: window position of output k's first maximum (k row-major over [N, C, P, Q]).
template <DType D>
__global__ void __launch_bounds__(kThreads) max_pool_winners(View4<const StorageT<D>> x, int* winners, Window w,
                                                             Split4 split, std::int64_t total) {
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 o = split(k);
    ComputeT<D> best;
    window_max<D>(x, w, o.i0, o.i1, o.i2, o.i3, best, winners[k]);
  }
}

template <DType D, bool Small>
__global__ void __launch_bounds__(kThreads) max_pool_backward(View4<const StorageT<D>> dy, const int* winners,
                                                              View4<StorageT<D>> dx, Window w, std::int64_t C,
                                                              Split4 split, std::int64_t total) {
  using A = ComputeT<D>;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 i = split(k);
    std::int64_t p0, p1, q0, q1;
    covering<Small>(i.i2, w.kh, w.sh, w.ph, w.P, p0, p1);
    covering<Small>(i.i3, w.kw, w.sw, w.pw, w.Q, q0, q1);
    A sum = 0;
    for (std::int64_t p = p0; p <= p1; ++p)
      for (std::int64_t q = q0; q <= q1; ++q) {
        const int here = int((i.i2 - (p * w.sh - w.ph)) * w.kw + (i.i3 - (q * w.sw - w.pw)));
        if (winners[((i.i0 * C + i.i1) * w.P + p) * w.Q + q] == here) sum += Real<D>::load(dy.at(i.i0, i.i1, p, q));
      }
    dx.at(i.i0, i.i1, i.i2, i.i3) = Real<D>::store(sum);
  }
}

// ---- max, contiguous tensors below 2^31 elements --------------------------
// The general windows (AlexNet's overlapping 3x3, stride 2) on contiguous
// NCHW tensors, with 32-bit index arithmetic and one multiply-shift division
// per coordinate: the strided kernels above spend most of their time in
// 64-bit index arithmetic (on the H100, 2-4x their memory bound).
struct Compact {
  int H, W, P, Q, kh, kw, sh, sw, ph, pw;
  FastDivider by_pq, by_q, by_hw, by_w;
};

[[nodiscard]] bool compact(const TensorArg& x, const TensorArg& y) {
  return x.view.is_contiguous() && y.view.is_contiguous() && x.view.numel() < (std::int64_t{1} << 31) &&
         y.view.numel() < (std::int64_t{1} << 31);
}

[[nodiscard]] Compact compact_of(const Window& w) {
  const auto u = [](std::int64_t v) { return std::uint32_t(v); };
  return {int(w.H), int(w.W), int(w.P), int(w.Q), int(w.kh), int(w.kw), int(w.sh), int(w.sw), int(w.ph), int(w.pw),
          FastDivider(u(w.P * w.Q)), FastDivider(u(w.Q)), FastDivider(u(w.H * w.W)), FastDivider(u(w.W))};
}

// Output k's window maximum: its value into y, or with Winners its position
// within the window into winners (max_pool2d_grad's first pass).
template <DType D, bool Winners>
__global__ void __launch_bounds__(kThreads) max_pool_compact(const StorageT<D>* x, StorageT<D>* y, int* winners,
                                                             Compact g, int total) {
  using A = ComputeT<D>;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < total; k += gridDim.x * blockDim.x) {
    const int plane = int(g.by_pq.div(std::uint32_t(k))), rem = k - plane * g.P * g.Q;
    const int p = int(g.by_q.div(std::uint32_t(rem))), q = rem - p * g.Q;
    const int h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
    const StorageT<D>* xp = x + plane * g.H * g.W;
    A best = A(-INFINITY);
    int where = -1;
    for (int r = max(0, -h0); r < g.kh && h0 + r < g.H; ++r)
      for (int s = max(0, -w0); s < g.kw && w0 + s < g.W; ++s) {
        const A v = Real<D>::load(xp[(h0 + r) * g.W + w0 + s]);
        if (beats(v, best, where)) best = v, where = r * g.kw + s;
      }
    if constexpr (Winners)
      winners[k] = where;
    else
      y[k] = Real<D>::store(best);
  }
}

// Input k's gradient: the sum of the gradients of the windows it won.
template <DType D>
__global__ void __launch_bounds__(kThreads) max_pool_compact_backward(const StorageT<D>* dy, const int* winners,
                                                                      StorageT<D>* dx, Compact g, int total) {
  using A = ComputeT<D>;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < total; k += gridDim.x * blockDim.x) {
    const int plane = int(g.by_hw.div(std::uint32_t(k))), rem = k - plane * g.H * g.W;
    const int h = int(g.by_w.div(std::uint32_t(rem))), w = rem - h * g.W;
    std::int64_t p0, p1, q0, q1;
    covering<true>(h, g.kh, g.sh, g.ph, g.P, p0, p1);
    covering<true>(w, g.kw, g.sw, g.pw, g.Q, q0, q1);
    const int out0 = plane * g.P * g.Q;
    A sum = 0;
    for (int p = int(p0); p <= int(p1); ++p)
      for (int q = int(q0); q <= int(q1); ++q) {
        const int o = out0 + p * g.Q + q;
        if (winners[o] == (h - (p * g.sh - g.ph)) * g.kw + (w - (q * g.sw - g.pw))) sum += Real<D>::load(dy[o]);
      }
    dx[k] = Real<D>::store(sum);
  }
}

// ---- max, windows that tile the input -------------------------------------
// Stride equal to the window, no padding, the windows covering the input
// exactly, contiguous NCHW tensors: VGG's and Overfeat's 2x2 pools. One
// thread per window reads its inputs once. The gradient needs no winners
// buffer and no gather: each input lies in exactly one window, whose thread
// writes it (the window's gradient at its first maximum, zero elsewhere).
// Index arithmetic is 32-bit below 2^31 elements, by FastDivider.
struct Tiling {
  std::int64_t W, Q, kh, kw;  // input row length, output row length, window
};

[[nodiscard]] bool tiles_exactly(const Window& w, const TensorArg& x, const TensorArg& y) {
  return w.ph == 0 && w.pw == 0 && w.sh == w.kh && w.sw == w.kw && w.H == w.P * w.kh && w.W == w.Q * w.kw &&
         x.view.is_contiguous() && y.view.is_contiguous();
}

// Output k's window: its first input's offset.
template <class I>
__device__ __forceinline__ I tile_base(I k, const Tiling& t, FastDivider by_q) {
  const I row = sizeof(I) == 4 ? I(by_q.div(std::uint32_t(k))) : k / I(t.Q);  // (n, c, p) flattened
  return row * I(t.kh) * I(t.W) + (k - row * I(t.Q)) * I(t.kw);
}

// The window's first maximum (NaN the maximum) from its first input, as window_max.
template <DType D, class I>
__device__ __forceinline__ int tile_max(const StorageT<D>* x, I base, const Tiling& t, ComputeT<D>& best) {
  using A = ComputeT<D>;
  best = A(-INFINITY);
  int where = -1;
  for (int r = 0; r < int(t.kh); ++r)
    for (int s = 0; s < int(t.kw); ++s) {
      const A v = Real<D>::load(x[base + I(r) * I(t.W) + I(s)]);
      if (beats(v, best, where)) best = v, where = r * int(t.kw) + s;
    }
  return where;
}

template <DType D, class I>
__global__ void __launch_bounds__(kThreads) max_pool_tiled_forward(const StorageT<D>* x, StorageT<D>* y, Tiling t,
                                                                   FastDivider by_q, I total) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x) {
    ComputeT<D> best;
    (void)tile_max<D>(x, tile_base(k, t, by_q), t, best);
    y[k] = Real<D>::store(best);
  }
}

template <DType D, class I>
__global__ void __launch_bounds__(kThreads) max_pool_tiled_backward(const StorageT<D>* x, const StorageT<D>* dy,
                                                                    StorageT<D>* dx, Tiling t, FastDivider by_q,
                                                                    I total) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x) {
    const I base = tile_base(k, t, by_q);
    ComputeT<D> best;
    const int where = tile_max<D>(x, base, t, best);
    const StorageT<D> g = dy[k], zero = Real<D>::store(ComputeT<D>(0));
    for (int r = 0; r < int(t.kh); ++r)
      for (int s = 0; s < int(t.kw); ++s) dx[base + I(r) * I(t.W) + I(s)] = r * int(t.kw) + s == where ? g : zero;
  }
}

// Launches the tiled kernel with 32-bit indices where the input allows.
template <class Launch>
void launch_tiled(const Window& w, std::int64_t inputs, std::int64_t outputs, const Context& ctx, Launch launch) {
  const Tiling t{w.W, w.Q, w.kh, w.kw};
  const int grid = grid_over(outputs, kThreads, ctx);
  if (inputs < (std::int64_t{1} << 31))
    launch(grid, t, FastDivider(std::uint32_t(w.Q)), std::int32_t(outputs));
  else
    launch(grid, t, FastDivider(), outputs);
}

template <DType D>
void max_pool2d(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  const auto args = plugin::unpack<plugin::args::nn_max_pool2d>(c);
  const TensorArg &x = args.x, &y = args.y;
  const std::int64_t total = y.view.numel();
  if (total == 0) return;
  const Window w = window_of(args, x, y);
  if (tiles_exactly(w, x, y)) {
    launch_tiled(w, x.view.numel(), total, ctx, [&](int grid, const Tiling& t, FastDivider by_q, auto n) {
      max_pool_tiled_forward<D><<<grid, kThreads, 0, ctx.stream>>>(element_ptr<const S>(x), element_ptr<S>(y), t,
                                                                   by_q, n);
    });
  } else if (compact(x, y)) {
    max_pool_compact<D, false><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
        element_ptr<const S>(x), element_ptr<S>(y), nullptr, compact_of(w), int(total));
  } else {
    max_pool_forward<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
        view4<const S>(x), view4<S>(y), w, Split4(y.view.dims(), total), total);
  }
  XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d");
}

template <DType D>
void max_pool2d_grad(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  const auto args = plugin::unpack<plugin::args::nn_max_pool2d_grad>(c);
  const TensorArg &x = args.x, &dy = args.dy, &dx = args.dx;
  const std::int64_t outputs = dy.view.numel(), inputs = dx.view.numel();
  if (inputs == 0) return;
  const Window w = window_of(args, x, dy);
  if (tiles_exactly(w, x, dy) && dx.view.is_contiguous()) {
    launch_tiled(w, inputs, outputs, ctx, [&](int grid, const Tiling& t, FastDivider by_q, auto n) {
      max_pool_tiled_backward<D><<<grid, kThreads, 0, ctx.stream>>>(
          element_ptr<const S>(x), element_ptr<const S>(dy), element_ptr<S>(dx), t, by_q, n);
    });
    XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d_grad");
    return;
  }
  TempBuffer winners = ctx.temp(std::size_t(std::max<std::int64_t>(outputs, 1)) * sizeof(int));
  if (compact(x, dy) && dx.view.is_contiguous()) {
    const Compact g = compact_of(w);
    if (outputs > 0) {
      max_pool_compact<D, true><<<grid_over(outputs, kThreads, ctx), kThreads, 0, ctx.stream>>>(
          element_ptr<const S>(x), nullptr, winners.as<int>(), g, int(outputs));
      XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d_grad");
    }
    max_pool_compact_backward<D><<<grid_over(inputs, kThreads, ctx), kThreads, 0, ctx.stream>>>(
        element_ptr<const S>(dy), winners.as<int>(), element_ptr<S>(dx), g, int(inputs));
    XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d_grad");
    return;
  }
  if (outputs > 0) {
    max_pool_winners<D><<<grid_over(outputs, kThreads, ctx), kThreads, 0, ctx.stream>>>(
        view4<const S>(x), winners.as<int>(), w, Split4(dy.view.dims(), outputs), outputs);
    XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d_grad");
  }
  const auto backward = small_window(w) ? &max_pool_backward<D, true> : &max_pool_backward<D, false>;
  backward<<<grid_over(inputs, kThreads, ctx), kThreads, 0, ctx.stream>>>(
      view4<const S>(dy), winners.as<int>(), view4<S>(dx), w, dx.view.dims()[1], Split4(dx.view.dims(), inputs),
      inputs);
  XY_CUDA_LAUNCHED(ctx.device, "nn::max_pool2d_grad");
}

// ---- average --------------------------------------------------------------
// The divisor of window (p, q): the whole window, or its real elements.
__device__ __forceinline__ std::int64_t window_count(const Window& w, std::int64_t p, std::int64_t q,
                                                     bool count_padding) {
  if (count_padding) return w.kh * w.kw;
  const std::int64_t h0 = p * w.sh - w.ph, w0 = q * w.sw - w.pw;
  const std::int64_t rows = std::min(h0 + w.kh, w.H) - std::max<std::int64_t>(h0, 0);
  const std::int64_t cols = std::min(w0 + w.kw, w.W) - std::max<std::int64_t>(w0, 0);
  return rows * cols;
}

template <DType D>
__global__ void __launch_bounds__(kThreads) avg_pool_forward(View4<const StorageT<D>> x, View4<StorageT<D>> y,
                                                             Window w, bool count_padding, Split4 split,
                                                             std::int64_t total) {
  using A = ComputeT<D>;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 o = split(k);
    const std::int64_t h0 = o.i2 * w.sh - w.ph, w0 = o.i3 * w.sw - w.pw;
    A sum = 0;
    for (std::int64_t r = std::max<std::int64_t>(0, -h0); r < w.kh && h0 + r < w.H; ++r)
      for (std::int64_t s = std::max<std::int64_t>(0, -w0); s < w.kw && w0 + s < w.W; ++s)
        sum += Real<D>::load(x.at(o.i0, o.i1, h0 + r, w0 + s));
    y.at(o.i0, o.i1, o.i2, o.i3) = Real<D>::store(sum / A(window_count(w, o.i2, o.i3, count_padding)));
  }
}

template <DType D, bool Small>
__global__ void __launch_bounds__(kThreads) avg_pool_backward(View4<const StorageT<D>> dy, View4<StorageT<D>> dx,
                                                              Window w, bool count_padding, Split4 split,
                                                              std::int64_t total) {
  using A = ComputeT<D>;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 i = split(k);
    std::int64_t p0, p1, q0, q1;
    covering<Small>(i.i2, w.kh, w.sh, w.ph, w.P, p0, p1);
    covering<Small>(i.i3, w.kw, w.sw, w.pw, w.Q, q0, q1);
    A sum = 0;
    for (std::int64_t p = p0; p <= p1; ++p)
      for (std::int64_t q = q0; q <= q1; ++q)
        sum += Real<D>::load(dy.at(i.i0, i.i1, p, q)) / A(window_count(w, p, q, count_padding));
    dx.at(i.i0, i.i1, i.i2, i.i3) = Real<D>::store(sum);
  }
}

template <DType D>
void avg_pool2d(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  const auto args = plugin::unpack<plugin::args::nn_avg_pool2d>(c);
  const TensorArg &x = args.x, &y = args.y;
  const std::int64_t total = y.view.numel();
  if (total == 0) return;
  avg_pool_forward<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
      view4<const S>(x), view4<S>(y), window_of(args, x, y), args.count_include_pad != 0, Split4(y.view.dims(), total),
      total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::avg_pool2d");
}

template <DType D>
void avg_pool2d_grad(const OpCall& c, const Context& ctx) {
  using S = StorageT<D>;
  const auto args = plugin::unpack<plugin::args::nn_avg_pool2d_grad>(c);
  const TensorArg &dy = args.dy, &dx = args.dx;
  const std::int64_t total = dx.view.numel();
  if (total == 0) return;
  const Window w = window_of(args, dx, dy);
  const auto backward = small_window(w) ? &avg_pool_backward<D, true> : &avg_pool_backward<D, false>;
  backward<<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(
      view4<const S>(dy), view4<S>(dx), w, args.count_include_pad != 0, Split4(dx.view.dims(), total), total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::avg_pool2d_grad");
}

}  // namespace

void register_pool(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(OpId::nn_max_pool2d, D, &max_pool2d<D>);
    table.set(OpId::nn_max_pool2d_grad, D, &max_pool2d_grad<D>);
    table.set(OpId::nn_avg_pool2d, D, &avg_pool2d<D>);
    table.set(OpId::nn_avg_pool2d_grad, D, &avg_pool2d_grad<D>);
  });
}

}  // namespace xylem::cuda
