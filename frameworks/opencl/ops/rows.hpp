#pragma once
// How the reduce and softmax families (kernels/rows.cl) spread the slices of
// a [outer, r, inner] view: a work-group per slice (_rows kernels) when the
// slices are long, a work-item per slice (_cols) otherwise.
#include <cstddef>
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

struct RowPlan {
  bool grouped = false;   // _rows: one group per slice
  std::size_t local = 1;  // its size (a power of two)
};

// CPU devices run a group's items as a loop, each over a contiguous share
// walked in vectors: a share of at least a few hundred elements pays for
// the group's barriers, and a slice per item is best when slices are short
// or strided across many outputs. GPUs want a group per long slice, and an
// item per slice where neighbouring slices are neighbours in memory.
[[nodiscard]] inline RowPlan plan_rows(const Device& device, const KernelInfo& grouped_kernel, std::int64_t r,
                                       std::int64_t inner, std::int64_t slices) {
  const bool cpu = (device.info().type & CL_DEVICE_TYPE_CPU) != 0;
  RowPlan plan;
  if (cpu) {
    // A group per slice only when the slices are too few to keep every core
    // busy with one each.
    plan.grouped = r >= (inner == 1 ? 2048 : 4096) && slices < 4 * std::int64_t{device.info().compute_units};
    std::size_t limit = std::min<std::size_t>(grouped_kernel.max_local, 16);
    while (plan.local * 2 <= limit && static_cast<std::int64_t>(plan.local) * 2 * 512 <= r) plan.local *= 2;
  } else {
    plan.grouped = r >= 256 && (inner == 1 || slices < 4096);
    std::size_t limit = std::min<std::size_t>(grouped_kernel.max_local, 256);
    while (plan.local * 2 <= limit && static_cast<std::int64_t>(plan.local) < r) plan.local *= 2;
  }
  return plan;
}

// The work-group size of the _cols kernels (an item per slice): small on
// CPU devices, where each item is already a whole slice of work and the
// pool's threads balance groups, not items.
[[nodiscard]] inline std::size_t cols_local(const Device& device, const KernelInfo& kernel) {
  return (device.info().type & CL_DEVICE_TYPE_CPU) ? std::min<std::size_t>(kernel.max_local, 4) : kernel.local;
}

// Groups of `local` items covering `items`.
[[nodiscard]] inline std::size_t groups_for(std::int64_t items, std::size_t local) {
  return (static_cast<std::size_t>(items) + local - 1) / local;
}

// The __local scratch of a grouped kernel: `local` elements of the compute
// type of `storage` (f64 for f64, f32 otherwise).
[[nodiscard]] inline LocalBytes group_scratch(DType storage, std::size_t local) {
  return LocalBytes{local * (storage == DType::f64 ? sizeof(double) : sizeof(float))};
}

}  // namespace xylem::opencl
