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

// Fills y from the generator's next y.numel() Philox counters (plugin.hpp's
// convention); p0 and p1 are the distribution's two parameters.
void launch_random(const Backend& backend, OpId op, Tensor& y, Generator& gen, double p0, double p1) {
  const auto offset = gen.advance(static_cast<std::uint64_t>(y.numel()));
  detail::OpLaunch(backend, op)
      .write(y)
      .scalar(p0)
      .scalar(p1)
      .integer(static_cast<std::int64_t>(gen.seed()))
      .integer(static_cast<std::int64_t>(offset))
      .launch();
}

}  // namespace

std::uint64_t Generator::advance(std::uint64_t n) noexcept {
  return std::atomic_ref<std::uint64_t>(offset_).fetch_add(n, std::memory_order_relaxed);
}

void fill(const Backend& backend, Tensor& y, double value) {
  ops::require_defined(plugin::op_name(OpId::creation_fill), "y", y);
  detail::OpLaunch(backend, OpId::creation_fill).write(y).scalar(value).launch();
}

void fill_uniform(const Backend& backend, Tensor& y, Generator& gen, double low, double high) {
  require_random_dtype(OpId::creation_uniform, y);
  if (!(low <= high))
    throw Error(ErrorCode::invalid_argument, "creation::uniform: low (" + std::to_string(low) +
                                                 ") must not exceed high (" + std::to_string(high) + ")");
  launch_random(backend, OpId::creation_uniform, y, gen, low, high);
}

void fill_normal(const Backend& backend, Tensor& y, Generator& gen, double mean, double stddev) {
  require_random_dtype(OpId::creation_normal, y);
  if (!(stddev >= 0))
    throw Error(ErrorCode::invalid_argument,
                "creation::normal: stddev must be non-negative, got " + std::to_string(stddev));
  launch_random(backend, OpId::creation_normal, y, gen, mean, stddev);
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
  detail::OpLaunch(backend, OpId::creation_arange).write(y).scalar(start).scalar(step).launch();
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
  detail::OpLaunch(backend, OpId::core_copy_view).read(x).write(y).launch();
  return y;
}

}  // namespace xylem
