#include "models/builder.hpp"

#include <memory>
#include <utility>

#include "xylem/math.hpp"

namespace xylem::models::detail {
namespace {

// SplitMix64's finaliser: nearby (seed, position) pairs give unrelated
// dropout seeds, so no two dropouts of a network share a mask stream.
std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Builder::Builder(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed)
    : b_(b), dtype_(options.dtype), options_(options), seed_(seed), gen_(seed) {
  if (dtype_ != f32 && dtype_ != f64) options_.dtype = f32;
}

Builder& Builder::conv(std::int64_t in, std::int64_t out, int kernel, int stride, int padding) {
  layers_.push_back(std::make_unique<layers::Conv2d>(b_, gen_, in, out, kernel, stride, padding, true, options_));
  return *this;
}

Builder& Builder::relu() {
  layers_.push_back(std::make_unique<layers::ReLU>());
  return *this;
}

Builder& Builder::max_pool(int kernel, int stride) {
  layers_.push_back(std::make_unique<layers::MaxPool2d>(kernel, stride));
  return *this;
}

Builder& Builder::flatten() {
  layers_.push_back(std::make_unique<layers::Flatten>());
  return *this;
}

Builder& Builder::dropout() {
  layers_.push_back(std::make_unique<layers::Dropout>(0.5, mix(seed_ + 0x9e3779b97f4a7c15ULL * (layers_.size() + 1))));
  return *this;
}

Builder& Builder::linear(std::int64_t in, std::int64_t out) {
  layers_.push_back(std::make_unique<layers::Linear>(b_, gen_, in, out, true, options_));
  return *this;
}

layers::Sequential Builder::finish() {
  if (dtype_ != options_.dtype)
    for (auto& layer : layers_)
      for (layers::Parameter* p : layer->parameters()) p->value = cast(b_, p->value, dtype_);
  return layers::Sequential(std::exchange(layers_, {}));
}

}  // namespace xylem::models::detail
