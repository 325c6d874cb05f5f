// blas::ger, syrk and trsm through CLBlast (see blas_extra.hpp). Matrix
// views are row-major with unit column stride (op.hpp's contract).
#include <clblast.h>

#include "frameworks/opencl/ops/blas_extra.hpp"
#include "frameworks/opencl/ops/clblast_call.hpp"
#include "frameworks/opencl/ops/gemm.hpp"

namespace xylem::opencl {

namespace {

using plugin::TensorArg;

std::size_t size(std::int64_t v) { return static_cast<std::size_t>(v); }
std::int64_t stride_of(const TensorArg& v) { return v.view.dims()[0] > 1 ? v.view.strides()[0] : 1; }

template <class T>
void ger_as(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_ger>(launch.call());
  const TensorArg &x = args.x, &y = args.y, &a = args.a;
  const std::size_t m = size(a.view.dims()[0]), n = size(a.view.dims()[1]);
  const cl_mem xm = mem_of(x), ym = mem_of(y), am = mem_of(a);
  const std::size_t xo = size(x.view.offset()), yo = size(y.view.offset()), ao = size(a.view.offset());
  const std::size_t xs = size(stride_of(x)), ys = size(stride_of(y)), lda = size(leading_dim(a));
  const T alpha = static_cast<T>(args.alpha);
  clblast_call(launch, "Ger", [=](cl_command_queue* queue, cl_event* event) {
    return clblast::Ger<T>(clblast::Layout::kRowMajor, m, n, alpha, xm, xo, xs, ym, yo, ys, am, ao, lda, queue, event);
  });
}

template <class T>
void syrk_as(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(launch.call());
  const TensorArg &a = args.a, &c = args.c;
  const bool trans = args.transpose != 0;
  const std::size_t n = size(c.view.dims()[0]), k = size(trans ? a.view.dims()[0] : a.view.dims()[1]);
  const cl_mem am = mem_of(a), cm = mem_of(c);
  const std::size_t ao = size(a.view.offset()), co = size(c.view.offset());
  const std::size_t lda = size(leading_dim(a)), ldc = size(leading_dim(c));
  const auto triangle = args.upper != 0 ? clblast::Triangle::kUpper : clblast::Triangle::kLower;
  const T alpha = static_cast<T>(args.alpha);
  clblast_call(launch, "Syrk", [=](cl_command_queue* queue, cl_event* event) {
    return clblast::Syrk<T>(clblast::Layout::kRowMajor, triangle, clblast_transpose(trans), n, k, alpha, am, ao, lda,
                            T(1), cm, co, ldc, queue, event);
  });
}

template <class T>
void trsm_as(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_trsm>(launch.call());
  const TensorArg &a = args.a, &b = args.b;
  const std::size_t m = size(b.view.dims()[0]), n = size(b.view.dims()[1]);
  const cl_mem am = mem_of(a), bm = mem_of(b);
  const std::size_t ao = size(a.view.offset()), bo = size(b.view.offset());
  const std::size_t lda = size(leading_dim(a)), ldb = size(leading_dim(b));
  const auto side = args.left != 0 ? clblast::Side::kLeft : clblast::Side::kRight;
  const auto triangle = args.upper != 0 ? clblast::Triangle::kUpper : clblast::Triangle::kLower;
  const auto diagonal = args.unit_diagonal != 0 ? clblast::Diagonal::kUnit : clblast::Diagonal::kNonUnit;
  const bool trans = args.transpose != 0;
  const T alpha = static_cast<T>(args.alpha);
  clblast_call(launch, "Trsm", [=](cl_command_queue* queue, cl_event* event) {
    return clblast::Trsm<T>(clblast::Layout::kRowMajor, side, triangle, clblast_transpose(trans), diagonal, m, n, alpha,
                            am, ao, lda, bm, bo, ldb, queue, event);
  });
}

bool is_f64(const Launcher& launch) { return launch.call().t[0].dtype == DType::f64; }

}  // namespace

bool clblast_ger(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_ger>(launch.call());
  // CLBlast's increments are unsigned.
  if (stride_of(args.x) < 0 || stride_of(args.y) < 0) return false;
  is_f64(launch) ? ger_as<double>(launch) : ger_as<float>(launch);
  return true;
}

void clblast_syrk_product(Launcher& launch) { is_f64(launch) ? syrk_as<double>(launch) : syrk_as<float>(launch); }

void clblast_trsm(Launcher& launch) { is_f64(launch) ? trsm_as<double>(launch) : trsm_as<float>(launch); }

}  // namespace xylem::opencl
