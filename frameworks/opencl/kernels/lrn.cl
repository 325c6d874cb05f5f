/* Local response normalisation across channels, forward and backward
 * (conventions in include/xylem/plugin/plugin.hpp), over NCHW views.
 * Channel c's window is [c - (size-1)/2, c + size/2], clipped to [0, C):
 *   scale = k + alpha/size * sum_window x^2,   y = x * scale^-beta
 *   dx = dy*scale^-beta - 2*alpha*beta/size * x * sum_{c' whose window
 *        holds c} dy*y/scale
 * A work-item takes a run of positions w of one row (n, h) (xy_row_run,
 * ops/row_runs.hpp) and walks every channel for them: its position is
 * divided out once, and on CPU devices the run goes in vectors of VW
 * positions where the operands are dense along w (the window's other
 * channels are then in cache). Backward reads each element's scale from a
 * first pass (lrn_scale) instead of recomputing size windows per element. */

/* The window of channel c: [*lo, *hi]. */
#ifndef XY_LRN_ONCE
#define XY_LRN_ONCE
inline void xy_lrn_window(long c, long C, long size, long* lo, long* hi) {
  *lo = max(c - (size - 1) / 2, 0L);
  *hi = min(c + size / 2, C - 1);
}
/* The channels c' whose window holds c: [*lo, *hi]. */
inline void xy_lrn_holders(long c, long C, long size, long* lo, long* hi) {
  *lo = max(c - size / 2, 0L);
  *hi = min(c + (size - 1) / 2, C - 1);
}
#endif

/* scale of (channel c, this run's positions) at plane pointer xp (channel
 * 0, row h), positions w .. w+VW-1 (vector) or w (scalar). */
inline VT KNAME(lrn_scale_v)(global const ST* xp, long cs, long w, long c, long C, long size, T alpha, T k) {
  long lo, hi;
  xy_lrn_window(c, C, size, &lo, &hi);
  VT sum = 0;
  for (long j = lo; j <= hi; ++j) {
    const VT v = XY_VLD(xp + j * cs, w);
    sum += v * v;
  }
  return k + alpha / (T)size * sum;
}
inline T KNAME(lrn_scale_s)(global const ST* xp, long cs, long ws, long w, long c, long C, long size, T alpha, T k) {
  long lo, hi;
  xy_lrn_window(c, C, size, &lo, &hi);
  T sum = 0;
  for (long j = lo; j <= hi; ++j) {
    const T v = XY_LD(xp + j * cs, w * ws);
    sum += v * v;
  }
  return k + alpha / (T)size * sum;
}

/* s^-beta. pow dominates the kernels otherwise (PoCL's costs some 100 ns
 * an element); the usual betas take square roots and a division instead,
 * as the native kernels do: `mode` (ops/lrn.cpp) 1: beta = 0.75, 2: 0.5,
 * 3: 1, 0: any other. */
inline VT KNAME(lrn_neg_pow_v)(VT s, T beta, int mode) {
  switch (mode) {
    case 1: return (T)1 / sqrt(s * sqrt(s));
    case 2: return (T)1 / sqrt(s);
    case 3: return (T)1 / s;
    default: return pow(s, (VT)(-beta));
  }
}
inline T KNAME(lrn_neg_pow_s)(T s, T beta, int mode) {
  switch (mode) {
    case 1: return (T)1 / sqrt(s * sqrt(s));
    case 2: return (T)1 / sqrt(s);
    case 3: return (T)1 / s;
    default: return pow(s, -beta);
  }
}

/* This item's row (n, h) of x [N, C, H, W] and its run [*w0, *w1). */
#define XY_LRN_RUN(n, h, w0, w1)                                       \
  long row, w0, w1, h;                                                 \
  if (!xy_row_run(W, per, rows, narrow, &row, &w0, &w1)) return;     \
  const long n = xy_divide(row, H, &h, narrow)

kernel void KNAME(lrn)(global const ST* x, xy_view xv, global ST* y, xy_view yv, long C, long H, long W, long per,
                       long rows, int narrow, long size, T alpha, T beta, T k, int mode) {
  XY_LRN_RUN(n, h, w0, w1);
  global const ST* xp = x + xv.offset + n * xv.s[0] + h * xv.s[2];
  global ST* yp = y + yv.offset + n * yv.s[0] + h * yv.s[2];
  /* Channels outer: the window's rows stay in cache from one channel to the
   * next (positions outer would walk channels a plane apart, which alias in
   * the caches). Vectors up to wv, then single positions. */
  long wv = w0;
#ifdef XY_CPU
  if (xv.s[3] == 1 && yv.s[3] == 1) wv = w0 + (w1 - w0) / VW * VW;
#endif
  for (long c = 0; c < C; ++c) {
    global const ST* xc = xp + c * xv.s[1];
    global ST* yc = yp + c * yv.s[1];
    for (long w = w0; w < wv; w += VW) {
      const VT scale = KNAME(lrn_scale_v)(xp, xv.s[1], w, c, C, size, alpha, k);
      XY_VST(yc, w, XY_VLD(xc, w) * KNAME(lrn_neg_pow_v)(scale, beta, mode));
    }
    for (long w = wv; w < w1; ++w) {
      const T scale = KNAME(lrn_scale_s)(xp, xv.s[1], xv.s[3], w, c, C, size, alpha, k);
      XY_ST(yc, w * yv.s[3], XY_LD(xc, w * xv.s[3]) * KNAME(lrn_neg_pow_s)(scale, beta, mode));
    }
  }
}

/* scale, dense over [N, C, H, W], for lrn_grad. */
kernel void KNAME(lrn_scale)(global const ST* x, xy_view xv, global T* scale, long C, long H, long W, long per,
                             long rows, int narrow, long size, T alpha, T k) {
  XY_LRN_RUN(n, h, w0, w1);
  global const ST* xp = x + xv.offset + n * xv.s[0] + h * xv.s[2];
  global T* sp = scale + (n * C * H + h) * W;
  const long plane = H * W;
  long wv = w0;
#ifdef XY_CPU
  if (xv.s[3] == 1) wv = w0 + (w1 - w0) / VW * VW;
#endif
  for (long c = 0; c < C; ++c) {
    for (long w = w0; w < wv; w += VW) VSTORE(KNAME(lrn_scale_v)(xp, xv.s[1], w, c, C, size, alpha, k), 0, sp + c * plane + w);
    for (long w = wv; w < w1; ++w) sp[c * plane + w] = KNAME(lrn_scale_s)(xp, xv.s[1], xv.s[3], w, c, C, size, alpha, k);
  }
}

kernel void KNAME(lrn_grad)(global const ST* x, xy_view xv, global const ST* y, xy_view yv, global const ST* dy,
                            xy_view dyv, global const T* scale, global ST* dx, xy_view dxv, long C, long H, long W,
                            long per, long rows, int narrow, long size, T alpha, T beta, int mode) {
  XY_LRN_RUN(n, h, w0, w1);
  global const ST* xp = x + xv.offset + n * xv.s[0] + h * xv.s[2];
  global const ST* yp = y + yv.offset + n * yv.s[0] + h * yv.s[2];
  global const ST* dyp = dy + dyv.offset + n * dyv.s[0] + h * dyv.s[2];
  global ST* dxp = dx + dxv.offset + n * dxv.s[0] + h * dxv.s[2];
  global const T* sp = scale + (n * C * H + h) * W;
  const long plane = H * W;
  const T factor = (T)2 * alpha * beta / (T)size;
  long wv = w0;
#ifdef XY_CPU
  if (xv.s[3] == 1 && yv.s[3] == 1 && dyv.s[3] == 1 && dxv.s[3] == 1) wv = w0 + (w1 - w0) / VW * VW;
#endif
  for (long c = 0; c < C; ++c) {
    long lo, hi;
    xy_lrn_holders(c, C, size, &lo, &hi);
    global const ST* dyc = dyp + c * dyv.s[1];
    global const ST* xc = xp + c * xv.s[1];
    global ST* dxc = dxp + c * dxv.s[1];
    for (long w = w0; w < wv; w += VW) {
      VT sum = 0;
      for (long j = lo; j <= hi; ++j)
        sum += XY_VLD(dyp + j * dyv.s[1], w) * XY_VLD(yp + j * yv.s[1], w) / VLOAD(0, sp + j * plane + w);
      const VT own = VLOAD(0, sp + c * plane + w);
      XY_VST(dxc, w, XY_VLD(dyc, w) * KNAME(lrn_neg_pow_v)(own, beta, mode) - factor * XY_VLD(xc, w) * sum);
    }
    for (long w = wv; w < w1; ++w) {
      T sum = 0;
      for (long j = lo; j <= hi; ++j)
        sum += XY_LD(dyp + j * dyv.s[1], w * dyv.s[3]) * XY_LD(yp + j * yv.s[1], w * yv.s[3]) / sp[j * plane + w];
      const T own = sp[c * plane + w];
      XY_ST(dxc, w * dxv.s[3],
            XY_LD(dyc, w * dyv.s[3]) * KNAME(lrn_neg_pow_s)(own, beta, mode) - factor * XY_LD(xc, w * xv.s[3]) * sum);
    }
  }
}

#undef XY_LRN_RUN
