#pragma once
// Writes compiled programs into the on-disk cache off the path of the call
// that compiled them. On PoCL, asking a program for its binary compiles
// every kernel in it once more for a generic work-group size: 1 to 4 s for
// one family's program on a busy 2-core machine, longer than the build the
// first call needs. A first call therefore builds, launches and returns;
// one background thread, at low priority, fetches the binaries and stores
// them in order. The process waits for the queued writes at exit (before
// the OpenCL compiler's own exit handlers), so the cache is complete
// afterwards.
#include <functional>

namespace xylem::opencl {

// Runs `write` on the writer thread after the writes queued before it. A
// write that throws is dropped (the cache is an optimisation: the next
// process compiles again).
void write_later(std::function<void()> write);

}  // namespace xylem::opencl
