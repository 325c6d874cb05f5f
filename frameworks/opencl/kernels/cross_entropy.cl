/* nn::cross_entropy and its gradient over the rows of [N, C] logits, one
 * work-group per row, over kernels/exp_sums.cl's row maximum and sum. */

/* cross_entropy: loss[n] = logsumexp(x[n, :]) - x[n, target[n]], 0 for a
 * target equal to ignore, NaN for one outside [0, C). One work-group per
 * row. */
kernel void KNAME(cross_entropy)(global const ST* x, xy_view xv, global const long* target, xy_view tv,
                                 global ST* loss, xy_view lv, long C, long ignore, local T* tmp) {
  const long n = get_group_id(0);
  const long t = target[tv.offset + n * tv.s[0]];
  /* An ignored row still meets the group's barriers (over an empty share):
   * PoCL 3.1 looped forever in a kernel that could return before them, even
   * where no item did (C >= 1024, so two items or more a group). */
  const bool ignored = t == ignore;
  global const ST* xr = x + xv.offset + n * xv.s[0];
  XY_SHARE_BOUNDS(b, e, C);
  T m, s;
  KNAME(max_sum_exp)(xr, xv.s[1], b, ignored ? b : e, XY_SHARE_STEP, true, tmp, &m, &s);
  if (get_local_id(0) == 0) {
    const T value = ignored ? (T)0 : (t < 0 || t >= C) ? (T)NAN : log(s) + (m - XY_LD(xr, t * xv.s[1]));
    XY_ST(loss, lv.offset + n * lv.s[0], value);
  }
}

/* cross_entropy_grad: dx[n, c] = (softmax(x[n])[c] - (c == target[n])) *
 * dloss[n]; 0 for the whole row when its target is ignore, else NaN when
 * it is outside [0, C). */
kernel void KNAME(cross_entropy_grad)(global const ST* x, xy_view xv, global const long* target, xy_view tv,
                                      global const ST* dloss, xy_view dlv, global ST* dx, xy_view dxv, long C,
                                      long ignore, local T* tmp) {
  const long n = get_group_id(0);
  global const ST* xr = x + xv.offset + n * xv.s[0];
  global ST* dxr = dx + dxv.offset + n * dxv.s[0];
  const long xs = xv.s[1], dxs = dxv.s[1];
  XY_SHARE_BOUNDS(b, e, C);
  const long t = target[tv.offset + n * tv.s[0]];
  const bool ignored = t == ignore;  /* meets the barriers all the same: see cross_entropy */
  T m, s;
  KNAME(max_sum_exp)(xr, xs, b, ignored ? b : e, XY_SHARE_STEP, true, tmp, &m, &s);
  if (ignored) {
    for (long j = b; j < e; j += XY_SHARE_STEP) XY_ST(dxr, j * dxs, (T)0);
    return;
  }
  const T g = (t < 0 || t >= C) ? (T)NAN : XY_LD(dloss, dlv.offset + n * dlv.s[0]);
  long j = b;
#ifdef XY_CPU
  if (xs == 1 && dxs == 1) {
    for (; j + VW <= e; j += VW) {
      const VT onehot = XY_PASTE(convert_, VT)(((VI)(j) + VIOTA == (VI)(t)) & (VI)(1));
      XY_VST(dxr, j, (XY_EXPV(XY_VLD(xr, j) - m) / s - onehot) * g);
    }
  }
#endif
  for (; j < e; j += XY_SHARE_STEP)
    XY_ST(dxr, j * dxs, (XY_EXP1(XY_LD(xr, j * xs) - m) / s - (j == t ? (T)1 : (T)0)) * g);
}

#undef XY_EXP1
#undef XY_EXPV
