// The reference networks with the input and batch of the convnet benchmarks.
#include <array>

#include "xylem/models.hpp"

namespace xylem::models {

std::span<const Reference> references() noexcept {
  static constexpr std::array<Reference, 3> kReferences{{
      {"alexnet", &alexnet, 3, 224, 224, 128},
      {"overfeat_fast", &overfeat_fast, 3, 231, 231, 128},
      {"vgg_a", &vgg_a, 3, 224, 224, 64},
  }};
  return kReferences;
}

}  // namespace xylem::models
