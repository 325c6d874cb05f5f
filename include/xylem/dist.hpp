#pragma once
/// @file
/// Collectives over a group of processes (ranks): all_reduce, broadcast,
/// reduce, all_gather, reduce_scatter, send/recv and barrier on tensors of
/// any dtype. Each call is enqueued like an op and returns a future; the
/// tensor's coherence brings its data where the transport needs it and
/// marks the result written, so later ops simply read it.
/// A small call (256 KiB at most) on host data that is ready, made while
/// no other is queued or running, runs on the calling thread instead, as
/// MPI_Allreduce does: its future is done on return, and the call returns
/// once every rank has joined it (or the timeout has passed).
///
/// The transport is MPI when the program runs under mpirun and the
/// optional module libxylem_mpi.so loads; else a TCP exchange bootstrapped
/// from the environment (XYLEM_RANK, XYLEM_WORLD_SIZE, XYLEM_MASTER_ADDR,
/// XYLEM_MASTER_PORT, as torchrun sets them); else a group of one.
/// Tensors whose data lives on a CUDA GPU go through NCCL instead (loaded
/// at run time), enqueued on the GPU's stream like an op, without a host
/// synchronisation; the host transport above gives NCCL its group id.
/// A rank that dies or never joins a call gives the others
/// Error(timeout) (or Error(communication)) once the timeout passes.
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/future.hpp"
#include "xylem/tensor.hpp"

namespace xylem::dist {

/// How the ranks' values combine.
enum class ReduceOp {
  sum,
  avg,  ///< the sum divided by the group size (integers: truncated)
  max,
  min,
};

/// How a communicator is made.
struct Options {
  /// "mpi", "tcp" or "self" (a group of one); empty: the best present.
  std::string transport;
  /// How long one call may wait for the other ranks; zero: the
  /// environment's XYLEM_DIST_TIMEOUT (seconds, fractions allowed), else
  /// 300 s.
  std::chrono::milliseconds timeout{0};
  /// Before each collective, the ranks compare what they pass (the call,
  /// dtype, shape, root, reduction) and raise shape_mismatch or
  /// dtype_mismatch naming both sides, instead of a hang or garbage. Costs
  /// one small exchange per call.
  bool checked = true;
  /// Collectives on tensors whose data lives on a GPU: "nccl" (an error
  /// where it cannot start), "host" (through the transport above: the
  /// data goes to the host and back), or empty: NCCL when every rank of
  /// the group can start it, else the host. Every rank passes the same.
  std::string device;
};

/// A transport xylem may use, and why it cannot when it cannot.
struct TransportInfo {
  std::string name;    ///< "mpi", "tcp", "self", "nccl"
  bool available = false;  ///< this build and machine can start it
  /// Why not, when unavailable; when available, what was found where it
  /// says more than the name ("NCCL 2.21.5 (/usr/lib/.../libnccl.so.2)").
  std::string reason;
};

/// Every transport, usable or not and why (what `xylem info` shows). Loads
/// no transport module and starts no communication.
[[nodiscard]] std::vector<TransportInfo> transports();

namespace detail {
class Group;
}

/// A group of ranks. Collective calls must be made by every rank of the
/// group in the same order. Copying a communicator copies the handle.
///
/// Tensors must be dense (row-major views without gaps), live on any
/// backend (a host transport works on the tensor's host copy, which the
/// coherence brings up to date and the next device use copies back), and
/// be given again only after the returned future is done if another
/// thread also calls collectives.
class Communicator {
 public:
  /// Every rank of the job. The first call starts the transport; later
  /// calls with the same options return the same group.
  [[nodiscard]] static Communicator world(const Options& options = {});
  /// One communicator per backend, all in this process: the i-th is rank
  /// i of a group of backends.size() (ncclCommInitAll's way: one process
  /// driving several GPUs). Use each as one process would use its world:
  /// every rank calls the same collectives in the same order, from one
  /// thread (rank 0's call, then rank 1's, ...) or a thread per rank. A
  /// call returns at once; the collective runs when the last rank has
  /// called it, as one launch over every rank's tensors: NCCL (in one
  /// ncclGroupStart/End) when each rank's tensors live on its GPU, else
  /// the host copies, combined in this process. So a thread that drives
  /// several ranks calls a collective on each of them before it waits for
  /// one (a future, a host read); waiting earlier ends in Error(timeout).
  ///
  /// The backends are distinct devices of one framework. The host (native)
  /// may be given several times: its ranks share host memory and one
  /// queue, so an op that reads a collective's result holds that queue
  /// until every rank has called the collective; call it on every rank
  /// first. Options::transport must be empty; Options::device says
  /// whether GPU tensors may use NCCL, as for world(); the ranks'
  /// arguments are always compared (Options::checked is moot in one
  /// process). split, send and recv are not supported on a local group
  /// (Error(unsupported)). Throws invalid_argument for no backends,
  /// backends of different frameworks, or a device given twice.
  [[nodiscard]] static std::vector<Communicator> local(std::span<const Backend> backends, const Options& options = {});

  [[nodiscard]] int rank() const;  ///< this communicator's place in the group, 0..size()-1
  [[nodiscard]] int size() const;  ///< how many ranks
  /// The host transport: "mpi", "tcp", "self" (GPU tensors may use NCCL);
  /// a local group's: "nccl" where NCCL serves it, else "local".
  [[nodiscard]] std::string_view transport() const;
  [[nodiscard]] std::chrono::milliseconds timeout() const;  ///< the limit on each call

  /// A sub-group (collective over this group): ranks with the same
  /// `color` form one, ordered by `key` then rank. A negative color joins
  /// none and gets an invalid communicator (valid() false).
  [[nodiscard]] Communicator split(int color, int key = 0) const;
  /// False for a communicator of no group (a negative split color).
  [[nodiscard]] bool valid() const noexcept { return group_ != nullptr; }

  /// In place: every rank's `t` becomes the combination of all ranks' `t`.
  /// The future holds `t`.
  Future<Tensor> all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum) const;
  /// A bucket: every tensor in place, in as few exchanges as their dtypes
  /// allow (what data-parallel training reduces its gradients with).
  Future<std::vector<Tensor>> all_reduce(std::vector<Tensor> tensors, ReduceOp op = ReduceOp::sum) const;
  /// In place: `root`'s `t` is copied to every rank's `t`.
  Future<Tensor> broadcast(const Tensor& t, int root) const;
  /// A bucket: each of `root`'s tensors to every rank's, in one exchange
  /// where the transport allows (NCCL's group launch).
  Future<std::vector<Tensor>> broadcast(std::vector<Tensor> tensors, int root) const;
  /// In place on `root`: its `t` becomes the combination; the other
  /// ranks' `t` is unchanged.
  Future<Tensor> reduce(const Tensor& t, int root, ReduceOp op = ReduceOp::sum) const;
  /// A new tensor of shape [size(), t's shape...] holding every rank's `t`
  /// in rank order.
  Future<Tensor> all_gather(const Tensor& t) const;
  /// The same into `out` (PyTorch's all_gather_into_tensor): a dense
  /// tensor of t's dtype (else dtype_mismatch) and size() times its
  /// elements, in any shape (else shape_mismatch), sharing no memory with
  /// `t` (else invalid_argument). The future holds `out`.
  Future<Tensor> all_gather(const Tensor& t, const Tensor& out) const;
  /// `t`'s first dimension is split in size() equal blocks; rank r gets
  /// block r of the combination, a new tensor of shape [n / size(), ...].
  Future<Tensor> reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum) const;
  /// The same into `out` (PyTorch's reduce_scatter_tensor): a dense tensor
  /// of t's dtype and 1/size() of its elements, in any shape, sharing no
  /// memory with `t`; t's elements must split in size() equal blocks. The
  /// errors are all_gather's. The future holds `out`.
  Future<Tensor> reduce_scatter(const Tensor& t, const Tensor& out, ReduceOp op = ReduceOp::sum) const;
  /// Point to point: `t` to rank `peer`, which calls recv with the same
  /// tag, dtype and shape. The future holds `t`. On NCCL (GPU tensors)
  /// tags are not matched: the calls between two ranks pair in order.
  Future<Tensor> send(const Tensor& t, int peer, int tag = 0) const;
  /// Point to point: `t` is overwritten with what `peer` sends.
  Future<Tensor> recv(const Tensor& t, int peer, int tag = 0) const;
  /// Done once every rank has called it.
  EventPtr barrier() const;

 private:
  explicit Communicator(std::shared_ptr<detail::Group> group) : group_(std::move(group)) {}
  Future<Tensor> point_to_point(const Tensor& t, int peer, int tag, bool sending) const;
  [[nodiscard]] detail::Group& group() const;
  std::shared_ptr<detail::Group> group_;
};

}  // namespace xylem::dist
