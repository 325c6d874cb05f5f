/* Convolution's data movement (ops/conv.cpp does the arithmetic as gemm):
 * im2col (the patches of one image and group as a matrix), col2im (its
 * adjoint, gathered: each input element sums the patch entries that read
 * it, no atomics) and the packing of strided or 16-bit tensors into dense
 * compute-type buffers and back. Column matrices are dense, in T.
 *
 * Within a group, patch row k = (c*R + r)*Sk + s for channel c of the
 * group, filter row r and column s; patch column j = p*Q + q. */

#define XY_AT4(v, a, b, c, d) ((v).offset + (a) * (v).s[0] + (b) * (v).s[1] + (c) * (v).s[2] + (d) * (v).s[3])

/* col = the patches of image n, channels [c0, c0 + rows/(R*Sk)) of x: as
 * [rows, P*Q] (col[k*PQ + j]) or, with transposed, [P*Q, rows]
 * (col[j*rows + k]); items walk the dense dimension of col. Padding reads
 * zero. */
kernel void KNAME(im2col)(global const ST* x, xy_view xv, long n, long c0, xy_window g, long R, long Sk, long rows,
                          int transposed, global T* col) {
  const long i = get_global_id(0);
  const long pq = g.P * g.Q;
  if (i >= rows * pq) return;
  const long k = transposed ? i % rows : i / pq;
  const long j = transposed ? i / rows : i % pq;
  const long s = k % Sk, r = k / Sk % R, c = c0 + k / Sk / R;
  const long p = j / g.Q, q = j % g.Q;
  const long h = p * g.sh - g.ph + r * g.dh, w = q * g.sw - g.pw + s * g.dw;
  T v = 0;
  if (h >= 0 && h < g.H && w >= 0 && w < g.W) v = XY_LD(x, XY_AT4(xv, n, c, h, w));
  col[i] = v;
}

/* dx[n, c0 + c, h, w] = the sum of col[k, j] over the patch entries (k, j)
 * that read (c, h, w); col is [channels*R*Sk, P*Q]. */
kernel void KNAME(col2im)(global const T* col, long channels, long R, long Sk, xy_window g, global ST* dx,
                          xy_view dxv, long n, long c0) {
  const long i = get_global_id(0);
  if (i >= channels * g.H * g.W) return;
  const long w = i % g.W, h = i / g.W % g.H, c = i / g.W / g.H;
  const long pq = g.P * g.Q;
  T sum = 0;
  for (long r = 0; r < R; ++r) {
    const long ph = h + g.ph - r * g.dh; /* = p*sh */
    if (ph < 0 || ph % g.sh != 0) continue;
    const long p = ph / g.sh;
    if (p >= g.P) continue;
    for (long s = 0; s < Sk; ++s) {
      const long qw = w + g.pw - s * g.dw;
      if (qw < 0 || qw % g.sw != 0) continue;
      const long q = qw / g.sw;
      if (q >= g.Q) continue;
      sum += col[((c * R + r) * Sk + s) * pq + p * g.Q + q];
    }
  }
  XY_ST(dx, XY_AT4(dxv, n, c0 + c, h, w), sum);
}

/* to (dense [d0, d1, d2, d3] in T) = the view `from`; d0 is implied by
 * total. */
kernel void KNAME(pack4)(global const ST* from, xy_view v, long d1, long d2, long d3, long total, global T* to) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long e3 = i % d3, e2 = i / d3 % d2, e1 = i / d3 / d2 % d1, e0 = i / d3 / d2 / d1;
  to[i] = XY_LD(from, XY_AT4(v, e0, e1, e2, e3));
}

/* The view `to` = from (dense [d0, d1, d2, d3] in T), rounded to ST. */
kernel void KNAME(unpack4)(global const T* from, long d1, long d2, long d3, long total, global ST* to, xy_view v) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long e3 = i % d3, e2 = i / d3 % d2, e1 = i / d3 / d2 % d1, e0 = i / d3 / d2 / d1;
  XY_ST(to, XY_AT4(v, e0, e1, e2, e3), from[i]);
}

#undef XY_AT4
