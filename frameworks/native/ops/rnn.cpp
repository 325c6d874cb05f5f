// nn::lstm_cell, nn::gru_cell and their gradients natively, f32 and f64,
// contiguous tensors: one parallel loop over the rows of the batch. f32
// rows go through rnn_simd-inl.h (whole vectors of units, lean exp and
// tanh) on the best SIMD target for this CPU; f64 rows element by element
// through rnn_math.h's formula (the one every framework runs).

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/rnn_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/rnn_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/rnn_onednn.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/rnn_math.h"

namespace xylem::native {

HWY_EXPORT(LstmRowF32);
HWY_EXPORT(LstmGradRowF32);
HWY_EXPORT(GruRowF32);
HWY_EXPORT(GruGradRowF32);

namespace {

using plugin::OpCall;
using plugin::OpId;

// Elements (row units) per task. A step of a layer is small (32 x 256
// units in the benchmarks); vectorised, such a step is a few microseconds
// of work, so it is split only where each piece is worth a task.
constexpr std::int64_t kGrain = 8 * 1024;

// body(row) for each row of a [rows, hidden] state, rows spread over the cores.
template <class Body>
void for_rows(std::int64_t rows, std::int64_t hidden, Body&& body) {
  if (hidden == 0) return;
  parallel_chunks(rows, std::max<std::int64_t>(1, kGrain / hidden), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) body(r);
  });
}

// Rows of the f64 cells, unit by unit (the f32 ones are rnn_simd-inl.h's).
inline void lstm_row(double* gates, const double* c_prev, double* c, double* h, std::int64_t hidden) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    double* g = gates + j;
    xy_lstm_cell_d(g, g + hidden, g + 2 * hidden, g + 3 * hidden, c_prev[j], c + j, h + j);
  }
}
inline void lstm_grad_row(const double* gates, const double* c_prev, const double* c, const double* dy,
                          const double* dh, const double* dc, double* dgates, double* dc_prev, std::int64_t hidden) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    const double* g = gates + j;
    double* d = dgates + j;
    xy_lstm_cell_grad_d(g[0], g[hidden], g[2 * hidden], g[3 * hidden], c_prev[j], c[j], dy[j], dh[j], dc[j], d,
                         d + hidden, d + 2 * hidden, d + 3 * hidden, dc_prev + j);
  }
}
inline void gru_row(double* xg, const double* hg, const double* h_prev, double* h, std::int64_t hidden) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    double* x = xg + j;
    const double* r = hg + j;
    h[j] = xy_gru_cell_d(x, x + hidden, x + 2 * hidden, r[0], r[hidden], r[2 * hidden], h_prev[j]);
  }
}
inline void gru_grad_row(const double* gates, const double* hg, const double* h_prev, const double* dy,
                         const double* dh, double* dxg, double* dhg, double* dh_prev, std::int64_t hidden) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    const double* g = gates + j;
    double* dx = dxg + j;
    double* dr = dhg + j;
    dh_prev[j] = xy_gru_cell_grad_d(g[0], g[hidden], g[2 * hidden], hg[j + 2 * hidden], h_prev[j], dy[j], dh[j], dx,
                                     dx + hidden, dx + 2 * hidden, dr + 2 * hidden);
    dr[0] = dx[0];
    dr[hidden] = dx[hidden];
  }
}

// The hidden size of a [N, H] state (0 for an empty one: nothing to do).
inline std::int64_t hidden_of(const plugin::TensorArg& state) {
  return state.view.rank() == 2 ? state.view.dim(1) : 0;
}
inline std::int64_t rows_of(const plugin::TensorArg& state) {
  return state.view.rank() == 2 ? state.view.dim(0) : 0;
}

template <class T>
void lstm_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell>(call);
  T* gates = element_ptr<T>(a.gates);
  const T* c_prev = element_ptr<const T>(a.c_prev);
  T* c = element_ptr<T>(a.c);
  T* h = element_ptr<T>(a.h);
  const std::int64_t hidden = hidden_of(a.c), g = 4 * hidden;
  for_rows(rows_of(a.c), hidden, [&](std::int64_t r) {
    const std::int64_t k = r * hidden;
    if constexpr (sizeof(T) == 4)
      HWY_DYNAMIC_DISPATCH(LstmRowF32)(gates + r * g, c_prev + k, c + k, h + k, hidden);
    else
      lstm_row(gates + r * g, c_prev + k, c + k, h + k, hidden);
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
  const std::int64_t hidden = hidden_of(a.c), g = 4 * hidden;
  for_rows(rows_of(a.c), hidden, [&](std::int64_t r) {
    const std::int64_t k = r * hidden;
    if constexpr (sizeof(T) == 4)
      HWY_DYNAMIC_DISPATCH(LstmGradRowF32)(gates + r * g, c_prev + k, c + k, dy + k, dh + k, dc + k, dgates + r * g,
                                           dc_prev + k, hidden);
    else
      lstm_grad_row(gates + r * g, c_prev + k, c + k, dy + k, dh + k, dc + k, dgates + r * g, dc_prev + k, hidden);
  });
}

template <class T>
void gru_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell>(call);
  T* xg = element_ptr<T>(a.xg);
  const T* hg = element_ptr<const T>(a.hg);
  const T* h_prev = element_ptr<const T>(a.h_prev);
  T* h = element_ptr<T>(a.h);
  const std::int64_t hidden = hidden_of(a.h), g = 3 * hidden;
  for_rows(rows_of(a.h), hidden, [&](std::int64_t r) {
    const std::int64_t k = r * hidden;
    if constexpr (sizeof(T) == 4)
      HWY_DYNAMIC_DISPATCH(GruRowF32)(xg + r * g, hg + r * g, h_prev + k, h + k, hidden);
    else
      gru_row(xg + r * g, hg + r * g, h_prev + k, h + k, hidden);
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
  const std::int64_t hidden = hidden_of(a.h_prev), g = 3 * hidden;
  for_rows(rows_of(a.h_prev), hidden, [&](std::int64_t r) {
    const std::int64_t k = r * hidden, q = r * g;
    if constexpr (sizeof(T) == 4)
      HWY_DYNAMIC_DISPATCH(GruGradRowF32)(gates + q, hg + q, h_prev + k, dy + k, dh + k, dxg + q, dhg + q,
                                          dh_prev + k, hidden);
    else
      gru_grad_row(gates + q, hg + q, h_prev + k, dy + k, dh + k, dxg + q, dhg + q, dh_prev + k, hidden);
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
  register_rnn_sequence(table);  // whole stacks through oneDNN (rnn_onednn.cpp)
}

}  // namespace xylem::native
#endif  // HWY_ONCE
