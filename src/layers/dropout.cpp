// Dropout through nn::dropout, one counter range of the seed's stream per
// training step.
#include <cstdint>
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {
namespace {
// Counters reserved for one step: a step's mask never reuses another's.
constexpr std::uint64_t kStepCounters = std::uint64_t{1} << 40;
}  // namespace

Dropout::Dropout(double p, std::uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0 && p < 1))
    throw Error(ErrorCode::invalid_argument, "Dropout: p must be in [0, 1), got " + std::to_string(p));
}

std::string Dropout::describe() const { return "Dropout(p=" + std::to_string(p_) + ")"; }

Layout Dropout::output_shape(const Layout& x) const { return x; }

Tensor Dropout::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  if (!training()) {
    masked_ = false;
    y_shape_ = x.layout();
    saved_ = true;
    return x;
  }
  if (std::uint64_t(x.numel()) > kStepCounters)
    throw Error(ErrorCode::invalid_argument,
                describe() + ": input " + x.layout().dims_string() + " holds more than 2^40 elements");
  Generator gen(seed_);
  gen.advance(step_ * kStepCounters);
  nn::Dropout r = nn::dropout(b, x, p_, gen);
  ++step_;
  mask_ = r.mask;
  masked_ = true;
  y_shape_ = x.layout();
  saved_ = true;
  return r.y;
}

Tensor Dropout::backward(const Backend& b, const Tensor& dy) {
  require_backward(saved_, dy, y_shape_);
  saved_ = false;
  return masked_ ? nn::dropout_grad(b, dy, mask_) : dy;
}

}  // namespace xylem::layers
