#pragma once
/// @file
/// xylem::blas: BLAS operations on any backend. Vectors are rank-1 tensors
/// (views with any stride); matrices rank-2 (rank-3 for batched gemm).
/// f32 and f64; gemm also f16 and bf16.
/// Reductions write a one-element tensor, or return a Future. Of an empty
/// vector: asum, dot and nrm2 are 0; iamax raises invalid_argument (BLAS has
/// no index to give).
///
/// Every operation checks its arguments, enqueues its work on the backend's
/// device and returns without waiting (the Future forms too: get() waits).
/// Errors are thrown before any tensor changes: dtype_mismatch (a dtype
/// other than those above, or operands of different dtypes), shape_mismatch
/// (ranks or sizes that do not fit), invalid_argument (an empty Tensor
/// handle, outputs sharing memory), uninitialized_read (an input never
/// written), unsupported (the device lacks the op for the dtype, with
/// Fallback::raise), out_of_memory.
#include "xylem/backend.hpp"
#include "xylem/future.hpp"
#include "xylem/tensor.hpp"

namespace xylem::blas {

/// Whether gemm and gemv use a matrix as it is or transposed: op(a) = a or a^T.
enum class Transpose {
  no,  ///< op(a) = a
  yes  ///< op(a) = a^T
};

/// result = sum_i |x_i|, a one-element tensor of x's dtype; 0 for an empty x.
void asum(const Backend& b, const Tensor& x, Tensor& result);               // sum |x_i|
/// result = sum_i x_i y_i, a one-element tensor of x's dtype; x and y of one
/// size and dtype (shape_mismatch, dtype_mismatch otherwise).
void dot(const Backend& b, const Tensor& x, const Tensor& y, Tensor& result);
/// result = sqrt(sum_i x_i^2), a one-element tensor of x's dtype.
void nrm2(const Backend& b, const Tensor& x, Tensor& result);               // sqrt(sum x_i^2)
/// i64 index of the first max |x_i|; a NaN counts as larger than everything
/// (the first NaN wins, as NumPy's argmax and xylem::argmax). result is a
/// one-element i64 tensor, the index 0-based; an empty x raises
/// invalid_argument.
void iamax(const Backend& b, const Tensor& x, Tensor& result);
/// sum_i |x_i|, as a Future: get() waits for the work and reads the value.
[[nodiscard]] Future<double> asum(const Backend& b, const Tensor& x);
/// sum_i x_i y_i, as a Future: get() waits for the work and reads the value.
[[nodiscard]] Future<double> dot(const Backend& b, const Tensor& x, const Tensor& y);
/// sqrt(sum_i x_i^2), as a Future: get() waits for the work and reads the value.
[[nodiscard]] Future<double> nrm2(const Backend& b, const Tensor& x);
/// The 0-based index of the first max |x_i| (see the other iamax), as a Future.
[[nodiscard]] Future<std::int64_t> iamax(const Backend& b, const Tensor& x);

/// y += alpha x; x and y of one size and dtype.
void axpy(const Backend& b, double alpha, const Tensor& x, Tensor& y);     // y += alpha x
/// y = x; x and y of one size and dtype.
void copy(const Backend& b, const Tensor& x, Tensor& y);                   // y = x
/// x *= alpha, in place.
void scal(const Backend& b, double alpha, Tensor& x);                      // x *= alpha
/// Exchanges the elements of x and y (one size and dtype).
void swap(const Backend& b, Tensor& x, Tensor& y);
/// Plane rotation: (x, y) <- (c x + s y, c y - s x), in place; x and y of one
/// size and dtype.
void rot(const Backend& b, Tensor& x, Tensor& y, double c, double s);

/// y = alpha op(a) x + beta y; a is a matrix, x and y vectors. With
/// beta == 0, y need not be initialized. op(a) with no columns gives
/// y = beta y (0 for beta 0). f32 and f64.
///
/// op(a) is [m, n]: x must have n elements and y m (shape_mismatch
/// otherwise); a, x and y share one dtype.
void gemv(const Backend& b, Transpose ta, double alpha, const Tensor& a, const Tensor& x, double beta, Tensor& y);

/// c = alpha op(a) op(b) + beta c. With beta == 0, c need not be initialized.
/// k = 0 gives c = beta c (0 for beta 0); an empty c is written, holding nothing.
/// f32 and f64; f16 and bf16 storage too, accumulating in f32 and rounding
/// the result to the storage type.
/// Strided batches: rank-3 a, b and c ([batch, rows, cols]) multiply matrix
/// by matrix; a or b may have batch 1 (then the same matrix serves every
/// batch) or any batch stride.
///
/// op(a) is [m, k], op(b) [k, n] and c [m, n] (per batch when rank 3);
/// sizes that do not fit raise shape_mismatch, a, b and c of different
/// dtypes dtype_mismatch. `bm` is b (named so as not to hide the backend).
/// Any views are taken (a matrix view with no unit stride is copied first).
void gemm(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, const Tensor& bm,
          double beta, Tensor& c);

}  // namespace xylem::blas
