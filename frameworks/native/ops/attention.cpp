// nn::attention (forward) and nn::attention_grad_rows natively, f16/bf16/f32/f64.
// One task per (batch, head, tile of BQ query rows), run in parallel by
// oneTBB; each walks the keys in tiles of BK with an online softmax (the
// running maximum and sum of each row, the output rescaled when the
// maximum grows), so memory stays O(BQ*(D + Dv) + BK*(D + Dv)) per task.
#include <cmath>
#include <limits>
#include <vector>

#include "frameworks/native/ops/attention_tile.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;
using namespace attention;

template <DType Dt>
void attention_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  constexpr C inf = std::numeric_limits<C>::infinity();
  const auto a = plugin::unpack<plugin::args::nn_attention>(call);
  const Problem<Dt> pr(a);
  const Rows<S> out = rows_of<S>(a.out);
  const auto ls = a.lse.view.strides();
  C* lse = element_ptr<C>(a.lse);
  parallel_chunks(query_tiles(pr), 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<C> qt(std::size_t(BQ * pr.D)), kt(std::size_t(pr.D * BK)), vt(std::size_t(BK * pr.Dv)),
        s(std::size_t(BQ * BK)), acc(std::size_t(BQ * pr.Dv)), m(BQ), l(BQ);
    for_query_tiles(pr, begin, end, [&](std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t nq) {
      const std::int64_t hk = pr.kv_head(h);
      load_rows<Dt>(pr.q, b, h, i0, nq, pr.D, qt.data());
      std::fill(m.begin(), m.end(), -inf);
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      for_key_tiles(pr, i0 + nq, [&](std::int64_t j0, std::int64_t nk) {
        load_transposed<Dt>(pr.k, b, hk, j0, nk, pr.D, kt.data());
        load_rows<Dt>(pr.v, b, hk, j0, nk, pr.Dv, vt.data());
        scores(pr, b, h, i0, nq, j0, nk, qt.data(), kt.data(), s.data());
        for (std::int64_t r = 0; r < nq; ++r) {
          const C* row = s.data() + r * BK;
          C top = m[std::size_t(r)];
          for (std::int64_t c = 0; c < nk; ++c) top = std::max(top, row[c]);
          if (top == -inf) continue;  // every key so far left out
          const C shrink = std::exp(m[std::size_t(r)] - top);
          C* o = acc.data() + r * pr.Dv;
          C sum = l[std::size_t(r)] * shrink;
          if (shrink != C(1))
            for (std::int64_t e = 0; e < pr.Dv; ++e) o[e] *= shrink;
          for (std::int64_t c = 0; c < nk; ++c) {
            const C w = std::exp(row[c] - top);
            sum += w;
            const C wd = w * pr.keep(b, h, i0 + r, j0 + c);
            if (wd == C(0)) continue;
            const C* vr = vt.data() + c * pr.Dv;
            for (std::int64_t e = 0; e < pr.Dv; ++e) o[e] += wd * vr[e];
          }
          m[std::size_t(r)] = top;
          l[std::size_t(r)] = sum;
        }
      });
      for (std::int64_t r = 0; r < nq; ++r) {
        const C sum = l[std::size_t(r)];
        C* o = acc.data() + r * pr.Dv;
        if (sum > C(0)) {
          for (std::int64_t e = 0; e < pr.Dv; ++e) o[e] /= sum;
        }
        store_row<Dt>(o, pr.Dv, out.row(b, h, i0 + r), 1);
        lse[b * ls[0] + h * ls[1] + (i0 + r) * ls[2]] = sum > C(0) ? m[std::size_t(r)] + std::log(sum) : -inf;
      }
    });
  });
}

// stats[row] = (lse, sum over Dv of dout*out).
template <DType Dt>
void attention_grad_rows_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_rows>(call);
  const Rows<const S> out = rows_of<const S>(a.out), dout = rows_of<const S>(a.dout);
  const auto dims = a.out.view.dims();
  const std::int64_t H = dims[1], Sq = dims[2], Dv = dims[3];
  const C* lse = element_ptr<const C>(a.lse);
  C* stats = element_ptr<C>(a.stats);
  parallel_chunks(dims[0] * H * Sq, std::max<std::int64_t>(1, 16384 / Dv), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t b = row / (H * Sq), h = row / Sq % H, i = row % Sq;
      const S *o = out.row(b, h, i), *d = dout.row(b, h, i);
      double delta = 0;
      for (std::int64_t e = 0; e < Dv; ++e)
        delta += double(FloatType<Dt>::load(o[e])) * double(FloatType<Dt>::load(d[e]));
      stats[2 * row] = lse[row];
      stats[2 * row + 1] = C(delta);
    }
  });
}

}  // namespace

void register_attention(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType Dt = decltype(dtype)::value;
    table.set(OpId::nn_attention, Dt, &attention_kernel<Dt>);
    table.set(OpId::nn_attention_grad_rows, Dt, &attention_grad_rows_kernel<Dt>);
  });
}

}  // namespace xylem::native
