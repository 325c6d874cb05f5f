// Native 2-D max and average pooling (NCHW) and their gradients, for every
// float dtype. Each (image, channel) plane is independent, so planes are
// spread over oneTBB; within a plane, only the real (unpadded) part of each
// window is visited. The gradients scatter into a plane that only their own
// task writes: no races, no atomics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
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

// Runs plane(index) for every plane, in parallel chunks of about 16K elements.
template <class Plane>
void for_each_plane(const PoolGeometry& g, Plane&& plane) {
  parallel_chunks(g.planes, std::max<std::int64_t>(1, (16 * 1024) / std::max<std::int64_t>(1, g.hw() + g.pq())),
                  [&](std::int64_t b, std::int64_t e) {
                    for (std::int64_t i = b; i < e; ++i) plane(i);
                  });
}

// The offset in the plane of the first maximum of a window, row-major; a
// NaN counts as the maximum (so the first NaN wins and propagates).
template <class T>
std::int64_t argmax(const PoolGeometry& g, const T* x, const Window& win) noexcept {
  std::int64_t best = win.h0 * g.w + win.w0;
  T best_v = x[best];
  for (std::int64_t ih = win.h0; ih < win.h1; ++ih) {
    for (std::int64_t iw = win.w0; iw < win.w1; ++iw) {
      const T v = x[ih * g.w + iw];
      if (std::isnan(best_v)) return best;
      if (v > best_v || std::isnan(v)) best = ih * g.w + iw, best_v = v;
    }
  }
  return best;
}

template <class T>
T divisor(const PoolGeometry& g, const Window& win) noexcept {
  return T(g.count_padding ? g.win_h * g.win_w : (win.h1 - win.h0) * (win.w1 - win.w0));
}

// y = pick(y, v) for every real element v of each window, tap by tap in
// row-major window order. Each output row is updated by whole rows of taps,
// a loop over q that vectorises, instead of a short loop per window; the
// row stays in L1 meanwhile.
template <class T, class Pick>
void over_taps(const PoolGeometry& g, const T* x, T* y, Pick&& pick) {
  const ConvGeometry taps = g.as_conv();
  for (std::int64_t op = 0; op < g.p; ++op) {
    T* out = y + op * g.q;
    for (std::int64_t r = 0; r < g.win_h; ++r) {
      const std::int64_t ih = conv_detail::tap_row(taps, op, r);
      if (ih < 0) continue;
      for (std::int64_t s = 0; s < g.win_w; ++s) {
        const auto cols = conv_detail::tap_columns(taps, s);
        const T* in = x + ih * g.w + cols.iw_lo;
        for (std::int64_t oq = cols.q_lo; oq < cols.q_hi; ++oq)
          out[oq] = pick(out[oq], in[(oq - cols.q_lo) * g.stride_w]);
      }
    }
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

// t0=x, t1=dy, t2=dx.
template <DType D>
void max_pool2d_grad_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_max_pool2d_grad>(call);
  using T = ComputeType<D>;
  const auto g = pool_geometry(args.x.view.dims(), args.dy.view.dims(), args);
  if (args.dx.view.numel() == 0) return;
  const DenseIn<D> x(args.x), dy(args.dy);
  const DenseOut<D> dx(args.dx);
  for_each_plane(g, [&](std::int64_t i) {
    const T* xp = x.data() + i * g.hw();
    const T* dyp = dy.data() + i * g.pq();
    T* dxp = dx.data() + i * g.hw();
    std::fill(dxp, dxp + g.hw(), T(0));
    for (std::int64_t op = 0; op < g.p; ++op)
      for (std::int64_t oq = 0; oq < g.q; ++oq) dxp[argmax(g, xp, window(g, op, oq))] += dyp[op * g.q + oq];
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
  const ConvGeometry taps = g.as_conv();
  parallel_chunks(g.planes, std::max<std::int64_t>(1, (16 * 1024) / std::max<std::int64_t>(1, g.hw() + g.pq())),
                  [&](std::int64_t b, std::int64_t e) {
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
                        for (std::int64_t r = 0; r < g.win_h; ++r) {
                          const std::int64_t ih = conv_detail::tap_row(taps, op, r);
                          if (ih < 0) continue;
                          for (std::int64_t s = 0; s < g.win_w; ++s) {
                            const auto cols = conv_detail::tap_columns(taps, s);
                            T* out = dxp + ih * g.w + cols.iw_lo;
                            for (std::int64_t oq = cols.q_lo; oq < cols.q_hi; ++oq)
                              out[(oq - cols.q_lo) * g.stride_w] += in[oq];
                          }
                        }
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
