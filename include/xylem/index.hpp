#pragma once
/// @file
/// Indexing along one axis, with PyTorch's semantics: index_select, gather,
/// scatter, scatter_add, one_hot, and nn::embedding with its gradient.
///
/// Indices are i32 or i64 tensors. Every other tensor may have any dtype,
/// save the accumulating ops (scatter_add, embedding_backward): float dtypes,
/// summed in the compute type (f32 for f16/bf16).
///
/// Out-of-range indices. An index outside [0, n) for the dimension n it
/// indexes (negative ones included: as PyTorch's, these ops do not wrap)
/// raises Error(index_out_of_range) naming the op and the first such index.
/// The check runs on the device (a pass over the indices setting a flag)
/// and the call does not wait for it: the error is raised at the next point
/// the host waits after the call (a host read of any tensor, a future's
/// get, Backend::synchronize), as CUDA raises a device assert, but typed and
/// once: the backend stays usable. The kernels never touch memory outside a
/// tensor whatever the index (a gather writes 0 for it, a scatter skips
/// it), so when the error is raised the op's output (y of the _into forms,
/// an accumulated gradient included) holds unspecified values and every
/// other tensor is as it was. Reading the flag back is a host read, so
/// these ops refuse a capture (xylem/capture.hpp), as nn::cross_entropy's
/// read of its targets does.
///
/// Each op enqueues its work and returns. Errors besides (raised by the call,
/// before any tensor changes):
/// dtype_mismatch, shape_mismatch, invalid_argument (a bad axis, an empty
/// handle), unsupported (the device lacks the op for the dtype).
#include <cstdint>
#include <optional>

#include "xylem/backend.hpp"
#include "xylem/dtype.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

/// x's slices at `index` (rank 1) along `axis`: y has x's dims with
/// dims[axis] = index.numel(), y[..., j, ...] = x[..., index[j], ...].
[[nodiscard]] Tensor index_select(const Backend& b, const Tensor& x, int axis, const Tensor& index);

/// y[p] = x[p with p[axis] = index[p]]: index has x's rank and dims no larger
/// than x's except along axis; y has index's dims and x's dtype.
[[nodiscard]] Tensor gather(const Backend& b, const Tensor& x, int axis, const Tensor& index);

/// y = x, then y[p with p[axis] = index[p]] = src[p] for every p of index
/// (src has index's rank and dims at least index's; y's dims other than
/// axis at least index's). Of a position named twice, the last index along
/// axis wins (PyTorch leaves that unspecified).
[[nodiscard]] Tensor scatter(const Backend& b, const Tensor& x, int axis, const Tensor& index, const Tensor& src);
/// scatter into y itself (in place).
void scatter_into(const Backend& b, int axis, const Tensor& index, const Tensor& src, Tensor& y);

/// As scatter, adding: y[q] += src[p], every repeated position summed.
/// Float dtypes.
[[nodiscard]] Tensor scatter_add(const Backend& b, const Tensor& x, int axis, const Tensor& index,
                                 const Tensor& src);
/// scatter_add into y itself (in place).
void scatter_add_into(const Backend& b, int axis, const Tensor& index, const Tensor& src, Tensor& y);

/// indices' dims plus one axis of `classes`: 1 at each index, 0 elsewhere.
[[nodiscard]] Tensor one_hot(const Backend& b, const Tensor& indices, std::int64_t classes, DType dtype = DType::i64);

namespace nn {

/// Rows of weight [V, D] at `indices` (any dims): y has indices' dims plus
/// D. padding_idx changes only the gradient (as PyTorch).
[[nodiscard]] Tensor embedding(const Backend& b, const Tensor& weight, const Tensor& indices);

/// The gradient of embedding with respect to weight: a new [V, D] tensor of
/// dy's dtype, dy's rows summed into the rows their indices name; the row
/// padding_idx (in [-V, V), negative counting from the end) gets none.
/// dy has indices' dims plus D. Float dtypes.
[[nodiscard]] Tensor embedding_backward(const Backend& b, const Tensor& dy, const Tensor& indices,
                                        std::int64_t num_embeddings,
                                        std::optional<std::int64_t> padding_idx = std::nullopt);
/// As embedding_backward, accumulating into dweight [V, D] (its dtype dy's).
void embedding_backward_into(const Backend& b, const Tensor& dy, const Tensor& indices, Tensor& dweight,
                             std::optional<std::int64_t> padding_idx = std::nullopt);

}  // namespace nn

}  // namespace xylem
