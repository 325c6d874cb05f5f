// xylem::fft: numpy.fft's transforms. The kernels take contiguous
// [batch, n] or [batch, n0, n1] tensors and an unnormalised transform times
// `scale` (op.hpp); here the batch axes are folded, views made contiguous,
// irfft's n applied (crop or zero pad) and NumPy's norm turned into scale.
#include <cmath>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "xylem/creation.hpp"
#include "xylem/fft.hpp"

namespace xylem::fft {
namespace {

using plugin::OpId;

enum class Kind { c2c, r2c, c2r };

// NumPy's scaling of a transform over n points in the given direction.
double scale_of(Norm norm, bool inverse, double n) {
  switch (norm) {
    case Norm::backward:
      return inverse ? 1.0 / n : 1.0;
    case Norm::ortho:
      return 1.0 / std::sqrt(n);
    case Norm::forward:
      return inverse ? 1.0 : 1.0 / n;
  }
  return 1.0;
}

// The product of dims [from, to).
std::int64_t product(std::span<const std::int64_t> dims, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t a = from; a < to; ++a) p *= dims[a];
  return p;
}

// x with its last axis cut or zero-padded to m elements (irfft's n).
Tensor fit_last_axis(const Backend& b, std::string_view name, const Tensor& x, std::int64_t m) {
  const int last = x.rank() - 1;
  const std::int64_t have = x.shape()[std::size_t(last)];
  if (have == m) return x;
  if (have > m) return x.slice(last, 0, m);
  std::vector<std::int64_t> dims(x.shape().begin(), x.shape().end());
  dims.back() = m;
  Tensor padded(Layout(std::span<const std::int64_t>(dims)), x.dtype());
  ops::fill_output(b, name, padded, 0);
  Tensor head = padded.slice(last, 0, have);
  detail::launch(b, detail::args::core_copy_view<Tensor>{.x = x, .y = head}, name);
  return padded;
}

// One transform over the last `axes` axes of x. `n` is the length of the
// real signal along the last axis (c2r only; -1: 2*(m - 1)).
Tensor transform(const Backend& b, std::string_view name, Kind kind, bool inverse, int axes, const Tensor& x,
                 std::int64_t n, Norm norm) {
  ops::require_defined(name, "x", x);
  if (kind == Kind::r2c) {
    ops::require_real(name, "x", x);
  } else if (!is_complex(x.dtype())) {
    throw Error(ErrorCode::dtype_mismatch, std::string(name) + ": argument 'x' is " + ops::describe(x) +
                                               "; expected c64 or c128" +
                                               (kind == Kind::c2c ? " (rfft takes real signals)" : ""));
  }
  ops::require_argument(x.rank() >= axes, name, [&] {
    return "x has shape " + x.layout().dims_string() + "; the transform needs rank >= " + std::to_string(axes);
  });
  const auto rank = std::size_t(x.rank());
  const std::size_t first = rank - std::size_t(axes);
  // The signal's lengths along the transformed axes (the real side's for r2c and c2r).
  std::vector<std::int64_t> lengths(x.shape().begin() + std::ptrdiff_t(first), x.shape().end());
  Tensor input = x;
  if (kind == Kind::c2r) {
    const std::int64_t m = x.shape()[rank - 1];
    if (n == -1) n = 2 * (m - 1);
    ops::require_argument(n >= 1, name, [&] {
      return "the output length n = " + std::to_string(n) + " (from x's " + std::to_string(m) +
             " frequencies when not given) must be at least 1";
    });
    lengths.back() = n;
    input = fit_last_axis(b, name, x, n / 2 + 1);
  } else {
    ops::require_argument(n == -1, name, "n applies to irfft and irfft2 only");
  }
  for (const std::int64_t len : lengths)
    ops::require_argument(len >= 1, name, [&] {
      return "x has shape " + x.layout().dims_string() + "; a transformed axis of length 0 has no transform";
    });
  std::vector<std::int64_t> out_dims(x.shape().begin(), x.shape().end());
  out_dims.back() = kind == Kind::r2c ? lengths.back() / 2 + 1 : lengths.back();
  const DType out_dtype = kind == Kind::r2c ? complex_of(x.dtype()) : kind == Kind::c2r ? real_of(x.dtype()) : x.dtype();
  const Layout out_shape{std::span<const std::int64_t>(out_dims)};
  const std::int64_t batch = product(x.shape(), 0, first);
  if (batch == 0) {
    Tensor y(out_shape, out_dtype);
    ops::fill_output(b, name, y);
    return y;
  }
  // [batch, transformed dims...] on both sides, contiguous.
  const auto folded = [&](std::span<const std::int64_t> dims) {
    std::vector<std::int64_t> d{batch};
    d.insert(d.end(), dims.begin() + std::ptrdiff_t(first), dims.end());
    return d;
  };
  if (!input.layout().is_contiguous()) input = contiguous(b, input);
  const std::vector<std::int64_t> in_dims = folded(input.shape());
  input = input.reshape(std::span<const std::int64_t>(in_dims));
  const std::vector<std::int64_t> y_dims = folded(out_dims);
  Tensor y(Layout(std::span<const std::int64_t>(y_dims)), out_dtype);
  const double scale = scale_of(norm, inverse, double(product(lengths, 0, lengths.size())));
  switch (kind) {
    case Kind::c2c:
      detail::launch(b, detail::args::fft_c2c<Tensor>{.x = input, .y = y, .inverse = inverse ? 1 : 0, .scale = scale},
                     name);
      break;
    case Kind::r2c:
      detail::launch(b, detail::args::fft_r2c<Tensor>{.x = input, .y = y, .scale = scale}, name);
      break;
    case Kind::c2r:
      detail::launch(b, detail::args::fft_c2r<Tensor>{.x = input, .y = y, .scale = scale}, name);
      break;
  }
  return y.reshape(std::span<const std::int64_t>(out_dims));
}

}  // namespace

Tensor fft(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::fft", Kind::c2c, false, 1, x, -1, norm);
}
Tensor ifft(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::ifft", Kind::c2c, true, 1, x, -1, norm);
}
Tensor rfft(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::rfft", Kind::r2c, false, 1, x, -1, norm);
}
Tensor irfft(const Backend& b, const Tensor& x, std::int64_t n, Norm norm) {
  return transform(b, "fft::irfft", Kind::c2r, true, 1, x, n, norm);
}
Tensor fft2(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::fft2", Kind::c2c, false, 2, x, -1, norm);
}
Tensor ifft2(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::ifft2", Kind::c2c, true, 2, x, -1, norm);
}
Tensor rfft2(const Backend& b, const Tensor& x, Norm norm) {
  return transform(b, "fft::rfft2", Kind::r2c, false, 2, x, -1, norm);
}
Tensor irfft2(const Backend& b, const Tensor& x, std::int64_t n, Norm norm) {
  return transform(b, "fft::irfft2", Kind::c2r, true, 2, x, n, norm);
}

}  // namespace xylem::fft
