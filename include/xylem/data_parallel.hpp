#pragma once
/// @file
/// xylem::parallel: data-parallel training, as PyTorch's
/// DistributedDataParallel does it. Every rank holds the whole model, takes
/// its shard of each global batch, and the gradients are averaged over the
/// ranks in buckets while the backward pass still runs: as soon as the
/// layers holding a bucket's parameters have run their backward, the
/// bucket's all_reduce is enqueued, and the earlier layers' backward goes on
/// beside it. The optimizer's kernels read the reduced gradients, so they
/// wait for the buckets through the tensors' coherence, not the host.
///
/// The model starts from rank 0's parameters and buffers (broadcast when
/// the wrapper is made); each backward first broadcasts rank 0's buffers again
/// (BatchNorm's running statistics, which the forward updated from each
/// rank's shard; PyTorch's broadcast_buffers), so every rank's weights stay
/// identical after every step: those on the first backward's device, as
/// one bucket. Buffers a layer keeps elsewhere (BatchNorm's num_batches_tracked
/// on the host, which every rank counts alike) go at construction only:
/// each step's host exchange and read made every step wait for the other
/// ranks on the host. The forward is the model's own. Batch statistics are each rank's
/// own shard's (no SyncBatchNorm): a model with BatchNorm trains like one
/// rank with a smaller batch for its normalisation, not bit for bit alike.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/dist.hpp"
#include "xylem/layers.hpp"
#include "xylem/tensor.hpp"

namespace xylem::parallel {

/// How DataParallel groups and reduces gradients.
struct DataParallelOptions {
  /// The largest bucket, in bytes (PyTorch's bucket_cap_mb: 25 MiB). A
  /// parameter larger than this is a bucket of its own. Smaller buckets
  /// start reducing earlier in the backward pass, at more calls' cost. The
  /// first layer with parameters always starts a bucket of its own: its
  /// gradients are the backward's last, and the others are reduced while
  /// it runs.
  std::size_t bucket_bytes = std::size_t{25} << 20;
  /// Broadcast rank 0's buffers (those on the backward's device) at the
  /// start of each backward.
  bool broadcast_buffers = true;
};

/// The rows of a global batch one rank takes: [begin, end) of `rows`.
struct Shard {
  std::int64_t begin = 0;  ///< first row of this rank
  std::int64_t end = 0;    ///< one past the last
  std::int64_t rows = 0;   ///< the global batch's rows
  /// This shard's rows.
  [[nodiscard]] std::int64_t size() const noexcept { return end - begin; }
};

/// A Sequential trained on every rank of a communicator.
class DataParallel {
 public:
  /// Wraps `model` (which must outlive the wrapper) and broadcasts rank 0's
  /// parameters and buffers to every rank (collective: every rank makes
  /// one). Throws invalid_argument for a bucket size of 0.
  DataParallel(layers::Sequential& model, dist::Communicator comm, const DataParallelOptions& options = {});

  /// This rank's rows of a global batch of `rows`: near-equal contiguous
  /// blocks in rank order. Throws invalid_argument when there are fewer
  /// rows than ranks.
  [[nodiscard]] Shard shard(std::int64_t rows) const;
  /// This rank's rows of `batch` (a view of its first axis).
  [[nodiscard]] Tensor shard(const Tensor& batch, const Shard& rows) const;

  /// The model's backward from dy, the gradient of this rank's mean loss
  /// over `rows`'s shard, enqueuing each bucket's all_reduce as soon as its
  /// gradients are made. Afterwards every rank's gradients are the gradient
  /// of the mean loss over the global batch (unequal shards weighted by
  /// their rows). Before that it broadcasts rank 0's buffers (when the
  /// options say so), which the backward does not change. Returns dx.
  /// Earlier backwards' reductions may still run
  /// meanwhile (ops reading the gradients wait for them on the device, not
  /// the host); it rethrows the error of any that failed, and waits on the
  /// host only for one 4 backwards back, so the device is never further
  /// behind.
  Tensor backward(const Backend& b, const Tensor& dy, const Shard& rows);
  /// Waits for every backward's buckets; rethrows a reduction's error.
  void synchronize();

  /// The buckets: indices into the model's parameters(), in the order
  /// they are reduced (the last layers' first).
  [[nodiscard]] const std::vector<std::vector<std::size_t>>& buckets() const noexcept { return buckets_; }
  /// The communicator the gradients are reduced over.
  [[nodiscard]] const dist::Communicator& communicator() const noexcept { return comm_; }
  /// The wrapped model.
  [[nodiscard]] layers::Sequential& module() const noexcept { return model_; }

  /// Whether every rank holds the same parameters and buffers, bit for
  /// bit: each rank's checksum, all-reduced by min and max (collective).
  [[nodiscard]] bool in_sync() const;

 private:
  void enqueue_bucket(const Backend& b, std::size_t bucket);

  layers::Sequential& model_;
  dist::Communicator comm_;
  DataParallelOptions options_;
  std::vector<layers::Parameter*> params_;
  std::vector<std::vector<std::size_t>> buckets_;
  std::vector<std::size_t> first_layer_;   // bucket -> the earliest layer holding one of its parameters
  // Each backward's reductions not yet seen done, oldest first.
  std::deque<std::vector<Future<std::vector<Tensor>>>> in_flight_;
  // The buffers (indices into the model's buffers()) each backward
  // broadcasts: those on the first backward's device.
  std::optional<std::vector<std::size_t>> step_buffers_;
};

/// A 64-bit FNV-1a hash of the bytes of every parameter and buffer of
/// `model`, in order: equal on two processes exactly when their weights
/// are (barring a collision). Reads the tensors to the host.
[[nodiscard]] std::uint64_t checksum(layers::Layer& model);

}  // namespace xylem::parallel
