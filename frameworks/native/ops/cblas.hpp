#pragma once
// OpenBLAS's cblas entry points by element type, so BLAS-backed kernels
// (blas.cpp, gemm_half.cpp, conv2d.cpp) are each written once for f32 and
// f64, and the check that an index fits OpenBLAS's `blasint` (32-bit in
// Debian's build).
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

inline constexpr std::int64_t kBlasMax = std::numeric_limits<blasint>::max();

// OpenBLAS runs a gemm on one thread when m*n*k is at most this (its
// SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD, interface/gemm.c). Many
// such gemms are worth spreading over oneTBB; larger ones are better left
// to OpenBLAS's own threads, one after another.
inline constexpr double kBlasSingleThreadMnk = 65536.0 * 4.0;

[[nodiscard]] inline blasint to_blasint(const char* op, std::int64_t value) {
  if (value > kBlasMax || value < -kBlasMax)
    throw Error(ErrorCode::unsupported, std::string("blas::") + op + " on native: " + std::to_string(value) +
                                            " exceeds OpenBLAS's 32-bit index range");
  return static_cast<blasint>(value);
}

// A vector as the view describes it: element i is first[i * stride].
template <class T>
struct Vec {
  T* first;
  std::int64_t n;
  std::int64_t stride;

  // The piece [begin, begin + len) as BLAS wants it: lowest address.
  [[nodiscard]] T* lowest(std::int64_t begin, std::int64_t len) const noexcept {
    T* p = first + begin * stride;
    return stride < 0 ? p + (len - 1) * stride : p;
  }
};

template <class T>
Vec<T> vec(const plugin::TensorArg& a) noexcept {
  const std::int64_t n = a.view.dims()[0];
  // A stride means nothing for fewer than two elements; 1 keeps BLAS happy.
  return {element_ptr<T>(a), n, n > 1 ? a.view.strides()[0] : 1};
}

// One OpenBLAS entry point, called like the function itself. Every
// OpenBLAS call of the native kernels goes through here: the library-call
// fault point (xylem/plugin/fault.hpp). OpenBLAS reports no failure of its
// own (bad arguments go to xerbla, which prints), so an injected one stands
// for a broken library and raises internal. The kernel runs queued: the
// error fails its task, the tasks that depend on it and the next host read.
template <auto Fn>
struct Openblas {
  const char* name;
  template <class... Args>
  auto operator()(Args... args) const {
    if (plugin::should_fail(plugin::FaultSite::library_call, "native")) [[unlikely]]
      throw Error(ErrorCode::internal, std::string("native: OpenBLAS ") + name + " failed (injected fault)");
    return Fn(args...);
  }
};

template <class T>
struct Cblas;
template <>
struct Cblas<float> {
  static constexpr Openblas<&cblas_sasum> asum{"cblas_sasum"};
  static constexpr Openblas<&cblas_saxpy> axpy{"cblas_saxpy"};
  static constexpr Openblas<&cblas_scopy> copy{"cblas_scopy"};
  static constexpr Openblas<&cblas_sdot> dot{"cblas_sdot"};
  static constexpr Openblas<&cblas_snrm2> nrm2{"cblas_snrm2"};
  static constexpr Openblas<&cblas_sscal> scal{"cblas_sscal"};
  static constexpr Openblas<&cblas_sswap> swap{"cblas_sswap"};
  static constexpr Openblas<&cblas_isamax> iamax{"cblas_isamax"};
  static constexpr Openblas<&cblas_srot> rot{"cblas_srot"};
  static constexpr Openblas<&cblas_sgemv> gemv{"cblas_sgemv"};
  static constexpr Openblas<&cblas_sgemm> gemm{"cblas_sgemm"};
  static constexpr Openblas<&cblas_isamin> iamin{"cblas_isamin"};
  static constexpr Openblas<&cblas_sger> ger{"cblas_sger"};
  static constexpr Openblas<&cblas_ssyrk> syrk{"cblas_ssyrk"};
  static constexpr Openblas<&cblas_strsm> trsm{"cblas_strsm"};
};
template <>
struct Cblas<double> {
  static constexpr Openblas<&cblas_dasum> asum{"cblas_dasum"};
  static constexpr Openblas<&cblas_daxpy> axpy{"cblas_daxpy"};
  static constexpr Openblas<&cblas_dcopy> copy{"cblas_dcopy"};
  static constexpr Openblas<&cblas_ddot> dot{"cblas_ddot"};
  static constexpr Openblas<&cblas_dnrm2> nrm2{"cblas_dnrm2"};
  static constexpr Openblas<&cblas_dscal> scal{"cblas_dscal"};
  static constexpr Openblas<&cblas_dswap> swap{"cblas_dswap"};
  static constexpr Openblas<&cblas_idamax> iamax{"cblas_idamax"};
  static constexpr Openblas<&cblas_drot> rot{"cblas_drot"};
  static constexpr Openblas<&cblas_dgemv> gemv{"cblas_dgemv"};
  static constexpr Openblas<&cblas_dgemm> gemm{"cblas_dgemm"};
  static constexpr Openblas<&cblas_idamin> iamin{"cblas_idamin"};
  static constexpr Openblas<&cblas_dger> ger{"cblas_dger"};
  static constexpr Openblas<&cblas_dsyrk> syrk{"cblas_dsyrk"};
  static constexpr Openblas<&cblas_dtrsm> trsm{"cblas_dtrsm"};
};

// Row-major gemm on dense-enough operands: c = alpha*op(a)*op(b) + beta*c,
// c is m x n. A leading dimension of 0 (an empty matrix) is raised to the 1
// that BLAS insists on.
template <class T>
void gemm_rows(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  constexpr const char* op = "gemm";
  Cblas<T>::gemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, to_blasint(op, m),
                 to_blasint(op, n), to_blasint(op, k), alpha, a, to_blasint(op, std::max<std::int64_t>(1, lda)), b,
                 to_blasint(op, std::max<std::int64_t>(1, ldb)), beta, c,
                 to_blasint(op, std::max<std::int64_t>(1, ldc)));
}

// Leading dimension of the matrices of a view whose rows are on row_axis
// (0 for [rows, cols], 1 for [batch, rows, cols]). With one row the stride
// is meaningless (and may be anything), but BLAS still checks ld >= columns.
[[nodiscard]] inline std::int64_t leading_dim(const plugin::TensorArg& m, int row_axis = 0) noexcept {
  const auto dims = m.view.dims();
  const std::int64_t rows = dims[std::size_t(row_axis)], cols = dims[std::size_t(row_axis) + 1];
  return rows > 1 ? m.view.strides()[std::size_t(row_axis)] : std::max<std::int64_t>(1, cols);
}

// Runs gemm(i) for i < count, each one gemm of m*n*k = mnk: in parallel
// chunks over oneTBB when OpenBLAS would run each on one thread anyway,
// else in order, each using OpenBLAS's threads.
[[nodiscard]] inline bool gemms_in_parallel(std::int64_t count, double mnk) noexcept {
  return count > 1 && mnk <= kBlasSingleThreadMnk;
}
// Gemms per parallel chunk: about one multi-threaded gemm's worth of work.
[[nodiscard]] inline std::int64_t gemm_grain(double mnk) noexcept {
  return std::max<std::int64_t>(1, std::int64_t(kBlasSingleThreadMnk / std::max(1.0, mnk)));
}

template <class Gemm>
void run_gemms(std::int64_t count, double mnk, Gemm&& gemm) {
  if (gemms_in_parallel(count, mnk)) {
    parallel_chunks(count, gemm_grain(mnk), [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) gemm(i);
    });
  } else {
    for (std::int64_t i = 0; i < count; ++i) gemm(i);
  }
}

}  // namespace xylem::native
