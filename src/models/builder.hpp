#pragma once
// Appends layers to a Sequential with one backend, one parameter dtype and
// one weight stream, so each network reads as its list of layers.
#include <cstdint>

#include "xylem/layers.hpp"

namespace xylem::models::detail {

// Weights are drawn in f32 where the generator cannot draw the parameters'
// dtype (f16, bf16) and rounded to it in finish(), as PyTorch's
// model.to(dtype) does after an f32 initialisation.
class Builder {
 public:
  Builder(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed);

  Builder& conv(std::int64_t in, std::int64_t out, int kernel, int stride = 1, int padding = 0);
  Builder& relu();
  Builder& max_pool(int kernel, int stride);
  Builder& flatten();
  // Dropout of p = 0.5 (PyTorch's default and these networks'), its seed
  // drawn from the network's seed and its position.
  Builder& dropout();
  Builder& linear(std::int64_t in, std::int64_t out);

  // The network, its parameters in the asked dtype; the builder is empty
  // afterwards.
  layers::Sequential finish();

 private:
  Backend b_;
  DType dtype_;                      // the parameters' dtype
  layers::ParameterOptions options_;  // as asked, but with the dtype they are drawn in
  std::uint64_t seed_;
  Generator gen_;
  std::vector<std::unique_ptr<layers::Layer>> layers_;
};

}  // namespace xylem::models::detail
