// GroupNorm (nn::group_norm and its gradient).
#include <cstdint>
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {

GroupNorm::GroupNorm(const Backend& b, int groups, std::int64_t channels, double eps, bool affine, DType dtype)
    : groups_(groups), channels_(channels), eps_(eps) {
  if (groups < 1 || channels < 0 || channels % groups != 0)
    throw Error(ErrorCode::invalid_argument, "GroupNorm: " + std::to_string(groups) +
                                                 " groups must be at least 1 and divide the " +
                                                 std::to_string(channels) + " channels");
  if (affine) {
    weight = {"weight", ones(b, Layout{channels}, dtype), {}};
    bias = {"bias", zeros(b, Layout{channels}, dtype), {}};
  }
}

std::string GroupNorm::describe() const {
  return "GroupNorm(" + std::to_string(groups_) + ", " + std::to_string(channels_) + ")";
}

std::vector<Parameter*> GroupNorm::parameters() {
  if (weight.value.defined()) return {&weight, &bias};
  return {};
}

Layout GroupNorm::output_shape(const Layout& x) const {
  if (x.rank() < 2 || x.dim(1) != channels_) bad_input(x, "[N, " + std::to_string(channels_) + ", ...]");
  return x;
}

Tensor GroupNorm::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  nn::GroupNorm r = nn::group_norm(b, x, groups_, weight.value, bias.value, eps_);
  x_ = x;
  stats_ = r.stats;
  return r.y;
}

Tensor GroupNorm::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, x_.layout());
  nn::NormGrads g = nn::group_norm_grad(b, x_, groups_, weight.value, stats_, dy);
  if (weight.value.defined()) {
    accumulate(b, weight, g.dgamma);
    accumulate(b, bias, g.dbeta);
  }
  x_ = Tensor{};
  stats_ = {};
  return g.dx;
}

}  // namespace xylem::layers
