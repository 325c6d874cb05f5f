/* nn::layer_norm, forward and backward (conventions in
 * include/xylem/plugin/plugin.hpp). Statistics and sums in T; mean and rstd
 * are in T (the "stat" dtype). Optional tensors (gamma, beta, dgamma,
 * dbeta) arrive as null pointers when absent.
 *
 * Row statistics: one work-group per row; two passes (mean, then the mean
 * of squared deviations), which stays accurate where E[x^2] - E[x]^2
 * cancels. rms != 0 (RMS normalisation) skips the mean: it is 0, and the
 * second pass sums the squares themselves. */

/* ---- layer norm: x, y [rows, n] (views .s[0], .s[1]); gamma, beta [n] ---- */

kernel void KNAME(layer_norm)(global const ST* x, xy_view xv, global const ST* gamma, xy_view gv,
                              global const ST* beta, xy_view bv, global ST* y, xy_view yv, global T* mean,
                              xy_view mv, global T* rstd, xy_view rv, long n, T eps, long rms, local T* tmp) {
  const long r = get_group_id(0);
  const long lid = get_local_id(0), step = get_local_size(0);
  global const ST* xr = x + xv.offset + r * xv.s[0];
  T mu = 0;
  if (!rms) {  /* the same for the whole group: its barriers stay uniform */
    T sum = 0;
    for (long j = lid; j < n; j += step) sum += XY_LD(xr, j * xv.s[1]);
    mu = XF(xy_group_sum)(sum, tmp) / (T)n;
  }
  T squares = 0;
  for (long j = lid; j < n; j += step) {
    const T d = XY_LD(xr, j * xv.s[1]) - mu;
    squares += d * d;
  }
  const T var = XF(xy_group_sum)(squares, tmp) / (T)n;
  const T rs = (T)1 / sqrt(var + eps);
  if (lid == 0) {
    mean[mv.offset + r * mv.s[0]] = mu;
    rstd[rv.offset + r * rv.s[0]] = rs;
  }
  global ST* yr = y + yv.offset + r * yv.s[0];
  for (long j = lid; j < n; j += step) {
    T v = (XY_LD(xr, j * xv.s[1]) - mu) * rs;
    if (gamma) v = v * XY_LD(gamma, gv.offset + j * gv.s[0]);
    if (beta) v = v + XY_LD(beta, bv.offset + j * bv.s[0]);
    XY_ST(yr, j * yv.s[1], v);
  }
}

/* The same on CPU devices for rows of unit stride (gamma and beta too):
 * one work-item per row, walking it in vectors of VW (several vector
 * accumulators' worth of independent adds, no barriers), then the scalar
 * rest. PoCL vectorises neither a work-group's strided shares nor a
 * scalar sum (it may not reorder the adds). */
kernel void KNAME(layer_norm_rows)(global const ST* x, xy_view xv, global const ST* gamma, xy_view gv,
                                   global const ST* beta, xy_view bv, global ST* y, xy_view yv, global T* mean,
                                   xy_view mv, global T* rstd, xy_view rv, long rows, long n, T eps,
                                   long rms) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  global const ST* xr = x + xv.offset + r * xv.s[0];
  global ST* yr = y + yv.offset + r * yv.s[0];
  long j = 0;
  T mu = 0;
  if (!rms) {
    VT vsum = 0;
    for (; j + VW <= n; j += VW) vsum += XY_VLD(xr, j);
    T sum = XV(xy_hsum)(vsum);
    for (; j < n; ++j) sum += XY_LD(xr, j);
    mu = sum / (T)n;
  }
  VT vsq = 0;
  for (j = 0; j + VW <= n; j += VW) {
    const VT d = XY_VLD(xr, j) - mu;
    vsq += d * d;
  }
  T squares = XV(xy_hsum)(vsq);
  for (; j < n; ++j) {
    const T d = XY_LD(xr, j) - mu;
    squares += d * d;
  }
  const T rs = (T)1 / sqrt(squares / (T)n + eps);
  mean[mv.offset + r * mv.s[0]] = mu;
  rstd[rv.offset + r * rv.s[0]] = rs;
  global const ST* g = gamma ? gamma + gv.offset : 0;
  global const ST* b = beta ? beta + bv.offset : 0;
  for (j = 0; j + VW <= n; j += VW) {
    VT v = (XY_VLD(xr, j) - mu) * rs;
    if (g) v = v * XY_VLD(g, j);
    if (b) v = v + XY_VLD(b, j);
    XY_VST(yr, j, v);
  }
  for (; j < n; ++j) {
    T v = (XY_LD(xr, j) - mu) * rs;
    if (g) v = v * XY_LD(g, j);
    if (b) v = v + XY_LD(b, j);
    XY_ST(yr, j, v);
  }
}

/* dx = rstd*(g - mean_j(g) - xh*mean_j(g*xh)), g = dy*gamma; rms: no
 * mean_j(g) term (nothing was subtracted). */
kernel void KNAME(layer_norm_grad_input)(global const ST* x, xy_view xv, global const ST* gamma, xy_view gv,
                                         global const T* mean, xy_view mv, global const T* rstd, xy_view rv,
                                         global const ST* dy, xy_view dyv, global ST* dx, xy_view dxv, long n,
                                         long rms, local T* tmp) {
  const long r = get_group_id(0);
  const long lid = get_local_id(0), step = get_local_size(0);
  const T mu = mean[mv.offset + r * mv.s[0]], rs = rstd[rv.offset + r * rv.s[0]];
  global const ST* xr = x + xv.offset + r * xv.s[0];
  global const ST* dyr = dy + dyv.offset + r * dyv.s[0];
  T sum_g = 0, sum_gx = 0;
  for (long j = lid; j < n; j += step) {
    T g = XY_LD(dyr, j * dyv.s[1]);
    if (gamma) g = g * XY_LD(gamma, gv.offset + j * gv.s[0]);
    const T xh = (XY_LD(xr, j * xv.s[1]) - mu) * rs;
    sum_g += g;
    sum_gx += g * xh;
  }
  const T mean_g = rms ? (T)0 : XF(xy_group_sum)(sum_g, tmp) / (T)n;
  const T mean_gx = XF(xy_group_sum)(sum_gx, tmp) / (T)n;
  global ST* dxr = dx + dxv.offset + r * dxv.s[0];
  for (long j = lid; j < n; j += step) {
    T g = XY_LD(dyr, j * dyv.s[1]);
    if (gamma) g = g * XY_LD(gamma, gv.offset + j * gv.s[0]);
    const T xh = (XY_LD(xr, j * xv.s[1]) - mu) * rs;
    XY_ST(dxr, j * dxv.s[1], rs * (g - mean_g - xh * mean_gx));
  }
}

/* dgamma = sum_rows(dy*xh), dbeta = sum_rows(dy), in two passes: item
 * (chunk, j) sums column j over its chunk of rows into part[chunk, j]
 * (dgamma's partials) and part[chunks + chunk, j] (dbeta's); then one item
 * per column adds the chunks in order. Neighbouring items take
 * neighbouring columns. */
kernel void KNAME(layer_norm_grad_params_p1)(global const ST* x, xy_view xv, global const T* mean, xy_view mv,
                                             global const T* rstd, xy_view rv, global const ST* dy, xy_view dyv,
                                             long rows, long n, long rows_per_chunk, long chunks,
                                             global T* part) {
  const long item = get_global_id(0);
  if (item >= chunks * n) return;
  const long chunk = item / n, j = item % n;
  const long r_end = min(rows, (chunk + 1) * rows_per_chunk);
  T sum_gamma = 0, sum_beta = 0;
  for (long r = chunk * rows_per_chunk; r < r_end; ++r) {
    const T d = XY_LD(dy, dyv.offset + r * dyv.s[0] + j * dyv.s[1]);
    const T xh = (XY_LD(x, xv.offset + r * xv.s[0] + j * xv.s[1]) - mean[mv.offset + r * mv.s[0]]) *
                 rstd[rv.offset + r * rv.s[0]];
    sum_gamma += d * xh;
    sum_beta += d;
  }
  part[chunk * n + j] = sum_gamma;
  part[(chunks + chunk) * n + j] = sum_beta;
}

kernel void KNAME(layer_norm_grad_params_p2)(global const T* part, long chunks, long n, global ST* dgamma, xy_view dgv,
                                  global ST* dbeta, xy_view dbv) {
  const long j = get_global_id(0);
  if (j >= n) return;
  T sum_gamma = 0, sum_beta = 0;
  for (long c = 0; c < chunks; ++c) {
    sum_gamma += part[c * n + j];
    sum_beta += part[(chunks + c) * n + j];
  }
  if (dgamma) XY_ST(dgamma, dgv.offset + j * dgv.s[0], sum_gamma);
  if (dbeta) XY_ST(dbeta, dbv.offset + j * dbv.s[0], sum_beta);
}
