#pragma once
// xylem::dist's device transport on CUDA: NCCL communicators, one per
// (group, GPU), created non-blocking (blocking = 0) so that no NCCL call
// waits for a peer that may never come. Each collective is enqueued on
// the GPU's compute stream like a kernel; a watcher thread per
// communicator then polls its completion and ncclCommGetAsyncError against
// the call's deadline, and aborts the communicator (ncclCommAbort) on a
// timeout or a peer's failure, which fails the call's `done` event with
// Error(timeout) or Error(communication) instead of a hang.
#include <memory>

#include "xylem/plugin/dist.hpp"

namespace xylem::cuda {

// The framework's collectives, or null with `why` when NCCL is absent.
[[nodiscard]] plugin::dist::DeviceCollectives* nccl_collectives(std::string& why);

}  // namespace xylem::cuda
