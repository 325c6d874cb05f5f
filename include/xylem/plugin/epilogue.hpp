#pragma once
// The epilogue ops taken apart (blas::gemm_epilogue, nn::conv2d_epilogue,
// nn::softmax_epilogue, math::reduce_epilogue), for the frameworks whose
// library has no epilogue for the program at hand: the head (the gemm, the
// convolution, the softmax or the reduction), writing its result into y0,
// then
// the tail, a math::fused call that reads the result back from y0 as its
// input 0 (y0 shares memory with no other input: the op list says so). Both
// are the framework's own kernels for those ops. rows() cuts a gemm's call
// to a band of the result's rows, so that the tail can run on each band
// while the band is still in cache; softmax_rows() cuts a softmax's call to
// a band of its outer rows.
#include <array>
#include <cstdint>

#include "xylem/plugin/args.hpp"
#include "xylem/plugin/fused_program.hpp"

namespace xylem::plugin::epilogue {

using Args = args::blas_gemm_epilogue<TensorArg>;
using ConvArgs = args::nn_conv2d_epilogue<TensorArg>;
using SoftmaxArgs = args::nn_softmax_epilogue<TensorArg>;
using ReduceArgs = args::math_reduce_epilogue<TensorArg>;

// The program's eight words (w6 and w7 are always 0 here). E: either op's
// arguments, which name the tail's fields alike.
template <class E>
[[nodiscard]] fused::Words words(const E& e) noexcept {
  return {e.w0, e.w1, e.w2, e.w3, e.w4, e.w5, 0, 0};
}

// The tail over y0: x0 is the head's result.
template <class E>
[[nodiscard]] OpCall tail(const E& e) {
  const fused::Words w = words(e);
  return pack(args::math_fused<TensorArg>{.x0 = e.y0, .x1 = e.x1, .x2 = e.x2, .x3 = e.x3, .x4 = {}, .y0 = e.y0,
                                          .y1 = e.y1, .y2 = e.y2, .w0 = w[0], .w1 = w[1], .w2 = w[2], .w3 = w[3],
                                          .w4 = w[4], .w5 = w[5], .w6 = w[6], .w7 = w[7], .r0 = e.r0, .r1 = e.r1,
                                          .r2 = e.r2, .r3 = e.r3, .r4 = e.r4, .r5 = e.r5, .r6 = e.r6, .r7 = e.r7});
}

// The product into y0: blas::gemm with alpha 1, beta 0.
[[nodiscard]] inline OpCall gemm(const Args& e) {
  return pack(args::blas_gemm<TensorArg>{.a = e.a, .b = e.b, .c = e.y0, .transpose_a = e.transpose_a,
                                         .transpose_b = e.transpose_b, .alpha = 1.0, .beta = 0.0});
}

// The convolution into y0: nn::conv2d.
[[nodiscard]] inline OpCall conv(const ConvArgs& e) {
  return pack(args::nn_conv2d<TensorArg>{.x = e.x, .w = e.w, .y = e.y0, .stride_h = e.stride_h,
                                         .stride_w = e.stride_w, .pad_h = e.pad_h, .pad_w = e.pad_w,
                                         .dilation_h = e.dilation_h, .dilation_w = e.dilation_w,
                                         .groups = e.groups});
}

// The softmax into y0, seen as x's [outer, r, inner] (y0 is contiguous, in
// x's element order).
[[nodiscard]] inline OpCall softmax(const SoftmaxArgs& e) {
  TensorArg y = e.y0;
  y.view = e.y0.view.reshape(e.x.view.dims());
  return pack(args::nn_softmax<TensorArg>{.x = e.x, .y = y, .log = e.log});
}

// The reduction into y0, seen as [outer, inner] (y0 is contiguous, in the
// reduction's order).
[[nodiscard]] inline OpCall reduce(const ReduceArgs& e) {
  TensorArg y = e.y0;
  const std::array<std::int64_t, 2> dims{e.x.view.dims()[0], e.x.view.dims()[2]};
  y.view = e.y0.view.reshape(dims);
  return pack(args::math_reduce<TensorArg>{.x = e.x, .y = y, .code = e.code, .correction = 0});
}

// How many of x's outer rows one index along axis 0 of the tail's dims
// spans: a band of those indices is a band of whole softmax rows. 0 where
// the softmax runs along axis 0 itself (a row crosses every index), or y0
// has rank 0.
[[nodiscard]] inline std::int64_t softmax_rows_per_index(const SoftmaxArgs& e) {
  const std::int64_t outer = e.x.view.dims()[0];
  if (e.y0.view.rank() == 0) return 0;
  const std::int64_t first = e.y0.view.dims()[0];
  return first > 0 && outer % first == 0 ? outer / first : 0;
}

// How many indices along axis 0 of the tail's dims one band of a banded
// softmax epilogue takes so that its result is about `band_bytes` (each band
// finished while in cache), or 0 when the call runs whole: the softmax
// crosses the indices (softmax_rows_per_index is 0), there are fewer than
// two, or all of it fits one band.
[[nodiscard]] inline std::int64_t softmax_band_indices(const SoftmaxArgs& e, std::int64_t band_bytes) {
  const std::int64_t n = e.y0.view.numel();
  const std::int64_t indices = e.y0.view.rank() > 0 ? e.y0.view.dims()[0] : 1;
  if (softmax_rows_per_index(e) == 0 || indices < 2) return 0;
  const std::int64_t index_bytes = n / indices * std::int64_t(size_of(e.y0.dtype));
  if (index_bytes * indices <= band_bytes) return 0;
  return index_bytes >= band_bytes ? 1 : band_bytes / index_bytes;
}

// The call for indices [first, first + count) along axis 0 of the tail's
// dims: those slices of every tail view, and the `rows_per_index` outer
// rows of x each covers.
[[nodiscard]] inline SoftmaxArgs softmax_band(const SoftmaxArgs& e, std::int64_t rows_per_index, std::int64_t first,
                                              std::int64_t count) {
  SoftmaxArgs part = e;
  part.x.view = e.x.view.slice(0, first * rows_per_index, (first + count) * rows_per_index);
  for (TensorArg* t : {&part.x1, &part.x2, &part.x3, &part.y0, &part.y1, &part.y2})
    if (t->data != nullptr) t->view = t->view.slice(0, first, first + count);
  return part;
}

// The call for rows [first, first + count) of the result: those rows of
// every [m, n] view, and of op(a) (columns of a when it is transposed).
[[nodiscard]] inline Args rows(const Args& e, std::int64_t first, std::int64_t count) {
  const auto band = [&](const TensorArg& t, std::size_t axis) {
    TensorArg part = t;
    if (t.data == nullptr) return part;
    std::array<std::int64_t, 2> dims{t.view.dims()[0], t.view.dims()[1]};
    dims[axis] = count;
    part.view = Layout::strided(dims, t.view.strides(), t.view.offset() + first * t.view.strides()[axis]);
    return part;
  };
  Args part = e;
  part.a = band(e.a, e.transpose_a != 0 ? 1 : 0);
  part.x1 = band(e.x1, 0);
  part.x2 = band(e.x2, 0);
  part.x3 = band(e.x3, 0);
  part.y0 = band(e.y0, 0);
  part.y1 = band(e.y1, 0);
  part.y2 = band(e.y2, 0);
  return part;
}

}  // namespace xylem::plugin::epilogue
