#pragma once
// ReduceOp::avg: a transport sums, then each rank divides.
#include <cstddef>

#include "xylem/dtype.hpp"

namespace xylem::dist::detail {

// data[i] /= n for `count` elements (integers truncate; f16 and bf16 in
// f32). invalid_argument for bool, which has no average.
void divide(void* data, std::size_t count, DType dtype, int n);

}  // namespace xylem::dist::detail
