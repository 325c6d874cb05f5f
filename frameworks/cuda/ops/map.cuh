#pragma once
// Elementwise kernels written once: out[k] = f(k, in0[k], in1[k], ...) over
// tensors of one element type, where k is the row-major logical index.
// Dense tensors take 16-byte streaming loads and stores, several in flight
// per thread, one tile per block; anything else takes a grid-stride loop on
// the strided path, after merging the dimensions that are contiguous in every
// argument (a transposed matrix stays rank 2; a dense slice becomes rank 1).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "../check.hpp"
#include "kernels.hpp"

namespace xylem::cuda {

template <class T>
[[nodiscard]] inline T* element_ptr(const plugin::TensorArg& a) noexcept {
  return static_cast<T*>(a.data) + a.view.offset();
}

inline constexpr int kMapThreads = 256;
inline constexpr int kMapUnroll = 4;

template <int N>
struct Layout {
  int rank = 0;
  std::int64_t dims[kMaxRank];
  std::int64_t strides[N][kMaxRank];
};

template <class T, int NIn>
struct Inputs {
  const T* p[NIn > 0 ? NIn : 1];
};

template <class T>
struct alignas(16) Vec16 {
  T v[16 / sizeof(T)];
};

// Streaming (evict-first) 16-byte accesses: each element is touched once,
// so keeping it in L2 only displaces data that will be used again.
template <class T>
__device__ __forceinline__ Vec16<T> load_streaming(const T* p, std::int64_t i) {
  const uint4 bits = __ldcs(reinterpret_cast<const uint4*>(p) + i);
  Vec16<T> v;
  memcpy(&v, &bits, sizeof v);
  return v;
}
template <class T>
__device__ __forceinline__ void store_streaming(T* p, std::int64_t i, const Vec16<T>& v) {
  uint4 bits;
  memcpy(&bits, &v, sizeof bits);
  __stcs(reinterpret_cast<uint4*>(p) + i, bits);
}

template <int NIn, class T, class F>
__device__ __forceinline__ T apply(const F& f, std::int64_t k, const T (&x)[NIn > 0 ? NIn : 1]) {
  if constexpr (NIn == 0) {
    return f(k);
  } else if constexpr (NIn == 1) {
    return f(k, x[0]);
  } else {
    static_assert(NIn == 2, "map takes up to two inputs");
    return f(k, x[0], x[1]);
  }
}

// One tile per block: kMapThreads * kMapUnroll vectors, the thread's
// kMapUnroll loads all issued before the first use. A grid of many short
// blocks (rather than one persistent wave looping) measured 7% faster on
// the H100: 2.79 TB/s persistent against the copy engine's 3.0.
template <class T, int NIn, class F>
__global__ void __launch_bounds__(kMapThreads) map_dense(std::int64_t n, T* out, Inputs<T, NIn> in, F f) {
  constexpr int V = 16 / sizeof(T);
  constexpr int M = NIn > 0 ? NIn : 1;
  constexpr std::int64_t kTile = std::int64_t(kMapThreads) * kMapUnroll;
  using Vec = Vec16<T>;
  const std::int64_t nvec = n / V;
  const std::int64_t tiles = (nvec + kTile - 1) / kTile;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t base = tile * kTile + threadIdx.x;
    [[maybe_unused]] Vec x[kMapUnroll][M];
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < nvec) {
#pragma unroll
        for (int j = 0; j < NIn; ++j) x[u][j] = load_streaming(in.p[j], i);
      }
    }
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < nvec) {
        Vec y;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          [[maybe_unused]] T a[M];
#pragma unroll
          for (int j = 0; j < NIn; ++j) a[j] = x[u][j].v[e];
          y.v[e] = apply<NIn>(f, i * V + e, a);
        }
        store_streaming(out, i, y);
      }
    }
  }
  // The tail, fewer than V elements, goes to the first block.
  if (blockIdx.x == 0) {
    for (std::int64_t k = nvec * V + threadIdx.x; k < n; k += blockDim.x) {
      [[maybe_unused]] T a[M];
#pragma unroll
      for (int j = 0; j < NIn; ++j) a[j] = in.p[j][k];
      out[k] = apply<NIn>(f, k, a);
    }
  }
}

template <class T, int NIn, class F>
__global__ void __launch_bounds__(kMapThreads)
    map_strided(std::int64_t n, Layout<NIn + 1> layout, T* out, Inputs<T, NIn> in, F f) {
  constexpr int N = NIn + 1;
  constexpr int M = NIn > 0 ? NIn : 1;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += stride) {
    std::int64_t off[N] = {};
    std::int64_t rem = k;
    for (int d = layout.rank - 1; d > 0; --d) {
      const std::int64_t i = rem % layout.dims[d];
      rem /= layout.dims[d];
#pragma unroll
      for (int t = 0; t < N; ++t) off[t] += i * layout.strides[t][d];
    }
    if (layout.rank > 0) {
#pragma unroll
      for (int t = 0; t < N; ++t) off[t] += rem * layout.strides[t][0];
    }
    [[maybe_unused]] T a[M];
#pragma unroll
    for (int j = 0; j < NIn; ++j) a[j] = in.p[j][off[j + 1]];
    out[off[0]] = apply<NIn>(f, k, a);
  }
}

// Merges dimensions that are contiguous in every argument; drops size-1 ones.
template <int N>
[[nodiscard]] Layout<N> make_layout(const std::array<const Shape*, N>& shapes) {
  Layout<N> l;
  int r = 0;
  const Shape& first = *shapes[0];
  for (int d = first.rank() - 1; d >= 0; --d) {
    const std::int64_t n = first.dims()[d];
    if (n == 1) continue;
    bool merge = r > 0;
    for (int t = 0; t < N && merge; ++t) merge = shapes[t]->strides()[d] == l.strides[t][r - 1] * l.dims[r - 1];
    if (merge) {
      l.dims[r - 1] *= n;
      continue;
    }
    l.dims[r] = n;
    for (int t = 0; t < N; ++t) l.strides[t][r] = shapes[t]->strides()[d];
    ++r;
  }
  std::reverse(l.dims, l.dims + r);
  for (int t = 0; t < N; ++t) std::reverse(l.strides[t], l.strides[t] + r);
  l.rank = r;
  return l;
}

// Blocks of a kernel that fit on one multiprocessor at once, asked once per
// kernel: a grid-stride loop over exactly one wave of blocks leaves no
// half-empty second wave.
template <class K>
[[nodiscard]] int blocks_per_multiprocessor(K kernel) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kMapThreads, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // only a sizing hint: fall back to a safe guess
    n = 4;
  }
  return std::max(n, 1);
}

[[nodiscard]] inline int grid_for(std::int64_t work_items, int per_multiprocessor, const Context& ctx) {
  const std::int64_t resident = std::int64_t(ctx.multiprocessors) * per_multiprocessor;
  return int(std::clamp<std::int64_t>((work_items + kMapThreads - 1) / kMapThreads, 1, resident));
}

// out = f(k, ins...) elementwise; out may be one of the inputs (in place).
template <class T, class F, class... In>
void map(const Context& ctx, std::string_view what, F f, const plugin::TensorArg& out, const In&... ins) {
  constexpr int NIn = sizeof...(In);
  const std::int64_t n = out.view.numel();
  if (n == 0) return;
  const Layout<NIn + 1> layout = make_layout<NIn + 1>({&out.view, &ins.view...});
  T* o = element_ptr<T>(out);
  Inputs<T, NIn> in{};
  {
    int j = 0;
    ((in.p[j++] = element_ptr<const T>(ins)), ...);
  }
  bool dense = layout.rank == 0;
  if (layout.rank == 1) {
    dense = true;
    for (int t = 0; t <= NIn; ++t) dense = dense && layout.strides[t][0] == 1;
  }
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  bool vectorizable = dense && aligned(o);
  for (int j = 0; j < NIn; ++j) vectorizable = vectorizable && aligned(in.p[j]);
  if (vectorizable) {
    const std::int64_t vectors = n / std::int64_t(16 / sizeof(T));
    const std::int64_t tiles = (vectors + kMapThreads * kMapUnroll - 1) / (kMapThreads * kMapUnroll);
    const int grid = int(std::clamp<std::int64_t>(tiles, 1, 1 << 30));
    map_dense<T, NIn, F><<<grid, kMapThreads, 0, ctx.stream>>>(n, o, in, f);
  } else {
    static const int per_sm = blocks_per_multiprocessor(map_strided<T, NIn, F>);
    map_strided<T, NIn, F><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(n, layout, o, in, f);
  }
  XY_CUDA_LAUNCHED(ctx.device, what);
}

}  // namespace xylem::cuda
