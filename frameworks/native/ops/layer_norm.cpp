// Native layer normalisation over the last axis of x [rows, n], forward and
// both gradients, for every float dtype. Rows are independent: each parallel
// chunk of rows loads one row at a time into a compute-type buffer (which
// stays in L1/L2), makes its passes there, and writes the row back once.
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

// Elements per parallel chunk: enough to amortise a task, rows are split no
// further.
constexpr std::int64_t kGrainElements = 32 * 1024;

std::int64_t row_grain(std::int64_t n) {
  return std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(1, n));
}

// A [rows, n] view: row r starts at first + r*row_stride, elements step by col_stride.
template <class S>
struct Rows {
  S* first = nullptr;
  std::int64_t row_stride = 0, col_stride = 1;
  [[nodiscard]] S* row(std::int64_t r) const noexcept { return first + r * row_stride; }
};

template <class S>
Rows<S> rows_of(const TensorArg& t) noexcept {
  return {element_ptr<S>(t), t.view.strides()[0], t.view.strides()[1]};
}

template <DType D>
void layer_norm_kernel(const OpCall& call) {
  using T = ComputeType<D>;
  using S = StorageType<D>;
  const auto args = plugin::unpack<plugin::args::nn_layer_norm>(call);
  const std::int64_t rows = args.x.view.dims()[0], n = args.x.view.dims()[1];
  if (rows == 0) return;
  const auto x = rows_of<const S>(args.x);
  const auto y = rows_of<S>(args.y);
  const auto mean = strided_vec<T>(args.mean);
  const auto rstd = strided_vec<T>(args.rstd);
  const auto gamma = load_param<D>(args.gamma, n, T(1));
  const auto beta = load_param<D>(args.beta, n, T(0));
  const double eps = args.eps;
  const bool rms = args.rms != 0;
  parallel_chunks(rows, row_grain(n), [&](std::int64_t r0, std::int64_t r1) {
    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, n)));
    for (std::int64_t r = r0; r < r1; ++r) {
      const T* xr = row_in<D>(x.row(r), x.col_stride, n, buf.get());
      const RowMoments m = row_moments(xr, n);
      // RMS: the mean square is the variance plus the squared mean, a sum of
      // two non-negative terms (no cancellation).
      const double var = m.m2 / double(n) + (rms ? m.mean * m.mean : 0.0);
      const T mu = rms ? T(0) : T(m.mean), rs = T(1.0 / std::sqrt(var + eps));
      mean[r] = mu;
      rstd[r] = rs;
      T* yr = row_out<D>(y.row(r), y.col_stride, buf.get());
      for (std::int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mu) * rs * gamma[std::size_t(j)] + beta[std::size_t(j)];
      store_row_out<D>(yr, n, y.row(r), y.col_stride);
    }
  });
}

// dx = rstd*(g - mean_j(g) - xh*mean_j(g*xh)), g = dy*gamma, xh = (x-mean)*rstd;
// RMS normalisation has no mean to subtract, so no mean_j(g) term.
template <DType D>
void layer_norm_grad_input_kernel(const OpCall& call) {
  using T = ComputeType<D>;
  using S = StorageType<D>;
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_input>(call);
  const std::int64_t rows = args.x.view.dims()[0], n = args.x.view.dims()[1];
  if (rows == 0) return;
  const auto x = rows_of<const S>(args.x);
  const auto dy = rows_of<const S>(args.dy);
  const auto dx = rows_of<S>(args.dx);
  const auto mean = strided_vec<const T>(args.mean);
  const auto rstd = strided_vec<const T>(args.rstd);
  const auto gamma = load_param<D>(args.gamma, n, T(1));
  const bool rms = args.rms != 0;
  parallel_chunks(rows, row_grain(n), [&](std::int64_t r0, std::int64_t r1) {
    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(2 * std::max<std::int64_t>(1, n)));
    T* xh = buf.get();
    T* g = xh + n;
    for (std::int64_t r = r0; r < r1; ++r) {
      const T mu = mean[r], rs = rstd[r];
      load_row<D>(x.row(r), x.col_stride, n, xh);
      load_row<D>(dy.row(r), dy.col_stride, n, g);
      for (std::int64_t j = 0; j < n; ++j) xh[j] = (xh[j] - mu) * rs;
      for (std::int64_t j = 0; j < n; ++j) g[j] *= gamma[std::size_t(j)];
      const T mean_g = rms ? T(0) : T(lane_sum<T>(n, [g](std::int64_t j) { return g[j]; }) / double(n));
      const T mean_gx = T(lane_sum<T>(n, [g, xh](std::int64_t j) { return g[j] * xh[j]; }) / double(n));
      for (std::int64_t j = 0; j < n; ++j) g[j] = rs * (g[j] - mean_g - xh[j] * mean_gx);
      store_row<D>(g, n, dx.row(r), dx.col_stride);
    }
  });
}

// dgamma, dbeta (either absent): column sums over rows. Rows are split into a fixed number of blocks (not
// one per thread) so the result does not depend on the thread count; each
// block sums into its own partial row, and the partials are added in order.
template <DType D>
void layer_norm_grad_params_kernel(const OpCall& call) {
  using T = ComputeType<D>;
  using S = StorageType<D>;
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_params>(call);
  const TensorArg &dgamma_arg = args.dgamma, &dbeta_arg = args.dbeta;
  const bool want_gamma = dgamma_arg.data != nullptr, want_beta = dbeta_arg.data != nullptr;
  if (!want_gamma && !want_beta) return;
  const std::int64_t rows = args.x.view.dims()[0], n = args.x.view.dims()[1];
  if (n == 0) return;
  const auto x = rows_of<const S>(args.x);
  const auto dy = rows_of<const S>(args.dy);
  const auto mean = strided_vec<const T>(args.mean);
  const auto rstd = strided_vec<const T>(args.rstd);

  constexpr std::int64_t kMaxBlocks = 64;
  const std::int64_t rows_per_block = std::max(row_grain(n), (rows + kMaxBlocks - 1) / kMaxBlocks);
  const std::int64_t blocks = std::max<std::int64_t>(1, (rows + rows_per_block - 1) / rows_per_block);
  // partial[b] holds [dgamma | dbeta] sums of block b, in double.
  std::vector<double> partial(std::size_t(blocks * 2 * n), 0.0);
  parallel_chunks(blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
    auto buf = std::make_unique_for_overwrite<T[]>(std::size_t(2 * n));
    T* xv = buf.get();
    T* dv = xv + n;
    for (std::int64_t b = b0; b < b1; ++b) {
      double* pg = partial.data() + b * 2 * n;
      double* pb = pg + n;
      const std::int64_t r_end = std::min(rows, (b + 1) * rows_per_block);
      for (std::int64_t r = b * rows_per_block; r < r_end; ++r) {
        load_row<D>(dy.row(r), dy.col_stride, n, dv);
        if (want_beta)
          for (std::int64_t j = 0; j < n; ++j) pb[j] += double(dv[j]);
        if (want_gamma) {
          load_row<D>(x.row(r), x.col_stride, n, xv);
          const T mu = mean[r], rs = rstd[r];
          for (std::int64_t j = 0; j < n; ++j) pg[j] += double(dv[j] * ((xv[j] - mu) * rs));
        }
      }
    }
  });
  const auto finish = [&](const TensorArg& out, std::int64_t part_offset) {
    S* dst = element_ptr<S>(out);
    const std::int64_t stride = out.view.strides()[0];
    parallel_chunks(n, kGrainElements / blocks + 1, [&](std::int64_t j0, std::int64_t j1) {
      for (std::int64_t j = j0; j < j1; ++j) {
        double sum = 0;
        for (std::int64_t b = 0; b < blocks; ++b) sum += partial[std::size_t(b * 2 * n + part_offset + j)];
        dst[j * stride] = FloatType<D>::store(T(sum));
      }
    });
  };
  if (want_gamma) finish(dgamma_arg, 0);
  if (want_beta) finish(dbeta_arg, n);
}

}  // namespace

void register_layer_norm(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType d = decltype(dtype)::value;
    table.set(OpId::nn_layer_norm, d, &layer_norm_kernel<d>);
    table.set(OpId::nn_layer_norm_grad_input, d, &layer_norm_grad_input_kernel<d>);
    table.set(OpId::nn_layer_norm_grad_params, d, &layer_norm_grad_params_kernel<d>);
  });
}

}  // namespace xylem::native
