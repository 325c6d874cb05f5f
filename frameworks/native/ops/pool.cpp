// Native 2-D max and average pooling (NCHW) and their gradients, for every
// float dtype. Each (image, channel) plane is independent, so planes are
// spread over oneTBB; within a plane, only the real (unpadded) part of each
// window is visited. The gradients scatter into a plane that only their own
// task writes: no races, no atomics.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/dense.hpp"
#include "frameworks/native/ops/im2col.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;

struct PoolGeometry {
  std::int64_t planes, h, w, p, q;
  std::int64_t win_h, win_w, stride_h, stride_w, pad_h, pad_w;
  bool count_padding;  // avg: divide by the whole window

  [[nodiscard]] std::int64_t hw() const noexcept { return h * w; }
  [[nodiscard]] std::int64_t pq() const noexcept { return p * q; }
  // The window as a one-channel convolution's filter taps (im2col.hpp).
  [[nodiscard]] ConvGeometry as_conv() const noexcept {
    return {1, 1, h, w, 1, win_h, win_w, p, q, stride_h, stride_w, pad_h, pad_w, 1, 1, 1};
  }
};

// x [N, C, H, W] and y [N, C, P, Q] dims; the window from the op's args
// (every pooling op has the same window fields; the averages also say what
// they divide by).
template <class Pool>
PoolGeometry pool_geometry(std::span<const std::int64_t> x, std::span<const std::int64_t> y, const Pool& p) {
  bool count_include_pad = false;
  if constexpr (requires { p.count_include_pad; }) count_include_pad = p.count_include_pad != 0;
  return {x[0] * x[1], x[2], x[3], y[2], y[3], p.window_h, p.window_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w,
          count_include_pad};
}

// The real part of window (op, oq): rows [h0, h1), columns [w0, w1).
struct Window {
  std::int64_t h0, h1, w0, w1;
};
Window window(const PoolGeometry& g, std::int64_t op, std::int64_t oq) noexcept {
  const std::int64_t hs = op * g.stride_h - g.pad_h, ws = oq * g.stride_w - g.pad_w;
  return {std::max<std::int64_t>(hs, 0), std::min(hs + g.win_h, g.h), std::max<std::int64_t>(ws, 0),
          std::min(ws + g.win_w, g.w)};
}

// Planes per parallel chunk: about 16K elements.
[[nodiscard]] std::int64_t plane_grain(const PoolGeometry& g) noexcept {
  return std::max<std::int64_t>(1, (16 * 1024) / std::max<std::int64_t>(1, g.hw() + g.pq()));
}

// Runs plane(index) for every plane, in parallel chunks.
template <class Plane>
void for_each_plane(const PoolGeometry& g, Plane&& plane) {
  parallel_chunks(g.planes, plane_grain(g), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) plane(i);
  });
}

template <class T>
T divisor(const PoolGeometry& g, const Window& win) noexcept {
  return T(g.count_padding ? g.win_h * g.win_w : (win.h1 - win.h0) * (win.w1 - win.w0));
}

// Calls tap(start, q_lo, q_hi, index) for each filter tap of output row op
// that reads real input, in row-major window order (index: the tap's place
// in that order, padding counted): columns q_lo..q_hi-1 of the row read
// plane elements start + (oq - q_lo) * stride_w. Each output row
// is then updated by whole rows of taps, a loop over q that vectorises,
// instead of a short loop per window; the row stays in L1 meanwhile.
template <class Tap>
void for_each_tap(const PoolGeometry& g, std::int64_t op, Tap&& tap) {
  const ConvGeometry taps = g.as_conv();
  for (std::int64_t r = 0; r < g.win_h; ++r) {
    const std::int64_t ih = conv_detail::tap_row(taps, op, r);
    if (ih < 0) continue;
    for (std::int64_t s = 0; s < g.win_w; ++s) {
      const auto cols = conv_detail::tap_columns(taps, s);
      tap(ih * g.w + cols.iw_lo, cols.q_lo, cols.q_hi, std::int32_t(r * g.win_w + s));
    }
  }
}

// y = pick(y, v) for every real element v of each window, tap by tap.
template <class T, class Pick>
void over_taps(const PoolGeometry& g, const T* x, T* y, Pick&& pick) {
  for (std::int64_t op = 0; op < g.p; ++op) {
    T* out = y + op * g.q;
    for_each_tap(g, op, [&](std::int64_t start, std::int64_t q_lo, std::int64_t q_hi, std::int32_t) {
      const T* in = x + start;
      for (std::int64_t oq = q_lo; oq < q_hi; ++oq) out[oq] = pick(out[oq], in[(oq - q_lo) * g.stride_w]);
    });
  }
}

// t0=x, t1=y.
template <DType D>
void max_pool2d_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_max_pool2d>(call);
  using T = ComputeType<D>;
  const auto g = pool_geometry(args.x.view.dims(), args.y.view.dims(), args);
  if (args.y.view.numel() == 0) return;
  const DenseIn<D> x(args.x);
  const DenseOut<D> y(args.y);
  for_each_plane(g, [&](std::int64_t i) {
    T* yp = y.data() + i * g.pq();
    std::fill(yp, yp + g.pq(), -std::numeric_limits<T>::infinity());
    // A NaN, once there, stays (v > NaN is false); a NaN v replaces.
    over_taps(g, x.data() + i * g.hw(), yp, [](T m, T v) { return v > m || v != v ? v : m; });
  });
  y.commit();
}

// v where keep, else +0, without a branch (compilers branch on `keep ? v :
// 0` in a loop they cannot vectorise; on random data it mispredicts).
template <class T>
[[nodiscard]] T kept_if(bool keep, T v) noexcept {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  return std::bit_cast<T>(std::bit_cast<Bits>(v) & (Bits(0) - Bits(keep)));
}

// t0=x, t1=dy, t2=dx. Each output row's winners (the first maximum of each
// window in row-major order; a NaN counts as the maximum, so the first NaN
// wins) are found tap by tap, as the forward pass finds the maxima, then dy
// is added tap by tap where the tap won. Both loops are free of branches:
// a scan per window, branching on every comparison of random data, took
// 3-8x as long on VGG-A's and AlexNet's pooling layers.
template <DType D>
void max_pool2d_grad_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_max_pool2d_grad>(call);
  using T = ComputeType<D>;
  const auto g = pool_geometry(args.x.view.dims(), args.dy.view.dims(), args);
  if (args.dx.view.numel() == 0) return;
  const DenseIn<D> x(args.x), dy(args.dy);
  const DenseOut<D> dx(args.dx);
  parallel_chunks(g.planes, plane_grain(g), [&](std::int64_t b, std::int64_t e) {
    std::vector<T> best(std::size_t(g.q));
    std::vector<std::int32_t> winner(std::size_t(g.q));  // the winning tap's index; -1: none yet
    for (std::int64_t i = b; i < e; ++i) {
      const T* xp = x.data() + i * g.hw();
      const T* dyp = dy.data() + i * g.pq();
      T* dxp = dx.data() + i * g.hw();
      std::fill(dxp, dxp + g.hw(), T(0));
      for (std::int64_t op = 0; op < g.p; ++op) {
        T* m = best.data();
        std::int32_t* w = winner.data();
        std::fill(w, w + g.q, -1);
        for_each_tap(g, op, [&](std::int64_t start, std::int64_t q_lo, std::int64_t q_hi, std::int32_t tap) {
          const T* in = xp + start;
          for (std::int64_t oq = q_lo; oq < q_hi; ++oq) {
            const T v = in[(oq - q_lo) * g.stride_w];
            const bool take = (w[oq] < 0) | ((m[oq] == m[oq]) & ((v > m[oq]) | (v != v)));
            m[oq] = take ? v : m[oq];
            w[oq] = take ? tap : w[oq];
          }
        });
        const T* d = dyp + op * g.q;
        for_each_tap(g, op, [&](std::int64_t start, std::int64_t q_lo, std::int64_t q_hi, std::int32_t tap) {
          T* out = dxp + start;
          for (std::int64_t oq = q_lo; oq < q_hi; ++oq) out[(oq - q_lo) * g.stride_w] += kept_if(w[oq] == tap, d[oq]);
        });
      }
    }
  });
  dx.commit();
}

// t0=x, t1=y.
template <DType D>
void avg_pool2d_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_avg_pool2d>(call);
  using T = ComputeType<D>;
  const auto g = pool_geometry(args.x.view.dims(), args.y.view.dims(), args);
  if (args.y.view.numel() == 0) return;
  const DenseIn<D> x(args.x);
  const DenseOut<D> y(args.y);
  for_each_plane(g, [&](std::int64_t i) {
    T* yp = y.data() + i * g.pq();
    std::fill(yp, yp + g.pq(), T(0));
    over_taps(g, x.data() + i * g.hw(), yp, [](T sum, T v) { return sum + v; });
    for (std::int64_t op = 0; op < g.p; ++op)
      for (std::int64_t oq = 0; oq < g.q; ++oq) yp[op * g.q + oq] /= divisor<T>(g, window(g, op, oq));
  });
  y.commit();
}

// t0=dy, t1=dx: each window's dy/divisor added to its real elements, tap by
// tap as the forward pass.
template <DType D>
void avg_pool2d_grad_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_avg_pool2d_grad>(call);
  using T = ComputeType<D>;
  const auto g = pool_geometry(args.dx.view.dims(), args.dy.view.dims(), args);
  if (args.dx.view.numel() == 0) return;
  const DenseIn<D> dy(args.dy);
  const DenseOut<D> dx(args.dx);
  parallel_chunks(g.planes, plane_grain(g), [&](std::int64_t b, std::int64_t e) {
    std::vector<T> share(std::size_t(g.pq()));
    for (std::int64_t i = b; i < e; ++i) {
      const T* dyp = dy.data() + i * g.pq();
      T* dxp = dx.data() + i * g.hw();
      for (std::int64_t op = 0; op < g.p; ++op)
        for (std::int64_t oq = 0; oq < g.q; ++oq)
          share[std::size_t(op * g.q + oq)] = dyp[op * g.q + oq] / divisor<T>(g, window(g, op, oq));
      std::fill(dxp, dxp + g.hw(), T(0));
      for (std::int64_t op = 0; op < g.p; ++op) {
        const T* in = share.data() + op * g.q;
        for_each_tap(g, op, [&](std::int64_t start, std::int64_t q_lo, std::int64_t q_hi, std::int32_t) {
          T* out = dxp + start;
          for (std::int64_t oq = q_lo; oq < q_hi; ++oq) out[(oq - q_lo) * g.stride_w] += in[oq];
        });
      }
    }
  });
  dx.commit();
}

}  // namespace

void register_pool(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType d = decltype(dtype)::value;
    table.set(OpId::nn_max_pool2d, d, &max_pool2d_kernel<d>);
    table.set(OpId::nn_max_pool2d_grad, d, &max_pool2d_grad_kernel<d>);
    table.set(OpId::nn_avg_pool2d, d, &avg_pool2d_kernel<d>);
    table.set(OpId::nn_avg_pool2d_grad, d, &avg_pool2d_grad_kernel<d>);
  });
}

}  // namespace xylem::native
