/* Max and average pooling over NCHW views, forward and backward
 * (conventions in include/xylem/plugin/plugin.hpp). One work-item per
 * output element forward; backward gathers, one work-item per input
 * element summing the windows that cover it (no atomics, deterministic).
 * Max pooling's backward first records each window's first maximum
 * (max_pool2d_argmax), so the gather compares indices instead of
 * rescanning windows. */

#define XY_AT4(v, n, c, h, w) ((v).offset + (n) * (v).s[0] + (c) * (v).s[1] + (h) * (v).s[2] + (w) * (v).s[3])

/* Item i of an [N, C, A, B] walk -> (n, c, a, b); nc = n*C + c. */
#define XY_NCAB(i, nc, n, c, a, b, C, A, B) \
  const long b = (i) % (B);                 \
  const long nc = (i) / (B) / (A);          \
  const long a = (i) / (B) % (A);           \
  const long c = nc % (C);                  \
  const long n = nc / (C)

/* The outputs p whose window covers input row h: [*lo, *hi] (empty when
 * lo > hi), for window size k, stride st, padding pd and P outputs. */
#ifndef XY_POOL_ONCE
#define XY_POOL_ONCE
inline void xy_covering(long h, long k, long st, long pd, long P, long* lo, long* hi) {
  const long first = h + pd - k + 1; /* p*st >= first */
  *lo = first <= 0 ? 0 : (first + st - 1) / st;
  *hi = min(P - 1, (h + pd) / st);
}
#endif

/* The window maximum, NaN propagating; padding never wins. */
kernel void KNAME(max_pool2d)(global const ST* x, xy_view xv, global ST* y, xy_view yv, xy_window g, long C,
                              long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCAB(i, nc, n, c, p, q, C, g.P, g.Q);
  const long h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
  T best = -INFINITY;
  for (long h = max(h0, 0L); h < min(h0 + g.kh, g.H); ++h) {
    for (long w = max(w0, 0L); w < min(w0 + g.kw, g.W); ++w) {
      const T v = XY_LD(x, XY_AT4(xv, n, c, h, w));
      if (v > best || isnan(v)) best = v;
      if (isnan(best)) break;
    }
  }
  XY_ST(y, XY_AT4(yv, n, c, p, q), best);
}

/* arg[i] = h*W + w of output i's first maximum (row-major; a NaN is the
 * maximum), dense over [N, C, P, Q]. */
kernel void KNAME(max_pool2d_argmax)(global const ST* x, xy_view xv, global int* arg, xy_window g, long C,
                                     long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCAB(i, nc, n, c, p, q, C, g.P, g.Q);
  const long h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
  T best = 0;
  long at = -1;
  for (long h = max(h0, 0L); h < min(h0 + g.kh, g.H) && !(at >= 0 && isnan(best)); ++h) {
    for (long w = max(w0, 0L); w < min(w0 + g.kw, g.W); ++w) {
      const T v = XY_LD(x, XY_AT4(xv, n, c, h, w));
      if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
        best = v;
        at = h * g.W + w;
        if (isnan(v)) break;
      }
    }
  }
  arg[i] = (int)at;
}

/* dx[h, w] = sum of dy over the windows whose first maximum is (h, w). */
kernel void KNAME(max_pool2d_grad)(global const int* arg, global const ST* dy, xy_view dyv, global ST* dx,
                                   xy_view dxv, xy_window g, long C, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCAB(i, nc, n, c, h, w, C, g.H, g.W);
  long p_lo, p_hi, q_lo, q_hi;
  xy_covering(h, g.kh, g.sh, g.ph, g.P, &p_lo, &p_hi);
  xy_covering(w, g.kw, g.sw, g.pw, g.Q, &q_lo, &q_hi);
  const int self = (int)(h * g.W + w);
  global const int* plane = arg + nc * g.P * g.Q;
  T sum = 0;
  for (long p = p_lo; p <= p_hi; ++p) {
    for (long q = q_lo; q <= q_hi; ++q) {
      if (plane[p * g.Q + q] == self) sum += XY_LD(dy, XY_AT4(dyv, n, c, p, q));
    }
  }
  XY_ST(dx, XY_AT4(dxv, n, c, h, w), sum);
}

/* The divisor of window (p, q): the whole window, or its real elements. */
#ifndef XY_POOL_DIVISOR_ONCE
#define XY_POOL_DIVISOR_ONCE
inline long xy_pool_divisor(const xy_window* g, long p, long q, int count_pad) {
  if (count_pad) return g->kh * g->kw;
  const long h0 = p * g->sh - g->ph, w0 = q * g->sw - g->pw;
  const long rows = min(h0 + g->kh, g->H) - max(h0, 0L);
  const long cols = min(w0 + g->kw, g->W) - max(w0, 0L);
  return rows * cols;
}
#endif

kernel void KNAME(avg_pool2d)(global const ST* x, xy_view xv, global ST* y, xy_view yv, xy_window g, long C,
                              long total, int count_pad) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCAB(i, nc, n, c, p, q, C, g.P, g.Q);
  const long h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
  T sum = 0;
  for (long h = max(h0, 0L); h < min(h0 + g.kh, g.H); ++h) {
    for (long w = max(w0, 0L); w < min(w0 + g.kw, g.W); ++w) sum += XY_LD(x, XY_AT4(xv, n, c, h, w));
  }
  XY_ST(y, XY_AT4(yv, n, c, p, q), sum / (T)xy_pool_divisor(&g, p, q, count_pad));
}

/* dx[h, w] = sum over the windows covering (h, w) of dy/divisor. */
kernel void KNAME(avg_pool2d_grad)(global const ST* dy, xy_view dyv, global ST* dx, xy_view dxv, xy_window g, long C,
                                   long total, int count_pad) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCAB(i, nc, n, c, h, w, C, g.H, g.W);
  long p_lo, p_hi, q_lo, q_hi;
  xy_covering(h, g.kh, g.sh, g.ph, g.P, &p_lo, &p_hi);
  xy_covering(w, g.kw, g.sw, g.pw, g.Q, &q_lo, &q_hi);
  T sum = 0;
  for (long p = p_lo; p <= p_hi; ++p) {
    for (long q = q_lo; q <= q_hi; ++q)
      sum += XY_LD(dy, XY_AT4(dyv, n, c, p, q)) / (T)xy_pool_divisor(&g, p, q, count_pad);
  }
  XY_ST(dx, XY_AT4(dxv, n, c, h, w), sum);
}

#undef XY_AT4
#undef XY_NCAB
