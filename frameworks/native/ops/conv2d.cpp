// Native 2-D convolution (NCHW; stride, padding, dilation, groups), forward
// and both gradients, for every float dtype: dense operands, then one of two
// engines (conv2d.hpp), chosen per call:
//   - oneDNN for f32, and so for f16/bf16, which reach the engine as dense
//     f32 copies (dense.hpp) rounded back once at the end. Its JIT kernels
//     work in blocked layouts and, single-threaded on each of our oneTBB
//     threads (conv2d_onednn.cpp says why), ran typical layers 1.3-2.3x
//     faster than im2col + OpenBLAS, reorders to and from NCHW included
//     (bench/host_nn_bench.cpp measures both in one run).
//   - our im2col + OpenBLAS for f64 (oneDNN has no f64), when xylem was
//     built without oneDNN, for batches too small to share among the
//     threads, for geometries where oneDNN's kernel is not better than ours
//     (see conv2d_onednn.cpp), and whenever XYLEM_NATIVE_CONV=im2col (read
//     at each call, so one process can time or test both engines).
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "frameworks/native/ops/conv2d.hpp"
#include "frameworks/native/ops/dense.hpp"
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

#if XYLEM_HAVE_ONEDNN
[[nodiscard]] bool im2col_forced() noexcept {
  const char* v = std::getenv("XYLEM_NATIVE_CONV");
  return v != nullptr && std::string_view(v) == "im2col";
}
#endif

template <class T>
void run_engine(ConvPass pass, const ConvGeometry& g, const ConvOperands<T>& ops) {
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (!im2col_forced() && conv_onednn(pass, g, ops)) return;
  }
#endif
  conv_im2col(pass, g, ops);
}

// Operands in argument order: forward (x, w, y), grad_data (dy, w, dx),
// grad_filter (x, dy, dw).
template <DType D>
void run_pass(ConvPass pass, const ConvGeometry& g, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  if (out.view.numel() == 0) return;
  const DenseIn<D> in0(a), in1(b);
  const DenseOut<D> result(out);
  run_engine(pass, g, ConvOperands<ComputeType<D>>{in0.data(), in1.data(), result.data()});
  result.commit();
}

template <DType D, ConvPass Pass>
void conv_kernel(const OpCall& call) {
  if constexpr (Pass == ConvPass::forward) {
    const auto p = plugin::unpack<plugin::args::nn_conv2d>(call);
    run_pass<D>(Pass, conv_geometry(p.x.view.dims(), p.w.view.dims(), p.y.view.dims(), p), p.x, p.w, p.y);
  } else if constexpr (Pass == ConvPass::grad_data) {
    const auto p = plugin::unpack<plugin::args::nn_conv2d_grad_data>(call);
    run_pass<D>(Pass, conv_geometry(p.dx.view.dims(), p.w.view.dims(), p.dy.view.dims(), p), p.dy, p.w, p.dx);
  } else {
    const auto p = plugin::unpack<plugin::args::nn_conv2d_grad_filter>(call);
    run_pass<D>(Pass, conv_geometry(p.x.view.dims(), p.dw.view.dims(), p.dy.view.dims(), p), p.x, p.dy, p.dw);
  }
}

}  // namespace

std::string conv2d_engine_description() {
#if XYLEM_HAVE_ONEDNN
  return im2col_forced() ? "conv im2col (XYLEM_NATIVE_CONV=im2col)" : "conv " + onednn_version() + " (f64: im2col)";
#else
  return "conv im2col";
#endif
}

void register_conv2d(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType d = decltype(dtype)::value;
    table.set(OpId::nn_conv2d, d, &conv_kernel<d, ConvPass::forward>);
    table.set(OpId::nn_conv2d_grad_data, d, &conv_kernel<d, ConvPass::grad_data>);
    table.set(OpId::nn_conv2d_grad_filter, d, &conv_kernel<d, ConvPass::grad_filter>);
  });
}

}  // namespace xylem::native
