#pragma once
// f32 gemm through oneDNN (built when oneDNN 2.x was found), for the
// products OpenBLAS is slow at: one side of at most kSkinnySide (a linear
// layer at a small batch, forward and both gradients). OpenBLAS 0.3.21 runs
// its AVX2 kernels on AVX-512 machines it does not know and packs the large
// operand for a handful of rows; at batch 8, oneDNN's gemm (JIT, AVX-512)
// ran VGG-A's and Overfeat's first linear layer 2-4x faster (grad_data,
// grad_filter) and 1-2x (forward) on 2 threads.
#include <cstdint>

namespace xylem::native {

#if XYLEM_HAVE_ONEDNN
inline constexpr std::int64_t kSkinnySide = 32;

// c = alpha op(a) op(b) + beta c, row-major as gemm_rows (cblas.hpp) takes
// it, when oneDNN's gemm is expected to beat OpenBLAS's: the smallest of m,
// n, k at most kSkinnySide, and too large a product for one OpenBLAS
// thread. false (nothing written) otherwise. The larger side of c is split
// into blocks of fixed size, spread over oneTBB, each a single-threaded
// oneDNN gemm: no element depends on the thread count.
[[nodiscard]] bool gemm_onednn(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                               const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                               std::int64_t ldc);

// The batch c_i = alpha op(a_i) op(b_i) + beta c_i, i < batch, matrix i of
// x at x + i * x_step, for batches of products too large for one OpenBLAS
// thread each (gemms_in_parallel, cblas.hpp, takes the smaller ones).
// OpenBLAS can only run such products one after another, each on all its
// threads, and its threads idle at the edges of each 256^3 product (64 of
// them: 15.5 ms on the 16-core H100 host against PyTorch's 1.83); here every
// product, cut into the same blocks as gemm_onednn's, is a set of
// single-threaded tasks over oneTBB. false (nothing written) for a batch of
// one or products small enough for one OpenBLAS thread.
// c += alpha op(a) op(a)^T on one triangle of c [n, n] (op(a) [n, k]; a
// row-major, transposed when `trans`), when the product is too large for
// one OpenBLAS thread (false, nothing written, otherwise): the triangle's
// 256 x 256 tiles, each a single-threaded oneDNN gemm over oneTBB, a
// diagonal tile through a scratch square whose triangle is added. On the
// H100 host's Xeon, OpenBLAS's own ssyrk ran at a fifth of its sgemm's
// rate (one thread: 211-339 ms for [2048, 1024], NumPy 47-50 ms).
[[nodiscard]] bool syrk_onednn(bool upper, bool trans, std::int64_t n, std::int64_t k, float alpha, const float* a,
                               std::int64_t lda, float* c, std::int64_t ldc);

// op(a) x = alpha b solved in place of b [m, n] (a [m, m], its `upper` or
// lower triangle read, transposed when `trans`, a unit diagonal not read
// when `unit`), when too large for one OpenBLAS thread (false, nothing
// written, otherwise): b's column panels over oneTBB, each solved by blocks
// of 128 rows, the rows already solved subtracted by a single-threaded
// oneDNN gemm and each diagonal block by substitution along whole panel
// rows. OpenBLAS's own strsm ran at a twelfth of PyTorch's speed on the
// H100 host's Xeon (one thread, [2048, 2048] by [2048, 512]).
[[nodiscard]] bool trsm_left_onednn(bool upper, bool trans, bool unit, std::int64_t m, std::int64_t n, float alpha,
                                    const float* a, std::int64_t lda, float* b, std::int64_t ldb);

[[nodiscard]] bool gemm_onednn_batched(bool ta, bool tb, std::int64_t batch, std::int64_t m, std::int64_t n,
                                       std::int64_t k, float alpha, const float* a, std::int64_t a_step,
                                       std::int64_t lda, const float* b, std::int64_t b_step, std::int64_t ldb,
                                       float beta, float* c, std::int64_t c_step, std::int64_t ldc);

// Builds oneDNN's gemm kernels and its primitive cache now. oneDNN makes them at first use and destroys them at
// exit, in reverse order of creation; the native device calls this before it
// registers its exit handler, so a program that ends with gemms or
// convolutions queued has its queue waited for before they are destroyed
// (a worker inside dnnl_sgemm crashed at exit otherwise).
void start_onednn();
#endif

}  // namespace xylem::native
