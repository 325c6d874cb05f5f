#pragma once
/// @file
/// Capture and replay: record the ops a block launches on one backend once,
/// then run them again, as one unit of work, on whatever data their tensors
/// hold at replay time.
///
///     auto g = xylem::capture(backend, [&] { y = nn::relu(backend, blas::matmul(backend, x, w)); });
///     blas::copy(backend, next_batch, x);   // new data in a captured tensor
///     g.replay();                           // y holds relu(next_batch * w)
///
/// The block runs once, as it would eagerly, while its ops are recorded: every
/// check of the eager path (shapes, overlaps, never-written inputs, memory)
/// happens then, with the same errors, and the tensors hold the block's
/// results when capture returns. Only ops launched on the capturing thread are
/// recorded.
///
/// A graph holds the tensors its ops touched by their storage: a tensor made
/// inside the block stays alive as long as the graph, and a replay reads and
/// writes the same memory. rebind() points the graph at another tensor of
/// the same shape, strides and dtype.
///
/// Collectives on the backend's GPU (dist::Communicator through NCCL) are
/// part of the graph, so a data-parallel training step replays whole: every
/// rank captures the same block and replays its graph as often as the
/// others. Their tensors' addresses are fixed in the graph: rebind refuses
/// them (copy new data into them instead). They have no timeout there: a
/// rank that dies leaves the others' replays waiting.
///
/// Refused with an Error when capture runs (the graph is not made; the ops
/// before the refused one have run, as they would eagerly): a backend whose
/// framework cannot replay (unsupported, naming it), a host read (to_vector,
/// read(), printing: unsupported), lending a tensor's memory to another
/// library (interop::data_pointer: unsupported), a collective that does not
/// run on the backend's device through its framework's library (unsupported:
/// one through MPI or the host transport, one of a Communicator::local
/// group), an op on another backend, or one whose input is current on another device
/// only (invalid_argument: a transfer is not recorded), an op the framework
/// cannot record (unsupported), a capture inside a capture (invalid_argument). An
/// error raised by an op's launch inside the block, or a refusal, refuses the
/// capture even when the block catches it.
#include <cstddef>
#include <functional>
#include <memory>

#include "xylem/backend.hpp"
#include "xylem/future.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

namespace detail {
struct GraphState;
}  // namespace detail

/// A captured sequence of ops (see capture()). Cheap to copy: copies share
/// one graph. Thread safety: replays of one graph from several threads run
/// one after the other, each in full (a replay's calls are never interleaved
/// with another's).
class Graph {
 public:
  Graph() = default;  ///< empty: valid() is false
  /// False for a default-constructed graph.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Runs the recorded ops again, in order, on the data the tensors hold
  /// now, as one piece of work on the backend's queue; returns at once.
  /// The returned event completes when the last op has run; a later op or
  /// host read on the tensors waits for it as for any op.
  EventPtr replay();
  /// The number of recorded ops.
  [[nodiscard]] std::size_t size() const noexcept;
  /// From now on the graph uses `replacement`'s storage wherever it used
  /// `captured`'s. `replacement` must have `captured`'s dims, strides,
  /// offset and storage size (else shape_mismatch) and dtype (else
  /// dtype_mismatch), and share no storage with the graph's other tensors
  /// (else invalid_argument); `captured` must be a tensor the graph uses,
  /// and none a collective of the graph uses (else invalid_argument).
  /// Nothing changes when it throws.
  void rebind(const Tensor& captured, const Tensor& replacement);

 private:
  friend Graph capture(const Backend& backend, const std::function<void()>& block);
  explicit Graph(std::shared_ptr<detail::GraphState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::GraphState> state_;
};

/// Runs `block` once, recording the ops it launches on `backend`, and returns
/// them as a Graph. Throws as the file comment says.
[[nodiscard]] Graph capture(const Backend& backend, const std::function<void()>& block);

}  // namespace xylem
