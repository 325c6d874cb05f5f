// The im2col engine of the host convolution (see conv2d.hpp): im2col +
// OpenBLAS gemm per (image, group):
//   forward      y_g  = w_g [Kg, CRS] * col(x_g) [CRS, PQ]
//   grad_data    dx_g = col2im(w_g^T * dy_g)
//   grad_filter  dw_g = sum over images of dy_g [Kg, PQ] * col(x_g)^T
// A 1x1, stride-1, unpadded convolution skips im2col (col is x itself).
//
// Threads: when each gemm is small enough that OpenBLAS would run it on one
// thread, the (image, group) items are spread over oneTBB (im2col then runs
// serially inside an item); otherwise items run in order, im2col in
// parallel and the gemm on OpenBLAS's threads.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/conv2d.hpp"

namespace xylem::native {
namespace {

// Calls item(i, scratch) for each (image, group) item i = image*groups +
// group; scratch holds `scratch_size` elements owned by the caller of item
// for its duration. `parallel` says whether items run on oneTBB.
template <class T, class Item>
void for_each_item(const ConvGeometry& g, bool parallel, std::size_t scratch_size, Item&& item) {
  const std::int64_t items = g.n * g.groups;
  if (parallel) {
    parallel_chunks(items, gemm_grain(g.gemm_mnk()), [&](std::int64_t i0, std::int64_t i1) {
      std::vector<T> scratch(scratch_size);
      for (std::int64_t i = i0; i < i1; ++i) item(i, scratch.data());
    });
  } else {
    std::vector<T> scratch(scratch_size);
    for (std::int64_t i = 0; i < items; ++i) item(i, scratch.data());
  }
}

template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const bool parallel = gemms_in_parallel(g.n * g.groups, g.gemm_mnk());
  const bool direct = g.pointwise();
  const std::int64_t kg = g.k_group(), crs = g.crs(), pq = g.pq();
  for_each_item<T>(g, parallel, direct ? 0 : std::size_t(crs * pq), [&](std::int64_t i, T* scratch) {
    const std::int64_t image = i / g.groups, group = i % g.groups;
    const T* x_g = x + (image * g.c + group * g.c_group()) * g.hw();
    const T* col = x_g;
    if (!direct) {
      im2col(g, x_g, scratch, !parallel);
      col = scratch;
    }
    gemm_rows<T>(false, false, kg, pq, crs, T(1), w + group * kg * crs, crs, col, pq, T(0),
                 y + (image * g.k + group * kg) * pq, pq);
  });
}

template <class T>
void conv_grad_data(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const bool parallel = gemms_in_parallel(g.n * g.groups, g.gemm_mnk());
  const bool direct = g.pointwise();
  const std::int64_t kg = g.k_group(), crs = g.crs(), pq = g.pq();
  if (!direct) {  // col2im adds into dx
    parallel_chunks(g.n * g.c * g.hw(), 64 * 1024,
                    [&](std::int64_t b, std::int64_t e) { std::fill(dx + b, dx + e, T(0)); });
  }
  for_each_item<T>(g, parallel, direct ? 0 : std::size_t(crs * pq), [&](std::int64_t i, T* scratch) {
    const std::int64_t image = i / g.groups, group = i % g.groups;
    const T* dy_g = dy + (image * g.k + group * kg) * pq;
    const T* w_g = w + group * kg * crs;
    T* dx_g = dx + (image * g.c + group * g.c_group()) * g.hw();
    if (direct) {
      gemm_rows<T>(true, false, crs, pq, kg, T(1), w_g, crs, dy_g, pq, T(0), dx_g, pq);
      return;
    }
    gemm_rows<T>(true, false, crs, pq, kg, T(1), w_g, crs, dy_g, pq, T(0), scratch, pq);
    col2im(g, scratch, dx_g, !parallel);
  });
}

// The sum over images runs in a fixed number of blocks (not one per thread),
// each into its own partial dw, added in order afterwards: no races, and the
// result does not depend on the thread count.
template <class T>
void conv_grad_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const std::int64_t kg = g.k_group(), crs = g.crs(), pq = g.pq();
  const std::int64_t items = g.n * g.groups, dw_size = g.k * crs;
  const bool direct = g.pointwise();
  // dw_part += dy_g * col^T for item i.
  const auto accumulate = [&](std::int64_t i, T* col_scratch, T* dw_part, bool parallel_im2col) {
    const std::int64_t image = i / g.groups, group = i % g.groups;
    const T* x_g = x + (image * g.c + group * g.c_group()) * g.hw();
    const T* col = x_g;
    if (!direct) {
      im2col(g, x_g, col_scratch, parallel_im2col);
      col = col_scratch;
    }
    gemm_rows<T>(false, true, kg, crs, pq, T(1), dy + (image * g.k + group * kg) * pq, pq, col, pq, T(1),
                 dw_part + group * kg * crs, crs);
  };
  const std::size_t col_size = direct ? 0 : std::size_t(crs * pq);
  if (!gemms_in_parallel(items, g.gemm_mnk())) {
    std::fill(dw, dw + dw_size, T(0));
    std::vector<T> col(col_size);
    for (std::int64_t i = 0; i < items; ++i) accumulate(i, col.data(), dw, true);
    return;
  }
  constexpr std::int64_t kMaxBlocks = 64;
  const std::int64_t blocks = std::min(items, kMaxBlocks);
  std::vector<T> partial(std::size_t(blocks * dw_size), T(0));
  parallel_chunks(blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> col(col_size);
    for (std::int64_t b = b0; b < b1; ++b)
      for (std::int64_t i = b * items / blocks; i < (b + 1) * items / blocks; ++i)
        accumulate(i, col.data(), partial.data() + b * dw_size, false);
  });
  parallel_chunks(dw_size, 4096, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) {
      T sum = 0;
      for (std::int64_t b = 0; b < blocks; ++b) sum += partial[std::size_t(b * dw_size + j)];
      dw[j] = sum;
    }
  });
}

}  // namespace

template <class T>
void conv_im2col(ConvPass pass, const ConvGeometry& g, const ConvOperands<T>& ops) {
  switch (pass) {
    case ConvPass::forward:
      conv_forward(g, ops.in0, ops.in1, ops.out);
      return;
    case ConvPass::grad_data:
      conv_grad_data(g, ops.in0, ops.in1, ops.out);
      return;
    case ConvPass::grad_filter:
      conv_grad_filter(g, ops.in0, ops.in1, ops.out);
      return;
  }
}

template void conv_im2col<float>(ConvPass, const ConvGeometry&, const ConvOperands<float>&);
template void conv_im2col<double>(ConvPass, const ConvGeometry&, const ConvOperands<double>&);

}  // namespace xylem::native
