#pragma once
// The geometry of a 2-D convolution (NCHW, cross-correlation) and the
// lowering of one (image, group) to a matrix: im2col gathers the input
// patches into col [Cg*R*S, P*Q], so the convolution is a gemm with the
// filters [Kg, Cg*R*S]; col2im is its adjoint, scattering (adding) col back
// into the input plane, for the data gradient.
#include <algorithm>
#include <cstdint>
#include <span>

#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

struct ConvGeometry {
  std::int64_t n, c, h, w;  // input
  std::int64_t k, r, s;     // filters [k, c/groups, r, s]
  std::int64_t p, q;        // output
  std::int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;

  [[nodiscard]] std::int64_t c_group() const noexcept { return c / groups; }
  [[nodiscard]] std::int64_t k_group() const noexcept { return k / groups; }
  [[nodiscard]] std::int64_t hw() const noexcept { return h * w; }
  [[nodiscard]] std::int64_t pq() const noexcept { return p * q; }
  [[nodiscard]] std::int64_t crs() const noexcept { return c_group() * r * s; }
  // m*n*k of one (image, group) gemm, the same for all three passes.
  [[nodiscard]] double gemm_mnk() const noexcept { return double(k_group()) * double(pq()) * double(crs()); }
  // A 1x1 filter with unit stride and no padding: col is the input itself.
  [[nodiscard]] bool pointwise() const noexcept {
    return r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

// From the dims of x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q] and
// the geometry fields every convolution op's args have.
template <class Conv>
[[nodiscard]] ConvGeometry conv_geometry(std::span<const std::int64_t> x, std::span<const std::int64_t> w,
                                         std::span<const std::int64_t> y, const Conv& p) noexcept {
  return {x[0],       x[1],       x[2],     x[3],     w[0],         w[2],         w[3],    y[2],
          y[3], p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w, p.groups};
}

namespace conv_detail {

// ceil(a / b) for b > 0 and any sign of a.
[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// The output columns [q_lo, q_hi) that filter column s reads from real
// input (not padding), the first of them reading input column iw_lo; the
// next ones step by stride_w.
struct TapColumns {
  std::int64_t q_lo, q_hi, iw_lo;
};
[[nodiscard]] inline TapColumns tap_columns(const ConvGeometry& g, std::int64_t s) noexcept {
  const std::int64_t col_off = s * g.dil_w - g.pad_w;
  const std::int64_t q_lo = std::clamp<std::int64_t>(ceil_div(-col_off, g.stride_w), 0, g.q);
  const std::int64_t q_hi = std::clamp<std::int64_t>(ceil_div(g.w - col_off, g.stride_w), q_lo, g.q);
  return {q_lo, q_hi, q_lo * g.stride_w + col_off};
}

// The input row that output row p reads through filter row r, or -1 when
// that is padding.
[[nodiscard]] inline std::int64_t tap_row(const ConvGeometry& g, std::int64_t p, std::int64_t r) noexcept {
  const std::int64_t ih = p * g.stride_h - g.pad_h + r * g.dil_h;
  return ih >= 0 && ih < g.h ? ih : -1;
}

// Calls row(p, ih, q_lo, q_hi, iw_lo) for each output row p of filter tap
// (r, s): ih = tap_row, the rest = tap_columns.
template <class Row>
void for_each_tap_row(const ConvGeometry& g, std::int64_t r, std::int64_t s, Row&& row) {
  const TapColumns cols = tap_columns(g, s);
  for (std::int64_t p = 0; p < g.p; ++p) row(p, tap_row(g, p, r), cols.q_lo, cols.q_hi, cols.iw_lo);
}

// Rows (of col) or channels per parallel chunk: about 64K elements.
[[nodiscard]] inline std::int64_t grain(std::int64_t elements_per_item) noexcept {
  return std::max<std::int64_t>(1, (64 * 1024) / std::max<std::int64_t>(1, elements_per_item));
}

}  // namespace conv_detail

// x: one image's group [Cg, H, W] (dense); col: [Cg*R*S, P*Q] (dense). With
// `parallel`, rows are spread over oneTBB (for a caller that is not itself
// running in parallel).
template <class T>
void im2col(const ConvGeometry& g, const T* x, T* col, bool parallel) {
  const auto rows_body = [&](std::int64_t row0, std::int64_t row1) {
    for (std::int64_t row = row0; row < row1; ++row) {
      const std::int64_t c = row / (g.r * g.s), r = (row / g.s) % g.r, s = row % g.s;
      const T* plane = x + c * g.hw();
      T* out_rows = col + row * g.pq();
      conv_detail::for_each_tap_row(
          g, r, s, [&](std::int64_t p, std::int64_t ih, std::int64_t q_lo, std::int64_t q_hi, std::int64_t iw_lo) {
            T* out = out_rows + p * g.q;
            if (ih < 0) {
              std::fill(out, out + g.q, T(0));
              return;
            }
            std::fill(out, out + q_lo, T(0));
            const T* in = plane + ih * g.w + iw_lo;
            if (g.stride_w == 1) {
              std::copy(in, in + (q_hi - q_lo), out + q_lo);
            } else {
              for (std::int64_t q = q_lo; q < q_hi; ++q) out[q] = in[(q - q_lo) * g.stride_w];
            }
            std::fill(out + q_hi, out + g.q, T(0));
          });
    }
  };
  const std::int64_t rows = g.crs();
  if (parallel)
    parallel_chunks(rows, conv_detail::grain(g.pq()), rows_body);
  else
    rows_body(0, rows);
}

// The adjoint of im2col: x [Cg, H, W] += the columns of col. Each channel's
// taps all add into that channel's plane, so parallel chunks are whole
// channels (no two write the same element).
template <class T>
void col2im(const ConvGeometry& g, const T* col, T* x, bool parallel) {
  const std::int64_t taps = g.r * g.s;
  const auto channels_body = [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      T* plane = x + c * g.hw();
      for (std::int64_t tap = 0; tap < taps; ++tap) {
        const T* in_rows = col + (c * taps + tap) * g.pq();
        conv_detail::for_each_tap_row(
            g, tap / g.s, tap % g.s,
            [&](std::int64_t p, std::int64_t ih, std::int64_t q_lo, std::int64_t q_hi, std::int64_t iw_lo) {
              if (ih < 0) return;
              const T* in = in_rows + p * g.q;
              T* out = plane + ih * g.w + iw_lo;
              if (g.stride_w == 1) {
                for (std::int64_t q = q_lo; q < q_hi; ++q) out[q - q_lo] += in[q];
              } else {
                for (std::int64_t q = q_lo; q < q_hi; ++q) out[(q - q_lo) * g.stride_w] += in[q];
              }
            });
      }
    }
  };
  if (parallel)
    parallel_chunks(g.c_group(), conv_detail::grain(taps * g.pq()), channels_body);
  else
    channels_body(0, g.c_group());
}

}  // namespace xylem::native
