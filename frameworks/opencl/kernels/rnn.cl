/* nn::lstm_cell, gru_cell and their gradients: contiguous tensors (each
 * with its offset in elements), one work-item per (row, unit) of the [N, H]
 * states, each by rnn_math.h's formula. Unit j of row r has its gates at
 * r*G*H + q*H + j, q the gate. */
#define XY_GATE(k, hidden, gates) (((k) / (hidden)) * (gates) * (hidden) + (k) % (hidden))

kernel void KNAME(lstm_cell)(global T* gates, long go, global const T* c_prev, long cpo, global T* c, long co,
                             global T* h, long ho, long n, long hidden) {
  const long k = get_global_id(0);
  if (k >= n) return;
  global T* g = gates + go + XY_GATE(k, hidden, 4);
  T i = g[0], f = g[hidden], gg = g[2 * hidden], o = g[3 * hidden], ck, hk;
  XF(xy_lstm_cell)(&i, &f, &gg, &o, c_prev[cpo + k], &ck, &hk);
  g[0] = i;
  g[hidden] = f;
  g[2 * hidden] = gg;
  g[3 * hidden] = o;
  c[co + k] = ck;
  h[ho + k] = hk;
}

kernel void KNAME(lstm_cell_grad)(global const T* gates, long go, global const T* c_prev, long cpo,
                                  global const T* c, long co, global const T* dy, long dyo, global const T* dh,
                                  long dho, global const T* dc, long dco, global T* dgates, long dgo,
                                  global T* dc_prev, long dcpo, long n, long hidden) {
  const long k = get_global_id(0);
  if (k >= n) return;
  const long q = XY_GATE(k, hidden, 4);
  global const T* g = gates + go + q;
  T di, df, dg, d_o, dcp;
  XF(xy_lstm_cell_grad)(g[0], g[hidden], g[2 * hidden], g[3 * hidden], c_prev[cpo + k], c[co + k], dy[dyo + k],
                        dh[dho + k], dc[dco + k], &di, &df, &dg, &d_o, &dcp);
  global T* d = dgates + dgo + q;
  d[0] = di;
  d[hidden] = df;
  d[2 * hidden] = dg;
  d[3 * hidden] = d_o;
  dc_prev[dcpo + k] = dcp;
}

kernel void KNAME(gru_cell)(global T* xg, long xo, global const T* hg, long hgo, global const T* h_prev, long hpo,
                            global T* h, long ho, long n, long hidden) {
  const long k = get_global_id(0);
  if (k >= n) return;
  const long q = XY_GATE(k, hidden, 3);
  global T* x = xg + xo + q;
  global const T* r = hg + hgo + q;
  T rr = x[0], z = x[hidden], nn = x[2 * hidden];
  h[ho + k] = XF(xy_gru_cell)(&rr, &z, &nn, r[0], r[hidden], r[2 * hidden], h_prev[hpo + k]);
  x[0] = rr;
  x[hidden] = z;
  x[2 * hidden] = nn;
}

kernel void KNAME(gru_cell_grad)(global const T* gates, long go, global const T* hg, long hgo,
                                 global const T* h_prev, long hpo, global const T* dy, long dyo, global const T* dh,
                                 long dho, global T* dxg, long dxo, global T* dhg, long dhgo, global T* dh_prev,
                                 long dhpo, long n, long hidden) {
  const long k = get_global_id(0);
  if (k >= n) return;
  const long q = XY_GATE(k, hidden, 3);
  global const T* g = gates + go + q;
  T dr, dz, dxn, dhn;
  dh_prev[dhpo + k] = XF(xy_gru_cell_grad)(g[0], g[hidden], g[2 * hidden], hg[hgo + q + 2 * hidden], h_prev[hpo + k],
                                           dy[dyo + k], dh[dho + k], &dr, &dz, &dxn, &dhn);
  global T* dx = dxg + dxo + q;
  global T* dr_out = dhg + dhgo + q;
  dx[0] = dr;
  dx[hidden] = dz;
  dx[2 * hidden] = dxn;
  dr_out[0] = dr;
  dr_out[hidden] = dz;
  dr_out[2 * hidden] = dhn;
}
