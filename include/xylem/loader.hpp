#pragma once
/// @file
/// Batches of a data set for training: shuffled reproducibly from a seed,
/// prepared on a host thread while the caller computes on the previous one.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "xylem/data.hpp"
#include "xylem/tensor.hpp"

namespace xylem::data {

/// One batch: rows of a Split's images and labels, as host tensors.
struct Batch {
  Tensor images;  ///< [B, ...] in the split's dtype and trailing shape
  Tensor labels;  ///< [B] (or [B, ...]) in the split's dtype
};

/// The order an epoch visits n samples in: a Fisher-Yates shuffle driven by
/// splitmix64 from (seed, epoch), so a seed gives the same orders on every
/// machine and each epoch a different one.
[[nodiscard]] std::vector<std::int64_t> shuffled_order(std::int64_t n, std::uint64_t seed, std::uint64_t epoch);

/// Yields a Split in batches, epoch after epoch. A host thread gathers the
/// rows of the next batches (at most two ahead) while the caller works, so
/// the copying overlaps the computing; the destructor stops and joins it.
///
/// next() returns the epoch's batches in order, then one std::nullopt, then
/// the next epoch's batches. An exception on the thread (in gathering, or
/// in `prepare`) is raised by the next() that would have returned its
/// batch, and by every later one.
class BatchLoader {
 public:
  /// Runs on the loader's thread on each batch before next() hands it out:
  /// augmentation, normalisation, or moving it to the device the caller
  /// computes on.
  using Prepare = std::function<void(Batch&)>;

  /// Batches of `batch_size` rows of `split` (its images and labels read to
  /// the host once, here), in the order shuffled_order(n, seed, epoch) when
  /// `shuffle`, else in order. With `drop_last`, an epoch ends before a
  /// final partial batch. Throws invalid_argument for a batch_size below 1
  /// or a split with an empty handle or no rows, and shape_mismatch when the
  /// images and labels have different numbers of rows.
  BatchLoader(const Split& split, std::int64_t batch_size, bool shuffle, std::uint64_t seed, bool drop_last = false,
              Prepare prepare = {});
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;             ///< owns its thread
  BatchLoader& operator=(const BatchLoader&) = delete;  ///< owns its thread

  /// The next batch of this epoch, or std::nullopt when the epoch is over
  /// (the call after it begins the next epoch).
  [[nodiscard]] std::optional<Batch> next();

  /// Rows in the split.
  [[nodiscard]] std::int64_t samples() const noexcept;
  /// Batches next() yields per epoch.
  [[nodiscard]] std::int64_t batches_per_epoch() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace xylem::data
