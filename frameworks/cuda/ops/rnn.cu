// nn::lstm_cell, gru_cell and their gradients: one grid-stride kernel per
// call over the (row, unit) pairs of the contiguous [N, H] states, each by
// rnn_math.h's formula.
#include "map.cuh"
#include "real.cuh"
#include "xylem/plugin/rnn_math.h"

namespace xylem::cuda {
namespace {

using plugin::OpCall;

// rnn_math.h's formulas, chosen by the element type.
template <class T>
__device__ __forceinline__ void lstm_of(T* i, T* f, T* g, T* o, T c_prev, T* c, T* h) {
  if constexpr (sizeof(T) == 4)
    xy_lstm_cell_f(i, f, g, o, c_prev, c, h);
  else
    xy_lstm_cell_d(i, f, g, o, c_prev, c, h);
}
template <class T>
__device__ __forceinline__ void lstm_grad_of(T i, T f, T g, T o, T c_prev, T c, T dy, T dh, T dc, T* di, T* df,
                                             T* dg, T* d_o, T* dc_prev) {
  if constexpr (sizeof(T) == 4)
    xy_lstm_cell_grad_f(i, f, g, o, c_prev, c, dy, dh, dc, di, df, dg, d_o, dc_prev);
  else
    xy_lstm_cell_grad_d(i, f, g, o, c_prev, c, dy, dh, dc, di, df, dg, d_o, dc_prev);
}
template <class T>
__device__ __forceinline__ T gru_of(T* r, T* z, T* n, T hr, T hz, T hn, T h_prev) {
  if constexpr (sizeof(T) == 4)
    return xy_gru_cell_f(r, z, n, hr, hz, hn, h_prev);
  else
    return xy_gru_cell_d(r, z, n, hr, hz, hn, h_prev);
}
template <class T>
__device__ __forceinline__ T gru_grad_of(T r, T z, T n, T hn, T h_prev, T dy, T dh, T* dr, T* dz, T* dxn, T* dhn) {
  if constexpr (sizeof(T) == 4)
    return xy_gru_cell_grad_f(r, z, n, hn, h_prev, dy, dh, dr, dz, dxn, dhn);
  else
    return xy_gru_cell_grad_d(r, z, n, hn, h_prev, dy, dh, dr, dz, dxn, dhn);
}

// Unit k % hidden of row k / hidden has its gates at row*gates*hidden +
// q*hidden + unit, q the gate.
__device__ __forceinline__ std::int64_t gate_of(std::int64_t k, std::int64_t hidden, std::int64_t gates) {
  const std::int64_t row = k / hidden;
  return row * gates * hidden + (k - row * hidden);
}

#define XY_RNN_FOR_EACH(k, n)                                                       \
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; \
       k += std::int64_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void lstm_kernel(std::int64_t n, std::int64_t hidden, T* gates, const T* c_prev, T* c, T* h) {
  XY_RNN_FOR_EACH(k, n) {
    T* g = gates + gate_of(k, hidden, 4);
    T i = g[0], f = g[hidden], gg = g[2 * hidden], o = g[3 * hidden], ck, hk;
    lstm_of<T>(&i, &f, &gg, &o, c_prev[k], &ck, &hk);
    g[0] = i;
    g[hidden] = f;
    g[2 * hidden] = gg;
    g[3 * hidden] = o;
    c[k] = ck;
    h[k] = hk;
  }
}

template <class T>
__global__ void lstm_grad_kernel(std::int64_t n, std::int64_t hidden, const T* gates, const T* c_prev, const T* c,
                                 const T* dy, const T* dh, const T* dc, T* dgates, T* dc_prev) {
  XY_RNN_FOR_EACH(k, n) {
    const std::int64_t q = gate_of(k, hidden, 4);
    const T* g = gates + q;
    T di, df, dg, d_o, dcp;
    lstm_grad_of<T>(g[0], g[hidden], g[2 * hidden], g[3 * hidden], c_prev[k], c[k], dy[k], dh[k], dc[k], &di, &df,
                    &dg, &d_o, &dcp);
    T* d = dgates + q;
    d[0] = di;
    d[hidden] = df;
    d[2 * hidden] = dg;
    d[3 * hidden] = d_o;
    dc_prev[k] = dcp;
  }
}

template <class T>
__global__ void gru_kernel(std::int64_t n, std::int64_t hidden, T* xg, const T* hg, const T* h_prev, T* h) {
  XY_RNN_FOR_EACH(k, n) {
    const std::int64_t q = gate_of(k, hidden, 3);
    T* x = xg + q;
    const T* r = hg + q;
    T rr = x[0], z = x[hidden], nn = x[2 * hidden];
    h[k] = gru_of<T>(&rr, &z, &nn, r[0], r[hidden], r[2 * hidden], h_prev[k]);
    x[0] = rr;
    x[hidden] = z;
    x[2 * hidden] = nn;
  }
}

template <class T>
__global__ void gru_grad_kernel(std::int64_t n, std::int64_t hidden, const T* gates, const T* hg, const T* h_prev,
                                const T* dy, const T* dh, T* dxg, T* dhg, T* dh_prev) {
  XY_RNN_FOR_EACH(k, n) {
    const std::int64_t q = gate_of(k, hidden, 3);
    const T* g = gates + q;
    T dr, dz, dxn, dhn;
    dh_prev[k] = gru_grad_of<T>(g[0], g[hidden], g[2 * hidden], hg[q + 2 * hidden], h_prev[k], dy[k], dh[k], &dr,
                                &dz, &dxn, &dhn);
    T* dx = dxg + q;
    T* dr_out = dhg + q;
    dx[0] = dr;
    dx[hidden] = dz;
    dx[2 * hidden] = dxn;
    dr_out[0] = dr;
    dr_out[hidden] = dz;
    dr_out[2 * hidden] = dhn;
  }
}

#undef XY_RNN_FOR_EACH

// The [N, H] state a launch runs over: H (0 for an empty one).
std::int64_t hidden_of(const plugin::TensorArg& state) { return state.view.rank() == 2 ? state.view.dim(1) : 0; }

template <class T>
void lstm(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell>(c);
  const std::int64_t n = a.c.view.numel();
  if (n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(lstm_kernel<T>);
  lstm_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, hidden_of(a.c), element_ptr<T>(a.gates), element_ptr<const T>(a.c_prev), element_ptr<T>(a.c),
      element_ptr<T>(a.h));
  XY_CUDA_LAUNCHED(ctx.device, "nn::lstm_cell");
}

template <class T>
void lstm_grad(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell_grad>(c);
  const std::int64_t n = a.c.view.numel();
  if (n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(lstm_grad_kernel<T>);
  lstm_grad_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, hidden_of(a.c), element_ptr<const T>(a.gates), element_ptr<const T>(a.c_prev), element_ptr<const T>(a.c),
      element_ptr<const T>(a.dy), element_ptr<const T>(a.dh), element_ptr<const T>(a.dc), element_ptr<T>(a.dgates),
      element_ptr<T>(a.dc_prev));
  XY_CUDA_LAUNCHED(ctx.device, "nn::lstm_cell_grad");
}

template <class T>
void gru(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell>(c);
  const std::int64_t n = a.h.view.numel();
  if (n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(gru_kernel<T>);
  gru_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, hidden_of(a.h), element_ptr<T>(a.xg), element_ptr<const T>(a.hg), element_ptr<const T>(a.h_prev),
      element_ptr<T>(a.h));
  XY_CUDA_LAUNCHED(ctx.device, "nn::gru_cell");
}

template <class T>
void gru_grad(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell_grad>(c);
  const std::int64_t n = a.h_prev.view.numel();
  if (n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(gru_grad_kernel<T>);
  gru_grad_kernel<T><<<grid_for(n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(
      n, hidden_of(a.h_prev), element_ptr<const T>(a.gates), element_ptr<const T>(a.hg),
      element_ptr<const T>(a.h_prev), element_ptr<const T>(a.dy), element_ptr<const T>(a.dh), element_ptr<T>(a.dxg),
      element_ptr<T>(a.dhg), element_ptr<T>(a.dh_prev));
  XY_CUDA_LAUNCHED(ctx.device, "nn::gru_cell_grad");
}

}  // namespace

void register_rnn(KernelTable& table) {
  table.set(plugin::OpId::nn_lstm_cell, DType::f32, &lstm<float>);
  table.set(plugin::OpId::nn_lstm_cell, DType::f64, &lstm<double>);
  table.set(plugin::OpId::nn_lstm_cell_grad, DType::f32, &lstm_grad<float>);
  table.set(plugin::OpId::nn_lstm_cell_grad, DType::f64, &lstm_grad<double>);
  table.set(plugin::OpId::nn_gru_cell, DType::f32, &gru<float>);
  table.set(plugin::OpId::nn_gru_cell, DType::f64, &gru<double>);
  table.set(plugin::OpId::nn_gru_cell_grad, DType::f32, &gru_grad<float>);
  table.set(plugin::OpId::nn_gru_cell_grad, DType::f64, &gru_grad<double>);
}

}  // namespace xylem::cuda
