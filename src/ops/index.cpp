// Indexing along one axis (xylem/index.hpp): argument checks, the range
// check on the device (its error raised at the next host wait), then one
// index::gather or index::scatter launch.
// index_select, embedding and one_hot are views of their indices that make
// them a gather or a scatter (index.hpp in include/xylem/plugin says how
// the kernels walk them).
#include "xylem/index.hpp"

#include <array>
#include <string>
#include <vector>

#include "core/deferred.hpp"
#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/creation.hpp"

namespace xylem {
namespace {

using Dims = std::array<std::int64_t, kMaxRank>;

void require_index(std::string_view op, std::string_view arg, const Tensor& index) {
  ops::require_defined(op, arg, index);
  if (index.dtype() != DType::i32 && index.dtype() != DType::i64)
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               ops::describe(index) + "; expected i32 or i64 indices");
}

// The first element of index outside [0, n) as "index V (element K in
// row-major order of indices ...)", or "" when there is none (any more).
std::string first_outside(const Tensor& index, std::int64_t n) {
  std::vector<std::int64_t> values;
  if (index.dtype() == DType::i32) {
    for (const std::int32_t v : index.to_vector<std::int32_t>()) values.push_back(v);
  } else {
    values = index.to_vector<std::int64_t>();
  }
  for (std::size_t k = 0; k < values.size(); ++k)
    if (values[k] < 0 || values[k] >= n)
      return "index " + std::to_string(values[k]) + " (element " + std::to_string(k) +
             " in row-major order of indices " + ops::describe(index) + ")";
  return {};
}

// Checks on the device that every element of index lies in [0, n), without
// waiting: the kernels skip an index outside (a gather gives 0 for it), and
// the next host wait raises index_out_of_range naming the op and the first
// offender (core/deferred.hpp).
void check_range(const Backend& b, std::string_view op, const Tensor& index, std::int64_t n) {
  if (index.numel() == 0) return;
  Tensor flag = zeros(b, Layout{1}, DType::i32);
  detail::launch(b, detail::args::index_check<Tensor>{.index = index, .flag = flag, .n = n}, op);
  detail::defer_check(flag.read<std::int32_t>(), [index, n, name = std::string(op)](std::int32_t) {
    // Only on failure: the indices come to the host to name the culprit;
    // work enqueued since may have changed them.
    std::string culprit = first_outside(index, n);
    if (culprit.empty()) culprit = "an index of " + ops::describe(index) + " (since changed)";
    throw Error(ErrorCode::index_out_of_range,
                name + ": " + culprit + " is outside [0, " + std::to_string(n) + ")");
  });
}

// A view of `t` with these dims and strides (same storage and offset).
Tensor restrided(const Tensor& t, const Dims& dims, const Dims& strides, int rank) {
  const auto r = std::size_t(rank);
  return t.as_strided(Layout::strided(std::span<const std::int64_t>(dims.data(), r),
                                      std::span<const std::int64_t>(strides.data(), r), t.layout().offset()));
}

// t as rank 1 (a copy when its strides do not allow a view).
Tensor flattened(const Backend& b, const Tensor& t) {
  const Tensor dense = t.layout().is_contiguous() ? t : contiguous(b, t);
  return dense.reshape({t.numel()});
}

// x's slices at index (rank 1) along axis.
Tensor select(const Backend& b, std::string_view op, const Tensor& x, int axis, const Tensor& index) {
  ops::require_defined(op, "x", x);
  require_index(op, "index", index);
  ops::require_argument(index.rank() <= 1, op, [&] {
    return "index has shape " + index.layout().dims_string() + "; expected rank 0 or 1";
  });
  const int a = ops::normalise_axis(op, x, axis);
  const std::int64_t k = index.numel();
  const std::int64_t stride = index.rank() == 1 ? index.layout().stride(0) : 0;
  check_range(b, op, index, x.layout().dim(a));
  Dims dims{}, strides{};
  for (int d = 0; d < x.rank(); ++d) dims[std::size_t(d)] = x.layout().dim(d);
  dims[std::size_t(a)] = k;
  strides[std::size_t(a)] = stride;
  const Tensor view = restrided(index, dims, strides, x.rank());
  Tensor y(Layout(std::span<const std::int64_t>(dims.data(), std::size_t(x.rank()))), x.dtype());
  detail::launch(b, detail::args::index_gather<Tensor>{.x = x, .index = view, .y = y, .axis = a}, op);
  return y;
}

// index's dims must not exceed `t`'s along every axis but `skip` (-1: none).
void require_within(std::string_view op, const Tensor& index, std::string_view arg, const Tensor& t, int skip) {
  bool ok = index.rank() == t.rank();
  for (int d = 0; ok && d < t.rank(); ++d) ok = d == skip || index.layout().dim(d) <= t.layout().dim(d);
  if (!ok)
    throw Error(ErrorCode::shape_mismatch, std::string(op) + ": index has shape " + index.layout().dims_string() +
                                               " and '" + std::string(arg) + "' " + t.layout().dims_string() +
                                               "; index must have its rank and no larger dims" +
                                               (skip >= 0 ? " except along axis " + std::to_string(skip) : ""));
}

// Checks a scatter of src at index along axis into tensors of y's dims and
// dtype, and returns src's view with index's dims.
Tensor plan_scatter(const Backend& b, std::string_view op, int axis, const Tensor& index, const Tensor& src,
                    const Tensor& y, bool accumulate) {
  require_index(op, "index", index);
  ops::require_defined(op, "src", src);
  ops::require_defined(op, "y", y);
  if (accumulate) ops::require_float(op, "y", y);
  ops::require_same_dtype(op, "y", y, "src", src);
  require_within(op, index, "src", src, -1);
  require_within(op, index, "y", y, axis);
  check_range(b, op, index, y.layout().dim(axis));
  Dims dims{}, strides{};
  for (int d = 0; d < src.rank(); ++d) {
    dims[std::size_t(d)] = index.layout().dim(d);
    strides[std::size_t(d)] = src.layout().stride(d);
  }
  return restrided(src, dims, strides, src.rank());
}

void run_scatter(const Backend& b, std::string_view op, int axis, const Tensor& index, const Tensor& src, Tensor& y,
                 bool accumulate, std::int64_t skip = -1) {
  detail::launch(b,
                 detail::args::index_scatter<Tensor>{
                     .src = src, .index = index, .y = y, .axis = axis, .accumulate = accumulate ? 1 : 0, .skip = skip},
                 op);
}

void scatter_checked(const Backend& b, std::string_view op, int axis, const Tensor& index, const Tensor& src,
                     Tensor& y, bool accumulate) {
  ops::require_defined(op, "y", y);
  const int a = ops::normalise_axis(op, y, axis);
  const Tensor view = plan_scatter(b, op, a, index, src, y, accumulate);
  run_scatter(b, op, a, index, view, y, accumulate);
}

Tensor scatter_copy(const Backend& b, std::string_view op, const Tensor& x, int axis, const Tensor& index,
                    const Tensor& src, bool accumulate) {
  ops::require_defined(op, "x", x);
  const int a = ops::normalise_axis(op, x, axis);
  const Tensor view = plan_scatter(b, op, a, index, src, x, accumulate);
  Tensor y = contiguous(b, x);
  run_scatter(b, op, a, index, view, y, accumulate);
  return y;
}

}  // namespace

Tensor index_select(const Backend& b, const Tensor& x, int axis, const Tensor& index) {
  return select(b, "index_select", x, axis, index);
}

Tensor gather(const Backend& b, const Tensor& x, int axis, const Tensor& index) {
  constexpr std::string_view op = "gather";
  ops::require_defined(op, "x", x);
  require_index(op, "index", index);
  const int a = ops::normalise_axis(op, x, axis);
  require_within(op, index, "x", x, a);
  check_range(b, op, index, x.layout().dim(a));
  Tensor y(Layout(index.layout().dims()), x.dtype());
  detail::launch(b, detail::args::index_gather<Tensor>{.x = x, .index = index, .y = y, .axis = a}, op);
  return y;
}

Tensor scatter(const Backend& b, const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  return scatter_copy(b, "scatter", x, axis, index, src, false);
}
void scatter_into(const Backend& b, int axis, const Tensor& index, const Tensor& src, Tensor& y) {
  scatter_checked(b, "scatter", axis, index, src, y, false);
}
Tensor scatter_add(const Backend& b, const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  return scatter_copy(b, "scatter_add", x, axis, index, src, true);
}
void scatter_add_into(const Backend& b, int axis, const Tensor& index, const Tensor& src, Tensor& y) {
  scatter_checked(b, "scatter_add", axis, index, src, y, true);
}

Tensor one_hot(const Backend& b, const Tensor& indices, std::int64_t classes, DType dtype) {
  constexpr std::string_view op = "one_hot";
  require_index(op, "indices", indices);
  ops::require_argument(classes >= 0, op, [&] { return "classes " + std::to_string(classes) + " is negative"; });
  const int rank = indices.rank();
  ops::require_argument(rank < kMaxRank, op, [&] {
    return "indices have rank " + std::to_string(rank) + "; at most " + std::to_string(kMaxRank - 1);
  });
  check_range(b, op, indices, classes);
  // A scatter of one broadcast 1 at [..., indices[...]] into zeros.
  Dims dims{}, strides{}, zero{};
  for (int d = 0; d < rank; ++d) {
    dims[std::size_t(d)] = indices.layout().dim(d);
    strides[std::size_t(d)] = indices.layout().stride(d);
  }
  dims[std::size_t(rank)] = 1;
  strides[std::size_t(rank)] = 1;
  const Tensor index = restrided(indices, dims, strides, rank + 1);
  const Tensor one = restrided(full(b, Layout{1}, dtype, 1.0), dims, zero, rank + 1);
  dims[std::size_t(rank)] = classes;
  Tensor y = zeros(b, Layout(std::span<const std::int64_t>(dims.data(), std::size_t(rank + 1))), dtype);
  run_scatter(b, op, rank, index, one, y, false);
  return y;
}

namespace nn {

Tensor embedding(const Backend& b, const Tensor& weight, const Tensor& indices) {
  constexpr std::string_view op = "nn::embedding";
  ops::require_defined(op, "weight", weight);
  ops::require_rank(op, "weight", weight, 2);
  require_index(op, "indices", indices);
  ops::require_argument(indices.rank() < kMaxRank, op, [&] {
    return "indices have rank " + std::to_string(indices.rank()) + "; at most " + std::to_string(kMaxRank - 1);
  });
  const Tensor rows = select(b, op, weight, 0, flattened(b, indices));
  std::vector<std::int64_t> dims(indices.layout().dims().begin(), indices.layout().dims().end());
  dims.push_back(weight.layout().dim(1));
  return rows.reshape(dims);
}

void embedding_backward_into(const Backend& b, const Tensor& dy, const Tensor& indices, Tensor& dweight,
                             std::optional<std::int64_t> padding_idx) {
  constexpr std::string_view op = "nn::embedding_backward";
  ops::require_float(op, "dweight", dweight);
  ops::require_rank(op, "dweight", dweight, 2);
  ops::require_defined(op, "dy", dy);
  ops::require_same_dtype(op, "dweight", dweight, "dy", dy);
  require_index(op, "indices", indices);
  const std::int64_t v = dweight.layout().dim(0), d = dweight.layout().dim(1);
  std::vector<std::int64_t> dims(indices.layout().dims().begin(), indices.layout().dims().end());
  dims.push_back(d);
  ops::require_dims(op, "dy", dy, Layout(std::span<const std::int64_t>(dims)));
  std::int64_t skip = -1;
  if (padding_idx) {
    ops::require_argument(*padding_idx >= -v && *padding_idx < v, op, [&] {
      return "padding_idx " + std::to_string(*padding_idx) + " is outside [-" + std::to_string(v) + ", " +
             std::to_string(v) + ")";
    });
    skip = *padding_idx < 0 ? *padding_idx + v : *padding_idx;
  }
  const Tensor flat = flattened(b, indices);
  const std::int64_t n = flat.numel();
  check_range(b, op, flat, v);
  // Each index broadcast along D: row j of dy goes to row flat[j].
  const Tensor index = flat.as_strided(Layout::strided(std::array<std::int64_t, 2>{n, d},
                                                       std::array<std::int64_t, 2>{flat.layout().stride(0), 0},
                                                       flat.layout().offset()));
  const Tensor rows = (dy.layout().is_contiguous() ? dy : contiguous(b, dy)).reshape({n, d});
  run_scatter(b, op, 0, index, rows, dweight, true, skip);
}

Tensor embedding_backward(const Backend& b, const Tensor& dy, const Tensor& indices, std::int64_t num_embeddings,
                          std::optional<std::int64_t> padding_idx) {
  constexpr std::string_view op = "nn::embedding_backward";
  ops::require_float(op, "dy", dy);
  ops::require_argument(dy.rank() >= 1, op, "dy must have rank 1 or more");
  ops::require_argument(num_embeddings >= 0, op, [&] {
    return "num_embeddings " + std::to_string(num_embeddings) + " is negative";
  });
  Tensor dweight = zeros(b, Layout{num_embeddings, dy.layout().dim(-1)}, dy.dtype());
  embedding_backward_into(b, dy, indices, dweight, padding_idx);
  return dweight;
}

}  // namespace nn

}  // namespace xylem
