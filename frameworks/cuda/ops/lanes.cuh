#pragma once
// Reductions over [outer, r, inner] views, shared by reduce, softmax and
// cross-entropy: how a 256-thread block is laid out over the reduced axis,
// and how the threads ("lanes") that share one output combine their partial
// states, deterministically (a fixed tree, whatever the timing).
//
// Row mode (inner == 1): lanes run along x over the reduced axis (consecutive
// j: coalesced), the block holds blockDim.y rows (a warp several short
// ones). Column mode (inner > 1): x runs over up to 32 consecutive inner
// indices (coalesced), the lanes along y split the reduced axis.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace xylem::cuda {

inline constexpr int kLaneThreads = 256;

[[nodiscard]] inline int pow2_ceil(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// Blocks worth launching at least, per multiprocessor (256 threads each).
inline constexpr int kBlocksPerMultiprocessor = 8;

// Where a thread works: which output (o, i) and which lane of its group.
struct LanePlan {
  bool rows = true;
  int tx = 32, ty = 8;  // block shape
  [[nodiscard]] int lanes() const { return rows ? tx : ty; }
  [[nodiscard]] dim3 block() const { return dim3(unsigned(tx), unsigned(ty)); }
  // Blocks along the outputs.
  [[nodiscard]] std::int64_t blocks(std::int64_t outer, std::int64_t inner) const {
    return rows ? (outer + ty - 1) / ty : outer * ((inner + tx - 1) / tx);
  }
};

// Rows mode gives each row lanes for about 4 elements each (4 to 256
// lanes; up to 32 they combine by shuffles), so short rows share a block
// and a warp. Columns mode
// narrows the tile from 32 columns down to one 32-byte sector per row while
// that leaves fewer than `target_blocks` blocks: more lanes per column then
// split the reduced axis, and the GPU fills.
[[nodiscard]] inline LanePlan plan_lanes(std::int64_t r, std::int64_t outer, std::int64_t inner,
                                         std::size_t element_bytes, std::int64_t target_blocks) {
  LanePlan p;
  p.rows = inner == 1;
  if (p.rows) {
    p.tx = std::clamp(pow2_ceil((r + 3) / 4), 4, kLaneThreads);
  } else {
    p.tx = std::min(32, pow2_ceil(inner));
    const int narrowest = std::max(1, int(32 / element_bytes));
    while (p.tx > narrowest && p.blocks(outer, inner) < target_blocks) p.tx /= 2;
  }
  p.ty = kLaneThreads / p.tx;
  return p;
}

struct LanePos {
  std::int64_t o, i;  // the output
  int lane, lanes, group;
  bool valid;
  bool in_warp;  // the group's lanes are consecutive threads of one warp
};

__device__ __forceinline__ LanePos lane_pos(bool rows, std::int64_t outer, std::int64_t inner) {
  LanePos p;
  if (rows) {
    p.o = std::int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
    p.i = 0;
    p.lane = threadIdx.x, p.lanes = blockDim.x, p.group = threadIdx.y;
  } else {
    const std::int64_t tiles = (inner + blockDim.x - 1) / blockDim.x;
    p.o = blockIdx.x / tiles;
    p.i = (blockIdx.x % tiles) * blockDim.x + threadIdx.x;
    p.lane = threadIdx.y, p.lanes = blockDim.y, p.group = threadIdx.x;
  }
  p.valid = p.o < outer && p.i < inner;
  p.in_warp = rows && p.lanes <= 32;
  return p;
}

// A trivially copyable value from lane `lane ^ offset` of the warp.
template <class State>
__device__ __forceinline__ State shuffle_xor(const State& s, int offset) {
  constexpr int kWords = int((sizeof(State) + 3) / 4);
  unsigned w[kWords] = {};
  memcpy(w, &s, sizeof s);
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], offset);
  State r;
  memcpy(&r, w, sizeof r);
  return r;
}

// Combines the states of a group's lanes (a power of two) in a fixed tree;
// every thread of the group gets the same result (each merge takes the
// lower lanes' state first). Groups within a warp (rows mode, up to 32
// lanes) use shuffles; otherwise all threads of the block must call it (it
// synchronises), and it ends with a barrier, so it may be called again.
template <class State, class Merge>
__device__ State combine_lanes(State s, const LanePos& p, Merge merge) {
  if (p.in_warp) {
    for (int o = p.lanes / 2; o > 0; o /= 2) {
      const State other = shuffle_xor(s, o);
      s = (p.lane & o) ? merge(other, s) : merge(s, other);
    }
    return s;
  }
  __shared__ State buf[kLaneThreads];
  State* g = buf + p.group * p.lanes;
  g[p.lane] = s;
  __syncthreads();
  for (int half = p.lanes / 2; half > 0; half /= 2) {
    if (p.lane < half) g[p.lane] = merge(g[p.lane], g[p.lane + half]);
    __syncthreads();
  }
  const State r = g[0];
  __syncthreads();
  return r;
}

}  // namespace xylem::cuda
