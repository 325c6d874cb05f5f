// Native gemm for f16 and bf16: c = alpha*op(a)*op(b) + beta*c with every
// product and sum in f32. OpenBLAS has no half-precision gemm in its cblas,
// so a and b (and c when beta != 0) are widened into dense f32 scratch, in
// parallel, cblas_sgemm runs on that, and the f32 result is rounded back into
// c's view (nearest even, core/half.hpp). With beta == 0, c is never read.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "core/half.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/error.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

using ToFloat = float (*)(std::uint16_t) noexcept;
using FromFloat = std::uint16_t (*)(float) noexcept;

// Elements converted per parallel chunk (conversion is cheap per element).
constexpr std::int64_t kGrain = 64 * 1024;

blasint to_blasint(std::int64_t value) {
  if (value > std::numeric_limits<blasint>::max())
    throw Error(ErrorCode::unsupported, "blas::gemm on native: " + std::to_string(value) +
                                            " exceeds OpenBLAS's 32-bit index range");
  return static_cast<blasint>(value);
}

// A stored (not transposed) matrix of a view: rows x cols, row i at
// first + i*ld. With one row the stride is meaningless and never used.
struct Stored {
  std::uint16_t* first;
  std::int64_t rows, cols, ld;
};

Stored stored(const TensorArg& t) noexcept {
  const std::int64_t rows = t.view.dims()[0], cols = t.view.dims()[1];
  return {element_ptr<std::uint16_t>(t), rows, cols, rows > 1 ? t.view.strides()[0] : 0};
}

// Runs body(row_begin, row_end) over the rows of a rows x cols matrix, in
// parallel chunks of about kGrain elements.
template <class Body>
void by_rows(std::int64_t rows, std::int64_t cols, Body&& body) {
  parallel_chunks(rows, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(1, cols)),
                  std::forward<Body>(body));
}

// Stored matrix -> dense f32 (ld = cols).
std::unique_ptr<float[]> widen(const Stored& s, ToFloat to_float) {
  auto dense = std::make_unique_for_overwrite<float[]>(std::size_t(std::max<std::int64_t>(1, s.rows * s.cols)));
  float* out = dense.get();
  by_rows(s.rows, s.cols, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      const std::uint16_t* src = s.first + i * s.ld;
      float* dst = out + i * s.cols;
      for (std::int64_t j = 0; j < s.cols; ++j) dst[j] = to_float(src[j]);
    }
  });
  return dense;
}

template <ToFloat to_float, FromFloat from_float>
void gemm_half_kernel(const OpCall& call) {
  const TensorArg &a = call.t[0], &b = call.t[1], &c = call.t[2];
  const bool ta = call.i[0] != 0, tb = call.i[1] != 0;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const std::int64_t k = ta ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return;
  const float alpha = static_cast<float>(call.f[0]), beta = static_cast<float>(call.f[1]);

  const Stored sa = stored(a), sb = stored(b), sc = stored(c);
  const auto fa = widen(sa, to_float);
  const auto fb = widen(sb, to_float);
  std::unique_ptr<float[]> fc;
  if (beta != 0.0f) {
    fc = widen(sc, to_float);
  } else {
    // c is write-only: start from zeros rather than reading it (it may hold
    // NaN, and BLAS then never sees anything but finite scratch).
    fc = std::make_unique_for_overwrite<float[]>(std::size_t(m * n));
    float* out = fc.get();
    by_rows(m, n, [&](std::int64_t r0, std::int64_t r1) { std::fill(out + r0 * n, out + r1 * n, 0.0f); });
  }

  // Dense scratch: each leading dimension is its column count (at least 1,
  // as BLAS requires even for empty matrices). k == 0 gives c = beta*c.
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, to_blasint(m),
              to_blasint(n), to_blasint(k), alpha, fa.get(), to_blasint(std::max<std::int64_t>(1, sa.cols)), fb.get(),
              to_blasint(std::max<std::int64_t>(1, sb.cols)), beta, fc.get(), to_blasint(n));

  const float* res = fc.get();
  by_rows(m, n, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      const float* src = res + i * n;
      std::uint16_t* dst = sc.first + i * sc.ld;
      for (std::int64_t j = 0; j < n; ++j) dst[j] = from_float(src[j]);
    }
  });
}

}  // namespace

void register_gemm_half(KernelTable& table) {
  table.set(OpId::blas_gemm, DType::f16, &gemm_half_kernel<&detail::half_to_float, &detail::float_to_half>);
  table.set(OpId::blas_gemm, DType::bf16, &gemm_half_kernel<&detail::bf16_to_float, &detail::float_to_bf16>);
}

}  // namespace xylem::native
