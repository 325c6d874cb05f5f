// Making tensors on a backend: fill, arange, random, contiguous copies.
#include "xylem/creation.hpp"

#include <atomic>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"

namespace xylem {
namespace {

using plugin::OpId;

void require_random_dtype(OpId op, const Tensor& y) {
  ops::require_real(plugin::op_name(op), "y", y);
}

// The Philox stream for y: the generator's seed and its next y.numel()
// counters (see op.hpp's creation::uniform).
struct Stream {
  std::int64_t seed = 0;
  std::int64_t offset = 0;
};
Stream next_stream(Generator& gen, const Tensor& y) {
  const auto offset = gen.advance(static_cast<std::uint64_t>(y.numel()));
  return {static_cast<std::int64_t>(gen.seed()), static_cast<std::int64_t>(offset)};
}

}  // namespace

std::uint64_t Generator::advance(std::uint64_t n) noexcept {
  return std::atomic_ref<std::uint64_t>(offset_).fetch_add(n, std::memory_order_relaxed);
}

void fill(const Backend& backend, Tensor& y, double value) {
  ops::require_defined(plugin::op_name(OpId::creation_fill), "y", y);
  detail::launch(backend, detail::args::creation_fill<Tensor>{.y = y, .value = value});
}

void fill_uniform(const Backend& backend, Tensor& y, Generator& gen, double low, double high) {
  require_random_dtype(OpId::creation_uniform, y);
  if (!(low <= high))
    throw Error(ErrorCode::invalid_argument, "creation::uniform: low (" + std::to_string(low) +
                                                 ") must not exceed high (" + std::to_string(high) + ")");
  const Stream stream = next_stream(gen, y);
  detail::launch(backend, detail::args::creation_uniform<Tensor>{
                              .y = y, .seed = stream.seed, .offset = stream.offset, .low = low, .high = high});
}

void fill_normal(const Backend& backend, Tensor& y, Generator& gen, double mean, double stddev) {
  require_random_dtype(OpId::creation_normal, y);
  if (!(stddev >= 0))
    throw Error(ErrorCode::invalid_argument,
                "creation::normal: stddev must be non-negative, got " + std::to_string(stddev));
  const Stream stream = next_stream(gen, y);
  detail::launch(backend, detail::args::creation_normal<Tensor>{
                              .y = y, .seed = stream.seed, .offset = stream.offset, .mean = mean, .stddev = stddev});
}

Tensor full(const Backend& backend, const Layout& shape, DType dtype, double value) {
  Tensor y(shape, dtype);
  fill(backend, y, value);
  return y;
}
Tensor zeros(const Backend& backend, const Layout& shape, DType dtype) { return full(backend, shape, dtype, 0.0); }
Tensor ones(const Backend& backend, const Layout& shape, DType dtype) { return full(backend, shape, dtype, 1.0); }

Tensor arange(const Backend& backend, std::int64_t n, DType dtype, double start, double step) {
  if (n < 0) throw Error(ErrorCode::invalid_argument, "creation::arange: negative length " + std::to_string(n));
  Tensor y(Layout{n}, dtype);
  detail::launch(backend, detail::args::creation_arange<Tensor>{.y = y, .start = start, .step = step});
  return y;
}

Tensor uniform(const Backend& backend, const Layout& shape, DType dtype, Generator& gen, double low, double high) {
  Tensor y(shape, dtype);
  fill_uniform(backend, y, gen, low, high);
  return y;
}

Tensor normal(const Backend& backend, const Layout& shape, DType dtype, Generator& gen, double mean, double stddev) {
  Tensor y(shape, dtype);
  fill_normal(backend, y, gen, mean, stddev);
  return y;
}

Tensor contiguous(const Backend& backend, const Tensor& x) {
  ops::require_defined(plugin::op_name(OpId::core_copy_view), "x", x);
  Tensor y(x.layout(), x.dtype());
  detail::launch(backend, detail::args::core_copy_view<Tensor>{.x = x, .y = y});
  return y;
}

}  // namespace xylem
