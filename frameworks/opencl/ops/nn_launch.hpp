#pragma once
// What the launch code of the nn families shares (layer_norm, batch_norm, conv2d, pool, lrn:
// the families whose kernels take every float dtype, kernels/nn_common.cl):
// views as kernel arguments, the compute type of a storage dtype, the size
// of the work-groups that reduce one row or channel each.
#include <cstddef>
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

// Mirrors xy_view in kernels/nn_common.cl: the offset and the strides (in
// elements) of a view of rank <= 4.
struct ViewArg {
  cl_long offset = 0;
  cl_long s[4] = {};
};
static_assert(sizeof(ViewArg) == 5 * sizeof(cl_long));

// Mirrors xy_window in kernels/nn_common.cl: a sliding window over H x W
// planes giving P x Q outputs.
struct WindowArg {
  cl_long H = 0, W = 0, P = 0, Q = 0;
  cl_long kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};
static_assert(sizeof(WindowArg) == 12 * sizeof(cl_long));

// The kernel view of a tensor argument; zeros for an absent one (data ==
// nullptr), which the kernels test through its null pointer.
[[nodiscard]] ViewArg view_arg(const plugin::TensorArg& t) noexcept;

// The type the kernels compute and keep statistics in: f64 for f64, f32
// for f16, bf16 and f32.
[[nodiscard]] constexpr DType compute_dtype(DType storage) noexcept {
  return storage == DType::f64 ? DType::f64 : DType::f32;
}
[[nodiscard]] inline Scalar compute_scalar(DType storage, double value) noexcept {
  return Scalar{compute_dtype(storage), value};
}

// The work-group size of a kernel in which one group reduces `n` elements
// (a row, a channel): a power of two (XY_GROUP_SUM halves it), no larger
// than the work needs. CPU devices run a group's items as a loop (the
// barriers split it), so a few dozen items suffice there.
[[nodiscard]] std::size_t reduction_group_size(const Device& device, const KernelInfo& kernel, std::int64_t n);

}  // namespace xylem::opencl
