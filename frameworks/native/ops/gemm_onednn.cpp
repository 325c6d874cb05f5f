// oneDNN's f32 gemm for skinny products (gemm_onednn.hpp).
#include "frameworks/native/ops/gemm_onednn.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <string>

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

bool gemm_onednn(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (std::min({m, n, k}) > kSkinnySide || double(m) * double(n) * double(k) <= kBlasSingleThreadMnk) return false;
  // The library-call fault point, as for OpenBLAS's calls (cblas.hpp).
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw Error(ErrorCode::internal, "native: oneDNN dnnl_sgemm failed (injected fault)");
  const bool by_rows = m >= n;
  const std::int64_t extent = by_rows ? m : n;
  const std::int64_t blocks = (extent + kBlock - 1) / kBlock;
  std::atomic<int> failure{dnnl_success};
  tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t i) {
    const OneOpenMpThread one;
    const std::int64_t lo = i * kBlock, count = std::min(kBlock, extent - lo);
    // Rows lo.. of op(a) and c, or columns lo.. of op(b) and c.
    const float* a_part = by_rows ? a + (ta ? lo : lo * lda) : a;
    const float* b_part = by_rows ? b : b + (tb ? lo * ldb : lo);
    float* c_part = by_rows ? c + lo * ldc : c + lo;
    const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', by_rows ? count : m, by_rows ? n : count,
                                            k, alpha, a_part, lda, b_part, ldb, beta, c_part, ldc);
    if (status != dnnl_success) failure.store(status, std::memory_order_relaxed);
  });
  if (const int status = failure.load(); status != dnnl_success)
    throw Error(status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal,
                "native: oneDNN dnnl_sgemm failed (status " + std::to_string(status) + ") for a " + std::to_string(m) +
                    "x" + std::to_string(k) + " by " + std::to_string(k) + "x" + std::to_string(n) + " product");
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

