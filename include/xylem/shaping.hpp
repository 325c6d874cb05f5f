#pragma once
/// @file
/// Joining, splitting, padding and reordering tensors, with NumPy's and
/// PyTorch's semantics. Results that can be views are views (split, chunk);
/// the others are new contiguous tensors written by strided copies
/// (core::copy_view), so they move data at copy bandwidth on every
/// framework and take every dtype.
///
/// Errors, before any tensor changes: invalid_argument (no tensors, a bad
/// axis, sizes that do not add up, an empty handle), shape_mismatch (dims
/// that do not fit together), dtype_mismatch (tensors of different dtypes).
#include <cstdint>
#include <span>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

/// The tensors joined along an existing axis: every dim but axis equal, of
/// one dtype; the result's dim along axis is the sum of theirs.
[[nodiscard]] Tensor concatenate(const Backend& b, std::span<const Tensor> tensors, int axis = 0);

/// The tensors (all of one dims and dtype) joined along a new axis, which
/// is `axis` of the result (in [-rank-1, rank]).
[[nodiscard]] Tensor stack(const Backend& b, std::span<const Tensor> tensors, int axis = 0);

/// Views of x along axis, of the given sizes (which must add up to x's dim).
[[nodiscard]] std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> sizes, int axis = 0);

/// `count` views of x along axis, each ceil(dim / count) long but the last
/// (as torch.chunk: fewer than `count` when the dim runs out).
[[nodiscard]] std::vector<Tensor> chunk(const Tensor& x, std::int64_t count, int axis = 0);

/// x padded with `value`: pads holds (before, after) pairs from the last
/// axis backwards, as torch.nn.functional.pad (2 * k entries pad the last k
/// axes). A negative pad removes elements instead.
[[nodiscard]] Tensor pad(const Backend& b, const Tensor& x, std::span<const std::int64_t> pads, double value = 0);

/// x's axes reordered (result axis i is x's axis order[i]), as a new
/// contiguous tensor. (Tensor::as_strided(x.layout().permute(order)) is the
/// view.)
[[nodiscard]] Tensor permute(const Backend& b, const Tensor& x, std::span<const int> order);

/// x with axes axis0 and axis1 swapped, as a new contiguous tensor (Tensor::transpose
/// is the view).
[[nodiscard]] Tensor transpose(const Backend& b, const Tensor& x, int axis0 = 0, int axis1 = 1);

}  // namespace xylem
