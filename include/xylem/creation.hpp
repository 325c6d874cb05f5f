#pragma once
/// @file
/// Making tensors on a backend. Each enqueues a kernel on the backend's device.
#include <cstdint>

#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

/// A seeded, counter-based (Philox) generator: the same seed gives the same
/// numbers on every framework. Each draw advances the counter by the number
/// of elements drawn. Thread-safe.
class Generator {
 public:
  /// The stream of numbers `seed` names, from its start.
  explicit Generator(std::uint64_t seed) : seed_(seed) {}
  /// The seed it was made with.
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  /// Reserves n counters and returns the first.
  std::uint64_t advance(std::uint64_t n) noexcept;

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

/// A new tensor of `shape` filled with 0.
Tensor zeros(const Backend& backend, const Layout& shape, DType dtype);
/// A new tensor of `shape` filled with 1.
Tensor ones(const Backend& backend, const Layout& shape, DType dtype);
/// A new tensor of `shape` filled with `value` (converted to dtype).
Tensor full(const Backend& backend, const Layout& shape, DType dtype, double value);
/// start, start+step, ... (n elements): shape {n}.
Tensor arange(const Backend& backend, std::int64_t n, DType dtype, double start = 0, double step = 1);
/// Uniform random numbers in [low, high) from `gen` (floating dtypes).
Tensor uniform(const Backend& backend, const Layout& shape, DType dtype, Generator& gen, double low = 0,
               double high = 1);
/// Normally distributed random numbers from `gen` (floating dtypes).
Tensor normal(const Backend& backend, const Layout& shape, DType dtype, Generator& gen, double mean = 0,
              double stddev = 1);

/// Writes `value` into every element of y (a tensor or a view).
void fill(const Backend& backend, Tensor& y, double value);
/// Writes uniform random numbers in [low, high) into y, as uniform() makes them.
void fill_uniform(const Backend& backend, Tensor& y, Generator& gen, double low = 0, double high = 1);
/// Writes normally distributed random numbers into y, as normal() makes them.
void fill_normal(const Backend& backend, Tensor& y, Generator& gen, double mean = 0, double stddev = 1);

/// A contiguous copy of a tensor (or view) on the backend.
Tensor contiguous(const Backend& backend, const Tensor& x);

}  // namespace xylem
