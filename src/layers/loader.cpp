#include "xylem/loader.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>

#include "xylem/error.hpp"

namespace xylem::data {

namespace {

// Sebastiano Vigna's splitmix64: tiny, and the same sequence everywhere.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound): rejecting the low values that would make the
// modulo favour small results.
std::uint64_t below(std::uint64_t& state, std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t r = splitmix64(state);
    if (r >= threshold) return r % bound;
  }
}

// One tensor's rows as host bytes, and what a batch of them looks like.
struct Rows {
  std::vector<unsigned char> bytes;
  std::size_t row_bytes = 0;
  std::vector<std::int64_t> trailing;  // the dimensions after the first
  DType dtype = DType::f32;

  Rows(const Tensor& t, std::int64_t n) : dtype(t.dtype()) {
    bytes = t.read_bytes().get();
    row_bytes = bytes.size() / static_cast<std::size_t>(n);
    trailing.assign(t.shape().begin() + 1, t.shape().end());
  }

  Tensor gather(std::span<const std::int64_t> rows) const {
    std::vector<unsigned char> out(rows.size() * row_bytes);
    for (std::size_t k = 0; k < rows.size(); ++k)
      std::memcpy(out.data() + k * row_bytes, bytes.data() + static_cast<std::size_t>(rows[k]) * row_bytes, row_bytes);
    std::vector<std::int64_t> dims{static_cast<std::int64_t>(rows.size())};
    dims.insert(dims.end(), trailing.begin(), trailing.end());
    return Tensor::from_bytes(out.data(), out.size(), Layout(std::span<const std::int64_t>(dims)), dtype);
  }
};

std::int64_t rows_of(const Split& split) {
  if (!split.images.defined() || !split.labels.defined())
    throw Error(ErrorCode::invalid_argument, "BatchLoader: the split's images or labels are an empty handle");
  if (split.images.rank() == 0 || split.labels.rank() == 0 || split.images.shape()[0] == 0)
    throw Error(ErrorCode::invalid_argument, "BatchLoader: the split has no rows");
  const std::int64_t n = split.images.shape()[0];
  if (split.labels.shape()[0] != n)
    throw Error(ErrorCode::shape_mismatch, "BatchLoader: " + std::to_string(n) + " images but " +
                                               std::to_string(split.labels.shape()[0]) + " labels");
  return n;
}

// What the thread hands over: a batch, the end of an epoch (neither set), or
// the error that stopped it.
struct Item {
  std::optional<Batch> batch;
  std::exception_ptr error;
};

// Two batches ahead: the caller never waits for a gather that could have
// run during its step, and memory stays at a few batches.
constexpr std::size_t kAhead = 2;

}  // namespace

std::vector<std::int64_t> shuffled_order(std::int64_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  // Each epoch its own stream: the state starts from both numbers mixed.
  std::uint64_t mix = seed;
  std::uint64_t state = splitmix64(mix) ^ epoch;
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[below(state, i)]);
  return order;
}

struct BatchLoader::State {
  std::int64_t n, batch_size;
  bool shuffle, drop_last;
  std::uint64_t seed;
  Prepare prepare;
  Rows images, labels;

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Item> queue;
  bool stop = false;
  std::thread worker;

  State(const Split& split, std::int64_t rows, std::int64_t batch, bool shuffled, std::uint64_t s, bool drop,
        Prepare p)
      : n(rows),
        batch_size(batch),
        shuffle(shuffled),
        drop_last(drop),
        seed(s),
        prepare(std::move(p)),
        images(split.images, rows),
        labels(split.labels, rows) {}

  std::int64_t batches() const { return drop_last ? n / batch_size : (n + batch_size - 1) / batch_size; }

  // False when the loader is stopping.
  bool push(Item item) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return stop || queue.size() < kAhead; });
    if (stop) return false;
    queue.push_back(std::move(item));
    changed.notify_all();
    return true;
  }

  void run() {
    try {
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      for (std::uint64_t epoch = 0;; ++epoch) {
        if (shuffle)
          order = shuffled_order(n, seed, epoch);
        else
          std::iota(order.begin(), order.end(), std::int64_t{0});
        for (std::int64_t b = 0; b < batches(); ++b) {
          const std::int64_t begin = b * batch_size;
          const std::span<const std::int64_t> rows(order.data() + begin,
                                                   static_cast<std::size_t>(std::min(batch_size, n - begin)));
          Batch batch{images.gather(rows), labels.gather(rows)};
          if (prepare) prepare(batch);
          if (!push(Item{std::move(batch), nullptr})) return;
        }
        if (!push(Item{})) return;
      }
    } catch (...) {
      push(Item{std::nullopt, std::current_exception()});
    }
  }
};

BatchLoader::BatchLoader(const Split& split, std::int64_t batch_size, bool shuffle, std::uint64_t seed,
                         bool drop_last, Prepare prepare) {
  if (batch_size < 1)
    throw Error(ErrorCode::invalid_argument,
                "BatchLoader: batch_size " + std::to_string(batch_size) + " (it must be at least 1)");
  const std::int64_t n = rows_of(split);
  state_ = std::make_unique<State>(split, n, batch_size, shuffle, seed, drop_last, std::move(prepare));
  if (state_->batches() == 0)
    throw Error(ErrorCode::invalid_argument, "BatchLoader: " + std::to_string(n) + " rows make no whole batch of " +
                                                 std::to_string(batch_size) + " (drop_last)");
  state_->worker = std::thread([s = state_.get()] { s->run(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->changed.notify_all();
  state_->worker.join();
}

std::optional<Batch> BatchLoader::next() {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [&] { return !state_->queue.empty(); });
  Item& front = state_->queue.front();
  // The error stays queued, so every later call raises it too.
  if (front.error) std::rethrow_exception(front.error);
  std::optional<Batch> batch = std::move(front.batch);
  state_->queue.pop_front();
  state_->changed.notify_all();
  return batch;
}

std::int64_t BatchLoader::samples() const noexcept { return state_->n; }

std::int64_t BatchLoader::batches_per_epoch() const noexcept { return state_->batches(); }

}  // namespace xylem::data
