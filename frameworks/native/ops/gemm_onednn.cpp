// oneDNN's f32 gemm for skinny products and batches (gemm_onednn.hpp).
#include "frameworks/native/ops/gemm_onednn.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/onednn_thread.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {

namespace {
// Rows or columns of c per task: enough to amortise a call, small enough
// that a busy machine's threads can even out.
constexpr std::int64_t kBlock = 256;
}  // namespace

namespace {

// The products c_i = alpha op(a_i) op(b_i) + beta c_i, i < batch (matrix i
// of x at x + i * step), the larger side of each c cut into blocks of
// kBlock, every block a single-threaded oneDNN gemm of its own over oneTBB.
void gemm_blocks(bool ta, bool tb, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t a_step, std::int64_t lda, const float* b, std::int64_t b_step,
                 std::int64_t ldb, float beta, float* c, std::int64_t c_step, std::int64_t ldc) {
  // The library-call fault point, as for OpenBLAS's calls (cblas.hpp).
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw Error(ErrorCode::internal, "native: oneDNN dnnl_sgemm failed (injected fault)");
  const bool by_rows = m >= n;
  const std::int64_t extent = by_rows ? m : n;
  const std::int64_t blocks = (extent + kBlock - 1) / kBlock;
  std::atomic<int> failure{dnnl_success};
  tbb::parallel_for(std::int64_t{0}, batch * blocks, [&](std::int64_t task) {
    const OneOpenMpThread one;
    const std::int64_t item = task / blocks, lo = (task % blocks) * kBlock, count = std::min(kBlock, extent - lo);
    const float* const ai = a + item * a_step;
    const float* const bi = b + item * b_step;
    float* const ci = c + item * c_step;
    // Rows lo.. of op(a) and c, or columns lo.. of op(b) and c.
    const float* a_part = by_rows ? ai + (ta ? lo : lo * lda) : ai;
    const float* b_part = by_rows ? bi : bi + (tb ? lo * ldb : lo);
    float* c_part = by_rows ? ci + lo * ldc : ci + lo;
    const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', by_rows ? count : m, by_rows ? n : count,
                                            k, alpha, a_part, lda, b_part, ldb, beta, c_part, ldc);
    if (status != dnnl_success) failure.store(status, std::memory_order_relaxed);
  });
  if (const int status = failure.load(); status != dnnl_success)
    throw Error(status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal,
                "native: oneDNN dnnl_sgemm failed (status " + std::to_string(status) + ") for a " + std::to_string(m) +
                    "x" + std::to_string(k) + " by " + std::to_string(k) + "x" + std::to_string(n) + " product");
}

}  // namespace

bool gemm_onednn(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (std::min({m, n, k}) > kSkinnySide || double(m) * double(n) * double(k) <= kBlasSingleThreadMnk) return false;
  gemm_blocks(ta, tb, 1, m, n, k, alpha, a, 0, lda, b, 0, ldb, beta, c, 0, ldc);
  return true;
}

bool gemm_onednn_batched(bool ta, bool tb, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                         float alpha, const float* a, std::int64_t a_step, std::int64_t lda, const float* b,
                         std::int64_t b_step, std::int64_t ldb, float beta, float* c, std::int64_t c_step,
                         std::int64_t ldc) {
  if (batch < 2 || !(double(m) * double(n) * double(k) > kBlasSingleThreadMnk)) return false;
  gemm_blocks(ta, tb, batch, m, n, k, alpha, a, a_step, lda, b, b_step, ldb, beta, c, c_step, ldc);
  return true;
}

bool syrk_onednn(bool upper, bool trans, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, float* c, std::int64_t ldc) {
  if (double(n) * double(n) * double(k) <= 2 * kBlasSingleThreadMnk) return false;
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw Error(ErrorCode::internal, "native: oneDNN dnnl_sgemm failed (injected fault)");
  const std::int64_t tiles = (n + kBlock - 1) / kBlock;
  // Row r of op(a): a's row r, or its column r when transposed.
  const auto row = [&](std::int64_t r) { return trans ? a + r : a + r * lda; };
  std::atomic<int> failure{dnnl_success};
  // Tile (ti, tj) of the triangle: tj >= ti for the upper one.
  tbb::parallel_for(std::int64_t{0}, tiles * tiles, [&](std::int64_t task) {
    std::int64_t ti = task / tiles, tj = task % tiles;
    if (upper ? tj < ti : tj > ti) return;
    const OneOpenMpThread one;
    const std::int64_t i0 = ti * kBlock, j0 = tj * kBlock;
    const std::int64_t rows = std::min(kBlock, n - i0), cols = std::min(kBlock, n - j0);
    // op(a)[i-rows] op(a)[j-rows]^T: row-major A [rows, k] times B^T.
    const char ta = trans ? 'T' : 'N', tb = trans ? 'N' : 'T';
    dnnl_status_t status = dnnl_success;
    if (ti != tj) {
      status = dnnl_sgemm(ta, tb, rows, cols, k, alpha, row(i0), lda, row(j0), lda, 1.0f, c + i0 * ldc + j0, ldc);
    } else {
      std::vector<float> square(std::size_t(rows * cols));
      status = dnnl_sgemm(ta, tb, rows, cols, k, alpha, row(i0), lda, row(j0), lda, 0.0f, square.data(), cols);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t s = upper ? r : 0, end = upper ? cols : r + 1; s < end; ++s)
          c[(i0 + r) * ldc + j0 + s] += square[std::size_t(r * cols + s)];
    }
    if (status != dnnl_success) failure.store(status, std::memory_order_relaxed);
  });
  if (const int status = failure.load(); status != dnnl_success)
    throw Error(status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal,
                "native: oneDNN dnnl_sgemm failed (status " + std::to_string(status) + ") in a syrk of n " +
                    std::to_string(n) + ", k " + std::to_string(k));
  return true;
}

bool trsm_left_onednn(bool upper, bool trans, bool unit, std::int64_t m, std::int64_t n, float alpha,
                      const float* a, std::int64_t lda, float* b, std::int64_t ldb) {
  if (double(m) * double(m) * double(n) <= 2 * kBlasSingleThreadMnk) return false;
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw Error(ErrorCode::internal, "native: oneDNN dnnl_sgemm failed (injected fault)");
  constexpr std::int64_t kRows = 128;
  // Panels of b's columns: their width follows the shape, never the
  // thread count, so that no element does.
  const std::int64_t width = std::clamp((n / 16 + 15) / 16 * 16, std::int64_t{16}, kBlock);
  const std::int64_t panels = (n + width - 1) / width, blocks = (m + kRows - 1) / kRows;
  // op(a) is lower triangular when a's lower triangle is read untransposed
  // or its upper one transposed: then rows are solved from the top.
  const bool from_top = upper == trans;
  const auto op_a = [&](std::int64_t r, std::int64_t s) { return trans ? a[s * lda + r] : a[r * lda + s]; };
  std::atomic<int> failure{dnnl_success};
  // One block of rows of one panel: the rows solved already subtracted,
  // then the diagonal block by substitution. The same calls whichever order
  // the pairs run in, so the order may follow the thread count.
  const auto solve = [&](std::int64_t step, std::int64_t p) {
    const std::int64_t blk = from_top ? step : blocks - 1 - step;
    const std::int64_t i0 = blk * kRows, i1 = std::min(m, i0 + kRows), rows = i1 - i0;
    // The rows solved already: [0, i0) from the top, [i1, m) from the bottom.
    const std::int64_t s0 = from_top ? 0 : i1, solved = from_top ? i0 : m - i1;
    const std::int64_t c0 = p * width, cols = std::min(width, n - c0);
    float* const bi = b + i0 * ldb + c0;
    if (solved > 0) {
      // b_i = alpha b_i - op(a)[i rows, solved rows] x[solved rows]
      const float* const a_part = trans ? a + s0 * lda + i0 : a + i0 * lda + s0;
      const dnnl_status_t status = dnnl_sgemm(trans ? 'T' : 'N', 'N', rows, cols, solved, -1.0f, a_part, lda,
                                              b + s0 * ldb + c0, ldb, alpha, bi, ldb);
      if (status != dnnl_success) {
        failure.store(status, std::memory_order_relaxed);
        return;
      }
    } else if (alpha != 1.0f) {
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < cols; ++j) bi[r * ldb + j] *= alpha;
    }
    for (std::int64_t t = 0; t < rows; ++t) {
      const std::int64_t r = from_top ? i0 + t : i1 - 1 - t;
      float* const xr = b + r * ldb + c0;
      for (std::int64_t u = from_top ? i0 : r + 1, end = from_top ? r : i1; u < end; ++u) {
        const float l = op_a(r, u);
        const float* const xu = b + u * ldb + c0;
        for (std::int64_t j = 0; j < cols; ++j) xr[j] -= l * xu[j];
      }
      if (!unit) {
        const float d = op_a(r, r);
        for (std::int64_t j = 0; j < cols; ++j) xr[j] /= d;
      }
    }
  };
  // The threads that can run (XYLEM_NATIVE_THREADS caps them through a
  // global_control, which the arena's own concurrency does not show).
  const std::int64_t threads =
      std::min<std::int64_t>(tbb::this_task_arena::max_concurrency(),
                             std::int64_t(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
  if (threads >= panels) {
    // A thread for every panel: each solves its panel top to bottom, with
    // no wait between blocks (H100 host, 16 threads: 5.0 ms against 6.7
    // block by block).
    tbb::parallel_for(std::int64_t{0}, panels, [&](std::int64_t p) {
      const OneOpenMpThread one;
      for (std::int64_t step = 0; step < blocks; ++step) solve(step, p);
    });
  } else {
    // Block by block, the panels in parallel: the block's rows of op(a)
    // stay in cache across the panels (panel by panel each streamed all of
    // a again: one thread 46.6 ms against 27.7).
    for (std::int64_t step = 0; step < blocks && failure.load(std::memory_order_relaxed) == dnnl_success; ++step)
      tbb::parallel_for(std::int64_t{0}, panels, [&](std::int64_t p) {
        const OneOpenMpThread one;
        solve(step, p);
      });
  }
  if (const int status = failure.load(); status != dnnl_success)
    throw Error(status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal,
                "native: oneDNN dnnl_sgemm failed (status " + std::to_string(status) + ") in a trsm of m " +
                    std::to_string(m) + ", n " + std::to_string(n));
  return true;
}

void start_onednn() {
  // Every transposition, and a small side in each place: oneDNN keeps
  // kernels per case.
  constexpr std::int64_t kSmall = 8, kLarge = 64;
  static float a[kLarge * kLarge], b[kLarge * kLarge], c[kLarge * kLarge];
  const std::int64_t shapes[][3] = {{kSmall, kLarge, kLarge}, {kLarge, kSmall, kLarge}, {kLarge, kLarge, kSmall},
                                    {kLarge, kLarge, kLarge}};
  for (const char ta : {'N', 'T'})
    for (const char tb : {'N', 'T'})
      for (const auto& s : shapes)
        (void)dnnl_sgemm(ta, tb, s[0], s[1], s[2], 1.0f, a, kLarge, b, kLarge, 0.0f, c, kLarge);
  int capacity = 0;
  if (dnnl_get_primitive_cache_capacity(&capacity) == dnnl_success) (void)dnnl_set_primitive_cache_capacity(capacity);
}

}  // namespace xylem::native

