// Native batch normalisation over x [N, C, S] (channel axis 1), statistics,
// apply and both gradients, for every float dtype.
//
// The per-channel reductions (stats, grad_params) split each channel's N
// planes into blocks of about kBlockElements; every (channel, block) task
// loads its block into a compute-type buffer and reduces it there (two
// passes for the variance, on cache-resident data), and the blocks of a
// channel are then combined in order (Chan et al.'s pairwise formula for
// the variance). The split depends only on the shape, so results do not
// depend on the thread count. The elementwise passes (apply, grad_input)
// run plane by plane.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "frameworks/native/ops/float_rows.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr std::int64_t kBlockElements = 16 * 1024;

// A rank-3 [N, C, S] view.
template <class Sto>
struct Planes {
  Sto* first = nullptr;
  std::int64_t n = 0, c = 0, s = 0;
  std::int64_t n_stride = 0, c_stride = 0, s_stride = 1;
  [[nodiscard]] Sto* plane(std::int64_t in, std::int64_t ic) const noexcept {
    return first + in * n_stride + ic * c_stride;
  }
};

template <class Sto>
Planes<Sto> planes_of(const TensorArg& t) noexcept {
  const auto d = t.view.dims();
  const auto st = t.view.strides();
  return {element_ptr<Sto>(t), d[0], d[1], d[2], st[0], st[1], st[2]};
}

// How the N planes of a channel are blocked for reductions.
struct Blocking {
  std::int64_t planes_per_block, blocks;
};
Blocking blocking(std::int64_t n, std::int64_t s) {
  const std::int64_t per = std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(1, s));
  return {per, std::max<std::int64_t>(1, (n + per - 1) / per)};
}

// Runs block(c, blk, n0, n1, buffer) for every (channel c, block blk of
// planes [n0, n1)), in parallel; buffer is compute-type scratch for a whole
// block (planes_per_block rows of S).
template <DType D, class Block>
void for_each_block(const Planes<const StorageType<D>>& x, const Blocking& b, Block&& block) {
  using T = ComputeType<D>;
  parallel_chunks(x.c * b.blocks, 1, [&](std::int64_t t0, std::int64_t t1) {
    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, b.planes_per_block * x.s)));
    for (std::int64_t task = t0; task < t1; ++task) {
      const std::int64_t c = task / b.blocks, blk = task % b.blocks;
      const std::int64_t n0 = blk * b.planes_per_block, n1 = std::min(x.n, n0 + b.planes_per_block);
      block(c, blk, n0, n1, buf.get());
    }
  });
}

template <DType D>
void load_block(const Planes<const StorageType<D>>& x, std::int64_t c, std::int64_t n0, std::int64_t n1,
                ComputeType<D>* out) {
  for (std::int64_t in = n0; in < n1; ++in) load_row<D>(x.plane(in, c), x.s_stride, x.s, out + (in - n0) * x.s);
}

// The biased variance.
template <DType D>
void batch_norm_stats_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_stats>(call);
  using T = ComputeType<D>;
  const auto x = planes_of<const StorageType<D>>(args.x);
  const Blocking b = blocking(x.n, x.s);
  // Each block's count, mean and m2 (sum of squared deviations).
  std::vector<RowMoments> parts(std::size_t(x.c * b.blocks));
  for_each_block<D>(x, b, [&](std::int64_t c, std::int64_t blk, std::int64_t n0, std::int64_t n1, T* buf) {
    load_block<D>(x, c, n0, n1, buf);
    parts[std::size_t(c * b.blocks + blk)] = row_moments(buf, (n1 - n0) * x.s);
  });
  const auto mean = strided_vec<T>(args.mean);
  const auto var = strided_vec<T>(args.var);
  for (std::int64_t c = 0; c < x.c; ++c) {
    double count = 0, mu = 0, m2 = 0;
    for (std::int64_t blk = 0; blk < b.blocks; ++blk) {
      const RowMoments& p = parts[std::size_t(c * b.blocks + blk)];
      const double n_b = double((std::min(x.n, (blk + 1) * b.planes_per_block) - blk * b.planes_per_block) * x.s);
      if (n_b == 0) continue;
      const double total = count + n_b, delta = p.mean - mu;
      mu += delta * n_b / total;
      m2 += p.m2 + delta * delta * count * n_b / total;
      count = total;
    }
    mean[c] = T(mu);
    var[c] = T(count > 0 ? m2 / count : std::nan(""));
  }
}

template <DType D>
void batch_norm_apply_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_apply>(call);
  using T = ComputeType<D>;
  const auto x = planes_of<const StorageType<D>>(args.x);
  const auto y = planes_of<StorageType<D>>(args.y);
  const auto mean = strided_vec<const T>(args.mean);
  const auto var = strided_vec<const T>(args.var);
  const auto gamma = load_param<D>(args.gamma, x.c, T(1));
  const auto beta = load_param<D>(args.beta, x.c, T(0));
  std::vector<T> scale(std::size_t(x.c));
  for (std::int64_t c = 0; c < x.c; ++c)
    scale[std::size_t(c)] = T(double(gamma[std::size_t(c)]) / std::sqrt(double(var[c]) + args.eps));
  parallel_chunks(x.n * x.c, std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(1, x.s)),
                  [&](std::int64_t p0, std::int64_t p1) {
                    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, x.s)));
                    T* v = buf.get();
                    for (std::int64_t p = p0; p < p1; ++p) {
                      const std::int64_t in = p / x.c, c = p % x.c;
                      const T mu = mean[c], a = scale[std::size_t(c)], sh = beta[std::size_t(c)];
                      load_row<D>(x.plane(in, c), x.s_stride, x.s, v);
                      for (std::int64_t j = 0; j < x.s; ++j) v[j] = (v[j] - mu) * a + sh;
                      store_row<D>(v, x.s, y.plane(in, c), y.s_stride);
                    }
                  });
}

// dgamma, dbeta: either absent.
template <DType D>
void batch_norm_grad_params_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_params>(call);
  using T = ComputeType<D>;
  const TensorArg &dgamma_arg = args.dgamma, &dbeta_arg = args.dbeta;
  if (dgamma_arg.data == nullptr && dbeta_arg.data == nullptr) return;
  const auto x = planes_of<const StorageType<D>>(args.x);
  const auto dy = planes_of<const StorageType<D>>(args.dy);
  const auto mean = strided_vec<const T>(args.mean);
  const auto var = strided_vec<const T>(args.var);
  const Blocking b = blocking(x.n, x.s);
  struct Sums {
    double dy = 0, dy_xh = 0;
  };
  std::vector<Sums> parts(std::size_t(x.c * b.blocks));
  for_each_block<D>(x, b, [&](std::int64_t c, std::int64_t blk, std::int64_t n0, std::int64_t n1, T* buf) {
    const T mu = mean[c], rs = T(1.0 / std::sqrt(double(var[c]) + args.eps));
    auto row = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, x.s)));
    T* dv = row.get();
    Sums sums;
    for (std::int64_t in = n0; in < n1; ++in) {
      load_row<D>(x.plane(in, c), x.s_stride, x.s, buf);
      load_row<D>(dy.plane(in, c), dy.s_stride, x.s, dv);
      sums.dy += lane_sum<T>(x.s, [dv](std::int64_t j) { return dv[j]; });
      sums.dy_xh += lane_sum<T>(x.s, [dv, buf, mu, rs](std::int64_t j) { return dv[j] * ((buf[j] - mu) * rs); });
    }
    parts[std::size_t(c * b.blocks + blk)] = sums;
  });
  const auto store = [&](const TensorArg& out, auto member) {
    if (out.data == nullptr) return;
    const auto dst = strided_vec<StorageType<D>>(out);
    for (std::int64_t c = 0; c < x.c; ++c) {
      double sum = 0;
      for (std::int64_t blk = 0; blk < b.blocks; ++blk) sum += parts[std::size_t(c * b.blocks + blk)].*member;
      dst[c] = FloatType<D>::store(T(sum));
    }
  };
  store(dgamma_arg, &Sums::dy_xh);
  store(dbeta_arg, &Sums::dy);
}

template <DType D>
void batch_norm_grad_input_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_input>(call);
  using T = ComputeType<D>;
  const auto x = planes_of<const StorageType<D>>(args.x);
  const auto dy = planes_of<const StorageType<D>>(args.dy);
  const auto dx = planes_of<StorageType<D>>(args.dx);
  const auto mean = strided_vec<const T>(args.mean);
  const auto var = strided_vec<const T>(args.var);
  const auto gamma = load_param<D>(args.gamma, x.c, T(1));
  const bool training = args.training != 0;
  const double m = double(x.n * x.s);
  // Per channel: dx = k*(dy - shift - xh*slope) with k = gamma*rstd.
  std::vector<T> rstd(std::size_t(x.c)), k(std::size_t(x.c)), shift(std::size_t(x.c), T(0)),
      slope(std::size_t(x.c), T(0));
  const auto dgamma = strided_vec<const StorageType<D>>(args.dgamma);
  const auto dbeta = strided_vec<const StorageType<D>>(args.dbeta);
  for (std::int64_t c = 0; c < x.c; ++c) {
    const auto i = std::size_t(c);
    rstd[i] = T(1.0 / std::sqrt(double(var[c]) + args.eps));
    k[i] = gamma[i] * rstd[i];
    if (training) {
      shift[i] = T(double(FloatType<D>::load(dbeta[c])) / m);
      slope[i] = T(double(FloatType<D>::load(dgamma[c])) / m);
    }
  }
  parallel_chunks(x.n * x.c, std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(1, x.s)),
                  [&](std::int64_t p0, std::int64_t p1) {
                    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(2 * std::max<std::int64_t>(1, x.s)));
                    T* xv = buf.get();
                    T* dv = xv + x.s;
                    for (std::int64_t p = p0; p < p1; ++p) {
                      const std::int64_t in = p / x.c, c = p % x.c;
                      const auto i = std::size_t(c);
                      load_row<D>(dy.plane(in, c), dy.s_stride, x.s, dv);
                      if (training) {
                        load_row<D>(x.plane(in, c), x.s_stride, x.s, xv);
                        const T mu = mean[c], rs = rstd[i], kc = k[i], sh = shift[i], sl = slope[i];
                        for (std::int64_t j = 0; j < x.s; ++j) dv[j] = kc * (dv[j] - sh - (xv[j] - mu) * rs * sl);
                      } else {
                        const T kc = k[i];
                        for (std::int64_t j = 0; j < x.s; ++j) dv[j] *= kc;
                      }
                      store_row<D>(dv, x.s, dx.plane(in, c), dx.s_stride);
                    }
                  });
}

}  // namespace

void register_batch_norm(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType d = decltype(dtype)::value;
    table.set(OpId::nn_batch_norm_stats, d, &batch_norm_stats_kernel<d>);
    table.set(OpId::nn_batch_norm_apply, d, &batch_norm_apply_kernel<d>);
    table.set(OpId::nn_batch_norm_grad_params, d, &batch_norm_grad_params_kernel<d>);
    table.set(OpId::nn_batch_norm_grad_input, d, &batch_norm_grad_input_kernel<d>);
  });
}

}  // namespace xylem::native
