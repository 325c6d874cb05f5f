#pragma once
// Automatic elementwise fusion (docs/ARCHITECTURE.md, "Automatic fusion").
// math::unary and math::binary calls are not launched when made: they join
// one pending chain, which runs as fused kernels when anything needs their
// data: an op or host read of what they write, a write of what they read or
// write, a wait for the device, interop, a collective, a capture. Each
// storage counts the pending calls that read and write it, so work that
// touches neither runs without the chain. Inside a capture the calls wait
// in a chain of the capturing thread's own, and their fused kernels are
// recorded into the graph (run at the latest when the block returns). Values
// the program can no longer see (an intermediate whose last Tensor handle is
// gone) are never stored. Output memory is allocated when the call is made,
// so out of memory is still raised by the call that asked for it.
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/storage.hpp"
#include "xylem/backend.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {

// Takes the call into the pending chain and returns true (a blas::gemm
// begins a new chain, whose calls become its epilogue); or returns false,
// having run what is pending wherever the call depends on it, and the caller
// launches the call itself (an op other than math::unary or math::binary, a
// view as output, fusion off, a call from another thread than the chain's,
// ...). `tensors` are the call's arguments in the op list's order, `access`
// how the call uses each.
[[nodiscard]] bool defer_elementwise(const Backend& backend, const plugin::OpCall& call,
                                     const std::array<const Tensor*, plugin::kMaxOpTensors>& tensors,
                                     const std::array<plugin::Access, plugin::kMaxOpTensors>& access,
                                     std::string_view name);

// Takes nn::softmax (log_softmax for log = 1) of x3 into y3 as the head of a
// new chain (what is pending runs first; the calls that take its result up
// become its epilogue) and returns true; false: the caller launches it. y is
// the caller's output, y3 its [outer, r, inner] view, as x3 is x's; only a
// fresh whole contiguous y that x does not share is taken.
[[nodiscard]] bool defer_softmax(const Backend& backend, const Tensor& x3, const Tensor& y3, const Tensor& y, int log,
                                 std::string_view name);

// The same for math::reduce of x3 [outer, r, inner] along axis 1 into y2
// [outer, inner], y's view, with code XY_RED_SUM, _MEAN, _MAX or _MIN (any
// other: false).
[[nodiscard]] bool defer_reduce(const Backend& backend, const Tensor& x3, const Tensor& y2, const Tensor& y, int code,
                                std::string_view name);

// Runs the process's pending chain now (nothing when there is none, or when
// called from inside a flush on this thread).
void flush_fusion_now();

// Runs this thread's capture chain (recorded into its capture).
void flush_capture_chain();

// At the end of a capture's block: runs this thread's capture chain into the
// graph (`run`), or drops it (the block failed: the capture is refused).
void end_capture_fusion(bool run);

// What the chains run so far did (for tests).
struct FusionCounts {
  std::uint64_t kernels = 0;  // fused kernels launched (chains of two calls or more)
  std::uint64_t calls = 0;    // calls that joined a chain
  std::uint64_t stored = 0;   // results written to memory
  std::uint64_t dropped = 0;  // results nobody could read, never written
  std::uint64_t epilogues = 0;  // of the kernels, heads with their tail (the epilogue ops)
};
[[nodiscard]] FusionCounts fusion_counts() noexcept;

// Whether a chain is pending: the process's; this thread's capture chain.
extern std::atomic<bool> fusion_pending;
extern thread_local bool fusion_capture_pending;

// Runs everything pending: before work that may touch any tensor (a wait for
// the whole device, a capture, the memory and transfer totals).
inline void flush_fusion() {
  if (fusion_pending.load(std::memory_order_acquire)) flush_fusion_now();
  if (fusion_capture_pending) flush_capture_chain();
}

// Runs what is pending before `s` is read (or written, `writes`): the
// process's chain where a pending call writes it (or, for a write, reads or
// writes it); this thread's capture chain always. Called before the
// storage's lock is taken.
inline void flush_fusion_for(const Storage& s, bool writes) {
  if (fusion_capture_pending) flush_capture_chain();
  if (s.fusion_writes.load(std::memory_order_acquire) != 0 ||
      (writes && s.fusion_reads.load(std::memory_order_acquire) != 0))
    flush_fusion_now();
}

}  // namespace xylem::detail
