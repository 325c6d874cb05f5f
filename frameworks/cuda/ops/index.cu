// index::check, index::gather and index::scatter (op.hpp). Gather and the
// assigning scatter move bits, so one kernel per element size serves every
// dtype. The views come from include/xylem/plugin/index.hpp.
//
// Gather: when each run of the innermost axis shares one index and is
// contiguous in x and y (an embedding, an index_select of slices) a block
// copies a row, in 16-byte words where aligned; anything else goes element
// by element. Scatter: one thread per column (every position but the
// axis), walking it along the axis in order, so a repeated index keeps the
// last value and sums come out the same every run; f32 and f64 sums over
// few columns (an embedding gradient: D columns of N rows) take one thread
// per element with atomicAdd instead, as a column walk would leave most of
// the GPU idle.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "map.cuh"
#include "real.cuh"
#include "xylem/plugin/bits.hpp"
#include "xylem/plugin/index.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;

template <class I>
__global__ void __launch_bounds__(kMapThreads)
    check_kernel(const I* index, OperandIndexer<1> l, std::int64_t count, std::int64_t n, std::int32_t* flag) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[1];
    offsets_of(l, i, off);
    const std::int64_t v = index[off[0]];
    if (v < 0 || v >= n) *flag = 1;  // every writer stores 1: no atomic needed
  }
}

template <class I>
void check_as(const plugin::args::index_check<plugin::TensorArg>& a, const Context& ctx) {
  const std::int64_t count = a.index.view.numel();
  if (count == 0) return;
  const auto l = make_layout<1>({&a.index.view});
  static const int per_sm = blocks_per_multiprocessor(check_kernel<I>);
  check_kernel<I><<<grid_for(count, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      element_ptr<const I>(a.index), l, count, a.n, element_ptr<std::int32_t>(a.flag));
  XY_CUDA_LAUNCHED(ctx.device, "index::check");
}

template <class I>
void check(const OpCall& c, const Context& ctx) {
  check_as<I>(plugin::unpack<plugin::args::index_check>(c), ctx);
}

// Element by element: operands (index, y, x's line starts).
template <class Word, class I>
__global__ void __launch_bounds__(kMapThreads)
    gather_elements(const I* index, Word* y, const Word* x, OperandIndexer<3> l, std::int64_t count, std::int64_t n,
                    std::int64_t step) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[3];
    offsets_of(l, i, off);
    const std::int64_t v = index[off[0]];
    y[off[1]] = v >= 0 && v < n ? x[off[2] + v * step] : Word{};
  }
}

// One block per row of `width` chunks (Chunk: Word, or a 16-byte word of
// them): row r reads index at r * index_stride and copies x's row v (its
// start r * x_stride + v * step, in chunks) to y's row r.
template <class Chunk, class I>
__global__ void __launch_bounds__(kMapThreads)
    gather_rows(const I* index, Chunk* y, const Chunk* x, std::int64_t rows, std::int64_t width,
                std::int64_t index_stride, std::int64_t y_stride, std::int64_t x_stride, std::int64_t n,
                std::int64_t step) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t v = index[r * index_stride];
    Chunk* to = y + r * y_stride;
    if (v >= 0 && v < n) {
      const Chunk* from = x + r * x_stride + v * step;
      for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) to[j] = from[j];
    } else {
      for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) to[j] = Chunk{};
    }
  }
}

// A warp per row of `width` 16-byte words, for rows of whole 16-byte words
// (an embedding's rows): each lane loads kRowUnroll words, a warp's width
// apart, before it stores any (one row of 1024 f32 in one round: eight
// loads in flight a thread, where a block per row had one), and stores
// with the streaming hint (a gathered row is not read again here).
constexpr int kRowUnroll = 8;
template <class I>
__global__ void __launch_bounds__(kMapThreads)
    gather_rows_by_warp(const I* index, uint4* y, const uint4* x, std::int64_t rows, std::int64_t width,
                        std::int64_t index_stride, std::int64_t y_stride, std::int64_t x_stride, std::int64_t n,
                        std::int64_t step) {
  const int lane = int(threadIdx.x % 32u);
  const std::int64_t warps = std::int64_t(blockDim.x / 32u);
  for (std::int64_t r = std::int64_t(blockIdx.x) * warps + threadIdx.x / 32u; r < rows;
       r += std::int64_t(gridDim.x) * warps) {
    const std::int64_t v = index[r * index_stride];
    uint4* to = y + r * y_stride;
    const bool in_range = v >= 0 && v < n;
    const uint4* from = x + r * x_stride + (in_range ? v * step : 0);
    std::int64_t j = lane;
    for (; j + 32 * (kRowUnroll - 1) < width; j += 32 * kRowUnroll) {
      uint4 words[kRowUnroll];
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) words[u] = in_range ? __ldg(from + j + 32 * u) : uint4{};
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) __stcs(to + j + 32 * u, words[u]);
    }
    for (; j < width; j += 32) __stcs(to + j, in_range ? __ldg(from + j) : uint4{});
  }
}

template <class Word, class I>
void gather_as(const plugin::args::index_gather<plugin::TensorArg>& a, const Context& ctx) {
  const std::int64_t count = a.y.view.numel();
  if (count == 0) return;
  const int axis = int(a.axis);
  const Layout starts = plugin::line_starts(a.x.view, a.index.view, axis);
  const auto l = make_layout<3>({&a.index.view, &a.y.view, &starts});
  const std::int64_t n = a.x.view.dims()[axis], step = a.x.view.strides()[axis];
  const I* index = element_ptr<const I>(a.index);
  Word* y = element_ptr<Word>(a.y);
  const Word* x = element_ptr<const Word>(a.x);
  if (l.rank == 2 && l.strides[0][1] == 0 && l.strides[1][1] == 1 && l.strides[2][1] == 1) {
    const std::int64_t rows = l.dims[0], width = l.dims[1];
    const int grid = int(std::min<std::int64_t>(rows, 1 << 30));
    constexpr std::int64_t kPer = 16 / sizeof(Word);  // Words per 16-byte chunk
    const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    if (width % kPer == 0 && l.strides[1][0] % kPer == 0 && l.strides[2][0] % kPer == 0 && step % kPer == 0 &&
        aligned(y) && aligned(x)) {
      const std::int64_t w = width / kPer;
      if (w >= 32 * kRowUnroll / 2) {  // rows of 2 KiB and more: a warp each
        constexpr std::int64_t kWarps = kMapThreads / 32;
        const int blocks = int(std::min<std::int64_t>((rows + kWarps - 1) / kWarps, 1 << 30));
        gather_rows_by_warp<I><<<blocks, kMapThreads, 0, ctx.stream>>>(
            index, reinterpret_cast<uint4*>(y), reinterpret_cast<const uint4*>(x), rows, w, l.strides[0][0],
            l.strides[1][0] / kPer, l.strides[2][0] / kPer, n, step / kPer);
        XY_CUDA_LAUNCHED(ctx.device, "index::gather");
        return;
      }
      const int threads = int(std::clamp<std::int64_t>((w + 31) / 32 * 32, 32, kMapThreads));
      gather_rows<uint4, I><<<grid, threads, 0, ctx.stream>>>(
          index, reinterpret_cast<uint4*>(y), reinterpret_cast<const uint4*>(x), rows, w, l.strides[0][0],
          l.strides[1][0] / kPer, l.strides[2][0] / kPer, n, step / kPer);
    } else {
      const int threads = int(std::clamp<std::int64_t>((width + 31) / 32 * 32, 32, kMapThreads));
      gather_rows<Word, I><<<grid, threads, 0, ctx.stream>>>(index, y, x, rows, width, l.strides[0][0],
                                                             l.strides[1][0], l.strides[2][0], n, step);
    }
  } else {
    static const int per_sm = blocks_per_multiprocessor(gather_elements<Word, I>);
    gather_elements<Word, I><<<grid_for(count, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(index, y, x, l, count, n,
                                                                                           step);
  }
  XY_CUDA_LAUNCHED(ctx.device, "index::gather");
}

template <class Word>
void gather(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::index_gather>(c);
  if (a.index.dtype == DType::i32) return gather_as<Word, std::int32_t>(a, ctx);
  gather_as<Word, std::int64_t>(a, ctx);
}

// What a scatter does with each value: Assign<Word> moves bits, Add<D>
// sums in D's compute type.
template <class Word>
struct Assign {
  using type = Word;
  __device__ static void apply(Word* to, Word v) { *to = v; }
};
template <DType D>
struct Add {
  using type = typename Real<D>::storage;
  __device__ static void apply(type* to, type v) { *to = Real<D>::store(Real<D>::load(*to) + Real<D>::load(v)); }
};

struct ScatterGeometry {
  std::int64_t k, n;       // index's length along the axis; y's
  std::int64_t is, ss, ys;  // strides along the axis: index, src, y
  std::int64_t skip;
};

// One thread per column: operands (index, src, y's line starts) with the
// axis reduced to one element.
template <class Op, class I>
__global__ void __launch_bounds__(kMapThreads)
    scatter_columns(const I* index, const typename Op::type* src, typename Op::type* y, OperandIndexer<3> l,
                    std::int64_t columns, ScatterGeometry g) {
  for (std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[3];
    offsets_of(l, c, off);
    for (std::int64_t j = 0; j < g.k; ++j) {
      const std::int64_t v = index[off[0] + j * g.is];
      if (v == g.skip || v < 0 || v >= g.n) continue;
      Op::apply(y + off[2] + v * g.ys, src[off[1] + j * g.ss]);
    }
  }
}

// One thread per element, summing with atomicAdd (f32, f64): operands
// (index, src, y's line starts) over index's dims.
template <class T, class I>
__global__ void __launch_bounds__(kMapThreads)
    scatter_add_atomic(const I* index, const T* src, T* y, OperandIndexer<3> l, std::int64_t count, ScatterGeometry g) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[3];
    offsets_of(l, i, off);
    const std::int64_t v = index[off[0]];
    if (v == g.skip || v < 0 || v >= g.n) continue;
    atomicAdd(y + off[2] + v * g.ys, src[off[1]]);
  }
}

template <class Op, class I>
void scatter_as(const plugin::args::index_scatter<plugin::TensorArg>& a, const Context& ctx) {
  using T = typename Op::type;
  const std::int64_t count = a.index.view.numel();
  if (count == 0) return;
  const int axis = int(a.axis);
  const ScatterGeometry g{a.index.view.dims()[axis], a.y.view.dims()[axis], a.index.view.strides()[axis],
                          a.src.view.strides()[axis], a.y.view.strides()[axis], a.skip};
  const I* index = element_ptr<const I>(a.index);
  const T* src = element_ptr<const T>(a.src);
  T* y = element_ptr<T>(a.y);
  const Layout y_starts = plugin::line_starts(a.y.view, a.index.view, axis);
  const std::int64_t columns = count / g.k;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // Fewer columns than threads resident on the GPU: a column walk would
    // leave it mostly idle, so each element adds atomically.
    if (!std::is_same_v<Op, Assign<T>> && columns < std::int64_t(ctx.multiprocessors) * 2048) {
      const auto l = make_layout<3>({&a.index.view, &a.src.view, &y_starts});
      static const int per_sm = blocks_per_multiprocessor(scatter_add_atomic<T, I>);
      scatter_add_atomic<T, I><<<grid_for(count, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(index, src, y, l, count,
                                                                                             g);
      XY_CUDA_LAUNCHED(ctx.device, "index::scatter");
      return;
    }
  }
  const Layout ic = plugin::columns(a.index.view, axis), sc = plugin::columns(a.src.view, axis);
  const Layout yc = plugin::columns(y_starts, axis);
  const auto l = make_layout<3>({&ic, &sc, &yc});
  static const int per_sm = blocks_per_multiprocessor(scatter_columns<Op, I>);
  scatter_columns<Op, I><<<grid_for(columns, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(index, src, y, l, columns, g);
  XY_CUDA_LAUNCHED(ctx.device, "index::scatter");
}

template <class Op>
void scatter_with(const plugin::args::index_scatter<plugin::TensorArg>& a, const Context& ctx) {
  if (a.index.dtype == DType::i32) return scatter_as<Op, std::int32_t>(a, ctx);
  scatter_as<Op, std::int64_t>(a, ctx);
}

// Word: the bits D moves as; D: the dtype, whose sums (float dtypes only)
// run in its compute type.
template <class Word, DType D>
void scatter(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::index_scatter>(c);
  if (a.accumulate) {
    if constexpr (is_floating(D)) {
      return scatter_with<Add<D>>(a, ctx);
    } else {
      throw Error(ErrorCode::unsupported, "index::scatter: accumulating " + std::string(name(D)));
    }
  }
  scatter_with<Assign<Word>>(a, ctx);
}

}  // namespace

void register_index(KernelTable& table) {
  table.set(OpId::index_check, DType::i32, check<std::int32_t>);
  table.set(OpId::index_check, DType::i64, check<std::int64_t>);
#define XYLEM_CUDA_INDEX(e, n, bytes, f)                                 \
  table.set(OpId::index_gather, DType::e, gather<plugin::BitsOf<bytes>::type>); \
  table.set(OpId::index_scatter, DType::e, scatter<plugin::BitsOf<bytes>::type, DType::e>);
  XYLEM_DTYPES(XYLEM_CUDA_INDEX)
#undef XYLEM_CUDA_INDEX
}

}  // namespace xylem::cuda
