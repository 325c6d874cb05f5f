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
#include <cstdint>
#include <span>

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

/// The product a @ bm into a new tensor, as NumPy's and PyTorch's matmul:
/// vector @ vector is their dot product (rank 0), matrix @ vector and
/// vector @ matrix a vector, [m, k] @ [k, n] is [m, n]. Higher ranks are
/// stacks of matrices over their leading (batch) axes, which broadcast as
/// NumPy's do: [2, 1, m, k] @ [3, k, n] is [2, 3, m, n], each matrix of an
/// operand with fewer or size-1 batch axes serving every product it meets
/// (no copy where its strides allow). A vector beside a stack is a matrix
/// of one row (a) or column (b), that axis dropped from the result. Inner
/// sizes that differ, batch axes that do not broadcast and rank 0 raise
/// shape_mismatch; dtypes that differ dtype_mismatch.
[[nodiscard]] Tensor matmul(const Backend& b, const Tensor& a, const Tensor& bm);

/// Which triangle of a matrix syrk writes and trsm reads.
enum class Uplo {
  upper,  ///< the diagonal and above
  lower   ///< the diagonal and below
};

/// Which side of the unknown trsm's triangular matrix stands on.
enum class Side {
  left,  ///< op(a) x = alpha b
  right  ///< x op(a) = alpha b
};

/// Whether trsm reads the triangular matrix's diagonal or takes it as ones.
enum class Diag {
  non_unit,  ///< the diagonal is read
  unit       ///< the diagonal is taken as ones and never read
};

/// The 0-based index of the first min |x_i|, as iamax's rule mirrored: a NaN
/// counts as smaller than everything (the first NaN wins, as NumPy's argmin
/// and xylem::argmin). result is a one-element i64 tensor; an empty x raises
/// invalid_argument. f32 and f64.
void iamin(const Backend& b, const Tensor& x, Tensor& result);
/// The 0-based index of the first min |x_i| (see the other iamin), as a Future.
[[nodiscard]] Future<std::int64_t> iamin(const Backend& b, const Tensor& x);

/// Rank-1 update a += alpha x y^T: a is [m, n], x has m elements and y n
/// (shape_mismatch otherwise); one dtype, f32 or f64. Any vector views; a
/// view of a with no unit stride is updated through a dense copy.
void ger(const Backend& b, double alpha, const Tensor& x, const Tensor& y, Tensor& a);

/// Symmetric rank-k update of one triangle: c = alpha op(a) op(a)^T + beta c
/// on the `uplo` triangle of c (diagonal included); the other triangle is
/// left unchanged, so c must have been written (uninitialized_read
/// otherwise) even for beta 0, whose triangle's old values (NaN included)
/// are never read. op(a) is [n, k] (a itself with Transpose::no, a^T with
/// Transpose::yes) and c [n, n]; k = 0 gives beta c on the triangle.
/// f32 and f64.
void syrk(const Backend& b, Uplo uplo, Transpose trans, double alpha, const Tensor& a, double beta, Tensor& c);

/// Triangular solve in place: b becomes x with op(a) x = alpha b
/// (Side::left, a [m, m]) or x op(a) = alpha b (Side::right, a [n, n]),
/// b being [m, n]. Only a's `uplo` triangle is read; Diag::unit takes its
/// diagonal as ones. alpha 0 writes zeros without reading either matrix. A
/// zero on a's diagonal is not checked: it gives Inf or NaN, as BLAS does.
/// f32 and f64.
void trsm(const Backend& b, Side side, Uplo uplo, Transpose trans, Diag diag, double alpha, const Tensor& a,
          Tensor& bm);

/// Matrix sum c = alpha op(a) + beta op(bm): op(a), op(bm) and c all
/// [m, n]. A term whose scale is 0 is left out, its operand's values not
/// mattering (NaN included), though it must still have been written. c may
/// share memory with a or bm: the result is as if both were read first.
/// f32 and f64.
void geam(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, double beta, const Tensor& bm,
          Tensor& c);

/// gemm over a batch given as lists: c[i] = alpha op(a[i]) op(bm[i]) +
/// beta c[i] for every i. The lists are of one length; every a[i] has a[0]'s
/// dims and dtype, and so on for bm and c (shape_mismatch, dtype_mismatch
/// otherwise); the matrices are rank 2, any views, as gemm takes them. Every
/// argument is checked before any c[i] changes; no two c[i] may share
/// memory (invalid_argument). f32, f64, f16 and bf16, as gemm. Lists whose
/// matrices are evenly spaced views of one storage (slices of a batch) run
/// as one strided batched product; other lists, one gemm per product.
void gemm_batched(const Backend& b, Transpose ta, Transpose tb, double alpha, std::span<const Tensor> a,
                  std::span<const Tensor> bm, double beta, std::span<Tensor> c);

}  // namespace xylem::blas
