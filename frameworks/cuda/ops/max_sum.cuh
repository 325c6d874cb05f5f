#pragma once
// The online softmax statistics (Milakov and Gimelshein, "Online normalizer
// calculation for softmax", 2018): the running maximum m of a sequence and
// s = sum exp(x - m), updated one element at a time and merged in any
// grouping, so one read of the data gives logsumexp = m + log(s). NaN
// propagates; a sequence of -Inf keeps m = -Inf (softmax is then NaN, 0/0).
// Users subtract m before adding log(s): with a huge m, m + log(s) would
// lose log(s).
#include <cmath>
#include <cstdint>

namespace xylem::cuda {

template <class C>
struct MaxSum {
  C m, s;

  __device__ static MaxSum empty() { return {C(-INFINITY), C(0)}; }

  __device__ static MaxSum merge(const MaxSum& a, const MaxSum& b) {
    const C m = (a.m > b.m || a.m != a.m) ? a.m : b.m;
    if (m == C(-INFINITY)) return {m, a.s + b.s};  // no finite element yet: exp(-Inf - -Inf) would be NaN
    return {m, a.s * exp(a.m - m) + b.s * exp(b.m - m)};
  }

  __device__ void push(C v) {
    if (v > m) {
      s = s * exp(m - v) + C(1);
      m = v;
    } else if (v == v && m != C(-INFINITY)) {
      s += exp(v - m);
    } else {
      *this = merge(*this, {v, C(1)});  // NaN, or -Inf while m is -Inf
    }
  }

  // Several elements at once: the maximum, the serial dependency, moves
  // once for all of them, and their exponentials are independent.
  template <int N>
  __device__ void push(const C (&v)[N]) {
    C top = v[0];
#pragma unroll
    for (int k = 1; k < N; ++k) top = (v[k] > top || v[k] != v[k]) ? v[k] : top;
    const C m_new = (m > top || m != m) ? m : top;
    if (m_new == C(-INFINITY)) {  // nothing finite yet
      s += C(N);
      return;
    }
    C acc = s * exp(m - m_new);
#pragma unroll
    for (int k = 0; k < N; ++k) acc += exp(v[k] - m_new);
    m = m_new;
    s = acc;
  }
};

// Folds R::load(x[j * stride]) for j = first, first + step, ... below end
// into st, four elements per update (independent loads and exponentials).
template <class R, class T, class C>
__device__ void fold_max_sum(MaxSum<C>& st, const T* x, std::int64_t stride, std::int64_t first, std::int64_t end,
                             std::int64_t step) {
  std::int64_t j = first;
  for (; j + 3 * step < end; j += 4 * step) {
    C v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = R::load(x[(j + k * step) * stride]);
    st.push(v);
  }
  for (; j < end; j += step) st.push(R::load(x[j * stride]));
}

struct MergeMaxSum {
  template <class C>
  __device__ MaxSum<C> operator()(const MaxSum<C>& a, const MaxSum<C>& b) const {
    return MaxSum<C>::merge(a, b);
  }
};

}  // namespace xylem::cuda
