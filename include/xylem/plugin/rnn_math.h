/* The recurrent cells of one element, PyTorch's nn.LSTM and nn.GRU
 * (nn::lstm_cell, nn::gru_cell and their gradients), written once for every
 * framework. Needs math.h first (XY_FN, XY_SIGMOID, XY_LIT_*): C++ and CUDA
 * include it below; OpenCL programs get math.h ahead of every source.
 * Outputs go through pointers (private memory in OpenCL). One element is
 * one (row, unit) of a batch: the gates are that unit's entries of each
 * gate block. Backward takes the activated gates forward left, so nothing
 * is recomputed but tanh(c). */
#ifndef XYLEM_PLUGIN_RNN_MATH_H
#define XYLEM_PLUGIN_RNN_MATH_H

#if !defined(__OPENCL_VERSION__)
#include "xylem/plugin/math.h"
#endif

/* LSTM: i, f, g, o come in as pre-activations and leave activated;
 * c = f c_prev + i g, h = o tanh(c).
 * Gradient: the h gradient dy + dh, the c one dc (from the next step);
 * dc_total = dc + (dy + dh) o (1 - tanh(c)^2); d_i = dc_total g i (1 - i),
 * d_f = dc_total c_prev f (1 - f), d_g = dc_total i (1 - g^2),
 * d_o = (dy + dh) tanh(c) o (1 - o); dc_prev = dc_total f.
 * GRU: r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z),
 * n = tanh(x_n + r h_n), h = (1 - z) n + z h_prev; x_* leave as r, z, n.
 * Gradient, d = dy + dh: a_n = d (1 - z) (1 - n^2) is x_n's;
 * x_r's and h_r's d_r = a_n h_n r (1 - r); x_z's and h_z's
 * d_z = d (h_prev - n) z (1 - z); h_n's a_n r; the returned d z is h_prev's
 * through z h_prev alone. */
#define XY_DEFINE_RNN_FORMULAS(S, FS, K)                                                               \
  XY_FN void xy_lstm_cell_##FS(S* i, S* f, S* g, S* o, S c_prev, S* c, S* h) {                        \
    *i = XY_SIGMOID(K, exp, *i);                                                                        \
    *f = XY_SIGMOID(K, exp, *f);                                                                        \
    *g = tanh(*g);                                                                                      \
    *o = XY_SIGMOID(K, exp, *o);                                                                        \
    *c = *f * c_prev + *i * *g;                                                                         \
    *h = *o * tanh(*c);                                                                                 \
  }                                                                                                     \
  XY_FN void xy_lstm_cell_grad_##FS(S i, S f, S g, S o, S c_prev, S c, S dy, S dh, S dc, S* d_i,      \
                                    S* d_f, S* d_g, S* d_o, S* dc_prev) {                               \
    const S tc = tanh(c);                                                                               \
    const S dht = dy + dh;                                                                              \
    const S dct = dc + dht * o * (K(1.0) - tc * tc);                                                    \
    *d_i = dct * g * i * (K(1.0) - i);                                                                  \
    *d_f = dct * c_prev * f * (K(1.0) - f);                                                             \
    *d_g = dct * i * (K(1.0) - g * g);                                                                  \
    *d_o = dht * tc * o * (K(1.0) - o);                                                                 \
    *dc_prev = dct * f;                                                                                 \
  }                                                                                                     \
  XY_FN S xy_gru_cell_##FS(S* r, S* z, S* n, S h_r, S h_z, S h_n, S h_prev) {                          \
    *r = XY_SIGMOID(K, exp, *r + h_r);                                                                  \
    *z = XY_SIGMOID(K, exp, *z + h_z);                                                                  \
    *n = tanh(*n + *r * h_n);                                                                           \
    return (K(1.0) - *z) * *n + *z * h_prev;                                                            \
  }                                                                                                     \
  XY_FN S xy_gru_cell_grad_##FS(S r, S z, S n, S h_n, S h_prev, S dy, S dh, S* d_r, S* d_z, S* d_xn,  \
                                S* d_hn) {                                                              \
    const S d = dy + dh;                                                                                \
    const S a_n = d * (K(1.0) - z) * (K(1.0) - n * n);                                                  \
    *d_r = a_n * h_n * r * (K(1.0) - r);                                                                \
    *d_z = d * (h_prev - n) * z * (K(1.0) - z);                                                         \
    *d_xn = a_n;                                                                                        \
    *d_hn = a_n * r;                                                                                    \
    return d * z;                                                                                       \
  }

XY_DEFINE_RNN_FORMULAS(float, f, XY_LIT_F)
#ifdef XY_DOUBLE
XY_DEFINE_RNN_FORMULAS(double, d, XY_LIT_D)
#endif

#endif /* XYLEM_PLUGIN_RNN_MATH_H */
