#pragma once
// Automatic elementwise fusion (docs/ARCHITECTURE.md, "Automatic fusion").
// math::unary and math::binary calls are not launched when made: they join
// one pending chain, which runs as a single math::fused kernel when
// anything else needs the data: any other op, a host read or wait, a
// transfer, interop, a collective, a capture. Inside a capture the calls
// wait in a chain of the capturing thread's own, and their fused kernels
// are recorded into the graph (run at the latest when the block returns). Values the program can no
// longer see (an intermediate whose last Tensor handle is gone) are never
// stored. Output memory is allocated when the call is made, so out of
// memory is still raised by the call that asked for it.
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "xylem/backend.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {

// Takes the call into the pending chain and returns true; or returns false,
// the chain flushed first where the call could not join it, and the caller
// launches the call itself (an op other than math::unary or math::binary, a
// view as output, a capture in progress, fusion off, ...). `tensors` are the
// call's arguments in the op list's order.
[[nodiscard]] bool defer_elementwise(const Backend& backend, const plugin::OpCall& call,
                                     const std::array<const Tensor*, plugin::kMaxOpTensors>& tensors,
                                     std::string_view name);

// Runs the pending chain now (nothing when there is none, or when called
// from inside a flush on this thread).
void flush_fusion_now();

// What the chains run so far did (for tests and `xylem info`-style checks).
struct FusionCounts {
  std::uint64_t kernels = 0;  // fused kernels launched (chains of two calls or more)
  std::uint64_t calls = 0;    // calls that joined a chain
  std::uint64_t stored = 0;   // results written to memory
  std::uint64_t dropped = 0;  // results nobody could read, never written
};
[[nodiscard]] FusionCounts fusion_counts() noexcept;

// Runs this thread's capture chain (recorded into its capture).
void flush_capture_chain();

// At the end of a capture's block: runs this thread's capture chain into the
// graph (`run`), or drops it (the block failed: the capture is refused).
void end_capture_fusion(bool run);

// Whether a chain is pending: the fast tests every flush point makes (the
// process's chain; this thread's capture chain).
extern std::atomic<bool> fusion_pending;
extern thread_local bool fusion_capture_pending;

// Every path that touches tensor data other than by launching an op calls
// this first, before it takes any storage's lock.
inline void flush_fusion() {
  if (fusion_pending.load(std::memory_order_acquire)) flush_fusion_now();
  if (fusion_capture_pending) flush_capture_chain();
}

}  // namespace xylem::detail
