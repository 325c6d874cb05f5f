// Joining, splitting, padding and reordering (xylem/shaping.hpp): views
// where the result can be one, else a new tensor written by strided copies
// into views of it (ops::copy_into, one core::copy_view each).
#include "xylem/shaping.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "ops/checks.hpp"
#include "ops/layout.hpp"
#include "xylem/creation.hpp"

namespace xylem {
namespace {

using Dims = std::array<std::int64_t, kMaxRank>;

Layout layout_of(const Dims& dims, int rank) {
  return Layout(std::span<const std::int64_t>(dims.data(), std::size_t(rank)));
}

// Every tensor defined, of the first's dtype, with its dims except along
// `skip` (-1: every dim).
void require_joinable(std::string_view op, std::span<const Tensor> tensors, int skip) {
  ops::require_argument(!tensors.empty(), op, "no tensors to join");
  const Tensor& first = tensors[0];
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string arg = "tensors[" + std::to_string(i) + "]";
    ops::require_defined(op, arg, tensors[i]);
    ops::require_same_dtype(op, "tensors[0]", first, arg, tensors[i]);
    bool ok = tensors[i].rank() == first.rank();
    for (int d = 0; ok && d < first.rank(); ++d) ok = d == skip || tensors[i].layout().dim(d) == first.layout().dim(d);
    if (!ok)
      throw Error(ErrorCode::shape_mismatch, std::string(op) + ": " + arg + " has shape " +
                                                 tensors[i].layout().dims_string() + " but tensors[0] " +
                                                 first.layout().dims_string() + "; they must match" +
                                                 (skip >= 0 ? " except along axis " + std::to_string(skip) : ""));
  }
}

}  // namespace

Tensor concatenate(const Backend& b, std::span<const Tensor> tensors, int axis) {
  constexpr std::string_view op = "concatenate";
  ops::require_argument(!tensors.empty(), op, "no tensors to join");
  ops::require_defined(op, "tensors[0]", tensors[0]);
  const int a = ops::normalise_axis(op, tensors[0], axis);
  require_joinable(op, tensors, a);
  Dims dims{};
  const int rank = tensors[0].rank();
  for (int d = 0; d < rank; ++d) dims[std::size_t(d)] = tensors[0].layout().dim(d);
  std::int64_t total = 0;
  for (const Tensor& t : tensors) total += t.layout().dim(a);
  dims[std::size_t(a)] = total;
  Tensor y(layout_of(dims, rank), tensors[0].dtype());
  std::int64_t at = 0;
  for (const Tensor& t : tensors) {
    const std::int64_t n = t.layout().dim(a);
    Tensor part = y.slice(a, at, at + n);
    ops::copy_into(b, t, part);
    at += n;
  }
  return y;
}

Tensor stack(const Backend& b, std::span<const Tensor> tensors, int axis) {
  constexpr std::string_view op = "stack";
  require_joinable(op, tensors, -1);
  const int rank = tensors[0].rank();
  ops::require_argument(rank < kMaxRank, op, [&] {
    return "tensors have rank " + std::to_string(rank) + "; at most " + std::to_string(kMaxRank - 1);
  });
  const int a = axis < 0 ? axis + rank + 1 : axis;
  ops::require_argument(a >= 0 && a <= rank, op, [&] {
    return "axis " + std::to_string(axis) + " is out of range for a new axis of shape " +
           tensors[0].layout().dims_string();
  });
  Dims dims{};
  for (int d = 0, s = 0; d <= rank; ++d)
    dims[std::size_t(d)] = d == a ? std::int64_t(tensors.size()) : tensors[0].layout().dim(s++);
  Tensor y(layout_of(dims, rank + 1), tensors[0].dtype());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    Tensor part = y.slice(a, std::int64_t(i), std::int64_t(i) + 1).reshape(tensors[i].layout().dims());
    ops::copy_into(b, tensors[i], part);
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> sizes, int axis) {
  constexpr std::string_view op = "split";
  ops::require_defined(op, "x", x);
  const int a = ops::normalise_axis(op, x, axis);
  std::int64_t total = 0;
  for (const std::int64_t s : sizes) {
    ops::require_argument(s >= 0, op, [&] { return "size " + std::to_string(s) + " is negative"; });
    total += s;
  }
  ops::require_argument(total == x.layout().dim(a), op, [&] {
    return "sizes add up to " + std::to_string(total) + " but x has " + std::to_string(x.layout().dim(a)) +
           " along axis " + std::to_string(a) + " (shape " + x.layout().dims_string() + ")";
  });
  std::vector<Tensor> parts;
  parts.reserve(sizes.size());
  std::int64_t at = 0;
  for (const std::int64_t s : sizes) {
    parts.push_back(x.slice(a, at, at + s));
    at += s;
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t count, int axis) {
  constexpr std::string_view op = "chunk";
  ops::require_defined(op, "x", x);
  ops::require_argument(count >= 1, op, [&] { return "count " + std::to_string(count) + " is below 1"; });
  const int a = ops::normalise_axis(op, x, axis);
  const std::int64_t dim = x.layout().dim(a), size = (dim + count - 1) / count;
  std::vector<std::int64_t> sizes;
  for (std::int64_t at = 0; at < dim; at += size) sizes.push_back(std::min(size, dim - at));
  if (dim == 0) sizes.push_back(0);  // as torch.chunk: one empty piece
  return split(x, sizes, a);
}

Tensor pad(const Backend& b, const Tensor& x, std::span<const std::int64_t> pads, double value) {
  constexpr std::string_view op = "pad";
  ops::require_defined(op, "x", x);
  const int rank = x.rank();
  ops::require_argument(pads.size() % 2 == 0 && pads.size() <= 2 * std::size_t(rank), op, [&] {
    return std::to_string(pads.size()) + " pads for shape " + x.layout().dims_string() +
           "; expected an even number, at most twice the rank";
  });
  // The padded dims, and the views of x (cropped by negative pads) and of
  // y that x fills.
  Dims dims{};
  for (int d = 0; d < rank; ++d) dims[std::size_t(d)] = x.layout().dim(d);
  Tensor inner = x;
  std::array<std::int64_t, kMaxRank> before{}, after{};
  for (std::size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = rank - 1 - int(p);
    before[std::size_t(d)] = pads[2 * p];
    after[std::size_t(d)] = pads[2 * p + 1];
    const std::int64_t n = dims[std::size_t(d)] + before[std::size_t(d)] + after[std::size_t(d)];
    ops::require_argument(n >= 0, op, [&] {
      return "pads (" + std::to_string(before[std::size_t(d)]) + ", " + std::to_string(after[std::size_t(d)]) +
             ") remove more than the " + std::to_string(dims[std::size_t(d)]) + " elements of axis " +
             std::to_string(d);
    });
    const std::int64_t lo = std::max<std::int64_t>(0, -before[std::size_t(d)]);
    const std::int64_t hi = std::max(lo, dims[std::size_t(d)] - std::max<std::int64_t>(0, -after[std::size_t(d)]));
    inner = inner.slice(d, lo, hi);
    dims[std::size_t(d)] = n;
  }
  Tensor y(layout_of(dims, rank), x.dtype());
  // The border slabs of each axis are filled (corners twice), then x is
  // copied into the interior, so y is written once, as np.pad does: a fill
  // of the whole of y first wrote it twice (pad of [16, 64, 128, 128] by 1
  // took 3.4x NumPy's time on one core of the H100 host).
  Tensor window = y;
  for (int d = 0; d < rank; ++d) {
    const std::int64_t lo = std::max<std::int64_t>(0, before[std::size_t(d)]);
    const std::int64_t hi = lo + inner.layout().dim(d), n = dims[std::size_t(d)];
    for (const auto& [from, to] : {std::pair{std::int64_t{0}, lo}, std::pair{hi, n}}) {
      if (from == to) continue;
      Tensor slab = y.slice(d, from, to);
      fill(b, slab, value);
    }
    window = window.slice(d, lo, hi);
  }
  ops::copy_into(b, inner, window);
  return y;
}

Tensor permute(const Backend& b, const Tensor& x, std::span<const int> order) {
  constexpr std::string_view op = "permute";
  ops::require_defined(op, "x", x);
  const int rank = x.rank();
  std::array<bool, kMaxRank> seen{};
  bool ok = int(order.size()) == rank;
  for (std::size_t i = 0; ok && i < order.size(); ++i) {
    const int d = order[i] < 0 ? order[i] + rank : order[i];
    ok = d >= 0 && d < rank && !seen[std::size_t(d)];
    if (ok) seen[std::size_t(d)] = true;
  }
  ops::require_argument(ok, op, [&] {
    std::string list;
    for (const int d : order) list += (list.empty() ? "" : ", ") + std::to_string(d);
    return "order (" + list + ") is not a permutation of the axes of shape " + x.layout().dims_string();
  });
  std::array<int, kMaxRank> axes{};
  for (std::size_t i = 0; i < order.size(); ++i) axes[i] = order[i] < 0 ? order[i] + rank : order[i];
  const Tensor view = x.as_strided(x.layout().permute(std::span<const int>(axes.data(), order.size())));
  return contiguous(b, view);
}

Tensor transpose(const Backend& b, const Tensor& x, int axis0, int axis1) {
  constexpr std::string_view op = "transpose";
  ops::require_defined(op, "x", x);
  const int a = ops::normalise_axis(op, x, axis0), c = ops::normalise_axis(op, x, axis1);
  return contiguous(b, x.transpose(a, c));
}

}  // namespace xylem
