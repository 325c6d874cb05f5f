// blas::gemm and gemm_batched through CLBlast (calls made by clblast_call.hpp).
#include <clblast.h>

#include <algorithm>
#include <string>

#include "frameworks/opencl/ops/clblast_call.hpp"
#include "frameworks/opencl/ops/gemm.hpp"

namespace xylem::opencl {

namespace {

using plugin::TensorArg;

std::size_t size(std::int64_t v) { return static_cast<std::size_t>(v); }

template <class T>
void gemm_as(Launcher& launch, const GemmDims& g) {
  const auto args = plugin::unpack<plugin::args::blas_gemm>(launch.call());
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const cl_mem am = mem_of(a), bm = mem_of(b), cm = mem_of(c);
  const std::size_t ao = size(a.view.offset()), bo = size(b.view.offset()), co = size(c.view.offset());
  const std::size_t lda = size(leading_dim(a)), ldb = size(leading_dim(b)), ldc = size(leading_dim(c));
  clblast_call(launch, "Gemm", [=](cl_command_queue* queue, cl_event* event) {
    return clblast::Gemm<T>(clblast::Layout::kRowMajor, clblast_transpose(g.trans_a), clblast_transpose(g.trans_b),
                            size(g.m), size(g.n), size(g.k), static_cast<T>(g.alpha), am, ao, lda, bm, bo, ldb,
                            static_cast<T>(g.beta), cm, co, ldc, queue, event);
  });
}

// The leading dimension and batch stride of a rank-3 view [batch, rows,
// cols]. CLBlast rejects a stride of 0 (launch_gemm_batched does not call
// it then); one matrix alone gets a stride that reaches no other.
struct BatchedMatrix {
  std::size_t ld, stride;
};
BatchedMatrix batched(const TensorArg& t) {
  const auto dims = t.view.dims();
  const auto strides = t.view.strides();
  const std::int64_t ld = dims[1] > 1 ? strides[1] : std::max<std::int64_t>(dims[2], 1);
  return {size(ld), size(dims[0] > 1 ? strides[0] : std::max<std::int64_t>(dims[1] * ld, 1))};
}

template <class T>
void gemm_batched_as(Launcher& launch, const GemmDims& g, std::int64_t batch) {
  const auto args = plugin::unpack<plugin::args::blas_gemm_batched>(launch.call());
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const BatchedMatrix am = batched(a), bm = batched(b), cm = batched(c);
  const cl_mem ad = mem_of(a), bd = mem_of(b), cd = mem_of(c);
  const std::size_t ao = size(a.view.offset()), bo = size(b.view.offset()), co = size(c.view.offset());
  clblast_call(launch, "GemmStridedBatched", [=](cl_command_queue* queue, cl_event* event) {
    return clblast::GemmStridedBatched<T>(clblast::Layout::kRowMajor, clblast_transpose(g.trans_a),
                                          clblast_transpose(g.trans_b),
                                          size(g.m), size(g.n), size(g.k), static_cast<T>(g.alpha), ad, ao, am.ld,
                                          am.stride, bd, bo, bm.ld, bm.stride, static_cast<T>(g.beta), cd, co, cm.ld,
                                          cm.stride, size(batch), queue, event);
  });
}

}  // namespace

void clblast_gemm(Launcher& launch, const GemmDims& g) {
  if (plugin::unpack<plugin::args::blas_gemm>(launch.call()).c.dtype == DType::f64) {
    gemm_as<double>(launch, g);
  } else {
    gemm_as<float>(launch, g);
  }
}

void clblast_gemm_batched(Launcher& launch, const GemmDims& g, std::int64_t batch) {
  if (plugin::unpack<plugin::args::blas_gemm_batched>(launch.call()).c.dtype == DType::f64) {
    gemm_batched_as<double>(launch, g, batch);
  } else {
    gemm_batched_as<float>(launch, g, batch);
  }
}

}  // namespace xylem::opencl
