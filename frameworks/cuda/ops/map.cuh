#pragma once
// Elementwise kernels written once: out[k] = f(k, in0[k], in1[k], ...) where
// k is the row-major logical index and every argument has its own element
// type (compare writes bytes from floats, cast converts, where mixes a byte
// condition with values). f receives and returns storage values.
//
// Dense tensors take 16-byte streaming loads and stores, several in flight
// per thread, one tile per block: each thread handles V elements per step,
// V = 16 bytes / the narrowest type, so the narrowest argument moves in one
// 16-byte access and wider ones in several. A broadcast scalar input
// (stride 0 everywhere) stays on the dense path. Anything else takes a
// grid-stride loop on the strided path, after merging the dimensions that
// are contiguous in every argument (a transposed matrix stays rank 2; a
// dense slice becomes rank 1). Broadcasts whose last dimension is
// contiguous or repeated in every argument take a row path between the two
// (map_rows): 16-byte accesses, offsets computed once per row segment.
// Broadcasts into a contiguous output whose inputs are each contiguous or
// constant along runs of it (a [1,K,1,1] bias over [N,K,H,W] with an odd
// H*W) take the dense path's kernel (map_tiles) with RunInputs whatever the
// row length.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "../check.hpp"
#include "kernels.hpp"

namespace xylem::cuda {

template <class T>
[[nodiscard]] inline T* element_ptr(const plugin::TensorArg& a) noexcept {
  return static_cast<T*>(a.data) + a.view.offset();
}

inline constexpr int kMapThreads = 256;
// 16-byte accesses in flight per thread and argument for the widest type.
inline constexpr int kMapUnroll = 4;

// x / d and x % d by a multiply and a shift (Granlund and Montgomery), for
// 0 <= x < 2^31: a 64-bit division costs dozens of instructions per element
// and a strided map does one per dimension.
struct FastDivider {
  std::uint32_t divisor = 1, mul = 1, shift = 0;
  FastDivider() = default;
  explicit FastDivider(std::uint32_t d) : divisor(d) {
    while (shift < 32 && (std::uint64_t{1} << shift) < d) ++shift;
    const std::uint64_t m = ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1;
    mul = static_cast<std::uint32_t>(m);
  }
  __device__ __forceinline__ std::uint32_t div(std::uint32_t x) const { return (__umulhi(x, mul) + x) >> shift; }
};

template <int N>
struct OperandIndexer {
  int rank = 0;
  bool small = false;  // every index below 2^31: the FastDividers apply
  std::int64_t dims[kMaxRank];
  FastDivider divs[kMaxRank];
  std::int64_t strides[N][kMaxRank];
};

// A minimal tuple for device code (kernel arguments and registers).
template <std::size_t I, class T>
struct Slot {
  T value;
};
template <class Seq, class... T>
struct TupleOf;
template <std::size_t... I, class... T>
struct TupleOf<std::index_sequence<I...>, T...> : Slot<I, T>... {};
// A class rather than an alias: nvcc cannot name a kernel whose parameter
// type is spelled through an alias template ("Symbol name with unsupported
// characters").
template <class... T>
struct Tuple : TupleOf<std::index_sequence_for<T...>, T...> {};
template <std::size_t I, class T>
__host__ __device__ __forceinline__ T& get(Slot<I, T>& s) {
  return s.value;
}
template <std::size_t I, class T>
__host__ __device__ __forceinline__ const T& get(const Slot<I, T>& s) {
  return s.value;
}

// The step of the dense path for these argument types.
template <class Out, class... In>
struct MapWidth {
  static constexpr std::size_t narrow = std::min({sizeof(Out), sizeof(In)...});
  static constexpr std::size_t wide = std::max({sizeof(Out), sizeof(In)...});
  static constexpr int V = int(16 / narrow);  // elements per thread per step
  static constexpr int U = std::max(1, int(kMapUnroll * narrow / wide));  // steps in flight
};

// V elements of one argument: a whole number of 16-byte words.
template <class T, int V>
struct alignas(16) Chunk {
  T v[V];
};

// Streaming (evict-first) accesses: each element is touched once, so
// keeping it in L2 only displaces data that will be used again.
template <int V, class T>
__device__ __forceinline__ Chunk<T, V> load_chunk(const T* p, std::int64_t i) {
  constexpr int W = int(sizeof(Chunk<T, V>) / 16);
  const uint4* q = reinterpret_cast<const uint4*>(p) + i * W;
  uint4 bits[W];
#pragma unroll
  for (int w = 0; w < W; ++w) bits[w] = __ldcs(q + w);
  Chunk<T, V> c;
  memcpy(&c, bits, sizeof c);
  return c;
}
template <int V, class T>
__device__ __forceinline__ Chunk<T, V> splat(T value) {
  Chunk<T, V> c;
#pragma unroll
  for (int e = 0; e < V; ++e) c.v[e] = value;
  return c;
}
template <int V, class T>
__device__ __forceinline__ void store_chunk(T* p, std::int64_t i, const Chunk<T, V>& c) {
  constexpr int W = int(sizeof(Chunk<T, V>) / 16);
  uint4 bits[W];
  memcpy(bits, &c, sizeof c);
  uint4* q = reinterpret_cast<uint4*>(p) + i * W;
#pragma unroll
  for (int w = 0; w < W; ++w) __stcs(q + w, bits[w]);
}

template <std::size_t... I, class F, class X>
__device__ __forceinline__ auto apply_chunks(const F& f, std::int64_t k, const X& x, int e, std::index_sequence<I...>) {
  return f(k, get<I>(x).v[e]...);
}

// How map_tiles reads the inputs of a dense map: 16-byte loads at the
// output's index, or (bit j of `scalar`) input j's one value everywhere.
struct DenseInputs {
  unsigned scalar = 0;
  template <int V, std::size_t... I, class X, class P>
  __device__ __forceinline__ void chunks(X& x, const P& in, std::int64_t i, std::index_sequence<I...>) const {
    ((get<I>(x) = (scalar >> I & 1u) ? splat<V>(*get<I>(in)) : load_chunk<V>(get<I>(in), i)), ...);
  }
  template <std::size_t... I, class F, class P>
  __device__ __forceinline__ auto apply(const F& f, std::int64_t k, const P& in, std::index_sequence<I...>) const {
    return f(k, get<I>(in)[(scalar >> I & 1u) ? 0 : k]...);
  }
};

// An input constant along runs of a contiguous output: output element k
// reads its element ((k / inner) % count) * stride, i.e. one value for each
// run of `inner` output elements, `count` of them in turn.
struct Runs {
  FastDivider inner, count;
  std::int64_t stride = 0;
  template <class T>
  __device__ __forceinline__ T value(const T* p, std::uint32_t k) const {
    const std::uint32_t q = inner.div(k);
    return p[std::int64_t(q - count.div(q) * count.divisor) * stride];
  }
  // V elements from output element k: one load when they lie in one run
  // (all but one in V steps for runs longer than V), else one per element.
  // Plain (cached) loads: the input is small and read many times.
  template <int V, class T>
  __device__ __forceinline__ Chunk<T, V> chunk(const T* p, std::uint32_t k) const {
    if (inner.div(k) == inner.div(k + (V - 1))) return splat<V>(value(p, k));
    Chunk<T, V> c;
#pragma unroll
    for (int e = 0; e < V; ++e) c.v[e] = value(p, k + e);
    return c;
  }
};

// How map_tiles reads the inputs of a broadcast into a contiguous output
// (fewer than 2^31 elements): input j laid out as the output (bit j of
// `contiguous`: 16-byte loads) or constant along runs of it (runs[j]). A
// vector of V elements may straddle runs: a bias over an odd H*W has no
// row of whole vectors for map_rows.
template <int N>
struct RunInputs {
  Runs runs[N > 0 ? N : 1];
  unsigned contiguous = 0;
  template <int V, std::size_t... I, class X, class P>
  __device__ __forceinline__ void chunks(X& x, const P& in, std::int64_t i, std::index_sequence<I...>) const {
    ((get<I>(x) = (contiguous >> I & 1u) ? load_chunk<V>(get<I>(in), i)
                                         : runs[I].template chunk<V>(get<I>(in), std::uint32_t(i * V))),
     ...);
  }
  template <std::size_t... I, class F, class P>
  __device__ __forceinline__ auto apply(const F& f, std::int64_t k, const P& in, std::index_sequence<I...>) const {
    return f(k, ((contiguous >> I & 1u) ? get<I>(in)[k] : runs[I].value(get<I>(in), std::uint32_t(k)))...);
  }
};

template <int V, std::size_t... I, class X, class P, std::size_t N>
__device__ __forceinline__ void load_row_chunks(X& x, const P& in, const std::int64_t (&off)[N], unsigned contiguous,
                                                std::index_sequence<I...>) {
  ((get<I>(x) = (contiguous >> I & 1u) ? load_chunk<V>(get<I>(in) + off[I + 1], 0)
                                       : splat<V>(get<I>(in)[off[I + 1]])),
   ...);
}

// A contiguous output, its inputs read as `read` says (DenseInputs or
// RunInputs). One tile per block: kMapThreads * U steps, the thread's U
// steps of loads all issued before the first use. A grid of many short
// blocks (rather than one persistent wave looping) measured 7% faster on the
// H100: 2.79 TB/s persistent against the copy engine's 3.0.
template <class F, class Out, class Inputs, class... In>
__global__ void __launch_bounds__(kMapThreads)
    map_tiles(std::int64_t n, Out* out, Tuple<const In*...> in, Inputs read, F f) {
  using Width = MapWidth<Out, In...>;
  constexpr int V = Width::V, U = Width::U;
  constexpr std::int64_t kTile = std::int64_t(kMapThreads) * U;
  using Idx = std::index_sequence_for<In...>;
  const std::int64_t steps = n / V;
  const std::int64_t tiles = (steps + kTile - 1) / kTile;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t base = tile * kTile + threadIdx.x;
    [[maybe_unused]] Tuple<Chunk<In, V>...> x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < steps) read.template chunks<V>(x[u], in, i, Idx{});
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < steps) {
        Chunk<Out, V> y;
#pragma unroll
        for (int e = 0; e < V; ++e) y.v[e] = apply_chunks(f, i * V + e, x[u], e, Idx{});
        store_chunk<V>(out, i, y);
      }
    }
  }
  // The tail, fewer than V elements, goes to the first block.
  if (blockIdx.x == 0)
    for (std::int64_t k = steps * V + threadIdx.x; k < n; k += blockDim.x) out[k] = read.apply(f, k, in, Idx{});
}

// Offsets of element k in every argument.
template <int N>
__device__ __forceinline__ void offsets_of(const OperandIndexer<N>& l, std::int64_t k, std::int64_t (&off)[N]);

// Rows of a broadcast: the last dimension has stride 1 in the output and 1
// or 0 in each input (bit j of `contiguous`: input j's is 1), and a row's
// length is a multiple of V. Each step is V elements of one row: 16-byte
// accesses for the contiguous arguments, one value repeated for the others,
// and the row's offsets (the layout of the other dimensions) found once
// per step rather than once per element.
template <class F, class Out, class... In>
__global__ void __launch_bounds__(kMapThreads)
    map_rows(std::int64_t n, OperandIndexer<sizeof...(In) + 1> rows, FastDivider per_row, std::int64_t steps_per_row,
             Out* out, Tuple<const In*...> in, unsigned contiguous, F f) {
  constexpr int N = sizeof...(In) + 1;
  using Width = MapWidth<Out, In...>;
  constexpr int V = Width::V, U = Width::U;
  constexpr std::int64_t kTile = std::int64_t(kMapThreads) * U;
  using Idx = std::index_sequence_for<In...>;
  const std::int64_t steps = n / V;
  const std::int64_t tiles = (steps + kTile - 1) / kTile;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t base = tile * kTile + threadIdx.x;
    [[maybe_unused]] Tuple<Chunk<In, V>...> x[U];
    std::int64_t off[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < steps) {
        const std::int64_t row = rows.small ? std::int64_t(per_row.div(std::uint32_t(i))) : i / steps_per_row;
        offsets_of(rows, row, off[u]);
        const std::int64_t col = (i - row * steps_per_row) * V;
#pragma unroll
        for (int t = 0; t < N; ++t) off[u][t] += (t == 0 || (contiguous >> (t > 0 ? t - 1 : 0) & 1u)) ? col : 0;
        load_row_chunks<V>(x[u], in, off[u], contiguous, Idx{});
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = base + u * kMapThreads;
      if (i < steps) {
        Chunk<Out, V> y;
#pragma unroll
        for (int e = 0; e < V; ++e) y.v[e] = apply_chunks(f, i * V + e, x[u], e, Idx{});
        store_chunk<V>(out + off[u][0], 0, y);
      }
    }
  }
}

template <int N>
__device__ __forceinline__ void offsets_of(const OperandIndexer<N>& l, std::int64_t k, std::int64_t (&off)[N]) {
#pragma unroll
  for (int t = 0; t < N; ++t) off[t] = 0;
  if (l.rank == 0) return;
  if (l.small) {
    std::uint32_t rem = static_cast<std::uint32_t>(k);
    for (int d = l.rank - 1; d > 0; --d) {
      const std::uint32_t q = l.divs[d].div(rem);
      const std::int64_t i = rem - q * l.divs[d].divisor;
      rem = q;
#pragma unroll
      for (int t = 0; t < N; ++t) off[t] += i * l.strides[t][d];
    }
#pragma unroll
    for (int t = 0; t < N; ++t) off[t] += std::int64_t(rem) * l.strides[t][0];
  } else {
    std::int64_t rem = k;
    for (int d = l.rank - 1; d > 0; --d) {
      const std::int64_t i = rem % l.dims[d];
      rem /= l.dims[d];
#pragma unroll
      for (int t = 0; t < N; ++t) off[t] += i * l.strides[t][d];
    }
#pragma unroll
    for (int t = 0; t < N; ++t) off[t] += rem * l.strides[t][0];
  }
}

template <std::size_t... I, class X, class P, std::size_t N>
__device__ __forceinline__ void gather(X& x, const P& in, const std::int64_t (&off)[N], std::index_sequence<I...>) {
  ((get<I>(x).value = get<I>(in)[off[I + 1]]), ...);
}
template <std::size_t... I, class F, class X>
__device__ __forceinline__ auto apply_gathered(const F& f, std::int64_t k, const X& x, std::index_sequence<I...>) {
  return f(k, get<I>(x).value...);
}
template <class T>
struct Value {
  T value;
};

inline constexpr int kStridedUnroll = 4;

// kStridedUnroll elements per thread per step, their loads issued before the
// first use. Plain (cached) loads: a broadcast input is read many times.
template <class F, class Out, class... In>
__global__ void __launch_bounds__(kMapThreads)
    map_strided(std::int64_t n, OperandIndexer<sizeof...(In) + 1> layout, Out* out, Tuple<const In*...> in, F f) {
  constexpr int N = sizeof...(In) + 1;
  using Idx = std::index_sequence_for<In...>;
  const std::int64_t step = std::int64_t(gridDim.x) * blockDim.x * kStridedUnroll;
  for (std::int64_t base = std::int64_t(blockIdx.x) * blockDim.x * kStridedUnroll + threadIdx.x; base < n;
       base += step) {
    std::int64_t out_off[kStridedUnroll];
    [[maybe_unused]] Tuple<Value<In>...> x[kStridedUnroll];
#pragma unroll
    for (int u = 0; u < kStridedUnroll; ++u) {
      const std::int64_t k = base + std::int64_t(u) * blockDim.x;
      if (k < n) {
        std::int64_t off[N];
        offsets_of(layout, k, off);
        out_off[u] = off[0];
        gather(x[u], in, off, Idx{});
      }
    }
#pragma unroll
    for (int u = 0; u < kStridedUnroll; ++u) {
      const std::int64_t k = base + std::int64_t(u) * blockDim.x;
      if (k < n) out[out_off[u]] = apply_gathered(f, k, x[u], Idx{});
    }
  }
}

// Merges dimensions that are contiguous in every argument; drops size-1 ones.
template <int N>
[[nodiscard]] OperandIndexer<N> make_layout(const std::array<const xylem::Layout*, N>& shapes) {
  OperandIndexer<N> l;
  int r = 0;
  const Layout& first = *shapes[0];
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
  l.small = first.numel() < (std::int64_t{1} << 31);
  if (l.small)
    for (int d = 0; d < r; ++d) l.divs[d] = FastDivider(static_cast<std::uint32_t>(l.dims[d]));
  return l;
}

// Blocks of a kernel that fit on one multiprocessor at once, asked once per
// kernel: a grid-stride loop over exactly one wave of blocks leaves no
// half-empty second wave.
template <class K>
[[nodiscard]] int blocks_per_multiprocessor(K kernel, int threads = kMapThreads) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // only a sizing hint: fall back to a safe guess
    n = 4;
  }
  return std::max(n, 1);
}

[[nodiscard]] inline int grid_for(std::int64_t work_items, int per_multiprocessor, const Context& ctx) {
  const std::int64_t resident = std::int64_t(ctx.multiprocessors) * per_multiprocessor;
  return int(std::clamp<std::int64_t>((work_items + kMapThreads - 1) / kMapThreads, 1, resident));
}

// Whether map_rows applies (see there); sets bit j of `contiguous` for the
// inputs whose last dimension is contiguous.
template <class Out, class... In, int N, std::size_t M>
[[nodiscard]] bool rows_of_broadcast(const OperandIndexer<N>& l, const std::array<const void*, M>& ptrs, unsigned& contiguous) {
  if (l.rank < 2) return false;
  const int last = l.rank - 1;
  if (l.dims[last] % MapWidth<Out, In...>::V != 0) return false;
  const std::size_t sizes[] = {sizeof(Out), sizeof(In)...};
  contiguous = 0;
  for (int t = 0; t < N; ++t) {
    const std::int64_t s = l.strides[t][last];
    if (s != 1 && (s != 0 || t == 0)) return false;
    if (s == 0) continue;
    if (t > 0) contiguous |= 1u << (t - 1);
    // 16-byte aligned rows: the start and every row stride.
    if (reinterpret_cast<std::uintptr_t>(ptrs[std::size_t(t)]) % 16 != 0) return false;
    for (int d = 0; d < last; ++d)
      if ((l.strides[t][d] * std::int64_t(sizes[t])) % 16 != 0) return false;
  }
  return true;
}

// Whether RunInputs apply (see there): the output row-major contiguous and
// 16-byte aligned, fewer than 2^31 elements, and each input either laid out
// as the output and 16-byte aligned or of nonzero stride along at most one
// dimension.
template <int N>
[[nodiscard]] bool runs_of_broadcast(const OperandIndexer<N>& l, const std::array<const void*, N>& ptrs,
                                     RunInputs<N - 1>& read) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!l.small || !aligned(ptrs[0])) return false;
  std::int64_t size = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    if (l.strides[0][d] != size) return false;
    size *= l.dims[d];
  }
  read.contiguous = 0;
  for (int t = 1; t < N; ++t) {
    int along = -1, nonzero = 0;
    bool same = true;
    for (int d = 0; d < l.rank; ++d) {
      same = same && l.strides[t][d] == l.strides[0][d];
      if (l.strides[t][d] != 0) {
        along = d;
        ++nonzero;
      }
    }
    if (same) {
      if (!aligned(ptrs[std::size_t(t)])) return false;
      read.contiguous |= 1u << (t - 1);
      continue;
    }
    if (nonzero > 1) return false;
    std::int64_t inner = 1;
    for (int d = along + 1; d < l.rank; ++d) inner *= l.dims[d];
    Runs& r = read.runs[t - 1];
    r.inner = FastDivider(static_cast<std::uint32_t>(inner));
    r.count = FastDivider(static_cast<std::uint32_t>(along < 0 ? 1 : l.dims[along]));
    r.stride = along < 0 ? 0 : l.strides[t][along];
  }
  return true;
}

template <std::size_t... I, class X, class... P>
void set_all(X& x, std::index_sequence<I...>, P... p) {
  ((get<I>(x) = p), ...);
}

template <class>
using TensorArgFor = plugin::TensorArg;

// out = f(k, ins...) elementwise with element types Out and In...; out may
// be one of the inputs (in place, the same view).
template <class Out, class... In, class F>
void map_as(const Context& ctx, std::string_view what, F f, const plugin::TensorArg& out,
            const TensorArgFor<In>&... ins) {
  constexpr int NIn = sizeof...(In);
  const std::int64_t n = out.view.numel();
  if (n == 0) return;
  const OperandIndexer<NIn + 1> layout = make_layout<NIn + 1>({&out.view, &ins.view...});
  Out* o = element_ptr<Out>(out);
  Tuple<const In*...> in;
  set_all(in, std::index_sequence_for<In...>{}, element_ptr<const In>(ins)...);
  const std::array<const void*, NIn + 1> ptrs{o, element_ptr<const In>(ins)...};
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  // Dense: rank 0, or rank 1 with unit strides; an input of stride 0 there
  // is a broadcast scalar.
  bool dense = layout.rank == 0 || (layout.rank == 1 && layout.strides[0][0] == 1);
  unsigned scalar = 0;
  for (int t = 1; t <= NIn && dense; ++t) {
    const std::int64_t s = layout.rank == 0 ? 1 : layout.strides[t][0];
    if (s == 0) scalar |= 1u << (t - 1);
    dense = (s == 0 || (s == 1 && aligned(ptrs[t])));
  }
  using Width = MapWidth<Out, In...>;
  const std::int64_t tiles = (n / Width::V + kMapThreads * Width::U - 1) / (kMapThreads * Width::U);
  const int grid = int(std::clamp<std::int64_t>(tiles, 1, 1 << 30));
  unsigned contiguous = 0;
  RunInputs<NIn> runs;
  if (dense && aligned(o)) {
    map_tiles<F, Out, DenseInputs, In...><<<grid, kMapThreads, 0, ctx.stream>>>(n, o, in, DenseInputs{scalar}, f);
  } else if (rows_of_broadcast<Out, In...>(layout, ptrs, contiguous)) {
    const int r = layout.rank - 1;
    OperandIndexer<NIn + 1> rows = layout;
    rows.rank = r;  // the row layout: every dimension but the last
    const std::int64_t steps_per_row = layout.dims[r] / Width::V;
    const FastDivider per_row(rows.small ? static_cast<std::uint32_t>(steps_per_row) : 1u);
    map_rows<F, Out, In...><<<grid, kMapThreads, 0, ctx.stream>>>(n, rows, per_row, steps_per_row, o, in, contiguous,
                                                                 f);
  } else if (runs_of_broadcast<NIn + 1>(layout, ptrs, runs)) {
    map_tiles<F, Out, RunInputs<NIn>, In...><<<grid, kMapThreads, 0, ctx.stream>>>(n, o, in, runs, f);
  } else {
    static const int per_sm = blocks_per_multiprocessor(map_strided<F, Out, In...>);
    const int grid = grid_for((n + kStridedUnroll - 1) / kStridedUnroll, per_sm, ctx);
    map_strided<F, Out, In...><<<grid, kMapThreads, 0, ctx.stream>>>(n, layout, o, in, f);
  }
  XY_CUDA_LAUNCHED(ctx.device, what);
}

template <class T, class>
struct Same {
  using type = T;
};

// out = f(k, ins...) with one element type T for every argument.
template <class T, class F, class... Args>
void map(const Context& ctx, std::string_view what, F f, const plugin::TensorArg& out, const Args&... ins) {
  map_as<T, typename Same<T, Args>::type...>(ctx, what, f, out, ins...);
}

}  // namespace xylem::cuda
