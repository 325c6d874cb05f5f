#pragma once
// What the native attention kernels share: the problem read from the call,
// its tiles, and one tile's products and scores.
//
// A kernel works on a tile of query rows against a tile of keys as PyTorch's
// CPU flash attention does: the scores S = scale*Q*K^T of the pair are one
// gemm on this thread (oneDNN's f32 gemm where built, else OpenBLAS's), the
// softmax steps run over S in place with vector exp (attention_rows.cpp),
// and the products with V (or with dO in the backward) are gemms again. So
// no buffer grows with Sq or Sk, and the cores run gemm kernels rather than
// scalar loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/float_rows.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/math.h"

#if XYLEM_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include "frameworks/native/ops/onednn_thread.hpp"
#endif

namespace xylem::native::attention {

// A rank-4 view with unit innermost stride: row (b, h, i) starts at
// first + b*s0 + h*s1 + i*s2.
template <class V>
struct Rows {
  V* first = nullptr;
  std::int64_t s0 = 0, s1 = 0, s2 = 0;
  V* row(std::int64_t b, std::int64_t h, std::int64_t i) const noexcept { return first + b * s0 + h * s1 + i * s2; }
};
template <class V>
Rows<V> rows_of(const plugin::TensorArg& t) noexcept {
  const auto s = t.view.strides();
  return {element_ptr<V>(t), s[0], s[1], s[2]};
}

// Query rows and keys of one tile.
struct TileSize {
  std::int64_t q = 0, k = 0;
};

// The tile of a kernel, from the one it prefers. The gemms of a tile pair
// have m*n*k = queries * keys * (D or Dv). oneDNN's f32 gemm runs on one
// thread inside a task (OneGemmThread), so its tiles are the preferred ones.
// OpenBLAS has no per-call thread count: a gemm past kBlasSingleThreadMnk
// would take its thread pool from inside our parallel loop, so OpenBLAS's
// tiles (f64, or f32 without oneDNN) stay below that.
template <class C>
TileSize tile_size(std::int64_t D, std::int64_t Dv, TileSize preferred) noexcept {
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<C, float>) return preferred;
#endif
  constexpr std::int64_t q = 32, step = 32;  // step: two AVX-512 vectors of f32
  const auto fit = std::int64_t(kBlasSingleThreadMnk) / (q * std::max(D, Dv)) / step * step;
  return {std::min(q, preferred.q), std::clamp<std::int64_t>(fit, step, std::max(step, preferred.k))};
}

// While it lives, this thread's gemms (block_gemm) run on it alone.
#if XYLEM_HAVE_ONEDNN
using OneGemmThread = OneOpenMpThread;
#else
struct OneGemmThread {
  OneGemmThread() noexcept {}  // user-provided: a holder is not an unused variable
};
#endif

// c = alpha*op(a)*op(b) + beta*c, row-major, on this thread (inside a
// OneGemmThread, or an OpenBLAS gemm small enough for one thread).
inline void block_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                       std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
#if XYLEM_HAVE_ONEDNN
  // The library-call fault point, as for OpenBLAS's calls (cblas.hpp).
  if (plugin::should_fail(plugin::FaultSite::library_call, "native")) [[unlikely]]
    throw Error(ErrorCode::internal, "native: oneDNN dnnl_sgemm failed (injected fault)");
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) [[unlikely]]
    throw Error(status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal,
                "native: oneDNN dnnl_sgemm failed in attention (status " + std::to_string(int(status)) + ")");
#else
  gemm_rows<float>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}
inline void block_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                       const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                       std::int64_t ldc) {
  gemm_rows<double>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The vector row loops (attention_rows.cpp), f32 and f64. Score tiles are
// nq rows of nk at stride ld, columns [nk, ld) -Inf (as scores leaves them).
//
// One online-softmax step over a tile of scores: per row, the running
// maximum m and sum l take in the tile, the scores become exp(s - m) (0
// for a key left out, and for every key of a row none of whose keys so far
// counted), and the row of acc (stride ld_acc, width dv) is rescaled for
// the new maximum.
void online_softmax(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, float* m, float* l, float* acc,
                    std::int64_t ld_acc, std::int64_t dv);
void online_softmax(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, double* m, double* l, double* acc,
                    std::int64_t ld_acc, std::int64_t dv);
// s = exp(s - lse[row]): the probabilities of the forward, 0 for a key left
// out or a row with no key (lse -Inf).
void probabilities(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const float* lse);
void probabilities(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const double* lse);
// dp = p*(dp - delta[row]): the score gradients without dropout.
void score_grads(const float* p, float* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk, const float* delta);
void score_grads(const double* p, double* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk,
                 const double* delta);

template <DType Dt>
struct Problem {
  using S = StorageType<Dt>;
  using C = ComputeType<Dt>;
  std::int64_t B = 0, H = 0, Hkv = 0, Sq = 0, Sk = 0, D = 0, Dv = 0;
  Rows<const S> q, k, v;
  // The mask: absent (mask_first null), boolean or additive (S).
  const unsigned char* mask_first = nullptr;
  std::int64_t m[4] = {};
  bool mask_bool = false;
  bool causal = false;
  C scale = 1;
  float p = 0;
  C inv_keep = 1;  // 1/(1-p)
  xy_u64 seed = 0, offset = 0;

  Problem(const plugin::TensorArg& q_, const plugin::TensorArg& k_, const plugin::TensorArg& v_,
          const plugin::TensorArg& mask, std::int64_t causal_, std::int64_t seed_, std::int64_t offset_,
          double scale_, double p_)
      : q(rows_of<const S>(q_)), k(rows_of<const S>(k_)), v(rows_of<const S>(v_)) {
    const auto qd = q_.view.dims(), kd = k_.view.dims();
    B = qd[0];
    H = qd[1];
    Sq = qd[2];
    D = qd[3];
    Hkv = kd[1];
    Sk = kd[2];
    Dv = v_.view.dims()[3];
    if (mask.data != nullptr) {
      mask_bool = mask.dtype == DType::boolean;
      const std::int64_t size = mask_bool ? 1 : std::int64_t(sizeof(S));
      mask_first = static_cast<const unsigned char*>(mask.data) + mask.view.offset() * size;
      for (int a = 0; a < 4; ++a) m[a] = mask.view.strides()[std::size_t(a)] * size;
    }
    causal = causal_ != 0;
    scale = C(scale_);
    p = float(p_);
    inv_keep = C(1) / (C(1) - C(p_));
    seed = xy_u64(seed_);
    offset = xy_u64(offset_);
  }

  // From an op's unpacked arguments (nn::attention and its gradients name
  // these the same).
  template <class Args>
  explicit Problem(const Args& a)
      : Problem(a.q, a.k, a.v, a.mask, a.causal, a.seed, a.offset, a.scale, a.p) {}

  std::int64_t kv_head(std::int64_t h) const noexcept { return h / (H / Hkv); }
  // Keys [0, end) can matter to query rows below i_end.
  std::int64_t key_end(std::int64_t i_end) const noexcept { return causal ? std::min(Sk, i_end) : Sk; }
  // Dropout's factor for weight (b, h, i, j): 0 dropped, 1/(1-p) kept, 1 without dropout.
  C keep(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const noexcept {
    if (p <= 0) return C(1);
    const auto counter = offset + xy_u64(((b * H + h) * Sq + i) * Sk + j);
    return xy_dropout_keep(seed, counter, p) ? inv_keep : C(0);
  }
};

// Runs fn(task, i0, n) for the tiles [begin, end) of `per` rows each over
// (outer, rows): tile `task` covers rows [i0, i0 + n) of outer index
// task / tiles-per-outer.
template <class Fn>
void for_tiles(std::int64_t rows, std::int64_t per, std::int64_t begin, std::int64_t end, Fn&& fn) {
  const std::int64_t tiles = (rows + per - 1) / per;
  for (std::int64_t task = begin; task < end; ++task) {
    const std::int64_t i0 = task % tiles * per;
    fn(task / tiles, i0, std::min(per, rows - i0));
  }
}
[[nodiscard]] inline std::int64_t tile_count(std::int64_t outer, std::int64_t rows, std::int64_t per) noexcept {
  return outer * ((rows + per - 1) / per);
}

// Rows [i0, i0 + n) of (b, h) of a view as compute-type rows of `width`
// at stride ld: the rows in place when they already are (f32/f64 rows that
// do not overlap), else `buffer` loaded with them.
template <class C>
struct Block {
  const C* p;
  std::int64_t ld;
};
template <DType Dt>
Block<ComputeType<Dt>> rows_block(const Rows<const StorageType<Dt>>& t, std::int64_t b, std::int64_t h, std::int64_t i0,
                                  std::int64_t n, std::int64_t width, ComputeType<Dt>* buffer) noexcept {
  if constexpr (std::is_same_v<StorageType<Dt>, ComputeType<Dt>>) {
    if (n == 1) return {t.row(b, h, i0), width};
    if (t.s2 >= width) return {t.row(b, h, i0), t.s2};
  }
  for (std::int64_t r = 0; r < n; ++r) load_row<Dt>(t.row(b, h, i0 + r), 1, width, buffer + r * width);
  return {buffer, width};
}

// Scores of query rows [i0, i0 + nq) of (b, h) against keys [j0, j0 + nk):
// s[r*ld + c] = scale*q.k + mask, -Inf for a key left out. qb holds the
// query rows, kb the keys' rows.
template <DType Dt>
void scores(const Problem<Dt>& pr, std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq, std::int64_t j0,
            std::int64_t nk, Block<ComputeType<Dt>> qb, Block<ComputeType<Dt>> kb, ComputeType<Dt>* s,
            std::int64_t ld) {
  using C = ComputeType<Dt>;
  constexpr C inf = std::numeric_limits<C>::infinity();
  block_gemm(false, true, nq, nk, pr.D, pr.scale, qb.p, qb.ld, kb.p, kb.ld, C(0), s, ld);
  if (pr.mask_first != nullptr) {
    for (std::int64_t r = 0; r < nq; ++r) {
      C* row = s + r * ld;
      const unsigned char* m = pr.mask_first + b * pr.m[0] + h * pr.m[1] + (i0 + r) * pr.m[2] + j0 * pr.m[3];
      for (std::int64_t c = 0; c < nk; ++c) {
        const unsigned char* e = m + c * pr.m[3];
        if (pr.mask_bool) {
          if (*e == 0) row[c] = -inf;
        } else {
          row[c] += FloatType<Dt>::load(*reinterpret_cast<const StorageType<Dt>*>(e));
        }
      }
    }
  }
  // Causal: key j counts for row i when j <= i, so only tiles that cross
  // the diagonal have keys to leave out.
  if (pr.causal && j0 + nk > i0 + 1) {
    for (std::int64_t r = 0; r < nq; ++r) {
      C* row = s + r * ld;
      for (std::int64_t c = std::max<std::int64_t>(i0 + r + 1 - j0, 0); c < nk; ++c) row[c] = -inf;
    }
  }
  // The row loops read whole vectors past nk (attention_simd-inl.h).
  if (nk < ld)
    for (std::int64_t r = 0; r < nq; ++r) std::fill(s + r * ld + nk, s + (r + 1) * ld, -inf);
}

// Dropout on a tile of weights: each times its keep factor.
template <DType Dt>
void drop(const Problem<Dt>& pr, std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq, std::int64_t j0,
          std::int64_t nk, ComputeType<Dt>* s, std::int64_t ld) noexcept {
  for (std::int64_t r = 0; r < nq; ++r)
    for (std::int64_t c = 0; c < nk; ++c) s[r * ld + c] *= pr.keep(b, h, i0 + r, j0 + c);
}

// The backward's statistics of each query row: stats[2*row] = lse[row],
// stats[2*row + 1] = delta, the sum over Dv of dout*out (in double: one
// rounding per row), rows numbered (b*H + h)*Sq + i; lse contiguous.
template <DType Dt>
void row_stats(const Rows<const StorageType<Dt>>& out, const Rows<const StorageType<Dt>>& dout,
               const ComputeType<Dt>* lse, std::int64_t B, std::int64_t H, std::int64_t Sq, std::int64_t Dv,
               ComputeType<Dt>* stats) {
  parallel_chunks(B * H * Sq, std::max<std::int64_t>(1, 16384 / Dv), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t b = row / (H * Sq), h = row / Sq % H, i = row % Sq;
      const StorageType<Dt>*o = out.row(b, h, i), *d = dout.row(b, h, i);
      double delta = 0;
      for (std::int64_t e = 0; e < Dv; ++e)
        delta += double(FloatType<Dt>::load(o[e])) * double(FloatType<Dt>::load(d[e]));
      stats[2 * row] = lse[row];
      stats[2 * row + 1] = ComputeType<Dt>(delta);
    }
  });
}

}  // namespace xylem::native::attention
