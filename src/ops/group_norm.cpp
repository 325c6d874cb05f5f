// xylem::nn group and instance normalisation over x [N, C, ...]. The
// statistics of each (sample, group) are those of a row of x viewed as
// [N*groups, C/groups * spatial], so forward and dx run layer_norm's row
// kernels; the per-channel weight and bias follow as math::binary, and
// backward's per-channel sums are batch_norm_grad_params over the
// normalised values.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "ops/norm_stats.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"

namespace xylem::nn {
namespace {

std::int64_t channels_of(std::string_view name, const Tensor& x) {
  ops::require_float(name, "x", x);
  if (x.rank() < 2)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": x has shape " + x.layout().dims_string() +
                                               "; expected [N, C, ...]");
  return x.layout().dims()[1];
}

void require_groups(std::string_view name, const Tensor& x, int groups) {
  const std::int64_t c = channels_of(name, x);
  ops::require_argument(groups >= 1 && c % groups == 0, name, [&] {
    return "groups " + std::to_string(groups) + " must be at least 1 and divide the " + std::to_string(c) +
           " channels of x " + x.layout().dims_string();
  });
}

// v [N, C, ...] as [N, groups, C/groups, ...]: the rows of the statistics are
// its first two axes, their values the rest.
Layout split_channels(const Layout& v, std::int64_t groups) {
  std::vector<std::int64_t> dims(v.dims().begin(), v.dims().end()), strides(v.strides().begin(), v.strides().end());
  const std::int64_t per_group = dims[1] / groups;
  dims[1] = per_group;
  dims.insert(dims.begin() + 1, groups);
  strides.insert(strides.begin() + 1, strides[1] * per_group);
  return Layout::strided(dims, strides, v.offset());
}

// weight or bias: empty, or [C] of x's dtype, returned as [C, 1, ...] to
// broadcast against x's [N, C, ...].
Tensor channel_param(std::string_view name, const char* arg, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return {};
  const std::int64_t c = x.layout().dims()[1];
  ops::require_dims(name, arg, t, Layout{c});
  ops::require_dtype(name, arg, t, x.dtype());
  std::vector<std::int64_t> dims(std::size_t(x.rank() - 1), 1), strides(dims.size(), 0);
  dims[0] = c;
  strides[0] = t.layout().strides()[0];
  return t.as_strided(Layout::strided(dims, strides, t.layout().offset()));
}

void require_stats(std::string_view name, const NormStats& stats, const Tensor& x, int groups) {
  const Layout shape{x.layout().dims()[0], groups};
  for (auto [arg, t] : {std::pair{"mean", &stats.mean}, std::pair{"rstd", &stats.rstd}}) {
    ops::require_dims(name, arg, *t, shape);
    ops::require_dtype(name, arg, *t, ops::stat_dtype(x.dtype()));
  }
}

// A [rows] statistic as one rank-1 view.
Tensor flat_stat(const Backend& b, const Tensor& t) {
  return ops::grouped2(b, t, t.layout(), 0).reshape({t.numel()});
}

// xh = (x - mean) rstd, x2 the [rows, n] view, in x's dtype: batch_norm_apply
// over [1, rows, n] with var = 1/rstd^2 and eps 0 gives back rstd.
Tensor normalised(const Backend& b, const Tensor& x2, const Tensor& mean, const Tensor& rstd) {
  const std::int64_t rows = x2.layout().dims()[0], n = x2.layout().dims()[1];
  const std::int64_t dims[] = {1, rows, n}, strides[] = {rows * n, x2.layout().strides()[0], x2.layout().strides()[1]};
  const Tensor x3 = x2.as_strided(Layout::strided(dims, strides, x2.layout().offset()));
  const Tensor var = div(b, ones(b, Layout{}, rstd.dtype()), mul(b, rstd, rstd));
  Tensor xh(Layout{1, rows, n}, x2.dtype());
  detail::launch(b, detail::args::nn_batch_norm_apply<Tensor>{.x = x3, .mean = mean, .var = var, .y = xh, .eps = 0.0},
                 "nn::group_norm_grad");
  return xh;
}

}  // namespace

NormStats group_norm(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const Tensor& bias,
                     double eps, Tensor& y) {
  constexpr std::string_view name = "nn::group_norm";
  require_groups(name, x, groups);
  ops::require_like(name, "x", x, "y", y);
  ops::require_argument(eps >= 0, name, "eps must not be negative");
  const Tensor w = channel_param(name, "weight", weight, x);
  const Tensor bi = channel_param(name, "bias", bias, x);
  const std::int64_t n = x.layout().dims()[0], rows = n * groups;
  const DType stat = ops::stat_dtype(x.dtype());
  NormStats stats{Tensor(Layout{n, groups}, stat), Tensor(Layout{n, groups}, stat)};
  if (x.numel() == 0) {  // as layer_norm: groups of no values have NaN statistics
    ops::fill_output(b, name, y);
    ops::fill_output(b, name, stats.mean, std::numeric_limits<double>::quiet_NaN());
    ops::fill_output(b, name, stats.rstd, std::numeric_limits<double>::quiet_NaN());
    return stats;
  }
  const Tensor x2 = ops::grouped2(b, x, split_channels(x.layout(), groups), 2);
  ops::GroupedOutput y2(b, y, split_channels(y.layout(), groups), 2);
  detail::launch(b,
                 detail::args::nn_layer_norm<Tensor>{.x = x2,
                                                     .y = y2.tensor(),
                                                     .mean = stats.mean.reshape({rows}),
                                                     .rstd = stats.rstd.reshape({rows}),
                                                     .rms = 0,
                                                     .eps = eps},
                 name);
  y2.finish();
  if (w.defined()) mul(b, y, w, y);
  if (bi.defined()) add(b, y, bi, y);
  return stats;
}

void group_norm_grad(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const NormStats& stats,
                     const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) {
  constexpr std::string_view name = "nn::group_norm_grad";
  require_groups(name, x, groups);
  ops::require_same_dtype(name, "x", x, "dy", dy);
  ops::require_same_dims(name, "x", x, "dy", dy);
  const Tensor w = channel_param(name, "weight", weight, x);
  require_stats(name, stats, x, groups);
  const std::int64_t c = x.layout().dims()[1];
  if (dx.defined()) ops::require_like(name, "x", x, "dx", dx);
  for (auto [arg, t] : {std::pair{"dweight", &dweight}, std::pair{"dbias", &dbias}}) {
    if (!t->defined()) continue;
    ops::require_dims(name, arg, *t, Layout{c});
    ops::require_dtype(name, arg, *t, x.dtype());
  }
  if (x.numel() == 0) {  // dx is empty; the per-channel sums are over nothing: 0
    if (dx.defined()) ops::fill_output(b, name, dx);
    if (dweight.defined()) ops::fill_output(b, name, dweight);
    if (dbias.defined()) ops::fill_output(b, name, dbias);
    return;
  }
  const Tensor x2 = ops::grouped2(b, x, split_channels(x.layout(), groups), 2);
  const Tensor mean = flat_stat(b, stats.mean), rstd = flat_stat(b, stats.rstd);
  if (dx.defined()) {
    // The weight is per channel, not per row element: applied to dy first.
    const Tensor g = w.defined() ? mul(b, dy, w) : dy;
    const Tensor g2 = ops::grouped2(b, g, split_channels(g.layout(), groups), 2);
    ops::GroupedOutput dx2(b, dx, split_channels(dx.layout(), groups), 2);
    detail::launch(b,
                   detail::args::nn_layer_norm_grad_input<Tensor>{
                       .x = x2, .mean = mean, .rstd = rstd, .dy = g2, .dx = dx2.tensor(), .rms = 0},
                   name);
    dx2.finish();
  }
  if (dweight.defined() || dbias.defined()) {
    // Per channel over (N, spatial): batch_norm's sums with mean 0 and var 1
    // (eps 0) over the normalised values.
    const Tensor xh = normalised(b, x2, mean, rstd);
    const Tensor dy3 = ops::grouped3(b, dy, dy.layout(), 1, 2);
    const DType stat = ops::stat_dtype(x.dtype());
    std::optional<ops::GroupedOutput> dw, db;
    if (dweight.defined()) dw.emplace(b, dweight, dweight.layout(), 0);
    if (dbias.defined()) db.emplace(b, dbias, dbias.layout(), 0);
    detail::launch(b,
                   detail::args::nn_batch_norm_grad_params<Tensor>{
                       .x = xh.reshape({dy3.layout().dims()[0], c, dy3.layout().dims()[2]}),
                       .mean = zeros(b, Layout{c}, stat),
                       .var = ones(b, Layout{c}, stat),
                       .dy = dy3,
                       .dgamma = dw ? dw->tensor().reshape({c}) : Tensor{},
                       .dbeta = db ? db->tensor().reshape({c}) : Tensor{},
                       .eps = 0.0},
                   name);
    if (dw) dw->finish();
    if (db) db->finish();
  }
}

GroupNorm group_norm(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const Tensor& bias,
                     double eps) {
  GroupNorm out{ops::new_like("nn::group_norm", "x", x), {}};
  out.stats = group_norm(b, x, groups, weight, bias, eps, out.y);
  return out;
}

NormGrads group_norm_grad(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const NormStats& stats,
                          const Tensor& dy) {
  constexpr std::string_view name = "nn::group_norm_grad";
  const Layout per_channel{channels_of(name, x)};
  NormGrads grads{ops::new_like(name, "x", x), Tensor(per_channel, x.dtype()), Tensor(per_channel, x.dtype())};
  group_norm_grad(b, x, groups, weight, stats, dy, grads.dx, grads.dgamma, grads.dbeta);
  return grads;
}

namespace {

// One group per channel (one group for no channels: it divides 0).
int instance_groups(std::string_view name, const Tensor& x) {
  const std::int64_t c = channels_of(name, x);
  ops::require_argument(c <= std::numeric_limits<int>::max(), name, "too many channels");
  return c > 0 ? int(c) : 1;
}

}  // namespace

NormStats instance_norm(const Backend& b, const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                        Tensor& y) {
  return group_norm(b, x, instance_groups("nn::instance_norm", x), weight, bias, eps, y);
}

void instance_norm_grad(const Backend& b, const Tensor& x, const Tensor& weight, const NormStats& stats,
                        const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) {
  group_norm_grad(b, x, instance_groups("nn::instance_norm_grad", x), weight, stats, dy, dx, dweight, dbias);
}

GroupNorm instance_norm(const Backend& b, const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  return group_norm(b, x, instance_groups("nn::instance_norm", x), weight, bias, eps);
}

NormGrads instance_norm_grad(const Backend& b, const Tensor& x, const Tensor& weight, const NormStats& stats,
                             const Tensor& dy) {
  return group_norm_grad(b, x, instance_groups("nn::instance_norm_grad", x), weight, stats, dy);
}

}  // namespace xylem::nn
