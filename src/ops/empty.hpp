#pragma once
// Empty batches. An op whose output has no elements still writes it: the
// result is valid (it holds nothing), so the next op can read it instead of
// raising uninitialized_read. Where an output has elements but the op
// reduces over nothing (conv2d with C = 0, a filter gradient over an empty
// batch, a mean of no values), the wrappers write the reduction's value
// over nothing (0 for sums, NaN for means) and launch no kernel of the op.
#include <string_view>

#include "core/dispatch.hpp"
#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem::ops {

// Writes `value` into every element of `t`; for a `t` with no elements this
// only marks it written (the dispatcher runs no kernel for a launch that
// writes nothing). `op` names the caller in any error.
inline void fill_output(const Backend& b, std::string_view op, Tensor& t, double value = 0) {
  detail::launch(b, detail::args::creation_fill<Tensor>{.y = t, .value = value}, op);
}

}  // namespace xylem::ops
