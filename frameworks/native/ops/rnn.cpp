// nn::lstm_cell, nn::gru_cell and their gradients natively, f32 and f64,
// contiguous tensors: one parallel loop over the (row, unit) pairs, each by
// rnn_math.h's formula (the one every framework runs).
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/rnn_math.h"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;

// Two transcendentals and a dozen loads and stores per element.
constexpr std::int64_t kGrain = 4 * 1024;

// rnn_math.h's formulas, chosen by the element type.
template <class T>
inline void lstm_of(T* i, T* f, T* g, T* o, T c_prev, T* c, T* h) {
  if constexpr (sizeof(T) == 4)
    xy_lstm_cell_f(i, f, g, o, c_prev, c, h);
  else
    xy_lstm_cell_d(i, f, g, o, c_prev, c, h);
}
template <class T>
inline void lstm_grad_of(T i, T f, T g, T o, T c_prev, T c, T dy, T dh, T dc, T* di, T* df, T* dg, T* d_o,
                         T* dc_prev) {
  if constexpr (sizeof(T) == 4)
    xy_lstm_cell_grad_f(i, f, g, o, c_prev, c, dy, dh, dc, di, df, dg, d_o, dc_prev);
  else
    xy_lstm_cell_grad_d(i, f, g, o, c_prev, c, dy, dh, dc, di, df, dg, d_o, dc_prev);
}
template <class T>
inline T gru_of(T* r, T* z, T* n, T hr, T hz, T hn, T h_prev) {
  if constexpr (sizeof(T) == 4)
    return xy_gru_cell_f(r, z, n, hr, hz, hn, h_prev);
  else
    return xy_gru_cell_d(r, z, n, hr, hz, hn, h_prev);
}
template <class T>
inline T gru_grad_of(T r, T z, T n, T hn, T h_prev, T dy, T dh, T* dr, T* dz, T* dxn, T* dhn) {
  if constexpr (sizeof(T) == 4)
    return xy_gru_cell_grad_f(r, z, n, hn, h_prev, dy, dh, dr, dz, dxn, dhn);
  else
    return xy_gru_cell_grad_d(r, z, n, hn, h_prev, dy, dh, dr, dz, dxn, dhn);
}

// Element k of an [N, H] state is unit k % H of row k / H: the offset of its
// first gate in a [N, gates*H] tensor (gate q is q*H further).
inline std::int64_t gate_of(std::int64_t k, std::int64_t hidden, std::int64_t gates) {
  const std::int64_t row = k / hidden;
  return row * gates * hidden + (k - row * hidden);
}

template <class T>
void lstm_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell>(call);
  T* gates = element_ptr<T>(a.gates);
  const T* c_prev = element_ptr<const T>(a.c_prev);
  T* c = element_ptr<T>(a.c);
  T* h = element_ptr<T>(a.h);
  const std::int64_t hidden = a.c.view.rank() == 2 ? a.c.view.dim(1) : 0;
  parallel_chunks(a.c.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t q = gate_of(k, hidden, 4);
      T* g = gates + q;
      lstm_of<T>(g, g + hidden, g + 2 * hidden, g + 3 * hidden, c_prev[k], c + k, h + k);
    }
  });
}

template <class T>
void lstm_grad_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell_grad>(call);
  const T* gates = element_ptr<const T>(a.gates);
  const T* c_prev = element_ptr<const T>(a.c_prev);
  const T* c = element_ptr<const T>(a.c);
  const T* dy = element_ptr<const T>(a.dy);
  const T* dh = element_ptr<const T>(a.dh);
  const T* dc = element_ptr<const T>(a.dc);
  T* dgates = element_ptr<T>(a.dgates);
  T* dc_prev = element_ptr<T>(a.dc_prev);
  const std::int64_t hidden = a.c.view.rank() == 2 ? a.c.view.dim(1) : 0;
  parallel_chunks(a.c.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t q = gate_of(k, hidden, 4);
      const T* g = gates + q;
      T* d = dgates + q;
      lstm_grad_of<T>(g[0], g[hidden], g[2 * hidden], g[3 * hidden], c_prev[k], c[k], dy[k], dh[k], dc[k], d,
                      d + hidden, d + 2 * hidden, d + 3 * hidden, dc_prev + k);
    }
  });
}

template <class T>
void gru_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell>(call);
  T* xg = element_ptr<T>(a.xg);
  const T* hg = element_ptr<const T>(a.hg);
  const T* h_prev = element_ptr<const T>(a.h_prev);
  T* h = element_ptr<T>(a.h);
  const std::int64_t hidden = a.h.view.rank() == 2 ? a.h.view.dim(1) : 0;
  parallel_chunks(a.h.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t q = gate_of(k, hidden, 3);
      T* x = xg + q;
      const T* r = hg + q;
      h[k] = gru_of<T>(x, x + hidden, x + 2 * hidden, r[0], r[hidden], r[2 * hidden], h_prev[k]);
    }
  });
}

template <class T>
void gru_grad_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell_grad>(call);
  const T* gates = element_ptr<const T>(a.gates);
  const T* hg = element_ptr<const T>(a.hg);
  const T* h_prev = element_ptr<const T>(a.h_prev);
  const T* dy = element_ptr<const T>(a.dy);
  const T* dh = element_ptr<const T>(a.dh);
  T* dxg = element_ptr<T>(a.dxg);
  T* dhg = element_ptr<T>(a.dhg);
  T* dh_prev = element_ptr<T>(a.dh_prev);
  const std::int64_t hidden = a.h_prev.view.rank() == 2 ? a.h_prev.view.dim(1) : 0;
  parallel_chunks(a.h_prev.view.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t q = gate_of(k, hidden, 3);
      const T* g = gates + q;
      T* dx = dxg + q;
      T* dr = dhg + q;
      dh_prev[k] = gru_grad_of<T>(g[0], g[hidden], g[2 * hidden], hg[q + 2 * hidden], h_prev[k], dy[k], dh[k],
                                  dx, dx + hidden, dx + 2 * hidden, dr + 2 * hidden);
      dr[0] = dx[0];
      dr[hidden] = dx[hidden];
    }
  });
}

}  // namespace

void register_rnn(KernelTable& table) {
  table.set(OpId::nn_lstm_cell, DType::f32, &lstm_kernel<float>);
  table.set(OpId::nn_lstm_cell, DType::f64, &lstm_kernel<double>);
  table.set(OpId::nn_lstm_cell_grad, DType::f32, &lstm_grad_kernel<float>);
  table.set(OpId::nn_lstm_cell_grad, DType::f64, &lstm_grad_kernel<double>);
  table.set(OpId::nn_gru_cell, DType::f32, &gru_kernel<float>);
  table.set(OpId::nn_gru_cell, DType::f64, &gru_kernel<double>);
  table.set(OpId::nn_gru_cell_grad, DType::f32, &gru_grad_kernel<float>);
  table.set(OpId::nn_gru_cell_grad, DType::f64, &gru_grad_kernel<double>);
}

}  // namespace xylem::native
