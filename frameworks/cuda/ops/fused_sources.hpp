#pragma once
// Text embedded in the CUDA plugin at build time (the OpenCL plugin's
// cmake/embed_sources.cmake): what NVRTC compiles with each fused kernel.
#include <array>
#include <string>
#include <string_view>

#include "xylem/dtype.hpp"

namespace xylem::cuda::sources {

extern const std::string_view math_h;  // include/xylem/plugin/math.h

}  // namespace xylem::cuda::sources

namespace xylem::cuda {

// The dialect of xylem/plugin/fused_source.hpp in CUDA C++ for dtype (T the
// compute type, ST the storage type, XY_LD / XY_ST, XY_UNARY / XY_BINARY
// and the rest that file lists), then math.h: what every NVRTC-compiled
// kernel of a fused program starts with (fused.cpp).
[[nodiscard]] std::string fused_prelude(DType dtype);

// A program's eight reals as those kernels take them (their parameters
// p0..p7 are of T): arg(r) points at real r in dtype's compute type.
class ProgramReals {
 public:
  ProgramReals(const std::array<double, 8>& reals, DType dtype) : d_(reals), f64_(dtype == DType::f64) {
    for (std::size_t r = 0; r < d_.size(); ++r) f_[r] = static_cast<float>(d_[r]);
  }
  [[nodiscard]] void* arg(std::size_t r) noexcept { return f64_ ? static_cast<void*>(&d_[r]) : &f_[r]; }
  [[nodiscard]] static constexpr std::size_t size() noexcept { return 8; }

 private:
  std::array<double, 8> d_;
  std::array<float, 8> f_{};
  bool f64_;
};

}  // namespace xylem::cuda
