// BatchNorm2d, LayerNorm and RMSNorm (nn::batch_norm, nn::layer_norm, nn::rms_norm
// and gradients).
#include <cstdint>
#include <string>
#include <vector>

#include "xylem/layers.hpp"

namespace xylem::layers {
namespace {

// Statistics are kept in f64 for f64 inputs, in f32 otherwise (nn's rule).
DType stats_dtype(DType dtype) { return dtype == f64 ? f64 : f32; }

Tensor count_tensor(std::int64_t n) { return Tensor::from(std::vector<std::int64_t>{n}, Layout{}); }

std::string dims_string(const std::vector<std::int64_t>& dims) {
  return Layout(std::span<const std::int64_t>(dims)).dims_string();
}

// Whether x's trailing axes are `shape` (LayerNorm's and RMSNorm's inputs).
bool ends_with(const Layout& x, const std::vector<std::int64_t>& shape) {
  const int k = static_cast<int>(shape.size());
  bool fits = x.rank() >= k;
  for (int i = 0; fits && i < k; ++i) fits = x.dim(x.rank() - k + i) == shape[std::size_t(i)];
  return fits;
}

}  // namespace

BatchNorm2d::BatchNorm2d(const Backend& b, std::int64_t channels, double eps, double momentum, DType dtype)
    : channels_(channels), eps_(eps), momentum_(momentum) {
  const Layout c{channels};
  weight = {"weight", ones(b, c, dtype), {}};
  bias = {"bias", zeros(b, c, dtype), {}};
  running_mean = {"running_mean", zeros(b, c, stats_dtype(dtype))};
  running_var = {"running_var", ones(b, c, stats_dtype(dtype))};
  count_made_ = count_tensor(0);
  num_batches_tracked = {"num_batches_tracked", count_made_, true};
}

std::string BatchNorm2d::describe() const { return "BatchNorm2d(" + std::to_string(channels_) + ")"; }
std::vector<Parameter*> BatchNorm2d::parameters() { return {&weight, &bias}; }
std::vector<Buffer*> BatchNorm2d::buffers() { return {&running_mean, &running_var, &num_batches_tracked}; }

Layout BatchNorm2d::output_shape(const Layout& x) const {
  if (x.rank() != 4 || x.dim(1) != channels_) bad_input(x, "[N, " + std::to_string(channels_) + ", H, W]");
  return x;
}

void BatchNorm2d::count_batch() {
  if (!num_batches_tracked.value.shares_data_with(count_made_))
    counted_ = num_batches_tracked.value.to_vector<std::int64_t>().at(0);
  count_made_ = count_tensor(++counted_);
  num_batches_tracked.value = count_made_;
}

Tensor BatchNorm2d::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  nn::BatchNorm r = nn::batch_norm(b, x, weight.value, bias.value, running_mean.value, running_var.value, training(),
                                   momentum_, eps_);
  if (training()) count_batch();
  x_ = x;
  stats_ = r.stats;
  trained_ = training();
  return r.y;
}

Tensor BatchNorm2d::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, x_.layout());
  nn::NormGrads g = nn::batch_norm_grad(b, x_, weight.value, stats_, trained_, eps_, dy);
  accumulate(b, weight, g.dgamma);
  accumulate(b, bias, g.dbeta);
  x_ = Tensor{};
  stats_ = {};
  return g.dx;
}

LayerNorm::LayerNorm(const Backend& b, std::vector<std::int64_t> shape, double eps, bool affine, DType dtype)
    : shape_(std::move(shape)), eps_(eps) {
  if (shape_.empty()) throw Error(ErrorCode::invalid_argument, "LayerNorm: the normalised shape is empty");
  if (affine) {
    const Layout s{std::span<const std::int64_t>(shape_)};
    weight = {"weight", ones(b, s, dtype), {}};
    bias = {"bias", zeros(b, s, dtype), {}};
  }
}

std::string LayerNorm::describe() const { return "LayerNorm(" + dims_string(shape_) + ")"; }

std::vector<Parameter*> LayerNorm::parameters() {
  if (weight.value.defined()) return {&weight, &bias};
  return {};
}

Layout LayerNorm::output_shape(const Layout& x) const {
  if (!ends_with(x, shape_)) bad_input(x, "[..., " + dims_string(shape_).substr(1));
  return x;
}

Tensor LayerNorm::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  const int k = static_cast<int>(shape_.size());
  nn::LayerNorm r = nn::layer_norm(b, x, k, weight.value, bias.value, eps_);
  x_ = x;
  stats_ = r.stats;
  return r.y;
}

Tensor LayerNorm::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, x_.layout());
  nn::NormGrads g = nn::layer_norm_grad(b, x_, static_cast<int>(shape_.size()), weight.value, stats_, dy);
  if (weight.value.defined()) {
    accumulate(b, weight, g.dgamma);
    accumulate(b, bias, g.dbeta);
  }
  x_ = Tensor{};
  stats_ = {};
  return g.dx;
}

RMSNorm::RMSNorm(const Backend& b, std::vector<std::int64_t> shape, double eps, bool affine, DType dtype)
    : shape_(std::move(shape)), eps_(eps) {
  if (shape_.empty()) throw Error(ErrorCode::invalid_argument, "RMSNorm: the normalised shape is empty");
  if (affine) weight = {"weight", ones(b, Layout{std::span<const std::int64_t>(shape_)}, dtype), {}};
}

std::string RMSNorm::describe() const { return "RMSNorm(" + dims_string(shape_) + ")"; }

std::vector<Parameter*> RMSNorm::parameters() {
  if (weight.value.defined()) return {&weight};
  return {};
}

Layout RMSNorm::output_shape(const Layout& x) const {
  if (!ends_with(x, shape_)) bad_input(x, "[..., " + dims_string(shape_).substr(1));
  return x;
}

Tensor RMSNorm::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  nn::RmsNorm r = nn::rms_norm(b, x, static_cast<int>(shape_.size()), weight.value, eps_);
  x_ = x;
  rstd_ = r.rstd;
  return r.y;
}

Tensor RMSNorm::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, x_.layout());
  nn::RmsNormGrads g = nn::rms_norm_grad(b, x_, static_cast<int>(shape_.size()), weight.value, rstd_, dy);
  if (weight.value.defined()) accumulate(b, weight, g.dweight);
  x_ = Tensor{};
  rstd_ = Tensor{};
  return g.dx;
}

}  // namespace xylem::layers
