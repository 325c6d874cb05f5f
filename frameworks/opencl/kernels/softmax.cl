/* nn::softmax and log_softmax along axis 1 of [outer, r, inner] views and
 * their gradients, over kernels/exp_sums.cl's slice maximum and sum.
 *
 * Two kernels per op: _rows, one work-group per slice (the items split it,
 * see rows.cl), for long slices; _cols, one work-item per slice, for short
 * ones or many slices. Both run the same slice functions; `grouped` (a
 * constant at each call) says whether to combine across the group. The
 * slice is read three times (max, sum, write): the re-reads hit the cache
 * for any slice a group holds there.
 *
 * A program holds one op's two kernels: XY_SOFTMAX_VARIANT is 0 softmax,
 * 1 log_softmax, 2 softmax_grad, 3 log_softmax_grad (ops/softmax.cpp), so
 * the log mode is a constant. */
#define XY_LOG_MODE (XY_SOFTMAX_VARIANT % 2)

XY_FORCE_INLINE void KNAME(softmax_slice)(global const ST* xr, long xs, global ST* yr, long ys, long b, long e,
                                          long step, int log_mode, bool grouped, local T* tmp) {
  T m, s;
  KNAME(max_sum_exp)(xr, xs, b, e, step, grouped, tmp, &m, &s);
  long j = b;
  if (log_mode) {
    const T log_s = log(s);
#ifdef XY_CPU
    if (xs == 1 && ys == 1 && step == 1)
      for (; j + VW <= e; j += VW) XY_VST(yr, j, (XY_VLD(xr, j) - m) - log_s);
#endif
    for (; j < e; j += step) XY_ST(yr, j * ys, (XY_LD(xr, j * xs) - m) - log_s);
  } else {
#ifdef XY_CPU
    if (xs == 1 && ys == 1 && step == 1)
      for (; j + VW <= e; j += VW) XY_VST(yr, j, XY_EXPV(XY_VLD(xr, j) - m) / s);
#endif
    for (; j < e; j += step) XY_ST(yr, j * ys, XY_EXP1(XY_LD(xr, j * xs) - m) / s);
  }
}

/* softmax (not log) where y holds T exactly (f32, f64): the sum pass
 * stores each exp(x - max) in y and the last pass divides y in place, one
 * exponential an element instead of two. The 16-bit types take the
 * general path (a stored exp would round twice). */
XY_FORCE_INLINE void KNAME(softmax_slice_stored)(global const ST* xr, long xs, global ST* yr, long ys, long b,
                                                 long e, long step, bool grouped, local T* tmp) {
  T m = -INFINITY;
  long j = b;
  const bool dense = xs == 1 && ys == 1 && step == 1;
#ifdef XY_CPU
  if (dense) {
    VT mv = (VT)(-INFINITY);
    for (; j + VW <= e; j += VW) mv = XY_VMAX(mv, XY_VLD(xr, j));
    m = XF(xy_hmax_v)(mv);
  }
#endif
  for (; j < e; j += step) m = XY_VMAX(m, XY_LD(xr, j * xs));
  if (grouped) m = XF(xy_group_max)(m, tmp);

  T s = 0;
  j = b;
#ifdef XY_CPU
  if (dense) {
    VT sv = (VT)(0);
    for (; j + VW <= e; j += VW) {
      const VT ev = XY_EXPV(XY_VLD(xr, j) - m);
      XY_VST(yr, j, ev);
      sv += ev;
    }
    s = XF(xy_hsum_v)(sv);
  }
#endif
  for (; j < e; j += step) {
    const T ev = XY_EXP1(XY_LD(xr, j * xs) - m);
    XY_ST(yr, j * ys, ev);
    s += ev;
  }
  if (grouped) s = XF(xy_group_sum)(s, tmp);

  j = b;
#ifdef XY_CPU
  if (dense)
    for (; j + VW <= e; j += VW) XY_VST(yr, j, XY_VLD(yr, j) / s);
#endif
  for (; j < e; j += step) XY_ST(yr, j * ys, XY_LD(yr, j * ys) / s);
}

/* The softmax of one slice, by the cheapest exact path. */
XY_FORCE_INLINE void KNAME(softmax_any)(global const ST* xr, long xs, global ST* yr, long ys, long b, long e,
                                        long step, int log_mode, bool grouped, local T* tmp) {
  if ((!log_mode) & (sizeof(ST) == sizeof(T))) /* &, not &&: clang warns about && on constants */
    KNAME(softmax_slice_stored)(xr, xs, yr, ys, b, e, step, grouped, tmp);
  else
    KNAME(softmax_slice)(xr, xs, yr, ys, b, e, step, log_mode, grouped, tmp);
}

/* softmax: dx = y*(dy - sum(dy*y)); log_softmax: dx = dy - exp(y)*sum(dy). */
XY_FORCE_INLINE void KNAME(softmax_grad_slice)(global const ST* yr, long ys, global const ST* dyr, long dys,
                                               global ST* dxr, long dxs, long b, long e, long step, int log_mode,
                                               bool grouped, local T* tmp) {
  const bool dense = ys == 1 && dys == 1 && dxs == 1 && step == 1;
  T s = 0;
  long j = b;
#ifdef XY_CPU
  if (dense) {
    VT sv = (VT)(0);
    if (log_mode) {
      for (; j + VW <= e; j += VW) sv += XY_VLD(dyr, j);
    } else {
      for (; j + VW <= e; j += VW) sv += XY_VLD(dyr, j) * XY_VLD(yr, j);
    }
    s = XF(xy_hsum_v)(sv);
  }
#endif
  for (; j < e; j += step) s += log_mode ? XY_LD(dyr, j * dys) : XY_LD(dyr, j * dys) * XY_LD(yr, j * ys);
  if (grouped) s = XF(xy_group_sum)(s, tmp);

  j = b;
  if (log_mode) {
#ifdef XY_CPU
    if (dense)
      for (; j + VW <= e; j += VW) XY_VST(dxr, j, XY_VLD(dyr, j) - XY_EXPV(XY_VLD(yr, j)) * s);
#endif
    for (; j < e; j += step) XY_ST(dxr, j * dxs, XY_LD(dyr, j * dys) - XY_EXP1(XY_LD(yr, j * ys)) * s);
  } else {
#ifdef XY_CPU
    if (dense)
      for (; j + VW <= e; j += VW) {
        const VT y = XY_VLD(yr, j);
        XY_VST(dxr, j, y * (XY_VLD(dyr, j) - s));
      }
#endif
    for (; j < e; j += step) XY_ST(dxr, j * dxs, XY_LD(yr, j * ys) * (XY_LD(dyr, j * dys) - s));
  }
}

/* The slice (o, i) of a [outer, r, inner] view: its first element. */
#define XY_SLICE_BASE(v, slice, inner) ((v).offset + ((slice) / (inner)) * (v).s[0] + ((slice) % (inner)) * (v).s[2])

#if XY_SOFTMAX_VARIANT < 2
kernel void KNAME(softmax_rows)(global const ST* x, xy_view xv, global ST* y, xy_view yv, long inner, long r,
                                local T* tmp) {
  const long slice = get_group_id(0);
  XY_SHARE_BOUNDS(b, e, r);
  KNAME(softmax_any)(x + XY_SLICE_BASE(xv, slice, inner), xv.s[1], y + XY_SLICE_BASE(yv, slice, inner), yv.s[1], b,
                     e, XY_SHARE_STEP, XY_LOG_MODE, true, tmp);
}

kernel void KNAME(softmax_cols)(global const ST* x, xy_view xv, global ST* y, xy_view yv, long inner, long r,
                                long slices) {
  const long slice = get_global_id(0);
  if (slice >= slices) return;
  KNAME(softmax_any)(x + XY_SLICE_BASE(xv, slice, inner), xv.s[1], y + XY_SLICE_BASE(yv, slice, inner), yv.s[1], 0,
                     r, 1, XY_LOG_MODE, false, (local T*)0);
}
#else

kernel void KNAME(softmax_grad_rows)(global const ST* y, xy_view yv, global const ST* dy, xy_view dyv, global ST* dx,
                                     xy_view dxv, long inner, long r, local T* tmp) {
  const long slice = get_group_id(0);
  XY_SHARE_BOUNDS(b, e, r);
  KNAME(softmax_grad_slice)(y + XY_SLICE_BASE(yv, slice, inner), yv.s[1], dy + XY_SLICE_BASE(dyv, slice, inner),
                            dyv.s[1], dx + XY_SLICE_BASE(dxv, slice, inner), dxv.s[1], b, e, XY_SHARE_STEP, XY_LOG_MODE,
                            true, tmp);
}

kernel void KNAME(softmax_grad_cols)(global const ST* y, xy_view yv, global const ST* dy, xy_view dyv, global ST* dx,
                                     xy_view dxv, long inner, long r, long slices) {
  const long slice = get_global_id(0);
  if (slice >= slices) return;
  KNAME(softmax_grad_slice)(y + XY_SLICE_BASE(yv, slice, inner), yv.s[1], dy + XY_SLICE_BASE(dyv, slice, inner),
                            dyv.s[1], dx + XY_SLICE_BASE(dxv, slice, inner), dxv.s[1], 0, r, 1, XY_LOG_MODE, false,
                            (local T*)0);
}
#endif

#undef XY_LOG_MODE
#undef XY_EXP1
#undef XY_EXPV
