/* Convolution's data movement (ops/conv2d.cpp does the arithmetic as gemm):
 * im2col (the patches of one image and group as a matrix), col2im (its
 * adjoint, gathered: each input element sums the patch entries that read
 * it, no atomics) and the packing of strided or 16-bit tensors into dense
 * compute-type buffers and back. Column matrices are dense, in T.
 *
 * Within a group, patch row k = (c*R + r)*Sk + s for channel c of the
 * group, filter row r and column s; patch column j = p*Q + q.
 *
 * Work-items take runs along a row (xy_row_run in nn_common.cl, sized by
 * ops/row_runs.hpp): an item divides its position out once, then walks its
 * run by adding strides, where one division per element used to cost more
 * than the gemm that follows. */

#define XY_AT4(v, a, b, c, d) ((v).offset + (a) * (v).s[0] + (b) * (v).s[1] + (c) * (v).s[2] + (d) * (v).s[3])

#ifndef XY_CONV_ONCE
#define XY_CONV_ONCE
/* The first q in [0, Q] whose input column q*st + base is >= bound. */
inline long xy_first_at_least(long base, long st, long bound, long Q) {
  const long need = bound - base; /* q*st >= need */
  if (need <= 0) return 0;
  return min((need + st - 1) / st, Q);
}
#endif

/* col [rows, P*Q] = the patches of image n, channels [c0, c0 + rows/(R*Sk))
 * of x. An item fills a run of one patch row k within output row p:
 * zeros where the window hangs over the padding, a strided copy of x's row
 * between. */
kernel void KNAME(im2col)(global const ST* x, xy_view xv, long n, long c0, xy_window g, long R, long Sk,
                          long per, long items_rows, int narrow, global T* col) {
  long row, q0, q1;
  if (!xy_row_run(g.Q, per, items_rows, narrow, &row, &q0, &q1)) return;
  long p, s, r;
  const long k = xy_divide(row, g.P, &p, narrow);
  const long cr = xy_divide(k, Sk, &s, narrow);
  const long c = c0 + xy_divide(cr, R, &r, narrow);
  global T* out = col + k * g.P * g.Q + p * g.Q;
  const long h = p * g.sh - g.ph + r * g.dh;
  if (h < 0 || h >= g.H) {
    for (long q = q0; q < q1; ++q) out[q] = 0;
    return;
  }
  /* Input column of q: q*sw + base; real for q in [qa, qb). */
  const long base = s * g.dw - g.pw;
  const long qa = max(q0, xy_first_at_least(base, g.sw, 0, g.Q));
  const long qb = max(qa, min(q1, xy_first_at_least(base, g.sw, g.W, g.Q)));
  long q = q0;
  for (; q < qa; ++q) out[q] = 0;
  global const ST* xr = x + XY_AT4(xv, n, c, h, 0);
  const long step = g.sw * xv.s[3];
  if (step == 1) {
    xr += base;
    for (; q < qb; ++q) out[q] = XY_LD(xr, q);
  } else {
    for (; q < qb; ++q) out[q] = XY_LD(xr, (q * g.sw + base) * xv.s[3]);
  }
  for (; q < q1; ++q) out[q] = 0;
}

/* The same patches transposed, col [P*Q, rows] (col[j*rows + k]): an item
 * fills a run of the patch row k of one output position j, walking (c, r,
 * s) without dividing. */
kernel void KNAME(im2col_t)(global const ST* x, xy_view xv, long n, long c0, xy_window g, long R, long Sk, long rows,
                            long per, int narrow, global T* col) {
  long j, k0, k1;
  if (!xy_row_run(rows, per, g.P * g.Q, narrow, &j, &k0, &k1)) return;
  long q, s, r;
  const long p = xy_divide(j, g.Q, &q, narrow);
  const long cr = xy_divide(k0, Sk, &s, narrow);
  long c = xy_divide(cr, R, &r, narrow);
  const long h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
  global T* out = col + j * rows;
  global const ST* xc = x + XY_AT4(xv, n, c0 + c, 0, 0);
  for (long k = k0; k < k1; ++k) {
    const long h = h0 + r * g.dh, w = w0 + s * g.dw;
    out[k] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? XY_LD(xc, h * xv.s[2] + w * xv.s[3]) : (T)0;
    if (++s == Sk) {
      s = 0;
      if (++r == R) {
        r = 0;
        xc += xv.s[1];
      }
    }
  }
}

/* dx[n, c0 + c, h, w] = the sum of col[k, j] over the patch entries (k, j)
 * that read (c, h, w); col is [channels*R*Sk, P*Q]. An item takes a run of
 * at most XY_COL2IM_RUN elements of one input row (c, h), summed in
 * registers: which filter rows r reach that row, and from which output row
 * p, it settles once per run; then for each filter column s the run's
 * columns that it reaches, in the order (r, s) every element sums in. */
#ifdef XY_CPU
#define XY_COL2IM_RUN 64 /* ops/conv2d.cpp passes runs of at most this */
#else
#define XY_COL2IM_RUN 1 /* GPUs: an element per item (ops/row_runs.hpp) */
#endif
kernel void KNAME(col2im)(global const T* col, long channels, long R, long Sk, xy_window g, global ST* dx,
                          xy_view dxv, long n, long c0, long per, int narrow) {
  long row, w0, w1;
  if (!xy_row_run(g.W, per, channels * g.H, narrow, &row, &w0, &w1)) return;
  long h;
  const long c = xy_divide(row, g.H, &h, narrow);
  const long pq = g.P * g.Q;
  T acc[XY_COL2IM_RUN];
  for (long i = 0; i < w1 - w0; ++i) acc[i] = 0;
  for (long r = 0; r < R; ++r) {
    const long ph = h + g.ph - r * g.dh; /* = p*sh */
    if (ph < 0 || ph % g.sh != 0) continue;
    const long p = ph / g.sh;
    if (p >= g.P) continue;
    global const T* cp = col + (c * R + r) * Sk * pq + p * g.Q;
    for (long s = 0; s < Sk; ++s, cp += pq) {
      const long base = g.pw - s * g.dw; /* input column w reads q*sw = w + base */
      long w = max(w0, -base);
      if (g.sw == 1) {
        const long end = min(w1, g.Q - base);
        for (; w < end; ++w) acc[w - w0] += cp[w + base];
      } else {
        long rem;
        long q = xy_divide(w + base, g.sw, &rem, narrow);
        if (rem != 0) {
          w += g.sw - rem;
          ++q;
        }
        for (; w < w1 && q < g.Q; w += g.sw, ++q) acc[w - w0] += cp[q];
      }
    }
  }
  const long dxo = XY_AT4(dxv, n, c0 + c, h, 0);
  for (long w = w0; w < w1; ++w) XY_ST(dx, dxo + w * dxv.s[3], acc[w - w0]);
}
#undef XY_COL2IM_RUN

/* to (dense [d0, d1, d2, d3] in T) = the view `from`: an item copies a run
 * of one row (e0, e1, e2). */
kernel void KNAME(pack4)(global const ST* from, xy_view v, long d1, long d2, long d3, long per, long rows, int narrow,
                         global T* to) {
  long row, e3a, e3b, e2, e1;
  if (!xy_row_run(d3, per, rows, narrow, &row, &e3a, &e3b)) return;
  const long e0 = xy_divide(xy_divide(row, d2, &e2, narrow), d1, &e1, narrow);
  global const ST* src = from + XY_AT4(v, e0, e1, e2, 0);
  global T* dst = to + row * d3;
  for (long e3 = e3a; e3 < e3b; ++e3) dst[e3] = XY_LD(src, e3 * v.s[3]);
}

/* The view `to` = from (dense [d0, d1, d2, d3] in T), rounded to ST. */
kernel void KNAME(unpack4)(global const T* from, long d1, long d2, long d3, long per, long rows, int narrow,
                           global ST* to, xy_view v) {
  long row, e3a, e3b, e2, e1;
  if (!xy_row_run(d3, per, rows, narrow, &row, &e3a, &e3b)) return;
  const long e0 = xy_divide(xy_divide(row, d2, &e2, narrow), d1, &e1, narrow);
  global const T* src = from + row * d3;
  const long o = XY_AT4(v, e0, e1, e2, 0);
  for (long e3 = e3a; e3 < e3b; ++e3) XY_ST(to, o + e3 * v.s[3], src[e3]);
}

#undef XY_AT4
