#pragma once
// The dtype normalisation statistics (mean, rstd, var) are kept in.
#include "xylem/dtype.hpp"

namespace xylem::ops {

// Statistics accumulate in f32 for the narrower types, f64 for f64.
[[nodiscard]] inline DType stat_dtype(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

}  // namespace xylem::ops
