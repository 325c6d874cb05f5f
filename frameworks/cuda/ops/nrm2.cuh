#pragma once
// The Euclidean norm without overflow or underflow: a plain sum of squares
// turns 1e200 into inf and 1e-200 into 0 in f64. Blue's method, as LAPACK
// 3.10's dnrm2 uses it: squares of large values are summed scaled down by a
// power of two, those of tiny values scaled up, the rest as they are, in
// three accumulators. Power-of-two scaling is exact, needs no division and
// keeps the one pass over memory; the three sums combine at the end.
// (f32 data is accumulated in double, where its squares all fall in the
// middle range: the same code, no extra cost.)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "../check.hpp"
#include "kernels.hpp"

namespace xylem::cuda::nrm2 {

inline constexpr int kThreads = 256;

// Thresholds and scales for double (radix 2, 53 digits, exponents -1021..1024):
// below kSmall, a square could underflow; above kBig, a sum could overflow.
inline constexpr double kSmall = 0x1p-511;
inline constexpr double kBig = 0x1p486;
inline constexpr double kScaleSmall = 0x1p537;   // tiny values are multiplied by this...
inline constexpr double kScaleBig = 0x1p-538;    // ...large ones by this

struct Sums {
  double small = 0, mid = 0, big = 0;
};

__device__ __forceinline__ void add(Sums& s, double x) {
  const double a = fabs(x);
  if (a > kBig) {
    const double t = a * kScaleBig;
    s.big += t * t;
  } else if (a < kSmall) {
    const double t = a * kScaleSmall;
    s.small += t * t;
  } else {
    s.mid += a * a;  // NaN lands here (both comparisons false) and spreads
  }
}

__device__ inline double combine(const Sums& s) {
  const double any = s.small + s.mid + s.big;
  if (isnan(any)) return any;
  if (s.big > 0) {
    // The middle sum is negligible next to any big value, and scaling it
    // twice keeps each step in range.
    return sqrt(s.big + (s.mid * kScaleBig) * kScaleBig) * 0x1p538;
  }
  if (s.small > 0) {
    const double tiny = sqrt(s.small) * 0x1p-537;
    if (s.mid == 0) return tiny;
    const double medium = sqrt(s.mid);
    const double lo = fmin(tiny, medium), hi = fmax(tiny, medium);
    return hi * sqrt(1 + (lo / hi) * (lo / hi));
  }
  return sqrt(s.mid);
}

// Block-wide sum of each accumulator, in thread 0.
__device__ inline Sums block_sums(Sums s) {
  __shared__ double warp_sums[3][kThreads / 32];
  for (int o = 16; o > 0; o /= 2) {
    s.small += __shfl_down_sync(0xffffffffu, s.small, o);
    s.mid += __shfl_down_sync(0xffffffffu, s.mid, o);
    s.big += __shfl_down_sync(0xffffffffu, s.big, o);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[0][warp] = s.small, warp_sums[1][warp] = s.mid, warp_sums[2][warp] = s.big;
  __syncthreads();
  const bool has = threadIdx.x < blockDim.x / 32;
  s = has ? Sums{warp_sums[0][threadIdx.x], warp_sums[1][threadIdx.x], warp_sums[2][threadIdx.x]} : Sums{};
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) {
      s.small += __shfl_down_sync(0xffffffffu, s.small, o);
      s.mid += __shfl_down_sync(0xffffffffu, s.mid, o);
      s.big += __shfl_down_sync(0xffffffffu, s.big, o);
    }
  return s;
}

// partials: 3 doubles per block.
template <class T>
__global__ void __launch_bounds__(kThreads)
    partials(const T* first, std::int64_t n, std::int64_t stride, double* out) {
  Sums s;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    add(s, double(first[i * stride]));
  s = block_sums(s);
  if (threadIdx.x == 0) out[3 * blockIdx.x] = s.small, out[3 * blockIdx.x + 1] = s.mid, out[3 * blockIdx.x + 2] = s.big;
}

template <class T>
__global__ void __launch_bounds__(kThreads) finish(const double* in, int count, T* result) {
  Sums s;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    s.small += in[3 * i];
    s.mid += in[3 * i + 1];
    s.big += in[3 * i + 2];
  }
  s = block_sums(s);
  if (threadIdx.x == 0) *result = static_cast<T>(combine(s));
}

// result = ||x|| over n elements first[i * stride]; `grid` blocks (at most
// Context::kScratchBytes / 24) write their partial sums to ctx.scratch.
template <class T>
void launch(const Context& ctx, const T* first, std::int64_t n, std::int64_t stride, int grid, T* result) {
  static_assert(kThreads % 32 == 0);
  auto* scratch = static_cast<double*>(ctx.scratch);
  int count = 0;
  if (n > 0) {
    count = grid;
    partials<T><<<count, kThreads, 0, ctx.stream>>>(first, n, stride, scratch);
    XY_CUDA_LAUNCHED(ctx.device, "blas::nrm2");
  }
  finish<T><<<1, kThreads, 0, ctx.stream>>>(scratch, count, result);
  XY_CUDA_LAUNCHED(ctx.device, "blas::nrm2");
}

}  // namespace xylem::cuda::nrm2
