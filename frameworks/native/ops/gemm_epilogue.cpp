// Native blas::gemm_epilogue: the gemm in bands of rows, each band's tail
// (the math::fused program whose input 0 is the product) run while the band
// is still in cache. Both halves are this framework's own kernels (blas.cpp's
// gemm through oneDNN or OpenBLAS, fused.cpp's tile evaluator), called on the
// band's views (xylem/plugin/epilogue.hpp).
#include <algorithm>
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/plugin/epilogue.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
namespace pe = plugin::epilogue;

// A band's product is about this many bytes, so the tail reads it from the
// last-level cache, and has at least kMinBandRows rows: each band re-packs
// b and wakes the gemm's threads, which cost bands of 256 rows 10% of the
// gemm on a 2-core EPYC (8192x4096x128: 80 ms against 71 for one gemm and
// one fused pass).
constexpr std::int64_t kBandBytes = std::int64_t{8} << 20;
constexpr std::int64_t kMinBandRows = 1024;

void gemm_epilogue_kernel(const OpCall& call) {
  const auto e = plugin::unpack<plugin::args::blas_gemm_epilogue>(call);
  const std::int64_t m = e.y0.view.dims()[0], n = e.y0.view.dims()[1];
  if (m == 0 || n == 0) return;
  const Kernel gemm = kernels().get(OpId::blas_gemm, e.y0.dtype);
  const Kernel tail = kernels().get(OpId::math_fused, e.y0.dtype);
  const std::int64_t row_bytes = n * std::int64_t(size_of(e.y0.dtype));
  const std::int64_t band = std::max(kMinBandRows, kBandBytes / row_bytes);
  for (std::int64_t first = 0; first < m; first += band) {
    const pe::Args part = pe::rows(e, first, std::min(band, m - first));
    gemm(pe::gemm(part));
    tail(pe::tail(part));
  }
}

}  // namespace

void register_gemm_epilogue(KernelTable& table) {
  for (const DType d : {DType::f16, DType::bf16, DType::f32, DType::f64})
    table.set(OpId::blas_gemm_epilogue, d, &gemm_epilogue_kernel);
}

}  // namespace xylem::native
