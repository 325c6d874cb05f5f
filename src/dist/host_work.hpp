#pragma once
// Work on tensors' host copies, ordered like an op (tensor_uses.hpp): it
// starts after the last write of what it reads and the reads of what it
// writes, and later ops wait for it. A tensor last written on OpenCL is
// downloaded first; what it writes is current on the host alone.
#include <cstddef>
#include <functional>
#include <span>

#include "dist/tensor_uses.hpp"
#include "xylem/future.hpp"

namespace xylem::dist::detail {

// The first byte of each use's elements in its host copy (null for a
// tensor of no elements), in the order of `uses`.
using HostWork = std::function<void(std::span<std::byte* const> data)>;

// Enqueues `work` on the work queue. Throws before enqueuing anything
// (uninitialized_read for a read of a tensor never written, naming `op`,
// out_of_memory when a host copy cannot be made).
EventPtr enqueue_host_work(std::span<const TensorUse> uses, HostWork work, const char* op);

}  // namespace xylem::dist::detail
