#pragma once
// What the tensor-core attention kernels share (attention_mma.cu, the
// forward; attention_mma_grad.cu, the gradients): the tile shape, views of
// q, k, v and their gradients, staging tiles in shared memory, the causal
// rule and the masks, and asking once per device whether a kernel can run.
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string_view>

#include "block.cuh"
#include "mma_tile.cuh"

namespace xylem::cuda::attn {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // rows per tile, queries or keys: each warp owns 16
constexpr float kLog2e = 1.4426950408889634f;

template <int kD>
constexpr int kStride = kD + 8;  // a shared tile's row in elements, padded so fragment reads miss no bank
template <int kD>
constexpr int kTile = kRows * kStride<kD>;  // elements of one shared tile

// A rank-4 view of 16-bit elements with unit innermost stride.
template <class T>
struct View4 {
  T* p = nullptr;
  std::int64_t s0 = 0, s1 = 0, s2 = 0;
  __device__ T* row(std::int64_t b, std::int64_t h, std::int64_t i) const { return p + b * s0 + h * s1 + i * s2; }
};

template <class T>
View4<T> view4(const plugin::TensorArg& t) {
  const auto s = t.view.strides();
  return {element_ptr<T>(t), s[0], s[1], s[2]};
}

// Whether the kernels can stage t: 16-byte aligned rows, strides multiples
// of 8 elements (16 bytes).
inline bool fits(const plugin::TensorArg& t) {
  const auto s = t.view.strides();
  return aligned16(element_ptr<const std::uint16_t>(t)) && s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
}

// A call's sizes, and whether the tensor-core kernels take it: f16 or
// bf16, no dropout, head dimensions multiples of 8 up to max_width, B and
// H within a grid's limits, Sq and Sk within an int's. (The layouts are
// asked separately, of each tensor: fits.)
struct Problem {
  std::int64_t B = 0, H = 0, Hkv = 0, Sq = 0, Sk = 0, Dk = 0, Dv = 0, width = 0;
  bool suits = false;
};

// XYLEM_CUDA_ATTENTION_MMA=0 keeps every call on the scalar kernels (to
// compare the two, or to step around the tensor-core path).
inline bool mma_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("XYLEM_CUDA_ATTENTION_MMA");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return allowed;
}

inline Problem problem_of(const plugin::TensorArg& q, const plugin::TensorArg& k, const plugin::TensorArg& v,
                          double p, std::int64_t max_width) {
  const auto qd = q.view.dims(), kd = k.view.dims();
  Problem r{qd[0], qd[1], kd[1], qd[2], kd[2], qd[3], v.view.dims()[3]};
  r.width = r.Dk > r.Dv ? r.Dk : r.Dv;
  r.suits = mma_allowed() && (q.dtype == DType::f16 || q.dtype == DType::bf16) && p <= 0 && r.Dk % 8 == 0 &&
            r.Dv % 8 == 0 && r.width <= max_width && r.B <= 65535 && r.H <= 65535 && r.Sq <= INT_MAX - kRows &&
            r.Sk <= INT_MAX - kRows;
  return r;
}

// Which scores are left out: the causal rule, the ends, and the mask
// (boolean mb or additive ma, in q's dtype, both null when absent).
struct Scope {
  const unsigned char* mb = nullptr;
  const std::uint16_t* ma = nullptr;
  std::int64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
  int Sq = 0, Sk = 0;
  bool causal = false;
  // Whether a tile of queries [i0, i0 + kRows) by keys [j0, j0 + kRows)
  // needs the per-element checks of masked().
  __device__ bool edge(int i0, int j0) const {
    return mb != nullptr || ma != nullptr || i0 + kRows > Sq || j0 + kRows > Sk || (causal && j0 + kRows - 1 > i0);
  }
};

inline Scope scope_of(const plugin::TensorArg& mask, std::int64_t Sq, std::int64_t Sk, std::int64_t causal) {
  Scope s;
  if (mask.data != nullptr) {
    if (mask.dtype == DType::boolean) {
      s.mb = element_ptr<const unsigned char>(mask);
    } else {
      s.ma = element_ptr<const std::uint16_t>(mask);
    }
    const auto ms = mask.view.strides();
    s.m0 = ms[0];
    s.m1 = ms[1];
    s.m2 = ms[2];
    s.m3 = ms[3];
  }
  s.Sq = int(Sq);
  s.Sk = int(Sk);
  s.causal = causal != 0;
  return s;
}

// What every kernel here reads: q, k, v, which scores are left out, the
// sizes and the scale.
struct Inputs {
  View4<const std::uint16_t> q, k, v;
  Scope scope;
  int H = 1, group = 1, Dk = 0, Dv = 0;
  float scale = 0, scale_log2 = 0;  // scale, scale * log2(e)
};

template <class X>
Inputs inputs_of(const X& x, const Problem& n) {
  Inputs in;
  in.q = view4<const std::uint16_t>(x.q);
  in.k = view4<const std::uint16_t>(x.k);
  in.v = view4<const std::uint16_t>(x.v);
  in.scope = scope_of(x.mask, n.Sq, n.Sk, x.causal);
  in.H = int(n.H);
  in.group = int(n.H / n.Hkv);
  in.Dk = int(n.Dk);
  in.Dv = int(n.Dv);
  in.scale = float(x.scale);
  in.scale_log2 = float(x.scale * 1.4426950408889634);
  return in;
}

// Score x (base 2, scaled) of query i against key j with the causal rule,
// the ends and the mask applied: -Inf when left out.
template <DType D>
__device__ __forceinline__ float masked(const Scope& a, float x, std::int64_t b, int h, int i, int j) {
  if (i >= a.Sq || j >= a.Sk || (a.causal && j > i)) return -INFINITY;
  const std::int64_t at = b * a.m0 + h * a.m1 + i * a.m2 + j * a.m3;
  if (a.mb != nullptr && a.mb[at] == 0) return -INFINITY;
  if (a.ma != nullptr) x += Real<D>::load(a.ma[at]) * kLog2e;
  return x;
}

// Rows [r0, r0 + kRows) and columns [0, kD) of (b, head) of src into a
// shared tile, by the block's threads: cp.async for the 8-column chunks
// inside rows x cols, zeros for the rest (so padded products add nothing
// and no NaN from stale memory reaches an accumulator).
template <int kD>
__device__ void stage(std::uint16_t* dst, const View4<const std::uint16_t>& src, std::int64_t b, std::int64_t head,
                      int r0, int rows, int cols) {
  constexpr int chunks = kD / 8;
  for (int e = int(threadIdx.x); e < kRows * chunks; e += kThreads) {
    const int r = e / chunks, c = e % chunks * 8;
    std::uint16_t* d = dst + r * kStride<kD> + c;
    if (r0 + r < rows && c < cols) {
      mma::cp_async16(d, src.row(b, head, r0 + r) + c);
    } else {
      *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
    }
  }
}

// acc[nt] += rows [16 w, 16 w + 16) of tile `a` times the transpose of rows
// [8 nt, 8 nt + 8) of tile `b`, over all kD columns: a 16 x kRows block of
// row dot products (S = Q K^T and its kin).
template <DType D, int kD>
__device__ __forceinline__ void rows_times_rows(float (&acc)[kRows / 8][4], const std::uint16_t* a,
                                                const std::uint16_t* b, int w, int lane) {
  // ldmatrix tiles of A: rows 16 w + {0, 8} (tile bit 0) by columns 16 kk + {0, 8} (tile bit 1);
  // of B: rows 8 nt + {0, 8} (tile bit 1) by columns 16 kk + {0, 8} (tile bit 0).
  const int mi = lane / 8;
  const std::uint16_t* arow = a + (w * 16 + (mi & 1) * 8 + lane % 8) * kStride<kD> + (mi >> 1) * 8;
  const std::uint16_t* brow = b + ((mi >> 1) * 8 + lane % 8) * kStride<kD> + (mi & 1) * 8;
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    std::uint32_t af[4];
    mma::ldmatrix_x4(af, arow + kk * 16);
#pragma unroll
    for (int nt = 0; nt < kRows / 8; nt += 2) {
      std::uint32_t bf[4];
      mma::ldmatrix_x4(bf, brow + nt * 8 * kStride<kD> + kk * 16);
      mma::mma16816<D>(acc[nt], af, bf[0], bf[1]);
      mma::mma16816<D>(acc[nt + 1], af, bf[2], bf[3]);
    }
  }
}

// acc += P times tile `b` (kRows rows by kD columns), P (16 x kRows) given
// as accumulators in registers: the product of a softmax-like weight tile
// with a staged value tile.
template <DType D, int kD>
__device__ __forceinline__ void weights_times_tile(float (&acc)[kD / 8][4], const float (&p)[kRows / 8][4],
                                                   const std::uint16_t* b, int lane) {
  // ldmatrix tiles: rows 16 kc + {0, 8} (tile bit 0) by columns 8 nd + {0, 8} (tile bit 1).
  const int mi = lane / 8;
  const std::uint16_t* brow = b + ((mi & 1) * 8 + lane % 8) * kStride<kD> + (mi >> 1) * 8;
#pragma unroll
  for (int kc = 0; kc < kRows / 16; ++kc) {
    const std::uint32_t pa[4] = {
        mma::pack2<D>(p[2 * kc][0], p[2 * kc][1]), mma::pack2<D>(p[2 * kc][2], p[2 * kc][3]),
        mma::pack2<D>(p[2 * kc + 1][0], p[2 * kc + 1][1]), mma::pack2<D>(p[2 * kc + 1][2], p[2 * kc + 1][3])};
#pragma unroll
    for (int nd = 0; nd < kD / 8; nd += 2) {
      std::uint32_t vb[4];
      mma::ldmatrix_x4_trans(vb, brow + kc * 16 * kStride<kD> + nd * 8);
      mma::mma16816<D>(acc[nd], pa, vb[0], vb[1]);
      mma::mma16816<D>(acc[nd + 1], pa, vb[2], vb[3]);
    }
  }
}

// Writes rows r0 + 16 w + g (+ 8) of a 16 x kD accumulator, times `mul`,
// to (b, head) of dst: columns below cols, rows below rows.
template <DType D, int kD>
__device__ __forceinline__ void store_rows(const View4<std::uint16_t>& dst, const float (&acc)[kD / 8][4],
                                           std::int64_t b, std::int64_t head, int r0, int rows, int cols, int w, int g,
                                           int t, const float (&mul)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = r0 + w * 16 + g + 8 * r;
    if (i >= rows) continue;
    std::uint16_t* out = dst.row(b, head, i);
#pragma unroll
    for (int nd = 0; nd < kD / 8; ++nd) {
      const int c = nd * 8 + 2 * t;
      if (c < cols)
        *reinterpret_cast<std::uint32_t*>(out + c) = mma::pack2<D>(acc[nd][2 * r] * mul[r], acc[nd][2 * r + 1] * mul[r]);
    }
  }
}

// Whether `kernel` runs on `device` with `shared` bytes of dynamic shared
// memory: built for sm_80 or later (not JIT-compiled from the older PTX,
// where its body is empty), with that memory granted. `known` caches the
// answer per device (0: not asked, 1: yes, -1: no).
template <class Kernel>
bool kernel_ready(Kernel kernel, int device, int shared, std::array<std::atomic<int>, 64>& known) {
  const auto ask = [&] {
    cudaFuncAttributes fa{};
    int optin = 0;
    const bool ok = cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && fa.ptxVersion >= 80 &&
                    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
                    std::size_t(shared) + fa.sharedSizeBytes <= std::size_t(optin) &&
                    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();  // a refusal is an answer here, not the next launch's error
    return ok;
  };
  if (device < 0 || device >= int(known.size())) return ask();
  int state = known[std::size_t(device)].load(std::memory_order_acquire);
  if (state == 0) {
    state = ask() ? 1 : -1;
    known[std::size_t(device)].store(state, std::memory_order_release);
  }
  return state == 1;
}

// Launches kernel over grid with `shared` bytes of shared memory when
// kernel_ready says it runs (`known`: the kernel's own cache); false,
// having launched nothing, otherwise.
template <class P>
bool launch_tc(void (*kernel)(P), std::array<std::atomic<int>, 64>& known, int shared, dim3 grid, const P& p,
               const Context& ctx, const char* what) {
  if (!kernel_ready(kernel, ctx.device, shared, known)) return false;
  kernel<<<grid, kThreads, shared, ctx.stream>>>(p);
  XY_CUDA_LAUNCHED(ctx.device, what);
  return true;
}

// Grid of a kernel with a block per (b, head, tile of kRows rows).
inline dim3 grid_of(std::int64_t B, std::int64_t heads, std::int64_t rows) {
  return dim3(unsigned((rows + kRows - 1) / kRows), unsigned(heads), unsigned(B));
}

}  // namespace xylem::cuda::attn
