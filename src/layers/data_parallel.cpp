// DataParallel: gradient buckets reduced while the backward pass runs.
#include "xylem/data_parallel.hpp"

#include <algorithm>
#include <string>

#include "xylem/blas.hpp"
#include "xylem/creation.hpp"
#include "xylem/error.hpp"

namespace xylem::parallel {
namespace {

std::size_t bytes_of(const layers::Parameter& p) {
  return static_cast<std::size_t>(p.value.numel()) * size_of(p.value.dtype());
}

// Rank 0's values on every rank, as one bucket (one launch on NCCL). The
// broadcast is enqueued; later ops on the tensors wait for it.
void broadcast_from_zero(const dist::Communicator& comm, const std::vector<Tensor>& tensors) {
  std::vector<Tensor> bucket;
  for (const Tensor& t : tensors)
    if (t.defined()) bucket.push_back(t);
  if (!bucket.empty()) (void)comm.broadcast(std::move(bucket), 0);
}

using Reductions = std::vector<Future<std::vector<Tensor>>>;

// Backwards whose reductions may be in flight before one waits on the host
// for the oldest. A wait for the one before last (as this was) held each
// rank's host to the other ranks' devices: two H100s ran a small CNN's
// step at half the speed of one.
constexpr std::size_t kStepsInFlight = 4;

// Drops the oldest backwards' reductions: every one done, and the oldest
// also when `keep` remain (after waiting for it). Rethrows the first error
// (the step is dropped first: an error is reported once).
void settle(std::deque<Reductions>& steps, std::size_t keep) {
  while (!steps.empty()) {
    const bool done = std::all_of(steps.front().begin(), steps.front().end(), [](const auto& f) { return f.ready(); });
    if (!done && steps.size() < keep) return;
    const Reductions oldest = std::move(steps.front());
    steps.pop_front();
    for (const auto& f : oldest) f.wait();
  }
}

std::vector<Tensor> buffer_values(layers::Layer& model) {
  std::vector<Tensor> values;
  for (layers::Buffer* buffer : model.buffers()) values.push_back(buffer->value);
  return values;
}

// The indices of the buffers whose latest data is on b's device: what the
// forward there updates. (A counter the layer keeps on the host would take
// the whole bucket through the host transport, and the layer's host read of
// it would wait for every other rank.)
std::vector<std::size_t> buffers_on(layers::Layer& model, const Backend& b) {
  std::vector<std::size_t> on;
  const std::vector<Tensor> values = buffer_values(model);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i].defined() && values[i].is_current_on(b)) on.push_back(i);
  return on;
}

}  // namespace

DataParallel::DataParallel(layers::Sequential& model, dist::Communicator comm, const DataParallelOptions& options)
    : model_(model), comm_(std::move(comm)), options_(options), params_(model.parameters()) {
  if (options_.bucket_bytes == 0)
    throw Error(ErrorCode::invalid_argument, "DataParallel: bucket_bytes must be at least 1");
  // Buckets in reverse parameter order, the order backward makes the
  // gradients in; every rank builds the same ones from the same model.
  std::vector<std::size_t> layer_of;
  for (std::size_t layer = 0; layer < model_.size(); ++layer)
    for (std::size_t k = 0; k < model_[layer].parameters().size(); ++k) layer_of.push_back(layer);
  // The first layer's gradients are the backward's last: a bucket of their
  // own, so that every other bucket is reduced while that layer's backward
  // runs and only they are left after it (on two H100s a captured
  // Fashion-MNIST step waited ~30 us for one bucket of all its gradients).
  const std::size_t first = layer_of.empty() ? 0 : layer_of.front();
  std::size_t filled = 0;
  for (std::size_t i = params_.size(); i-- > 0;) {
    const std::size_t bytes = bytes_of(*params_[i]);
    const bool first_layer_starts = layer_of[i] == first && !buckets_.empty() && first_layer_.back() != first;
    if (buckets_.empty() || first_layer_starts || (filled > 0 && filled + bytes > options_.bucket_bytes)) {
      buckets_.emplace_back();
      first_layer_.push_back(layer_of[i]);
      filled = 0;
    }
    buckets_.back().push_back(i);
    first_layer_.back() = layer_of[i];
    filled += bytes;
  }
  std::vector<Tensor> start;
  for (layers::Parameter* p : params_) start.push_back(p->value);
  for (const Tensor& t : buffer_values(model_)) start.push_back(t);
  broadcast_from_zero(comm_, start);
}

Shard DataParallel::shard(std::int64_t rows) const {
  const std::int64_t ranks = comm_.size();
  if (rows < ranks)
    throw Error(ErrorCode::invalid_argument, "DataParallel::shard: a batch of " + std::to_string(rows) +
                                                 " rows cannot give each of " + std::to_string(ranks) +
                                                 " ranks a row; use a larger batch or fewer ranks");
  const std::int64_t r = comm_.rank();
  return Shard{rows * r / ranks, rows * (r + 1) / ranks, rows};
}

Tensor DataParallel::shard(const Tensor& batch, const Shard& rows) const {
  if (batch.layout().rank() == 0 || batch.shape()[0] != rows.rows)
    throw Error(ErrorCode::shape_mismatch, "DataParallel::shard: a batch of shape " + batch.layout().dims_string() +
                                               " is not the global batch of " + std::to_string(rows.rows) + " rows");
  return batch.slice(0, rows.begin, rows.end);
}

void DataParallel::enqueue_bucket(const Backend& b, std::size_t bucket) {
  std::vector<Tensor> grads;
  for (std::size_t i : buckets_[bucket]) {
    layers::Parameter& p = *params_[i];
    if (!p.value.defined()) continue;
    // A parameter no backward reached still takes part, as zeros, so that
    // every rank passes the same bucket.
    if (!p.grad.defined()) p.grad = zeros(b, p.value.layout(), p.value.dtype());
    grads.push_back(p.grad);
  }
  in_flight_.back().push_back(comm_.all_reduce(std::move(grads), dist::ReduceOp::avg));
}

Tensor DataParallel::backward(const Backend& b, const Tensor& dy, const Shard& rows) {
  // Not a wait for the last step: the host queues this step while the
  // devices still reduce earlier ones' gradients.
  settle(in_flight_, kStepsInFlight);
  in_flight_.emplace_back();
  // The average over ranks of each rank's mean gradient is the global mean
  // when the shards are equal; an unequal shard weighs by its rows.
  const double weight =
      static_cast<double>(rows.size()) * static_cast<double>(comm_.size()) / static_cast<double>(rows.rows);
  // The forward just updated each rank's buffers from its own shard; the
  // backward does not change them, so they go first, beside the whole
  // backward pass rather than after it.
  if (options_.broadcast_buffers) {
    // Chosen at the first backward, when every rank's buffers are where
    // the same code put them, then kept: a rank that moved one later (a
    // host read and write of its own) must not change its bucket alone.
    if (!step_buffers_) step_buffers_ = buffers_on(model_, b);
    const std::vector<Tensor> values = buffer_values(model_);
    std::vector<Tensor> bucket;
    for (std::size_t i : *step_buffers_)
      if (i < values.size()) bucket.push_back(values[i]);
    broadcast_from_zero(comm_, bucket);
  }
  Tensor g = dy;
  std::size_t next = 0;
  for (std::size_t layer = model_.size(); layer-- > 0;) {
    g = model_[layer].backward(b, g);
    for (; next < buckets_.size() && first_layer_[next] == layer; ++next) {
      if (weight != 1.0)
        for (std::size_t i : buckets_[next])
          if (params_[i]->grad.defined()) {
            Tensor flat = params_[i]->grad.reshape({-1});  // scal takes vectors; the grad is dense
            blas::scal(b, weight, flat);
          }
      enqueue_bucket(b, next);
    }
  }
  return g;
}

void DataParallel::synchronize() {
  settle(in_flight_, 0);
}

bool DataParallel::in_sync() const {
  const auto mine = static_cast<std::int64_t>(checksum(model_));
  const Tensor high = Tensor::from(std::vector<std::int64_t>{mine});
  const Tensor low = Tensor::from(std::vector<std::int64_t>{mine});
  (void)comm_.all_reduce(high, dist::ReduceOp::max);
  (void)comm_.all_reduce(low, dist::ReduceOp::min);
  return high.to_vector<std::int64_t>() == low.to_vector<std::int64_t>();
}

std::uint64_t checksum(layers::Layer& model) {
  std::vector<Tensor> tensors;
  for (layers::Parameter* p : model.parameters()) tensors.push_back(p->value);
  for (const Tensor& t : buffer_values(model)) tensors.push_back(t);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    for (unsigned char byte : t.read_bytes().get()) {
      hash ^= byte;
      hash *= 0x100000001b3ULL;
    }
  }
  return hash;
}

}  // namespace xylem::parallel
