#pragma once
// The window arguments Conv2d and the pools take, checked when the layer is
// made: a bad one is the caller's argument (invalid_argument), not a shape
// that fails to fit at forward.
#include <string>

#include "xylem/error.hpp"

namespace xylem::layers {

// kernel >= 1, padding >= 0, stride >= min_stride (the pools take 0 for "the kernel").
inline void require_window(const std::string& layer, int kernel, int stride, int padding, int min_stride) {
  if (kernel < 1 || stride < min_stride || padding < 0)
    throw Error(ErrorCode::invalid_argument, layer + ": kernel " + std::to_string(kernel) + ", stride " +
                                                 std::to_string(stride) + ", padding " + std::to_string(padding) +
                                                 "; the kernel must be at least 1, the stride at least " +
                                                 std::to_string(min_stride) + " and the padding not negative");
}

}  // namespace xylem::layers
