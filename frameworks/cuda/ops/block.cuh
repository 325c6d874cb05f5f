#pragma once
// Helpers shared by the kernels that do more than map (normalisation,
// pooling, convolution): short names for a float dtype's storage and
// compute types (real.cuh), optional tensors, 16-byte packs and block-wide
// sums.
#include <cstdint>
#include <cstring>

#include "map.cuh"
#include "real.cuh"

namespace xylem::cuda {

// Storage type (f16 and bf16 as raw bits) and compute type (also the "stat"
// dtype of the nn conventions: mean, rstd, var) of float dtype D.
template <DType D>
using StorageT = typename Real<D>::storage;
template <DType D>
using ComputeT = typename Real<D>::compute;

// The first element of a view that may be absent (data == nullptr), or nullptr.
template <class T>
[[nodiscard]] inline T* optional_ptr(const plugin::TensorArg& a) noexcept {
  return a.data == nullptr ? nullptr : element_ptr<T>(a);
}

// Stride of dimension d, or 0 for an absent tensor.
[[nodiscard]] inline std::int64_t stride_of(const plugin::TensorArg& a, int d) noexcept {
  return a.data == nullptr ? 0 : a.view.strides()[d];
}

[[nodiscard]] inline bool aligned16(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// 16 bytes of T, loaded or stored at once.
template <class T>
struct alignas(16) Pack16 {
  static constexpr int size = int(16 / sizeof(T));
  T v[size];
};

// Streaming (evict-first) for data touched once; plain loads for data many
// blocks re-read (gamma, beta).
template <bool Streaming, class T>
__device__ __forceinline__ Pack16<T> load_pack(const T* p) {
  const auto* q = reinterpret_cast<const uint4*>(p);
  const uint4 bits = Streaming ? __ldcs(q) : __ldg(q);
  Pack16<T> v;
  memcpy(&v, &bits, sizeof v);
  return v;
}
template <class T>
__device__ __forceinline__ void store_pack(T* p, const Pack16<T>& v) {
  uint4 bits;
  memcpy(&bits, &v, sizeof bits);
  __stcs(reinterpret_cast<uint4*>(p), bits);
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sums of two values over the block (blockDim.x a multiple of 32, at most
// 1024), the results in every thread. Ends with a barrier, so the next call
// may reuse the shared buffer.
template <class T>
__device__ void block_sum2(T& a, T& b) {
  __shared__ T partial[2][32];
  a = warp_sum(a);
  b = warp_sum(b);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (warps == 1) return;
  if (lane == 0) partial[0][warp] = a, partial[1][warp] = b;
  __syncthreads();
  a = lane < warps ? partial[0][lane] : T(0);
  b = lane < warps ? partial[1][lane] : T(0);
  a = warp_sum(a);
  b = warp_sum(b);
  __syncthreads();
}

template <class T>
__device__ T block_sum(T a) {
  T b = 0;
  block_sum2(a, b);
  return a;
}

}  // namespace xylem::cuda
