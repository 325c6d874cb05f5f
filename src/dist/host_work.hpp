#pragma once
// Work on tensors' host copies, ordered like an op: it starts after the
// last write of what it reads and the reads of what it writes, and later
// ops wait for it. The coherence brings each host copy up to date (a
// tensor last written on OpenCL is downloaded) and marks what it writes
// current on the host alone.
#include <cstddef>
#include <functional>
#include <span>

#include "xylem/future.hpp"
#include "xylem/tensor.hpp"

namespace xylem::dist::detail {

struct HostUse {
  Tensor tensor;  // dense (Layout::is_contiguous)
  bool reads = false;
  bool writes = false;
};

// The first byte of each use's elements in its host copy (null for a
// tensor of no elements), in the order of `uses`.
using HostWork = std::function<void(std::span<std::byte* const> data)>;

// Enqueues `work` on the work queue. Throws before enqueuing anything
// (uninitialized_read for a read of a tensor never written, naming `op`,
// out_of_memory when a host copy cannot be made).
EventPtr enqueue_host_work(std::span<const HostUse> uses, HostWork work, const char* op);

}  // namespace xylem::dist::detail
