/* Local response normalisation across channels, forward and backward
 * (conventions in include/xylem/plugin/plugin.hpp), over NCHW views.
 * Channel c's window is [c - (size-1)/2, c + size/2], clipped to [0, C):
 *   scale = k + alpha/size * sum_window x^2,   y = x * scale^-beta
 *   dx = dy*scale^-beta - 2*alpha*beta/size * x * sum_{c' whose window
 *        holds c} dy*y/scale
 * One work-item per element; backward reads each channel's scale from a
 * first pass (lrn_scale) instead of recomputing size windows per element. */

#define XY_AT4(v, n, c, h, w) ((v).offset + (n) * (v).s[0] + (c) * (v).s[1] + (h) * (v).s[2] + (w) * (v).s[3])

/* Item i of an [N, C, H, W] walk -> (n, c, h, w). */
#define XY_NCHW(i, n, c, h, w, C, H, W) \
  const long w = (i) % (W);             \
  const long h = (i) / (W) % (H);       \
  const long c = (i) / (W) / (H) % (C); \
  const long n = (i) / (W) / (H) / (C)

inline T KNAME(lrn_scale_at)(global const ST* x, xy_view xv, long n, long c, long h, long w, long C, long size,
                             T alpha, T k) {
  const long lo = max(c - (size - 1) / 2, 0L), hi = min(c + size / 2, C - 1);
  T sum = 0;
  for (long j = lo; j <= hi; ++j) {
    const T v = XY_LD(x, XY_AT4(xv, n, j, h, w));
    sum += v * v;
  }
  return k + alpha / (T)size * sum;
}

kernel void KNAME(lrn)(global const ST* x, xy_view xv, global ST* y, xy_view yv, long C, long H, long W, long total,
                       long size, T alpha, T beta, T k) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCHW(i, n, c, h, w, C, H, W);
  const T scale = KNAME(lrn_scale_at)(x, xv, n, c, h, w, C, size, alpha, k);
  XY_ST(y, XY_AT4(yv, n, c, h, w), XY_LD(x, XY_AT4(xv, n, c, h, w)) * pow(scale, -beta));
}

/* scale, dense over [N, C, H, W], for lrn_grad. */
kernel void KNAME(lrn_scale)(global const ST* x, xy_view xv, global T* scale, long C, long H, long W, long total,
                             long size, T alpha, T k) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCHW(i, n, c, h, w, C, H, W);
  scale[i] = KNAME(lrn_scale_at)(x, xv, n, c, h, w, C, size, alpha, k);
}

kernel void KNAME(lrn_grad)(global const ST* x, xy_view xv, global const ST* y, xy_view yv, global const ST* dy,
                            xy_view dyv, global const T* scale, global ST* dx, xy_view dxv, long C, long H, long W,
                            long total, long size, T alpha, T beta) {
  const long i = get_global_id(0);
  if (i >= total) return;
  XY_NCHW(i, n, c, h, w, C, H, W);
  /* c' whose window [c' - (size-1)/2, c' + size/2] holds c. */
  const long lo = max(c - size / 2, 0L), hi = min(c + (size - 1) / 2, C - 1);
  const long plane = H * W;
  global const T* column = scale + (i - c * plane); /* channel 0 of (n, h, w) */
  T sum = 0;
  for (long j = lo; j <= hi; ++j) {
    sum += XY_LD(dy, XY_AT4(dyv, n, j, h, w)) * XY_LD(y, XY_AT4(yv, n, j, h, w)) / column[j * plane];
  }
  const T own = scale[i];
  const T v = XY_LD(dy, XY_AT4(dyv, n, c, h, w)) * pow(own, -beta) -
              (T)2 * alpha * beta / (T)size * XY_LD(x, XY_AT4(xv, n, c, h, w)) * sum;
  XY_ST(dx, XY_AT4(dxv, n, c, h, w), v);
}

#undef XY_AT4
#undef XY_NCHW
