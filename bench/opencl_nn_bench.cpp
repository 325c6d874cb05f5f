// xylem_bench_opencl's rows for the nn ops (convolution, batch norm,
// pooling, LRN), the sum along axis 0 and exp in bf16 and f32: each against
// native in the same run (opencl_bench.hpp). Memory-bound rows count the
// least traffic the op needs (each input read once, each output written
// once), so a rate below copy bandwidth shows work beyond that.
#include "opencl_bench.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

namespace xylem_bench {

namespace {

using namespace xylem;

std::shared_ptr<Tensor> random(const Backend& b, const Layout& shape, DType dtype, std::uint64_t seed,
                               double low = -1, double high = 1) {
  Generator g(seed);
  Tensor x = uniform(b, shape, f32, g, low, high);  // uniform draws f32 and f64 only
  return std::make_shared<Tensor>(dtype == f32 ? x : cast(b, x, dtype));
}

std::shared_ptr<Tensor> empty(const Backend& b, const Layout& shape, DType dtype) {
  return std::make_shared<Tensor>(zeros(b, shape, dtype));
}

void conv_rows(const Compare& compare) {
  // A ResNet-like 3x3 layer: x [8, 64, 32, 32], w [64, 64, 3, 3], padding 1.
  const Layout xs{8, 64, 32, 32}, ws{64, 64, 3, 3};
  nn::Conv2d p;
  p.pad_h = p.pad_w = 1;
  const Layout ys = nn::conv2d_output_shape(xs, ws, p);
  const double flops = 2.0 * static_cast<double>(ys.numel()) * static_cast<double>(ws.numel() / ws.dims()[0]);
  compare("conv2d 3x3", "GFLOP/s", flops, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 1), w = random(b, ws, f32, 2), y = empty(b, ys, f32);
    return [&b, x, w, y, p] { nn::conv2d(b, *x, *w, *y, p); };
  });
  compare("conv2d grad_data", "GFLOP/s", flops, 0, [&](const Backend& b) {
    auto dy = random(b, ys, f32, 3), w = random(b, ws, f32, 2), dx = empty(b, xs, f32);
    return [&b, dy, w, dx, p] { nn::conv2d_grad_data(b, *dy, *w, *dx, p); };
  });
  compare("conv2d grad_filt", "GFLOP/s", flops, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 1), dy = random(b, ys, f32, 3), dw = empty(b, ws, f32);
    return [&b, x, dy, dw, p] { nn::conv2d_grad_filter(b, *x, *dy, *dw, p); };
  });
}

// [16, 64, side, side] images of about n elements (an even side).
Layout images(std::int64_t n) {
  auto side = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n) / 1024.0));
  side = std::max<std::int64_t>(2, side / 2 * 2);
  return Layout{16, 64, side, side};
}

void norm_and_pool_rows(const Compare& compare, std::int64_t n) {
  const Layout xs = images(n);
  const double bytes = static_cast<double>(xs.numel()) * 4;
  const Layout cs{xs.dims()[1]};
  compare("batch_norm train", "GB/s", 2 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 4), y = empty(b, xs, f32);
    auto gamma = random(b, cs, f32, 5, 0.5, 1.5), beta = random(b, cs, f32, 6);
    auto mean = empty(b, cs, f32), var = std::make_shared<Tensor>(ones(b, cs, f32));
    return [&b, x, y, gamma, beta, mean, var] { (void)nn::batch_norm(b, *x, *gamma, *beta, *mean, *var, true, 0.1, 1e-5, *y); };
  });
  compare("batch_norm grad", "GB/s", 3 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 4), dy = random(b, xs, f32, 7), dx = empty(b, xs, f32);
    auto gamma = random(b, cs, f32, 5, 0.5, 1.5), beta = random(b, cs, f32, 6);
    auto dgamma = empty(b, cs, f32), dbeta = empty(b, cs, f32);
    auto mean = empty(b, cs, f32), var = std::make_shared<Tensor>(ones(b, cs, f32));
    Tensor y(xs, f32);
    auto stats = std::make_shared<nn::BatchNormStats>(nn::batch_norm(b, *x, *gamma, *beta, *mean, *var, true, 0.1, 1e-5, y));
    return [&b, x, dy, dx, gamma, dgamma, dbeta, stats] {
      nn::batch_norm_grad(b, *x, *gamma, *stats, true, 1e-5, *dy, *dx, *dgamma, *dbeta);
    };
  });
  const nn::Pool2d pool;  // 2x2, stride 2
  const Layout ys = nn::pool2d_output_shape(xs, pool);
  compare("max_pool 2x2", "GB/s", 1.25 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 8), y = empty(b, ys, f32);
    return [&b, x, y, pool] { nn::max_pool2d(b, *x, *y, pool); };
  });
  compare("max_pool grad", "GB/s", 2.25 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 8), dy = random(b, ys, f32, 9), dx = empty(b, xs, f32);
    return [&b, x, dy, dx, pool] { nn::max_pool2d_grad(b, *x, *dy, *dx, pool); };
  });
  compare("avg_pool 2x2", "GB/s", 1.25 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 8), y = empty(b, ys, f32);
    return [&b, x, y, pool] { nn::avg_pool2d(b, *x, *y, pool); };
  });
  compare("avg_pool grad", "GB/s", 1.25 * bytes, 0, [&](const Backend& b) {
    auto dy = random(b, ys, f32, 9), dx = empty(b, xs, f32);
    return [&b, dy, dx, pool] { nn::avg_pool2d_grad(b, *dy, *dx, pool); };
  });
  compare("lrn", "GB/s", 2 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 10), y = empty(b, xs, f32);
    return [&b, x, y] { nn::lrn(b, *x, *y); };
  });
  compare("lrn grad", "GB/s", 4 * bytes, 0, [&](const Backend& b) {
    auto x = random(b, xs, f32, 10), dy = random(b, xs, f32, 11), dx = empty(b, xs, f32);
    auto y = empty(b, xs, f32);
    nn::lrn(b, *x, *y);
    return [&b, x, y, dy, dx] { nn::lrn_grad(b, *x, *y, *dy, *dx); };
  });
}

void math_rows(const Compare& compare, std::int64_t n) {
  // Column sums: wide rows (4096 columns) and narrow ones (64).
  for (const std::int64_t cols : {std::int64_t{4096}, std::int64_t{64}}) {
    const Layout xs{std::max<std::int64_t>(n / cols, 1), cols};
    compare("sum axis0 x" + std::to_string(cols), "GB/s", static_cast<double>(xs.numel()) * 4, 0,
            [&](const Backend& b) {
              auto x = random(b, xs, f32, 12), y = empty(b, Layout{cols}, f32);
              return [&b, x, y] { sum(b, *x, Reduction{{0}, false}, *y); };
            });
  }
  for (const DType dtype : {bf16, f32}) {
    compare("exp " + std::string(name(dtype)), "GB/s", 2.0 * static_cast<double>(n) * static_cast<double>(size_of(dtype)), 0,
            [&](const Backend& b) {
              auto x = random(b, Layout{n}, dtype, 13, -4, 4), y = empty(b, Layout{n}, dtype);
              return [&b, x, y] { exp(b, *x, *y); };
            });
  }
}

}  // namespace

void nn_rows(const Compare& compare, std::int64_t n) {
  conv_rows(compare);
  norm_and_pool_rows(compare, n);
  math_rows(compare, n);
}

}  // namespace xylem_bench
