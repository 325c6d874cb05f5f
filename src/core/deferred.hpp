#pragma once
// Errors that enqueued work finds, raised on the host later. An op that
// checks its data on the device (indices in range) does not wait for the
// answer: the work sets a flag, the flag is read back to the host
// asynchronously, and the next host wait that comes after the op (reading
// any tensor, a future's get, Backend::synchronize) waits for that read too
// and raises the error there. Like CUDA's device asserts, but typed, and
// the device stays usable; an error is raised once, never dropped.
#include <cstdint>
#include <functional>
#include <vector>

#include "xylem/future.hpp"

namespace xylem::detail {

// `flag`: the host read of an i32 flag that the checking work leaves 0, or
// sets otherwise; `raise(flag)` then throws the error it stands for.
void defer_check(Future<std::vector<std::int32_t>> flag, std::function<void(std::int32_t)> raise);

// Waits for the checks deferred so far and throws the first error one
// found; the checks after it stay for the next wait.
void raise_deferred();

// A host read's event whose wait() also raises the errors of the checks
// deferred before the read; `read` itself when there are none.
[[nodiscard]] EventPtr checked(EventPtr read);

}  // namespace xylem::detail
