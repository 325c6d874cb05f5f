#pragma once
// xylem::blas: BLAS operations on any backend. Vectors are rank-1 tensors
// (views with any stride); matrices rank-2 (rank-3 for batched gemm).
// f32 and f64; gemm also f16 and bf16.
// Reductions write a one-element tensor, or return a Future. Of an empty
// vector: asum, dot and nrm2 are 0; iamax raises invalid_argument (BLAS has
// no index to give).
#include "xylem/backend.hpp"
#include "xylem/future.hpp"
#include "xylem/tensor.hpp"

namespace xylem::blas {

enum class Transpose { no, yes };

void asum(const Backend& b, const Tensor& x, Tensor& result);               // sum |x_i|
void dot(const Backend& b, const Tensor& x, const Tensor& y, Tensor& result);
void nrm2(const Backend& b, const Tensor& x, Tensor& result);               // sqrt(sum x_i^2)
// i64 index of the first max |x_i|; a NaN counts as larger than everything
// (the first NaN wins, as NumPy's argmax and xylem::argmax).
void iamax(const Backend& b, const Tensor& x, Tensor& result);
[[nodiscard]] Future<double> asum(const Backend& b, const Tensor& x);
[[nodiscard]] Future<double> dot(const Backend& b, const Tensor& x, const Tensor& y);
[[nodiscard]] Future<double> nrm2(const Backend& b, const Tensor& x);
[[nodiscard]] Future<std::int64_t> iamax(const Backend& b, const Tensor& x);

void axpy(const Backend& b, double alpha, const Tensor& x, Tensor& y);     // y += alpha x
void copy(const Backend& b, const Tensor& x, Tensor& y);                   // y = x
void scal(const Backend& b, double alpha, Tensor& x);                      // x *= alpha
void swap(const Backend& b, Tensor& x, Tensor& y);
// Plane rotation: (x, y) <- (c x + s y, c y - s x).
void rot(const Backend& b, Tensor& x, Tensor& y, double c, double s);

// y = alpha op(a) x + beta y; a is a matrix, x and y vectors. With
// beta == 0, y need not be initialized. op(a) with no columns gives
// y = beta y (0 for beta 0). f32 and f64.
void gemv(const Backend& b, Transpose ta, double alpha, const Tensor& a, const Tensor& x, double beta, Tensor& y);

// c = alpha op(a) op(b) + beta c. With beta == 0, c need not be initialized.
// k = 0 gives c = beta c (0 for beta 0); an empty c is written, holding nothing.
// f32 and f64; f16 and bf16 storage too, accumulating in f32 and rounding
// the result to the storage type.
// Strided batches: rank-3 a, b and c ([batch, rows, cols]) multiply matrix
// by matrix; a or b may have batch 1 (then the same matrix serves every
// batch) or any batch stride.
void gemm(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, const Tensor& bm,
          double beta, Tensor& c);

}  // namespace xylem::blas
