// nn::softmax and nn::softmax_grad natively (softmax and log_softmax along
// axis 1 of [outer, r, inner]), f16/bf16/f32/f64, any strides.
//
// Every reduction runs over a dense row in the compute type
// (softmax_simd-inl.h, best SIMD target chosen at run time). f32/f64 rows
// dense along r are used in place; other rows (half types, strides) are
// gathered into a buffer, computed there and rounded back. With inner > 1
// the rows of a block of columns are gathered together (one pass over the
// block's memory, which is contiguous along the inner axis) and scattered
// back the same way. Rows (or column blocks) are spread over the cores.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in elementwise.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/softmax_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/softmax_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/convert.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/softmax_rows.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

HWY_EXPORT(SoftmaxRowF32);
HWY_EXPORT(SoftmaxRowF64);
HWY_EXPORT(SoftmaxGradRowF32);
HWY_EXPORT(SoftmaxGradRowF64);
HWY_EXPORT(LogSumExpF32);
HWY_EXPORT(LogSumExpF64);

void softmax_row(const float* x, float* y, std::size_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(x, y, n, log); }
void softmax_row(const double* x, double* y, std::size_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowF64)(x, y, n, log);
}
float log_sum_exp(const float* x, std::size_t n) { return HWY_DYNAMIC_DISPATCH(LogSumExpF32)(x, n); }
double log_sum_exp(const double* x, std::size_t n) { return HWY_DYNAMIC_DISPATCH(LogSumExpF64)(x, n); }

namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

void softmax_grad_row(const float* y, const float* dy, float* dx, std::size_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxGradRowF32)(y, dy, dx, n, log);
}
void softmax_grad_row(const double* y, const double* dy, double* dx, std::size_t n, bool log) {
  HWY_DYNAMIC_DISPATCH(SoftmaxGradRowF64)(y, dy, dx, n, log);
}

// Elements per task: about 256 KiB of f32, and per gathered column block.
constexpr std::int64_t kTaskElements = 64 * 1024;

// One [outer, r, inner] view: element (o, j, i) at p + o*so + j*sr + i*si.
template <class T>
struct View3 {
  T* p = nullptr;
  std::int64_t so = 0, sr = 0, si = 0;
  T* row(std::int64_t o, std::int64_t i) const { return p + o * so + i * si; }
};

template <class T>
View3<T> view3(const TensorArg& a) {
  return {element_ptr<T>(a), a.view.strides()[0], a.view.strides()[1], a.view.strides()[2]};
}

// Runs row_op(in rows..., out row, n) over every (o, i) row of the views:
// `In` input views and one output view (the last), all [outer, r, inner].
template <class T, std::size_t In, class RowOp>
void for_rows(const std::array<const TensorArg*, In + 1>& views, RowOp row_op) {
  using C = ComputeOf<T>;
  const Layout& shape = views[0]->view;
  const std::int64_t outer = shape.dims()[0], r = shape.dims()[1], inner = shape.dims()[2];
  if (outer * r * inner == 0) return;
  std::array<View3<T>, In + 1> v;
  for (std::size_t k = 0; k <= In; ++k) v[k] = view3<T>(*views[k]);
  bool dense = std::is_same_v<T, C>;
  for (const auto& view : v) dense = dense && (view.sr == 1 || r == 1);
  const auto n = std::size_t(r);

  if (dense) {  // rows used in place, no buffer
    parallel_chunks(outer * inner, std::max<std::int64_t>(1, kTaskElements / r), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) {
        const std::int64_t o = k / inner, i = k % inner;
        if constexpr (In == 1)
          row_op(reinterpret_cast<const C*>(v[0].row(o, i)), reinterpret_cast<C*>(v[1].row(o, i)), n);
        else
          row_op(reinterpret_cast<const C*>(v[0].row(o, i)), reinterpret_cast<const C*>(v[1].row(o, i)),
                 reinterpret_cast<C*>(v[2].row(o, i)), n);
      }
    });
    return;
  }

  // Buffered: `width` rows (consecutive i) at a time, gathered with the
  // loop along i innermost so each memory line is read once.
  const std::int64_t width = std::clamp<std::int64_t>(kTaskElements / r, 1, inner);
  const std::int64_t blocks = (inner + width - 1) / width;
  parallel_chunks(outer * blocks, 1, [&](std::int64_t b, std::int64_t e) {
    std::vector<C> buf(std::size_t(In * width * r));
    for (std::int64_t item = b; item < e; ++item) {
      const std::int64_t o = item / blocks, i0 = (item % blocks) * width, w = std::min(width, inner - i0);
      // buf[k][c][j]: input k, row i0 + c, element j.
      const auto at = [&](std::size_t k, std::int64_t c) { return buf.data() + (std::int64_t(k) * width + c) * r; };
      for (std::size_t k = 0; k < In; ++k) {
        if (w == 1) {
          load_row(v[k].row(o, i0), v[k].sr, at(k, 0), n);
          continue;
        }
        for (std::int64_t j = 0; j < r; ++j)
          for (std::int64_t c = 0; c < w; ++c) at(k, c)[j] = to_compute(v[k].row(o, i0 + c)[j * v[k].sr]);
      }
      for (std::int64_t c = 0; c < w; ++c) {
        if constexpr (In == 1)
          row_op(at(0, c), at(0, c), n);
        else
          row_op(at(0, c), at(1, c), at(0, c), n);
      }
      if (w == 1) {
        store_row(at(0, 0), v[In].row(o, i0), v[In].sr, n);
        continue;
      }
      for (std::int64_t j = 0; j < r; ++j)
        for (std::int64_t c = 0; c < w; ++c) v[In].row(o, i0 + c)[j * v[In].sr] = from_compute<T>(at(0, c)[j]);
    }
  });
}

template <class T>
void softmax_kernel(const OpCall& call) {
  using C = ComputeOf<T>;
  const auto args = plugin::unpack<plugin::args::nn_softmax>(call);
  const bool log = args.log != 0;
  for_rows<T, 1>({&args.x, &args.y}, [log](const C* x, C* y, std::size_t n) { softmax_row(x, y, n, log); });
}

template <class T>
void softmax_grad_kernel(const OpCall& call) {
  using C = ComputeOf<T>;
  const auto args = plugin::unpack<plugin::args::nn_softmax_grad>(call);
  const bool log = args.log != 0;
  for_rows<T, 2>({&args.y, &args.dy, &args.dx},
                 [log](const C* y, const C* dy, C* dx, std::size_t n) { softmax_grad_row(y, dy, dx, n, log); });
}

}  // namespace

void register_softmax(KernelTable& table) {
  for_float_types([&](auto type, DType d) {
    using T = typename decltype(type)::type;
    table.set(OpId::nn_softmax, d, &softmax_kernel<T>);
    table.set(OpId::nn_softmax_grad, d, &softmax_grad_kernel<T>);
  });
}

}  // namespace xylem::native
#endif  // HWY_ONCE
