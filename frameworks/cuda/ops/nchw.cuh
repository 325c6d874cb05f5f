#pragma once
// NCHW helpers for pooling, LRN and convolution kernels: a rank-4 view
// with any strides, and a flat row-major index split into coordinates.
#include <algorithm>
#include <cstdint>
#include <span>

#include "block.cuh"

namespace xylem::cuda {

template <class T>
struct View4 {
  T* p = nullptr;
  std::int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  __device__ __forceinline__ T& at(std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) const {
    return p[i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3];
  }
};

template <class T>
[[nodiscard]] View4<T> view4(const plugin::TensorArg& a) {
  const auto st = a.view.strides();
  return {element_ptr<T>(a), st[0], st[1], st[2], st[3]};
}

struct Coord4 {
  std::int64_t i0, i1, i2, i3;
};

// k -> (i0, i1, i2, i3) over dims [d0, d1, d2, d3], by multiply-shift when
// every index fits in 31 bits (one uniform branch), by division otherwise.
struct Split4 {
  std::int64_t d1 = 1, d2 = 1, d3 = 1;
  FastDivider f1, f2, f3;
  bool small = false;

  Split4() = default;
  explicit Split4(std::span<const std::int64_t> dims, std::int64_t numel)
      : d1(dims[1]), d2(dims[2]), d3(dims[3]), small(numel < (std::int64_t{1} << 31)) {
    if (small)
      f1 = FastDivider(std::uint32_t(d1)), f2 = FastDivider(std::uint32_t(d2)), f3 = FastDivider(std::uint32_t(d3));
  }

  __device__ __forceinline__ Coord4 operator()(std::int64_t k) const {
    Coord4 c;
    std::int64_t r;
    if (small) {
      r = f3.div(std::uint32_t(k));
      c.i3 = k - r * d3;
      k = r;
      r = f2.div(std::uint32_t(k));
      c.i2 = k - r * d2;
      k = r;
      r = f1.div(std::uint32_t(k));
      c.i1 = k - r * d1;
      c.i0 = r;
    } else {
      r = k / d3;
      c.i3 = k - r * d3;
      k = r;
      r = k / d2;
      c.i2 = k - r * d2;
      k = r;
      r = k / d1;
      c.i1 = k - r * d1;
      c.i0 = r;
    }
    return c;
  }
};

// A grid-stride launch over `work` items: enough blocks for a few waves.
[[nodiscard]] inline int grid_over(std::int64_t work, int threads, const Context& ctx) {
  return int(std::clamp<std::int64_t>((work + threads - 1) / threads, 1, std::int64_t(ctx.multiprocessors) * 32));
}

}  // namespace xylem::cuda
