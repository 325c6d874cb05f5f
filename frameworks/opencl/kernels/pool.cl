/* Max and average pooling over NCHW views, forward and backward
 * (conventions in include/xylem/plugin/plugin.hpp). Backward gathers: each
 * input element sums the windows that cover it (no atomics,
 * deterministic). Max pooling's backward first records each window's first
 * maximum (max_pool2d_argmax), so the gather compares indices instead of
 * rescanning windows.
 *
 * Every kernel walks rows: a work-item takes a run of `per` neighbours
 * along the last axis of one row (n, c, a) of its output, [chunk*per,
 * chunk*per + per), item = row*chunks + chunk. The host picks per: a whole
 * row (or a long run) on CPU devices, so the item's position is divided out
 * once and the run is walked by adding strides; 1 on GPUs, neighbouring
 * items on neighbouring elements. Positions are divided out in 32-bit
 * arithmetic when every index fits (`narrow`, xy_divide in nn_common.cl):
 * a 64-bit division costs dozens of cycles, several per element before. */

#define XY_AT4(v, n, c, h, w) ((v).offset + (n) * (v).s[0] + (c) * (v).s[1] + (h) * (v).s[2] + (w) * (v).s[3])

/* This item's row (n, c, a) of an [N, C, A, B] walk and its run [b0, b1)
 * along B; false for items past the end. */
#ifndef XY_POOL_ONCE
#define XY_POOL_ONCE
inline bool xy_pool_run(long C, long A, long B, long per, long rows, int narrow, long* n, long* c, long* a, long* b0,
                        long* b1) {
  long row;
  if (!xy_row_run(B, per, rows, narrow, &row, b0, b1)) return false;
  const long nc = xy_divide(row, A, a, narrow);
  *n = xy_divide(nc, C, c, narrow);
  return true;
}

/* The outputs p whose window covers input row h: [lo, hi] (empty when lo >
 * hi), for window size k, stride st, padding pd and P outputs. Along a run
 * of inputs both bounds only grow: xy_cover_step moves them to the next
 * input without dividing. */
typedef struct {
  long lo, hi;         /* clamped to [0, P - 1] on use */
  long lo_rem, hi_rem; /* the remainders of their floor divisions */
} xy_cover;

/* floor(v / st) and its remainder in [0, st). */
inline long xy_floor_div(long v, long st, long* rem) {
  const long q = v >= 0 ? v / st : -((-v + st - 1) / st);
  *rem = v - q * st;
  return q;
}

/* lo = ceil((h + pd - k + 1) / st) = floor((h + pd - k + st) / st);
 * hi = floor((h + pd) / st). */
inline xy_cover xy_cover_at(long h, long k, long st, long pd) {
  xy_cover v;
  v.lo = xy_floor_div(h + pd - k + st, st, &v.lo_rem);
  v.hi = xy_floor_div(h + pd, st, &v.hi_rem);
  return v;
}

inline void xy_cover_step(xy_cover* v, long st) {
  if (++v->lo_rem == st) {
    v->lo_rem = 0;
    ++v->lo;
  }
  if (++v->hi_rem == st) {
    v->hi_rem = 0;
    ++v->hi;
  }
}
#endif

/* CPU devices, x and y dense along w, column stride 1 or 2: the outputs
 * whose windows lie inside the row go VW at a time, [*qa, *qb) of [q0, q1)
 * (empty otherwise). Stride 2 loads 2*VW inputs and keeps the even ones, so
 * the window reaches one element further. */
inline void KNAME(pool_vector_span)(xy_window g, long xs, long ys, long q0, long q1, long* qa, long* qb) {
  *qa = *qb = q0;
#ifdef XY_CPU
  if (xs != 1 || ys != 1 || (g.sw != 1 && g.sw != 2)) return;
  const long reach = g.kw + g.sw - 1; /* inputs a window's vector load touches past w0 */
  const long first = max(q0, (g.pw + g.sw - 1) / g.sw); /* w0 >= 0 */
  const long last = g.W + g.pw - reach;                 /* w0 + reach <= W: q*sw <= last */
  if (last < 0) return;
  *qa = min(first, q1);
  *qb = max(*qa, min(q1, last / g.sw + 1));
  *qb = *qa + (*qb - *qa) / VW * VW;
#endif
}

/* The inputs w0, w0 + sw, ..., of VW outputs' windows' column kx, sw 1 or 2. */
inline VT KNAME(pool_columns)(global const ST* row, long w, long sw) {
  if (sw == 1) return XY_VLD(row, w);
  const VT a = XY_VLD(row, w), b = XY_VLD(row, w + VW);
  return (VT)(a.even, b.even);
}

/* The window maximum, NaN propagating (a NaN stays the maximum); padding
 * never wins. */
kernel void KNAME(max_pool2d)(global const ST* x, xy_view xv, global ST* y, xy_view yv, xy_window g, long C,
                              long per, long rows, int narrow) {
  long n, c, p, q0, q1;
  if (!xy_pool_run(C, g.P, g.Q, per, rows, narrow, &n, &c, &p, &q0, &q1)) return;
  const long h0 = p * g.sh - g.ph;
  const long hb = max(h0, 0L), he = min(h0 + g.kh, g.H);
  global const ST* xp = x + XY_AT4(xv, n, c, 0, 0);
  const long yo = XY_AT4(yv, n, c, p, 0);
  long qa, qb;
  KNAME(pool_vector_span)(g, xv.s[3], yv.s[3], q0, q1, &qa, &qb);
  for (long q = qa; q < qb; q += VW) {
    /* fmax skips NaNs; a lane that saw one ends as NaN (the scalar path
     * keeps the NaN it met: NaN either way). */
    VT best = -INFINITY;
    VI nans = 0;
    for (long h = hb; h < he; ++h) {
      global const ST* xr = xp + h * xv.s[2];
      for (long kx = 0; kx < g.kw; ++kx) {
        const VT v = KNAME(pool_columns)(xr, q * g.sw - g.pw + kx, g.sw);
        best = fmax(best, v);
        nans |= v != v;
      }
    }
    XY_VST(y, yo + q, select(best, (VT)(NAN), nans));
  }
  for (long q = q0; q < q1; ++q) {
    if (q == qa) q = qb;
    if (q >= q1) break;
    const long w0 = q * g.sw - g.pw;
    const long wb = max(w0, 0L), we = min(w0 + g.kw, g.W);
    T best = -INFINITY;
    for (long h = hb; h < he; ++h) {
      global const ST* xr = xp + h * xv.s[2];
      for (long w = wb; w < we; ++w) {
        const T v = XY_LD(xr, w * xv.s[3]);
        best = (v > best || isnan(v)) ? v : best;
      }
    }
    XY_ST(y, yo + q * yv.s[3], best);
  }
}

/* arg[(row)*Q + q] = h*W + w of the window's first maximum (row-major; a
 * NaN is the maximum), dense over [N, C, P, Q]. */
kernel void KNAME(max_pool2d_argmax)(global const ST* x, xy_view xv, global int* arg, xy_window g, long C, long per,
                                     long rows, int narrow) {
  long n, c, p, q0, q1;
  if (!xy_pool_run(C, g.P, g.Q, per, rows, narrow, &n, &c, &p, &q0, &q1)) return;
  const long h0 = p * g.sh - g.ph;
  const long hb = max(h0, 0L), he = min(h0 + g.kh, g.H);
  global const ST* xp = x + XY_AT4(xv, n, c, 0, 0);
  global int* out = arg + ((n * C + c) * g.P + p) * g.Q;
  for (long q = q0; q < q1; ++q) {
    const long w0 = q * g.sw - g.pw;
    const long wb = max(w0, 0L), we = min(w0 + g.kw, g.W);
    T best = 0;
    long at = -1;
    for (long h = hb; h < he && !(at >= 0 && isnan(best)); ++h) {
      global const ST* xr = xp + h * xv.s[2];
      for (long w = wb; w < we; ++w) {
        const T v = XY_LD(xr, w * xv.s[3]);
        if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
          best = v;
          at = h * g.W + w;
          if (isnan(v)) break;
        }
      }
    }
    out[q] = (int)at;
  }
}

/* Backward on CPU devices for the common 2-wide, stride-2 windows along w
 * without padding there (f32, f16, bf16: VW 16), dy and dx dense along w:
 * input w of vector lane l reads output q = (w + l)/2, so VW inputs take
 * VW/2 outputs, each twice. [*wa, *wb) of [w0, w1): the even-aligned
 * inputs whose outputs exist (w < 2Q), VW at a time. */
inline void KNAME(pool_grad_span)(xy_window g, long ys, long xs, long w0, long w1, long* wa, long* wb) {
  *wa = *wb = w0;
#if defined(XY_CPU) && VW == 16
  if (g.sw != 2 || g.kw != 2 || g.pw != 0 || ys != 1 || xs != 1) return;
  *wa = min(w0 + (w0 & 1), w1);
  const long end = min(w1, 2 * g.Q);
  *wb = *wa + max(end - *wa, 0L) / VW * VW;
#endif
}
#ifndef XY_POOL_VLD8_ONCE
#define XY_POOL_VLD8_ONCE
/* Eight elements of a storage type as float8 (the halves those lanes use). */
inline float8 xy_vld8_f32(global const float* p, long i) { return vload8(0, p + i); }
inline float8 xy_vld8_f16(global const half* p, long i) { return vload_half8(0, p + i); }
inline float8 xy_vld8_bf16(global const ushort* p, long i) { return as_float8(convert_uint8(vload8(0, p + i)) << 16); }
#define XY_VLD8(p, i) XY_CAT(xy_vld8, SUF)((p), (i))
#endif
#if VW == 16
#define XY_DUP_LANES(v) shuffle((v), (uint16)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7))
#endif

/* dx[h, w] = sum of dy over the windows whose first maximum is (h, w): the
 * run's inputs [w0, w1) one at a time. */
inline void KNAME(max_pool_grad_span)(global const int* plane, global const ST* dyp, xy_view dyv, global ST* dx,
                                      long dxo, long dxs, xy_window g, long h, long p_lo, long p_hi, long w0,
                                      long w1) {
  xy_cover qw = xy_cover_at(w0, g.kw, g.sw, g.pw);
  for (long w = w0; w < w1; ++w, xy_cover_step(&qw, g.sw)) {
    const long q_lo = max(qw.lo, 0L), q_hi = min(qw.hi, g.Q - 1);
    const int self = (int)(h * g.W + w);
    T sum = 0;
    for (long p = p_lo; p <= p_hi; ++p) {
      for (long q = q_lo; q <= q_hi; ++q) {
        if (plane[p * g.Q + q] == self) sum += XY_LD(dyp, p * dyv.s[2] + q * dyv.s[3]);
      }
    }
    XY_ST(dx, dxo + w * dxs, sum);
  }
}

kernel void KNAME(max_pool2d_grad)(global const int* arg, global const ST* dy, xy_view dyv, global ST* dx,
                                   xy_view dxv, xy_window g, long C, long per, long rows, int narrow) {
  long n, c, h, w0, w1;
  if (!xy_pool_run(C, g.H, g.W, per, rows, narrow, &n, &c, &h, &w0, &w1)) return;
  const xy_cover ph = xy_cover_at(h, g.kh, g.sh, g.ph);
  const long p_lo = max(ph.lo, 0L), p_hi = min(ph.hi, g.P - 1);
  global const int* plane = arg + (n * C + c) * g.P * g.Q;
  global const ST* dyp = dy + XY_AT4(dyv, n, c, 0, 0);
  const long dxo = XY_AT4(dxv, n, c, h, 0);
  long wa, wb;
  KNAME(pool_grad_span)(g, dyv.s[3], dxv.s[3], w0, w1, &wa, &wb);
  KNAME(max_pool_grad_span)(plane, dyp, dyv, dx, dxo, dxv.s[3], g, h, p_lo, p_hi, w0, wa);
#if VW == 16
  for (long w = wa; w < wb; w += VW) {
    const int16 self = (int)(h * g.W + w) + VIOTA;
    VT sum = 0;
    for (long p = p_lo; p <= p_hi; ++p) {
      const long at = p * g.Q + w / 2;
      /* The last outputs of a row may sit at the end of the buffer: load
       * just the VW/2 that the lanes use. */
      const int16 first = XY_DUP_LANES(vload8(0, plane + at));
      const VT d = XY_DUP_LANES(XY_VLD8(dyp + p * dyv.s[2], w / 2));
      sum = sum + select((VT)(0), d, first == self);
    }
    XY_VST(dx, dxo + w, sum);
  }
#endif
  KNAME(max_pool_grad_span)(plane, dyp, dyv, dx, dxo, dxv.s[3], g, h, p_lo, p_hi, wb, w1);
}

/* The size of window (p, q) along one axis: the whole window, or its real
 * elements. */
#ifndef XY_POOL_DIVISOR_ONCE
#define XY_POOL_DIVISOR_ONCE
inline long xy_pool_extent(long p, long k, long st, long pd, long H, int count_pad) {
  if (count_pad) return k;
  const long h0 = p * st - pd;
  return min(h0 + k, H) - max(h0, 0L);
}
#endif

kernel void KNAME(avg_pool2d)(global const ST* x, xy_view xv, global ST* y, xy_view yv, xy_window g,
                              int count_pad, long C, long per, long rows, int narrow) {
  long n, c, p, q0, q1;
  if (!xy_pool_run(C, g.P, g.Q, per, rows, narrow, &n, &c, &p, &q0, &q1)) return;
  const long h0 = p * g.sh - g.ph;
  const long hb = max(h0, 0L), he = min(h0 + g.kh, g.H);
  const long rows_in = xy_pool_extent(p, g.kh, g.sh, g.ph, g.H, count_pad);
  global const ST* xp = x + XY_AT4(xv, n, c, 0, 0);
  const long yo = XY_AT4(yv, n, c, p, 0);
  long qa, qb;
  KNAME(pool_vector_span)(g, xv.s[3], yv.s[3], q0, q1, &qa, &qb);
  for (long q = qa; q < qb; q += VW) {
    VT sum = 0;
    for (long h = hb; h < he; ++h) {
      global const ST* xr = xp + h * xv.s[2];
      for (long kx = 0; kx < g.kw; ++kx) sum += KNAME(pool_columns)(xr, q * g.sw - g.pw + kx, g.sw);
    }
    XY_VST(y, yo + q, sum / (T)(rows_in * g.kw)); /* inside the row: whole windows along w */
  }
  for (long q = q0; q < q1; ++q) {
    if (q == qa) q = qb;
    if (q >= q1) break;
    const long w0 = q * g.sw - g.pw;
    const long wb = max(w0, 0L), we = min(w0 + g.kw, g.W);
    T sum = 0;
    for (long h = hb; h < he; ++h) {
      global const ST* xr = xp + h * xv.s[2];
      for (long w = wb; w < we; ++w) sum += XY_LD(xr, w * xv.s[3]);
    }
    XY_ST(y, yo + q * yv.s[3], sum / (T)(rows_in * xy_pool_extent(q, g.kw, g.sw, g.pw, g.W, count_pad)));
  }
}

/* dx[h, w] = sum over the windows covering (h, w) of dy/divisor: the
 * inputs [w0, w1) one at a time. */
inline void KNAME(avg_pool_grad_span)(global const ST* dyp, xy_view dyv, global ST* dx, long dxo, long dxs,
                                      xy_window g, int count_pad, long p_lo, long p_hi, long w0, long w1) {
  xy_cover qw = xy_cover_at(w0, g.kw, g.sw, g.pw);
  for (long w = w0; w < w1; ++w, xy_cover_step(&qw, g.sw)) {
    const long q_lo = max(qw.lo, 0L), q_hi = min(qw.hi, g.Q - 1);
    T sum = 0;
    for (long p = p_lo; p <= p_hi; ++p) {
      const long rows_in = xy_pool_extent(p, g.kh, g.sh, g.ph, g.H, count_pad);
      for (long q = q_lo; q <= q_hi; ++q) {
        sum += XY_LD(dyp, p * dyv.s[2] + q * dyv.s[3]) /
               (T)(rows_in * xy_pool_extent(q, g.kw, g.sw, g.pw, g.W, count_pad));
      }
    }
    XY_ST(dx, dxo + w * dxs, sum);
  }
}

kernel void KNAME(avg_pool2d_grad)(global const ST* dy, xy_view dyv, global ST* dx, xy_view dxv, xy_window g,
                                   int count_pad, long C, long per, long rows, int narrow) {
  long n, c, h, w0, w1;
  if (!xy_pool_run(C, g.H, g.W, per, rows, narrow, &n, &c, &h, &w0, &w1)) return;
  const xy_cover ph = xy_cover_at(h, g.kh, g.sh, g.ph);
  const long p_lo = max(ph.lo, 0L), p_hi = min(ph.hi, g.P - 1);
  global const ST* dyp = dy + XY_AT4(dyv, n, c, 0, 0);
  const long dxo = XY_AT4(dxv, n, c, h, 0);
  long wa, wb;
  KNAME(pool_grad_span)(g, dyv.s[3], dxv.s[3], w0, w1, &wa, &wb);
  KNAME(avg_pool_grad_span)(dyp, dyv, dx, dxo, dxv.s[3], g, count_pad, p_lo, p_hi, w0, wa);
#if VW == 16
  for (long w = wa; w < wb; w += VW) {
    VT sum = 0;
    for (long p = p_lo; p <= p_hi; ++p) {
      /* Whole windows along w (no padding there): the divisor is the
       * row's extent times 2. */
      const T divisor = (T)(xy_pool_extent(p, g.kh, g.sh, g.ph, g.H, count_pad) * 2);
      sum += XY_DUP_LANES(XY_VLD8(dyp + p * dyv.s[2], w / 2)) / divisor;
    }
    XY_VST(dx, dxo + w, sum);
  }
#endif
  KNAME(avg_pool_grad_span)(dyp, dyv, dx, dxo, dxv.s[3], g, count_pad, p_lo, p_hi, wb, w1);
}

#undef XY_AT4
#ifdef XY_DUP_LANES
#undef XY_DUP_LANES
#endif
