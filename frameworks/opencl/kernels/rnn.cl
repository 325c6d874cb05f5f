/* nn::lstm_cell, gru_cell and their gradients: contiguous tensors (each
 * with its offset in elements), by rnn_math.h's formulas. Unit j of row r
 * has its gates at r*G*H + q*H + j, q the gate.
 *
 * Two forms of each kernel from one text (XY_RNN_CELLS): one work-item per
 * (row, unit) of the [N, H] states (GPUs), and, where H is a multiple of
 * VW, one per VW consecutive units of a row in VT vectors (CPU devices:
 * PoCL compiles the scalar form's exp and tanh one element at a time, and
 * divides per element; an LSTM step's cell took 200 us on 2 cores, as long
 * as its gemm). */
#define XY_GATE(k, hidden, gates) (((k) / (hidden)) * (gates) * (hidden) + (k) % (hidden))

#if XY_IS_F32
XY_DEFINE_RNN_FORMULAS(VT, v_f, XY_LIT_F)
#else
XY_DEFINE_RNN_FORMULAS(VT, v_d, XY_LIT_D)
#endif

#define XY_RNN_LD1(p) (*(p))
#define XY_RNN_ST1(p, v) (*(p) = (v))
#define XY_RNN_LDV(p) VLOAD(0, p)
#define XY_RNN_STV(p, v) VSTORE(v, 0, p)

/* The four kernels with names suffixed SFX, over S (T or VT: W units of a
 * row per work-item), loading with LD and storing with ST, by FN's
 * formulas (XF or XV). */
#define XY_RNN_CELLS(SFX, S, W, LD, ST, FN)                                                                  \
  kernel void KNAME(lstm_cell##SFX)(global T * gates, long go, global const T* c_prev, long cpo, global T* c, \
                                    long co, global T* h, long ho, long n, long hidden) {                     \
    const long k = (long)get_global_id(0) * (W);                                                             \
    if (k >= n) return;                                                                                      \
    global T* g = gates + go + XY_GATE(k, hidden, 4);                                                        \
    S i = LD(g), f = LD(g + hidden), gg = LD(g + 2 * hidden), o = LD(g + 3 * hidden), ck, hk;                \
    FN(xy_lstm_cell)(&i, &f, &gg, &o, LD(c_prev + cpo + k), &ck, &hk);                                       \
    ST(g, i);                                                                                                \
    ST(g + hidden, f);                                                                                       \
    ST(g + 2 * hidden, gg);                                                                                  \
    ST(g + 3 * hidden, o);                                                                                   \
    ST(c + co + k, ck);                                                                                      \
    ST(h + ho + k, hk);                                                                                      \
  }                                                                                                          \
                                                                                                             \
  kernel void KNAME(lstm_cell_grad##SFX)(                                                                    \
      global const T* gates, long go, global const T* c_prev, long cpo, global const T* c, long co,          \
      global const T* dy, long dyo, global const T* dh, long dho, global const T* dc, long dco,              \
      global T* dgates, long dgo, global T* dc_prev, long dcpo, long n, long hidden) {                       \
    const long k = (long)get_global_id(0) * (W);                                                             \
    if (k >= n) return;                                                                                      \
    const long q = XY_GATE(k, hidden, 4);                                                                    \
    global const T* g = gates + go + q;                                                                      \
    S di, df, dg, d_o, dcp;                                                                                  \
    FN(xy_lstm_cell_grad)(LD(g), LD(g + hidden), LD(g + 2 * hidden), LD(g + 3 * hidden),                     \
                          LD(c_prev + cpo + k), LD(c + co + k), LD(dy + dyo + k), LD(dh + dho + k),          \
                          LD(dc + dco + k), &di, &df, &dg, &d_o, &dcp);                                      \
    global T* d = dgates + dgo + q;                                                                          \
    ST(d, di);                                                                                               \
    ST(d + hidden, df);                                                                                      \
    ST(d + 2 * hidden, dg);                                                                                  \
    ST(d + 3 * hidden, d_o);                                                                                 \
    ST(dc_prev + dcpo + k, dcp);                                                                             \
  }                                                                                                          \
                                                                                                             \
  kernel void KNAME(gru_cell##SFX)(global T * xg, long xo, global const T* hg, long hgo,                     \
                                   global const T* h_prev, long hpo, global T* h, long ho, long n,           \
                                   long hidden) {                                                            \
    const long k = (long)get_global_id(0) * (W);                                                             \
    if (k >= n) return;                                                                                      \
    const long q = XY_GATE(k, hidden, 3);                                                                    \
    global T* x = xg + xo + q;                                                                               \
    global const T* r = hg + hgo + q;                                                                        \
    S rr = LD(x), z = LD(x + hidden), nn = LD(x + 2 * hidden);                                               \
    ST(h + ho + k,                                                                                           \
       FN(xy_gru_cell)(&rr, &z, &nn, LD(r), LD(r + hidden), LD(r + 2 * hidden), LD(h_prev + hpo + k)));      \
    ST(x, rr);                                                                                               \
    ST(x + hidden, z);                                                                                       \
    ST(x + 2 * hidden, nn);                                                                                  \
  }                                                                                                          \
                                                                                                             \
  kernel void KNAME(gru_cell_grad##SFX)(                                                                     \
      global const T* gates, long go, global const T* hg, long hgo, global const T* h_prev, long hpo,        \
      global const T* dy, long dyo, global const T* dh, long dho, global T* dxg, long dxo, global T* dhg,    \
      long dhgo, global T* dh_prev, long dhpo, long n, long hidden) {                                        \
    const long k = (long)get_global_id(0) * (W);                                                             \
    if (k >= n) return;                                                                                      \
    const long q = XY_GATE(k, hidden, 3);                                                                    \
    global const T* g = gates + go + q;                                                                      \
    S dr, dz, dxn, dhn;                                                                                      \
    ST(dh_prev + dhpo + k,                                                                                   \
       FN(xy_gru_cell_grad)(LD(g), LD(g + hidden), LD(g + 2 * hidden), LD(hg + hgo + q + 2 * hidden),        \
                            LD(h_prev + hpo + k), LD(dy + dyo + k), LD(dh + dho + k), &dr, &dz, &dxn, &dhn)); \
    global T* dx = dxg + dxo + q;                                                                            \
    global T* dr_out = dhg + dhgo + q;                                                                       \
    ST(dx, dr);                                                                                              \
    ST(dx + hidden, dz);                                                                                     \
    ST(dx + 2 * hidden, dxn);                                                                                \
    ST(dr_out, dr);                                                                                          \
    ST(dr_out + hidden, dz);                                                                                 \
    ST(dr_out + 2 * hidden, dhn);                                                                            \
  }

XY_RNN_CELLS(, T, 1, XY_RNN_LD1, XY_RNN_ST1, XF)
XY_RNN_CELLS(_v, VT, VW, XY_RNN_LDV, XY_RNN_STV, XV)
