#pragma once
// Helpers shared by the nn conformance tests: tolerances of accumulations,
// shapes from Dims, and descriptions for traces.
#include <cmath>
#include <string>

#include "conformance/conformance.hpp"

namespace conformance {

// Error of an f32 (f64 for f64) accumulation of n terms, relative to the sum
// of their magnitudes: blocked or pairwise sums stay well inside.
inline double acc(DType dtype, std::int64_t n) { return tol(dtype).eps * (2 * std::sqrt(double(n)) + 16); }

// Below this, results need no relative accuracy: f16's subnormals are coarse
// and f32 kernels may flush subnormals to zero.
inline double floor_of(DType dtype) { return dtype == DType::f16 ? 6e-8 : dtype == DType::f64 ? 1e-300 : 2e-38; }

// The statistics dtype of norms: f32 for f16/bf16/f32, f64 for f64.
inline DType stat_dtype(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }

inline Layout shape_of(const Dims& dims) { return Layout(std::span<const std::int64_t>(dims)); }

inline std::int64_t product(const Dims& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

inline std::string dims_text(const Dims& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace conformance
