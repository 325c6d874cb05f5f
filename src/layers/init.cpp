// Weight and bias initialisation, PyTorch's rules on xylem's generator (the
// same numbers on every framework for a seed).
#include <cmath>

#include "xylem/layers.hpp"

namespace xylem::layers {
namespace {

struct Fans {
  double in, out;
};

// fan_in = dims[1] * receptive field, fan_out = dims[0] * receptive field, as
// torch.nn.init._calculate_fan_in_and_fan_out.
Fans fans(const Tensor& w) {
  if (w.rank() < 2)
    throw Error(ErrorCode::invalid_argument,
                "layers::init_weight: a weight needs rank 2 or more, got " + w.layout().dims_string());
  double receptive = 1;
  for (int axis = 2; axis < w.rank(); ++axis) receptive *= double(w.shape()[std::size_t(axis)]);
  return {double(w.shape()[1]) * receptive, double(w.shape()[0]) * receptive};
}

}  // namespace

void init_weight(const Backend& b, Tensor& weight, Init init, Generator& gen) {
  const Fans f = fans(weight);
  switch (init) {
    case Init::kaiming_uniform: {
      // PyTorch's Linear/Conv default: kaiming_uniform_ with a = sqrt(5), the
      // leaky-relu gain sqrt(2 / (1 + a^2)) times sqrt(3 / fan_in).
      const double a2 = 5.0;
      const double bound = std::sqrt(6.0 / ((1.0 + a2) * f.in));
      fill_uniform(b, weight, gen, -bound, bound);
      return;
    }
    case Init::xavier_uniform: {
      const double bound = std::sqrt(6.0 / (f.in + f.out));
      fill_uniform(b, weight, gen, -bound, bound);
      return;
    }
    case Init::xavier_normal:
      fill_normal(b, weight, gen, 0.0, std::sqrt(2.0 / (f.in + f.out)));
      return;
  }
}

void init_bias(const Backend& b, Tensor& bias, std::int64_t fan_in, Generator& gen) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  fill_uniform(b, bias, gen, -bound, bound);
}

}  // namespace xylem::layers
