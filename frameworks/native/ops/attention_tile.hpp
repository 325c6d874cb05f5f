#pragma once
// What the native attention kernels share: the problem read from the call,
// and one tile of scores. Tiles are BQ query rows by BK keys; a kernel loads
// its tiles as contiguous compute-type buffers (keys transposed, so every
// product loop runs over contiguous memory and vectorises without
// reassociating a sum), and no buffer grows with Sq or Sk.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "frameworks/native/ops/float_rows.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native::attention {

inline constexpr std::int64_t BQ = 64;  // query rows of a tile
inline constexpr std::int64_t BK = 64;  // keys of a tile

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

// Query tiles of a problem: one per (b, h, BQ query rows), the tasks of
// the kernels that walk keys for each.
template <DType Dt>
std::int64_t query_tiles(const Problem<Dt>& pr) noexcept {
  return pr.B * pr.H * ((pr.Sq + BQ - 1) / BQ);
}

// Runs fn(b, h, i0, nq) for query tiles [begin, end) (of query_tiles(pr)):
// rows [i0, i0 + nq) of (b, h).
template <DType Dt, class Fn>
void for_query_tiles(const Problem<Dt>& pr, std::int64_t begin, std::int64_t end, Fn&& fn) {
  const std::int64_t blocks = (pr.Sq + BQ - 1) / BQ;
  for (std::int64_t task = begin; task < end; ++task) {
    const std::int64_t b = task / (pr.H * blocks), h = task / blocks % pr.H, i0 = task % blocks * BQ;
    fn(b, h, i0, std::min(BQ, pr.Sq - i0));
  }
}

// Runs fn(j0, nk) for the key tiles that can matter to query rows below
// i_end: keys [j0, j0 + nk).
template <DType Dt, class Fn>
void for_key_tiles(const Problem<Dt>& pr, std::int64_t i_end, Fn&& fn) {
  const std::int64_t j_end = pr.key_end(i_end);
  for (std::int64_t j0 = 0; j0 < j_end; j0 += BK) fn(j0, std::min(BK, j_end - j0));
}

// out[r*BK + c] = sum_d a[r*n + d] * bt[d*BK + c], r < rows, c < cols: a
// tile product with the second factor transposed.
template <class C>
void tile_product(const C* a, const C* bt, std::int64_t rows, std::int64_t cols, std::int64_t n, C* out) noexcept {
  for (std::int64_t r = 0; r < rows; ++r) {
    C* o = out + r * BK;
    std::fill(o, o + cols, C(0));
    for (std::int64_t d = 0; d < n; ++d) {
      const C x = a[r * n + d];
      const C* b = bt + d * BK;
      for (std::int64_t c = 0; c < cols; ++c) o[c] += x * b[c];
    }
  }
}

// Rows [i0, i0 + n) of (b, h) of a view as compute-type rows of `width`.
template <DType Dt>
void load_rows(const Rows<const StorageType<Dt>>& t, std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t n,
               std::int64_t width, ComputeType<Dt>* out) noexcept {
  for (std::int64_t r = 0; r < n; ++r) load_row<Dt>(t.row(b, h, i0 + r), 1, width, out + r * width);
}

// The same rows transposed: out[d*BK + r].
template <DType Dt>
void load_transposed(const Rows<const StorageType<Dt>>& t, std::int64_t b, std::int64_t h, std::int64_t i0,
                     std::int64_t n, std::int64_t width, ComputeType<Dt>* out) noexcept {
  for (std::int64_t r = 0; r < n; ++r) {
    const StorageType<Dt>* row = t.row(b, h, i0 + r);
    for (std::int64_t d = 0; d < width; ++d) out[d * BK + r] = FloatType<Dt>::load(row[d]);
  }
}

// Scores of query rows [i0, i0 + nq) of (b, h) against keys [j0, j0 + nk):
// s[r*BK + c] = scale*q.k + mask, -Inf for a key left out. qt holds the
// query rows, kt the keys transposed.
template <DType Dt>
void scores(const Problem<Dt>& pr, std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq, std::int64_t j0,
            std::int64_t nk, const ComputeType<Dt>* qt, const ComputeType<Dt>* kt, ComputeType<Dt>* s) noexcept {
  using C = ComputeType<Dt>;
  constexpr C inf = std::numeric_limits<C>::infinity();
  tile_product(qt, kt, nq, nk, pr.D, s);
  for (std::int64_t r = 0; r < nq; ++r) {
    C* row = s + r * BK;
    const std::int64_t i = i0 + r;
    for (std::int64_t c = 0; c < nk; ++c) row[c] *= pr.scale;
    if (pr.mask_first != nullptr) {
      const unsigned char* m = pr.mask_first + b * pr.m[0] + h * pr.m[1] + i * pr.m[2] + j0 * pr.m[3];
      for (std::int64_t c = 0; c < nk; ++c) {
        const unsigned char* e = m + c * pr.m[3];
        if (pr.mask_bool) {
          if (*e == 0) row[c] = -inf;
        } else {
          row[c] += FloatType<Dt>::load(*reinterpret_cast<const StorageType<Dt>*>(e));
        }
      }
    }
    if (pr.causal) {
      for (std::int64_t c = std::max<std::int64_t>(i + 1 - j0, 0); c < nk; ++c) row[c] = -inf;
    }
  }
}

// P = exp(s - lse) in place, 0 for a key left out or a row with no key.
template <class C>
void probabilities(C* s, std::int64_t nq, std::int64_t nk, const C* lse) noexcept {
  constexpr C inf = std::numeric_limits<C>::infinity();
  for (std::int64_t r = 0; r < nq; ++r) {
    C* row = s + r * BK;
    for (std::int64_t c = 0; c < nk; ++c) row[c] = (row[c] == -inf || lse[r] == -inf) ? C(0) : std::exp(row[c] - lse[r]);
  }
}

}  // namespace xylem::native::attention
