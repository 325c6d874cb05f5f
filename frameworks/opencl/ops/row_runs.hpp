#pragma once
// How the per-element kernels of the nn families (pool, norm, lrn, conv's
// data movement) split
// their work: each work-item takes a run of `per` neighbours along the last
// axis of one row (xy_row_run in kernels/nn_common.cl). On CPU devices a
// long run, so that an item divides its position out once and walks the run
// by adding strides (and in vectors where the axis is dense); on GPUs one
// element, neighbouring items on neighbouring elements. They replaced an
// item per element that divided its index by 64-bit dims three to five
// times: on PoCL that division cost more than the op (batch_norm, pooling
// and im2col at 0.05-0.2x native before, measured by xylem_bench_opencl).
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

struct RowRuns {
  std::int64_t per = 1;  // elements of a row per item
  std::size_t items = 0;
  cl_int narrow = 0;  // every index of the launch fits in 31 bits: the kernels divide in 32-bit
};

// Runs over `rows` rows of `length` elements each. CPU runs are whole rows
// up to `cpu_run` elements (a multiple of the vector width, so the runs of a
// row start aligned alike).
[[nodiscard]] inline RowRuns row_runs(const Device& device, std::int64_t rows, std::int64_t length,
                                      std::int64_t cpu_run = 4096) {
  RowRuns r;
  if (device.info().type & CL_DEVICE_TYPE_CPU) r.per = std::clamp<std::int64_t>(length, 1, cpu_run);
  const std::int64_t chunks = (length + r.per - 1) / r.per;
  const std::int64_t items = rows * chunks;
  r.items = static_cast<std::size_t>(items);
  // Items past the end (the global size is rounded up to the group size)
  // divide too: leave room for a group.
  r.narrow = items + 65536 < INT32_MAX ? 1 : 0;
  return r;
}

}  // namespace xylem::opencl
