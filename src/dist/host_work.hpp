#pragma once
// Work on tensors' host copies, ordered like an op (tensor_uses.hpp): it
// starts after the last write of what it reads and the reads of what it
// writes, and later ops wait for it. A tensor last written on OpenCL is
// downloaded first; what it writes is current on the host alone.
#include <cstddef>
#include <functional>
#include <span>

#include "dist/function_ref.hpp"
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

// One tensor's small work (at most the inline bytes of enqueue_host_work)
// run on the caller's thread at once, or null when it cannot be: the host
// copy is not current or has work pending, the data has another copy a
// device transport might take, the queue is busy, a graph is being
// captured. Then the caller goes the general way (enqueue_host_work),
// which also raises the errors. What enqueue_host_work's inline case
// does, for one tensor, without its general bookkeeping: that (vectors of
// uses, deps and closures on the heap) cost more than the transport's
// call itself at 1 KiB.
EventPtr run_small_here(const Tensor& t, bool reads, bool writes, FunctionRef<void(std::byte* data)> work);

}  // namespace xylem::dist::detail
