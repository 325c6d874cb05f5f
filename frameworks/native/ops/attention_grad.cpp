// nn::attention_grad_q and nn::attention_grad_kv natively, f16/bf16/f32/f64:
// the tiles of the forward recomputed from the saved logsumexp, so the
// backward keeps no [Sq, Sk] buffer either. dq takes one task per (batch,
// head, query tile) walking the keys; dk and dv one task per (batch, kv
// head, key tile) walking every query head of its group and every query
// tile, so each output element has one writer and no atomics are needed.
#include <vector>

#include "frameworks/native/ops/attention_tile.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;
using namespace attention;

// The per-row statistics of query rows [i0, i0 + n) of (b, h).
template <class C>
void load_stats(const C* stats, std::int64_t row0, std::int64_t n, C* lse, C* delta) noexcept {
  for (std::int64_t r = 0; r < n; ++r) {
    lse[r] = stats[2 * (row0 + r)];
    delta[r] = stats[2 * (row0 + r) + 1];
  }
}

// dS = P*(dropout(dP) - delta) in place of dp, from P in s; with dropout,
// s becomes the dropped-out weights dV needs.
template <DType Dt>
void score_grads(const Problem<Dt>& pr, std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq,
                 std::int64_t j0, std::int64_t nk, const ComputeType<Dt>* delta, ComputeType<Dt>* s,
                 ComputeType<Dt>* dp) noexcept {
  using C = ComputeType<Dt>;
  for (std::int64_t r = 0; r < nq; ++r) {
    C* pr_row = s + r * BK;
    C* dp_row = dp + r * BK;
    for (std::int64_t c = 0; c < nk; ++c) {
      const C keep = pr.keep(b, h, i0 + r, j0 + c);
      dp_row[c] = pr_row[c] * (dp_row[c] * keep - delta[r]);
      pr_row[c] *= keep;
    }
  }
}

// What both gradient kernels recompute, per pair of a query tile (rows
// [i0, i0 + nq) of (b, h): q, dout and their statistics) and a key tile
// (keys [j0, j0 + nk), transposed): the dropped-out weights in s and the
// score gradients dS in dp.
template <DType Dt>
struct GradTiles {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  Problem<Dt> pr;
  Rows<const S> dout;
  const C* stats;
  std::int64_t nq = 0, nk = 0;
  std::vector<C> qt, dot, kt, vt, s, dp, lse, delta;

  template <class Args>
  explicit GradTiles(const Args& a)
      : pr(a),
        dout(rows_of<const S>(a.dout)),
        stats(element_ptr<const C>(a.stats)),
        qt(std::size_t(BQ * pr.D)),
        dot(std::size_t(BQ * pr.Dv)),
        kt(std::size_t(pr.D * BK)),
        vt(std::size_t(pr.Dv * BK)),
        s(std::size_t(BQ * BK)),
        dp(std::size_t(BQ * BK)),
        lse(BQ),
        delta(BQ) {}

  void load_queries(std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t n) {
    nq = n;
    load_rows<Dt>(pr.q, b, h, i0, nq, pr.D, qt.data());
    load_rows<Dt>(dout, b, h, i0, nq, pr.Dv, dot.data());
    load_stats(stats, (b * pr.H + h) * pr.Sq + i0, nq, lse.data(), delta.data());
  }
  void load_keys(std::int64_t b, std::int64_t hk, std::int64_t j0, std::int64_t n) {
    nk = n;
    load_transposed<Dt>(pr.k, b, hk, j0, nk, pr.D, kt.data());
    load_transposed<Dt>(pr.v, b, hk, j0, nk, pr.Dv, vt.data());
  }
  // With the tiles of (b, h, i0) and (j0) loaded.
  void weights(std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t j0) {
    scores(pr, b, h, i0, nq, j0, nk, qt.data(), kt.data(), s.data());
    probabilities(s.data(), nq, nk, lse.data());
    tile_product(dot.data(), vt.data(), nq, nk, pr.Dv, dp.data());
    score_grads(pr, b, h, i0, nq, j0, nk, delta.data(), s.data(), dp.data());
  }
};

template <DType Dt>
void attention_grad_q_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_q>(call);
  const Rows<S> dq = rows_of<S>(a.dq);
  const Problem<Dt> pr(a);
  parallel_chunks(query_tiles(pr), 1, [&](std::int64_t begin, std::int64_t end) {
    GradTiles<Dt> t(a);
    std::vector<C> kr(std::size_t(BK * pr.D)), acc(std::size_t(BQ * pr.D));
    for_query_tiles(pr, begin, end, [&](std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq) {
      const std::int64_t hk = pr.kv_head(h);
      t.load_queries(b, h, i0, nq);
      std::fill(acc.begin(), acc.end(), C(0));
      for_key_tiles(pr, i0 + nq, [&](std::int64_t j0, std::int64_t nk) {
        t.load_keys(b, hk, j0, nk);
        load_rows<Dt>(pr.k, b, hk, j0, nk, pr.D, kr.data());
        t.weights(b, h, i0, j0);
        for (std::int64_t r = 0; r < nq; ++r) {
          C* o = acc.data() + r * pr.D;
          for (std::int64_t c = 0; c < nk; ++c) {
            const C g = t.dp[std::size_t(r * BK + c)];
            if (g == C(0)) continue;
            const C* krow = kr.data() + c * pr.D;
            for (std::int64_t d = 0; d < pr.D; ++d) o[d] += g * krow[d];
          }
        }
      });
      for (std::int64_t r = 0; r < nq; ++r) {
        C* o = acc.data() + r * pr.D;
        for (std::int64_t d = 0; d < pr.D; ++d) o[d] *= pr.scale;
        store_row<Dt>(o, pr.D, dq.row(b, h, i0 + r), 1);
      }
    });
  });
}

template <DType Dt>
void attention_grad_kv_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_kv>(call);
  const Rows<S> dk = rows_of<S>(a.dk), dv = rows_of<S>(a.dv);
  const Problem<Dt> pr(a);
  const std::int64_t blocks = (pr.Sk + BK - 1) / BK, group = pr.H / pr.Hkv;
  parallel_chunks(pr.B * pr.Hkv * blocks, 1, [&](std::int64_t begin, std::int64_t end) {
    GradTiles<Dt> t(a);
    std::vector<C> dk_acc(std::size_t(BK * pr.D)), dv_acc(std::size_t(BK * pr.Dv));
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t b = task / (pr.Hkv * blocks), hk = task / blocks % pr.Hkv, j0 = task % blocks * BK;
      const std::int64_t nk = std::min(BK, pr.Sk - j0);
      t.load_keys(b, hk, j0, nk);
      std::fill(dk_acc.begin(), dk_acc.end(), C(0));
      std::fill(dv_acc.begin(), dv_acc.end(), C(0));
      // Causal: query rows below j0 leave every key of the tile out.
      const std::int64_t i_begin = pr.causal ? j0 / BQ * BQ : 0;
      for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (std::int64_t i0 = i_begin; i0 < pr.Sq; i0 += BQ) {
          const std::int64_t nq = std::min(BQ, pr.Sq - i0);
          t.load_queries(b, h, i0, nq);
          t.weights(b, h, i0, j0);
          for (std::int64_t r = 0; r < nq; ++r) {
            const C* qrow = t.qt.data() + r * pr.D;
            const C* drow = t.dot.data() + r * pr.Dv;
            for (std::int64_t c = 0; c < nk; ++c) {
              const C w = t.s[std::size_t(r * BK + c)], g = t.dp[std::size_t(r * BK + c)];
              if (w != C(0)) {
                C* o = dv_acc.data() + c * pr.Dv;
                for (std::int64_t e = 0; e < pr.Dv; ++e) o[e] += w * drow[e];
              }
              if (g != C(0)) {
                C* o = dk_acc.data() + c * pr.D;
                for (std::int64_t d = 0; d < pr.D; ++d) o[d] += g * qrow[d];
              }
            }
          }
        }
      }
      for (std::int64_t c = 0; c < nk; ++c) {
        C* o = dk_acc.data() + c * pr.D;
        for (std::int64_t d = 0; d < pr.D; ++d) o[d] *= pr.scale;
        store_row<Dt>(o, pr.D, dk.row(b, hk, j0 + c), 1);
        store_row<Dt>(dv_acc.data() + c * pr.Dv, pr.Dv, dv.row(b, hk, j0 + c), 1);
      }
    }
  });
}

}  // namespace

void register_attention_grad(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType Dt = decltype(dtype)::value;
    table.set(OpId::nn_attention_grad_q, Dt, &attention_grad_q_kernel<Dt>);
    table.set(OpId::nn_attention_grad_kv, Dt, &attention_grad_kv_kernel<Dt>);
  });
}

}  // namespace xylem::native
