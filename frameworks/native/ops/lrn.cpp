// Native local response normalisation across channels (NCHW, spatial dims
// flattened) and its gradient, for every float dtype:
//   scale[c] = k + alpha/size * sum_{c' in [c - (size-1)/2, c + size/2]} x[c']^2
//   y[c]     = x[c] * scale[c]^-beta
// Work items are (image, block of pixels): a block holds every channel of
// kPixels neighbouring pixels, so each channel-window sum is a short loop of
// vectorisable rows, and blocks are independent.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "frameworks/native/ops/dense.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;

constexpr std::int64_t kPixels = 256;

struct LrnGeometry {
  std::int64_t n, c, hw;
  std::int64_t size;
  double alpha, beta, k;
  // The window of channel c is [c - before, c + after].
  [[nodiscard]] std::int64_t before() const noexcept { return (size - 1) / 2; }
  [[nodiscard]] std::int64_t after() const noexcept { return size / 2; }
  [[nodiscard]] std::int64_t blocks() const noexcept { return (hw + kPixels - 1) / kPixels; }
};

// lrn and lrn_grad share x and the window's size, alpha, beta and k.
template <class Lrn>
LrnGeometry lrn_geometry(const Lrn& p) {
  const auto d = p.x.view.dims();
  std::int64_t hw = 1;
  for (std::size_t a = 2; a < d.size(); ++a) hw *= d[a];
  return {d[0], d[1], hw, p.size, p.alpha, p.beta, p.k};
}

// out[c][j] = sum over channels c' in [c - lo, c + hi] (clipped) of in[c'][j],
// for the `len` pixels of a block; rows are `stride` apart in both.
template <class T>
void channel_window_sum(const T* in, T* out, std::int64_t channels, std::int64_t lo, std::int64_t hi, std::int64_t len,
                        std::int64_t stride) {
  for (std::int64_t c = 0; c < channels; ++c) {
    T* o = out + c * stride;
    std::fill(o, o + len, T(0));
    const std::int64_t c0 = std::max<std::int64_t>(0, c - lo), c1 = std::min(channels - 1, c + hi);
    for (std::int64_t cc = c0; cc <= c1; ++cc) {
      const T* row = in + cc * stride;
      for (std::int64_t j = 0; j < len; ++j) o[j] += row[j];
    }
  }
}

// Runs block(image, first pixel, pixel count, scratch) for every block, in
// parallel; scratch holds `rows` rows of kPixels compute values.
template <class T, class Block>
void for_each_block(const LrnGeometry& g, std::int64_t rows, Block&& block) {
  const std::int64_t blocks = g.blocks();
  parallel_chunks(g.n * blocks, std::max<std::int64_t>(1, 64 / std::max<std::int64_t>(1, g.c)),
                  [&](std::int64_t b0, std::int64_t b1) {
                    std::vector<T> scratch(std::size_t(rows * kPixels));
                    for (std::int64_t b = b0; b < b1; ++b) {
                      const std::int64_t pixel = (b % blocks) * kPixels;
                      block(b / blocks, pixel, std::min(kPixels, g.hw - pixel), scratch.data());
                    }
                  });
}

// scale[c][j] of a block, from x (image-relative, channel rows hw apart).
template <class T>
void block_scale(const LrnGeometry& g, const T* x, std::int64_t len, T* squares, T* scale) {
  for (std::int64_t c = 0; c < g.c; ++c)
    for (std::int64_t j = 0; j < len; ++j) squares[c * kPixels + j] = x[c * g.hw + j] * x[c * g.hw + j];
  channel_window_sum(squares, scale, g.c, g.before(), g.after(), len, kPixels);
  const T a = T(g.alpha / double(g.size)), k = T(g.k);
  for (std::int64_t c = 0; c < g.c; ++c)
    for (std::int64_t j = 0; j < len; ++j) scale[c * kPixels + j] = k + a * scale[c * kPixels + j];
}

// Calls body(neg_pow) with neg_pow(s) = s^-beta; the usual betas avoid
// pow, which dominates the kernel otherwise (sqrt and division vectorise).
template <class T, class Body>
void with_neg_pow(double beta, Body&& body) {
  if (beta == 0.75) {
    body([](T s) { return T(1) / std::sqrt(s * std::sqrt(s)); });
  } else if (beta == 0.5) {
    body([](T s) { return T(1) / std::sqrt(s); });
  } else if (beta == 1.0) {
    body([](T s) { return T(1) / s; });
  } else {
    const T neg_beta = T(-beta);
    body([neg_beta](T s) { return std::pow(s, neg_beta); });
  }
}

template <DType D>
void lrn_kernel(const OpCall& call) {
  using T = ComputeType<D>;
  const auto args = plugin::unpack<plugin::args::nn_lrn>(call);
  const auto g = lrn_geometry(args);
  if (args.y.view.numel() == 0) return;
  const DenseIn<D> x(args.x);
  const DenseOut<D> y(args.y);
  with_neg_pow<T>(g.beta, [&](auto neg_pow) {
    for_each_block<T>(g, 2 * g.c, [&](std::int64_t image, std::int64_t pixel, std::int64_t len, T* scratch) {
      const T* xb = x.data() + image * g.c * g.hw + pixel;
      T* yb = y.data() + image * g.c * g.hw + pixel;
      T* scale = scratch + g.c * kPixels;
      block_scale(g, xb, len, scratch, scale);
      for (std::int64_t c = 0; c < g.c; ++c)
        for (std::int64_t j = 0; j < len; ++j) yb[c * g.hw + j] = xb[c * g.hw + j] * neg_pow(scale[c * kPixels + j]);
    });
  });
  y.commit();
}

// t0=x, t1=y, t2=dy, t3=dx:
// dx[c] = dy[c]*scale[c]^-beta - 2*alpha*beta/size * x[c] * sum_{c' whose window holds c} dy*y/scale.
// Channel c' holds c when c' is in [c - after, c + before].
template <DType D>
void lrn_grad_kernel(const OpCall& call) {
  using T = ComputeType<D>;
  const auto args = plugin::unpack<plugin::args::nn_lrn_grad>(call);
  const auto g = lrn_geometry(args);
  if (args.dx.view.numel() == 0) return;
  const DenseIn<D> x(args.x), y(args.y), dy(args.dy);
  const DenseOut<D> dx(args.dx);
  const T factor = T(2.0 * g.alpha * g.beta / double(g.size));
  with_neg_pow<T>(g.beta, [&](auto neg_pow) {
    for_each_block<T>(g, 3 * g.c, [&](std::int64_t image, std::int64_t pixel, std::int64_t len, T* scratch) {
      const std::int64_t base = image * g.c * g.hw + pixel;
      const T* xb = x.data() + base;
      const T* yb = y.data() + base;
      const T* dyb = dy.data() + base;
      T* dxb = dx.data() + base;
      T* ratio = scratch;  // squares first, then dy*y/scale
      T* scale = scratch + g.c * kPixels;
      T* sums = scratch + 2 * g.c * kPixels;
      block_scale(g, xb, len, ratio, scale);
      for (std::int64_t c = 0; c < g.c; ++c)
        for (std::int64_t j = 0; j < len; ++j)
          ratio[c * kPixels + j] = dyb[c * g.hw + j] * yb[c * g.hw + j] / scale[c * kPixels + j];
      channel_window_sum(ratio, sums, g.c, g.after(), g.before(), len, kPixels);
      for (std::int64_t c = 0; c < g.c; ++c)
        for (std::int64_t j = 0; j < len; ++j)
          dxb[c * g.hw + j] =
              dyb[c * g.hw + j] * neg_pow(scale[c * kPixels + j]) - factor * xb[c * g.hw + j] * sums[c * kPixels + j];
    });
  });
  dx.commit();
}

}  // namespace

void register_lrn(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType d = decltype(dtype)::value;
    table.set(OpId::nn_lrn, d, &lrn_kernel<d>);
    table.set(OpId::nn_lrn_grad, d, &lrn_grad_kernel<d>);
  });
}

}  // namespace xylem::native
