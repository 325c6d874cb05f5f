// Native gemm and gemm_batched for f16 and bf16: c = alpha*op(a)*op(b) + beta*c with every
// product and sum in f32. OpenBLAS has no half-precision gemm in its cblas,
// so a and b (and c when beta != 0) are widened into dense f32 scratch, in
// parallel, cblas_sgemm runs on that, and the f32 result is rounded back into
// c's view (nearest even, xylem/plugin/half.hpp). With beta == 0, c is never read.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/half.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::TensorArg;

using ToFloat = float (*)(std::uint16_t) noexcept;
using FromFloat = std::uint16_t (*)(float) noexcept;

// Elements converted per parallel chunk (conversion is cheap per element).
constexpr std::int64_t kGrain = 64 * 1024;

// The stored (not transposed) matrices of a rank-2 [rows, cols] or rank-3
// [batch, rows, cols] view: matrix b, row i at first + b*batch_stride + i*ld.
// A batch stride of 0 repeats one matrix (a and b of gemm_batched).
struct Stored {
  std::uint16_t* first;
  std::int64_t batch, rows, cols, ld, batch_stride;
  // Matrices actually stored: one when every batch repeats the same.
  [[nodiscard]] std::int64_t distinct() const noexcept { return batch_stride == 0 ? 1 : batch; }
};

Stored stored(const TensorArg& t) noexcept {
  const int row_axis = t.view.rank() - 2;
  const auto dims = t.view.dims();
  const std::int64_t batch = row_axis == 1 ? dims[0] : 1;
  const std::int64_t batch_stride = row_axis == 1 && batch > 1 ? t.view.strides()[0] : 0;
  return {element_ptr<std::uint16_t>(t), batch, dims[std::size_t(row_axis)], dims[std::size_t(row_axis) + 1],
          leading_dim(t, row_axis), batch_stride};
}

// Runs body(row_begin, row_end) over `rows` rows of `cols` elements, in
// parallel chunks of about kGrain elements.
template <class Body>
void by_rows(std::int64_t rows, std::int64_t cols, Body&& body) {
  parallel_chunks(rows, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(1, cols)),
                  std::forward<Body>(body));
}

// Stored matrices -> dense f32 [distinct, rows, cols]. Row r of the result
// is row r % rows of matrix r / rows.
std::unique_ptr<float[]> widen(const Stored& s, ToFloat to_float) {
  const std::int64_t total_rows = s.distinct() * s.rows;
  auto dense = std::make_unique_for_overwrite<float[]>(std::size_t(std::max<std::int64_t>(1, total_rows * s.cols)));
  float* out = dense.get();
  by_rows(total_rows, s.cols, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint16_t* src = s.first + (r / s.rows) * s.batch_stride + (r % s.rows) * s.ld;
      float* dst = out + r * s.cols;
      for (std::int64_t j = 0; j < s.cols; ++j) dst[j] = to_float(src[j]);
    }
  });
  return dense;
}

// gemm (rank-2 views) and gemm_batched (rank-3), one code path.
// Gemm: plugin::args::blas_gemm or blas_gemm_batched, which name their
// arguments alike.
template <template <class> class Gemm, ToFloat to_float, FromFloat from_float>
void gemm_half_kernel(const OpCall& call) {
  const auto args = plugin::unpack<Gemm>(call);
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const Stored sa = stored(a), sb = stored(b), sc = stored(c);
  const std::int64_t batch = sc.batch, m = sc.rows, n = sc.cols;
  const std::int64_t k = ta ? sa.rows : sa.cols;
  if (batch == 0 || m == 0 || n == 0) return;
  const float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);

  const auto fa = widen(sa, to_float);
  const auto fb = widen(sb, to_float);
  std::unique_ptr<float[]> fc;
  if (beta != 0.0f) {
    fc = widen(sc, to_float);
  } else {
    // c is write-only: start from zeros rather than reading it (it may hold
    // NaN, and BLAS then never sees anything but finite scratch).
    fc = std::make_unique_for_overwrite<float[]>(std::size_t(batch * m * n));
    float* out = fc.get();
    by_rows(batch * m, n, [&](std::int64_t r0, std::int64_t r1) { std::fill(out + r0 * n, out + r1 * n, 0.0f); });
  }

  // Dense scratch: each leading dimension is its column count (at least 1,
  // as BLAS requires even for empty matrices). k == 0 gives c = beta*c.
  const std::int64_t a_step = sa.distinct() > 1 ? sa.rows * sa.cols : 0;
  const std::int64_t b_step = sb.distinct() > 1 ? sb.rows * sb.cols : 0;
  run_gemms(batch, double(m) * double(n) * double(k), [&](std::int64_t i) {
    gemm_rows<float>(ta, tb, m, n, k, alpha, fa.get() + i * a_step, std::max<std::int64_t>(1, sa.cols),
                     fb.get() + i * b_step, std::max<std::int64_t>(1, sb.cols), beta, fc.get() + i * m * n, n);
  });

  const float* res = fc.get();
  by_rows(batch * m, n, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* src = res + r * n;
      std::uint16_t* dst = sc.first + (r / m) * sc.batch_stride + (r % m) * sc.ld;
      for (std::int64_t j = 0; j < n; ++j) dst[j] = from_float(src[j]);
    }
  });
}

// The table's ops: the typed arguments pick the op id.
template <template <class> class Gemm>
void register_half_gemm(KernelTable& table) {
  table.set(Gemm<TensorArg>::id, DType::f16, &gemm_half_kernel<Gemm, &detail::half_to_float, &detail::float_to_half>);
  table.set(Gemm<TensorArg>::id, DType::bf16, &gemm_half_kernel<Gemm, &detail::bf16_to_float, &detail::float_to_bf16>);
}

}  // namespace

void register_gemm_half(KernelTable& table) {
  register_half_gemm<plugin::args::blas_gemm>(table);
  register_half_gemm<plugin::args::blas_gemm_batched>(table);
}

}  // namespace xylem::native
