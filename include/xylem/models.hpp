#pragma once
/// @file
/// xylem::models: reference networks built from xylem::layers, with the
/// input and batch of the public benchmarks that time them
/// (soumith/convnet-benchmarks). Layers are numbered as PyTorch's
/// nn.Sequential numbers them ("0.weight"), in one flat Sequential (no
/// features/classifier split), so the parameters line up one to one with
/// the same network written as a flat nn.Sequential.
///
/// Parameters take ParameterOptions' dtype; for f16 and bf16, which the
/// generator does not draw, weights are drawn in f32 and rounded (PyTorch's
/// model.to(dtype) after its f32 initialisation).
#include <cstdint>
#include <span>
#include <string_view>

#include "xylem/backend.hpp"
#include "xylem/layers.hpp"
#include "xylem/layout.hpp"

namespace xylem::models {

/// AlexNet as in "One weird trick" (torchvision's alexnet without its
/// adaptive pooling, so it takes 3x224x224 only): five convolutions
/// (64 k11 s4 p2, 192 k5 p2, 384, 256, 256 k3 p1) with three 3/2 max
/// pools, then dropout, 9216->4096, dropout, 4096->4096, 4096->1000.
/// 61,100,840 parameters. Weights are drawn from `seed`'s stream; the
/// dropouts take seeds derived from it.
layers::Sequential alexnet(const Backend& b, const layers::ParameterOptions& options = {}, std::uint64_t seed = 0);

/// Overfeat "fast" as the convnet benchmarks define it (3x231x231): 96 k11
/// s4, pool 2, 256 k5, pool 2, 512, 1024, 1024 k3 p1, pool 2, then
/// 36864->3072->4096->1000, no dropout. 145,920,872 parameters.
layers::Sequential overfeat_fast(const Backend& b, const layers::ParameterOptions& options = {},
                                 std::uint64_t seed = 0);

/// VGG-A (torchvision's vgg11 without its adaptive pooling, 3x224x224):
/// 3x3 convolutions of 64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M
/// (M: 2/2 max pool), then 25088->4096->4096->1000 with relu and dropout.
/// 132,863,336 parameters.
layers::Sequential vgg_a(const Backend& b, const layers::ParameterOptions& options = {}, std::uint64_t seed = 0);

/// A reference network and the input its public benchmark times it on.
struct Reference {
  std::string_view name;  ///< "alexnet", "overfeat_fast", "vgg_a"
  layers::Sequential (*make)(const Backend&, const layers::ParameterOptions&, std::uint64_t);  ///< builds it
  std::int64_t channels;  ///< of one input image
  std::int64_t height;    ///< of one input image
  std::int64_t width;     ///< of one input image
  std::int64_t batch;     ///< the benchmark's batch: 128, 128, 64

  /// [batch, channels, height, width].
  [[nodiscard]] Layout input(std::int64_t n) const { return Layout{n, channels, height, width}; }
};

/// AlexNet, Overfeat fast and VGG-A, in that order.
[[nodiscard]] std::span<const Reference> references() noexcept;

}  // namespace xylem::models
