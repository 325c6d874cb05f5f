#pragma once
// Appends layers to a Sequential with one backend, one parameter dtype and
// one weight stream, so each network reads as its list of layers.
#include <cstdint>

#include "xylem/layers.hpp"

namespace xylem::models::detail {

class Builder {
 public:
  Builder(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed)
      : b_(b), options_(options), seed_(seed), gen_(seed) {}

  Builder& conv(std::int64_t in, std::int64_t out, int kernel, int stride = 1, int padding = 0);
  Builder& relu();
  Builder& max_pool(int kernel, int stride);
  Builder& flatten();
  // Dropout of p = 0.5 (PyTorch's default and these networks'), its seed
  // drawn from the network's seed and its position.
  Builder& dropout();
  Builder& linear(std::int64_t in, std::int64_t out);

  // The network; the builder is empty afterwards.
  layers::Sequential finish();

 private:
  Backend b_;
  layers::ParameterOptions options_;
  std::uint64_t seed_;
  Generator gen_;
  std::vector<std::unique_ptr<layers::Layer>> layers_;
};

}  // namespace xylem::models::detail
