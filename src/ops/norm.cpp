// xylem::nn layer and batch normalisation, forward and backward. Layer norm
// runs on [rows, n] views; batch norm on [N, C, S] views with per-channel
// statistics, its running statistics updated with blas::scal/axpy.
#include <limits>
#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "ops/norm_stats.hpp"
#include "xylem/blas.hpp"
#include "xylem/creation.hpp"
#include "xylem/nn.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

using ops::stat_dtype;

Layout leading(const Layout& x, int cut) { return Layout(x.dims().subspan(0, std::size_t(cut))); }
Layout trailing(const Layout& x, int cut) { return Layout(x.dims().subspan(std::size_t(cut))); }

// An optional per-feature parameter (gamma, beta, dgamma, dbeta): empty, or
// of `dims` and x's dtype, viewed as rank 1.
Tensor optional_vector(const Backend& b, std::string_view name, const char* arg, const Tensor& t, const Layout& dims,
                       DType dtype) {
  if (!t.defined()) return {};
  ops::require_dims(name, arg, t, dims);
  ops::require_dtype(name, arg, t, dtype);
  return ops::grouped2(b, t, t.layout(), 0).reshape({dims.numel()});
}

int layer_norm_cut(std::string_view name, const Tensor& x, int normalized_rank) {
  ops::require_argument(normalized_rank >= 1 && normalized_rank <= x.rank(), name, [&] {
    return "normalized_rank " + std::to_string(normalized_rank) + " does not fit shape " + x.layout().dims_string();
  });
  return x.rank() - normalized_rank;
}

}  // namespace

namespace {

// Layer and RMS normalisation share the row kernels: `rms` drops the mean.
// `weight` names gamma as the public function calls it.
NormStats rows_forward(const Backend& b, std::string_view name, const char* weight, const Tensor& x,
                       int normalized_rank, const Tensor& gamma, const Tensor& beta, double eps, bool rms, Tensor& y) {
  ops::require_float(name, "x", x);
  ops::require_like(name, "x", x, "y", y);
  ops::require_argument(eps >= 0, name, "eps must not be negative");
  const int cut = layer_norm_cut(name, x, normalized_rank);
  const Layout features = trailing(x.layout(), cut);
  const Tensor g = optional_vector(b, name, weight, gamma, features, x.dtype());
  const Tensor be = optional_vector(b, name, "beta", beta, features, x.dtype());
  NormStats stats{Tensor(leading(x.layout(), cut), ops::stat_dtype(x.dtype())),
                  Tensor(leading(x.layout(), cut), ops::stat_dtype(x.dtype()))};
  const std::int64_t rows = stats.mean.numel();
  if (x.numel() == 0) {
    // No rows: everything is empty. Rows of length 0: y is empty and each
    // row's mean and variance are those of no values, NaN (as xylem::mean
    // and var), so rstd is NaN too.
    ops::fill_output(b, name, y);
    ops::fill_output(b, name, stats.mean, std::numeric_limits<double>::quiet_NaN());
    ops::fill_output(b, name, stats.rstd, std::numeric_limits<double>::quiet_NaN());
    return stats;
  }
  const Tensor x2 = ops::grouped2(b, x, x.layout(), cut);
  ops::GroupedOutput y2(b, y, y.layout(), cut);
  detail::launch(b,
                 detail::args::nn_layer_norm<Tensor>{.x = x2,
                                                     .gamma = g,
                                                     .beta = be,
                                                     .y = y2.tensor(),
                                                     .mean = stats.mean.reshape({rows}),
                                                     .rstd = stats.rstd.reshape({rows}),
                                                     .rms = rms ? 1 : 0,
                                                     .eps = eps},
                 name);
  y2.finish();
  return stats;
}

void rows_backward(const Backend& b, std::string_view name, const char* weight, const char* dweight, const Tensor& x,
                   int normalized_rank, const Tensor& gamma, const NormStats& stats, const Tensor& dy, bool rms,
                   Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  ops::require_float(name, "x", x);
  ops::require_same_dtype(name, "x", x, "dy", dy);
  ops::require_same_dims(name, "x", x, "dy", dy);
  const int cut = layer_norm_cut(name, x, normalized_rank);
  const Layout features = trailing(x.layout(), cut);
  const Layout rows_shape = leading(x.layout(), cut);
  // rstd first: rms_norm_grad makes mean from rstd's dims.
  ops::require_dims(name, "rstd", stats.rstd, rows_shape);
  ops::require_dims(name, "mean", stats.mean, rows_shape);
  ops::require_dtype(name, "rstd", stats.rstd, ops::stat_dtype(x.dtype()));
  ops::require_dtype(name, "mean", stats.mean, ops::stat_dtype(x.dtype()));
  const Tensor g = optional_vector(b, name, weight, gamma, features, x.dtype());
  if (dx.defined()) ops::require_like(name, "x", x, "dx", dx);
  if (dgamma.defined()) (void)optional_vector(b, name, dweight, dgamma, features, x.dtype());
  if (dbeta.defined()) (void)optional_vector(b, name, "dbeta", dbeta, features, x.dtype());
  if (x.numel() == 0) {  // dx is empty; dgamma and dbeta sum over no rows (or are empty): 0
    if (dx.defined()) ops::fill_output(b, name, dx);
    if (dgamma.defined()) ops::fill_output(b, name, dgamma);
    if (dbeta.defined()) ops::fill_output(b, name, dbeta);
    return;
  }
  const std::int64_t rows = rows_shape.numel(), n = features.numel();
  const Tensor x2 = ops::grouped2(b, x, x.layout(), cut);
  const Tensor dy2 = ops::grouped2(b, dy, dy.layout(), cut);
  const Tensor mean = ops::grouped2(b, stats.mean, stats.mean.layout(), 0).reshape({rows});
  const Tensor rstd = ops::grouped2(b, stats.rstd, stats.rstd.layout(), 0).reshape({rows});
  if (dx.defined()) {
    ops::GroupedOutput dx2(b, dx, dx.layout(), cut);
    detail::launch(b,
                   detail::args::nn_layer_norm_grad_input<Tensor>{.x = x2,
                                                                  .gamma = g,
                                                                  .mean = mean,
                                                                  .rstd = rstd,
                                                                  .dy = dy2,
                                                                  .dx = dx2.tensor(),
                                                                  .rms = rms ? 1 : 0},
                   name);
    dx2.finish();
  }
  if (dgamma.defined() || dbeta.defined()) {
    std::optional<ops::GroupedOutput> dg, db;
    if (dgamma.defined()) dg.emplace(b, dgamma, dgamma.layout(), 0);
    if (dbeta.defined()) db.emplace(b, dbeta, dbeta.layout(), 0);
    detail::launch(b,
                   detail::args::nn_layer_norm_grad_params<Tensor>{
                       .x = x2,
                       .mean = mean,
                       .rstd = rstd,
                       .dy = dy2,
                       .dgamma = dg ? dg->tensor().reshape({n}) : Tensor{},
                       .dbeta = db ? db->tensor().reshape({n}) : Tensor{}},
                   name);
    if (dg) dg->finish();
    if (db) db->finish();
  }
}

}  // namespace

NormStats layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma, const Tensor& beta,
                     double eps, Tensor& y) {
  return rows_forward(b, "nn::layer_norm", "gamma", x, normalized_rank, gamma, beta, eps, false, y);
}

void layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                     const NormStats& stats, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  rows_backward(b, "nn::layer_norm_grad", "gamma", "dgamma", x, normalized_rank, gamma, stats, dy, false, dx, dgamma,
                dbeta);
}

// RMS normalisation keeps only rstd: the kernels' mean is 0, so backward
// passes zeros for it (one value per row, next to the row's n).
Tensor rms_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight, double eps, Tensor& y) {
  return rows_forward(b, "nn::rms_norm", "weight", x, normalized_rank, weight, Tensor{}, eps, true, y).rstd;
}

void rms_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight, const Tensor& rstd,
                   const Tensor& dy, Tensor& dx, Tensor& dweight) {
  constexpr std::string_view name = "nn::rms_norm_grad";
  ops::require_float(name, "x", x);
  ops::require_defined(name, "rstd", rstd);
  ops::require_dtype(name, "rstd", rstd, ops::stat_dtype(x.dtype()));
  const NormStats stats{zeros(b, Layout(rstd.layout().dims()), rstd.dtype()), rstd};
  Tensor no_dbias;
  rows_backward(b, name, "weight", "dweight", x, normalized_rank, weight, stats, dy, true, dx, dweight, no_dbias);
}

namespace {

void require_batch_input(std::string_view name, const Tensor& x) {
  ops::require_float(name, "x", x);
  if (x.rank() < 2)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": x has shape " + x.layout().dims_string() +
                                               "; expected [N, C, ...]");
}

// The values behind each channel's statistics: N*S, whatever C is.
std::int64_t per_channel_count(const Layout& x) {
  std::int64_t count = x.dims()[0];
  for (int a = 2; a < x.rank(); ++a) count *= x.dims()[std::size_t(a)];
  return count;
}

// Training normalises with the batch's statistics: they need values.
void require_batch_values(std::string_view name, const Tensor& x, std::int64_t min_count) {
  if (per_channel_count(x.layout()) < min_count)
    throw Error(ErrorCode::invalid_argument, std::string(name) + ": training needs " +
                                                 (min_count > 1 ? "more than one value" : "values") +
                                                 " per channel (x has shape " + x.layout().dims_string() + ")");
}

// x as [N, C, S].
Tensor batch3(const Backend& b, const Tensor& x) { return ops::grouped3(b, x, x.layout(), 1, 2); }

Tensor stat_vector(std::string_view name, const char* arg, const Tensor& t, std::int64_t channels, DType x) {
  ops::require_dims(name, arg, t, Layout{channels});
  ops::require_dtype(name, arg, t, stat_dtype(x));
  return t;
}

}  // namespace

BatchNormStats batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                          Tensor& y) {
  constexpr std::string_view name = "nn::batch_norm";
  require_batch_input(name, x);
  ops::require_like(name, "x", x, "y", y);
  ops::require_argument(eps >= 0, name, "eps must not be negative");
  ops::require_argument(momentum >= 0 && momentum <= 1, name, "momentum must be in [0, 1]");
  const std::int64_t channels = x.layout().dims()[1];
  const Layout per_channel{channels};
  const Tensor g = optional_vector(b, name, "gamma", gamma, per_channel, x.dtype());
  const Tensor be = optional_vector(b, name, "beta", beta, per_channel, x.dtype());
  stat_vector(name, "running_mean", running_mean, channels, x.dtype());
  stat_vector(name, "running_var", running_var, channels, x.dtype());
  // As PyTorch: one value per channel has no variance, none has no mean.
  const std::int64_t count = per_channel_count(x.layout());
  if (training) require_batch_values(name, x, 2);

  BatchNormStats stats;
  if (training) {
    stats = {Tensor(per_channel, stat_dtype(x.dtype())), Tensor(per_channel, stat_dtype(x.dtype()))};
  } else {
    stats = {running_mean, running_var};
  }
  if (x.numel() == 0) {  // C = 0 in training, or an empty batch in inference: y is empty
    ops::fill_output(b, name, y);
    if (training) {
      ops::fill_output(b, name, stats.mean);
      ops::fill_output(b, name, stats.var);
    }
    return stats;
  }
  const Tensor x3 = batch3(b, x);
  if (training) {
    detail::launch(b, detail::args::nn_batch_norm_stats<Tensor>{.x = x3, .mean = stats.mean, .var = stats.var}, name);
  }
  ops::GroupedOutput y3(b, y, y.layout(), 1, 2);
  detail::launch(b,
                 detail::args::nn_batch_norm_apply<Tensor>{.x = x3,
                                                           .mean = stats.mean,
                                                           .var = stats.var,
                                                           .gamma = g,
                                                           .beta = be,
                                                           .y = y3.tensor(),
                                                           .eps = eps},
                 name);
  y3.finish();
  if (training) {
    // running = (1 - m) running + m batch; the variance unbiased.
    const double unbiased = double(count) / double(count - 1);
    blas::scal(b, 1 - momentum, running_mean);
    blas::axpy(b, momentum, stats.mean, running_mean);
    blas::scal(b, 1 - momentum, running_var);
    blas::axpy(b, momentum * unbiased, stats.var, running_var);
  }
  return stats;
}

void batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma, const BatchNormStats& stats,
                     bool training, double eps, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  constexpr std::string_view name = "nn::batch_norm_grad";
  require_batch_input(name, x);
  ops::require_same_dtype(name, "x", x, "dy", dy);
  ops::require_same_dims(name, "x", x, "dy", dy);
  const std::int64_t channels = x.layout().dims()[1];
  const Layout per_channel{channels};
  const Tensor g = optional_vector(b, name, "gamma", gamma, per_channel, x.dtype());
  stat_vector(name, "mean", stats.mean, channels, x.dtype());
  stat_vector(name, "var", stats.var, channels, x.dtype());
  if (dx.defined()) ops::require_like(name, "x", x, "dx", dx);
  if (dgamma.defined()) (void)optional_vector(b, name, "dgamma", dgamma, per_channel, x.dtype());
  if (dbeta.defined()) (void)optional_vector(b, name, "dbeta", dbeta, per_channel, x.dtype());
  if (training) require_batch_values(name, x, 1);
  if (x.numel() == 0) {  // dx is empty; dgamma and dbeta sum over nothing (or are empty): 0
    if (dx.defined()) ops::fill_output(b, name, dx);
    if (dgamma.defined()) ops::fill_output(b, name, dgamma);
    if (dbeta.defined()) ops::fill_output(b, name, dbeta);
    return;
  }
  const Tensor x3 = batch3(b, x);
  const Tensor dy3 = batch3(b, dy);
  // grad_input needs the sums even when the caller does not want them.
  const bool need_sums = dx.defined() && training;
  Tensor dg = dgamma.defined() ? dgamma : (need_sums ? Tensor(per_channel, x.dtype()) : Tensor{});
  Tensor db = dbeta.defined() ? dbeta : (need_sums ? Tensor(per_channel, x.dtype()) : Tensor{});
  std::optional<ops::GroupedOutput> dg1, db1;
  if (dg.defined()) dg1.emplace(b, dg, dg.layout(), 0);
  if (db.defined()) db1.emplace(b, db, db.layout(), 0);
  if (dg.defined() || db.defined()) {
    detail::launch(b,
                   detail::args::nn_batch_norm_grad_params<Tensor>{
                       .x = x3,
                       .mean = stats.mean,
                       .var = stats.var,
                       .dy = dy3,
                       .dgamma = dg1 ? dg1->tensor().reshape({channels}) : Tensor{},
                       .dbeta = db1 ? db1->tensor().reshape({channels}) : Tensor{},
                       .eps = eps},
                   name);
  }
  if (dx.defined()) {
    // Inference needs no sums; the kernel still takes two [C] tensors.
    const Tensor sum_g = dg1 ? dg1->tensor().reshape({channels}) : zeros(b, per_channel, x.dtype());
    const Tensor sum_b = db1 ? db1->tensor().reshape({channels}) : sum_g;
    ops::GroupedOutput dx3(b, dx, dx.layout(), 1, 2);
    detail::launch(b,
                   detail::args::nn_batch_norm_grad_input<Tensor>{.x = x3,
                                                                  .mean = stats.mean,
                                                                  .var = stats.var,
                                                                  .gamma = g,
                                                                  .dgamma = sum_g,
                                                                  .dbeta = sum_b,
                                                                  .dy = dy3,
                                                                  .dx = dx3.tensor(),
                                                                  .training = training ? 1 : 0,
                                                                  .eps = eps},
                   name);
    dx3.finish();
  }
  if (dg1) dg1->finish();
  if (db1) db1->finish();
}

LayerNorm layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma, const Tensor& beta,
                     double eps) {
  LayerNorm out{ops::new_like("nn::layer_norm", "x", x), {}};
  out.stats = layer_norm(b, x, normalized_rank, gamma, beta, eps, out.y);
  return out;
}

RmsNorm rms_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight, double eps) {
  RmsNorm out{ops::new_like("nn::rms_norm", "x", x), {}};
  out.rstd = rms_norm(b, x, normalized_rank, weight, eps, out.y);
  return out;
}

RmsNormGrads rms_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight,
                           const Tensor& rstd, const Tensor& dy) {
  constexpr std::string_view name = "nn::rms_norm_grad";
  RmsNormGrads grads{ops::new_like(name, "x", x), {}};
  grads.dweight = Tensor(trailing(x.layout(), layer_norm_cut(name, x, normalized_rank)), x.dtype());
  rms_norm_grad(b, x, normalized_rank, weight, rstd, dy, grads.dx, grads.dweight);
  return grads;
}

NormGrads layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                          const NormStats& stats, const Tensor& dy) {
  constexpr std::string_view name = "nn::layer_norm_grad";
  NormGrads grads{ops::new_like(name, "x", x), {}, {}};
  const Layout features = trailing(x.layout(), layer_norm_cut(name, x, normalized_rank));
  grads.dgamma = Tensor(features, x.dtype());
  grads.dbeta = Tensor(features, x.dtype());
  layer_norm_grad(b, x, normalized_rank, gamma, stats, dy, grads.dx, grads.dgamma, grads.dbeta);
  return grads;
}

BatchNorm batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                     Tensor& running_var, bool training, double momentum, double eps) {
  BatchNorm out{ops::new_like("nn::batch_norm", "x", x), {}};
  out.stats = batch_norm(b, x, gamma, beta, running_mean, running_var, training, momentum, eps, out.y);
  return out;
}

NormGrads batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma, const BatchNormStats& stats,
                          bool training, double eps, const Tensor& dy) {
  constexpr std::string_view name = "nn::batch_norm_grad";
  require_batch_input(name, x);
  const Layout per_channel{x.layout().dims()[1]};
  NormGrads grads{ops::new_like(name, "x", x), Tensor(per_channel, x.dtype()), Tensor(per_channel, x.dtype())};
  batch_norm_grad(b, x, gamma, stats, training, eps, dy, grads.dx, grads.dgamma, grads.dbeta);
  return grads;
}

}  // namespace xylem::nn
