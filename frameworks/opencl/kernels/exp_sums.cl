/* The maximum of a slice and the sum of exp(x - max) over it: what softmax
 * and cross_entropy share (appended before either family's kernels, once
 * per typed pass; kernels/softmax.cl and kernels/cross_entropy.cl #undef
 * XY_EXP1 and XY_EXPV at their end). Sums accumulate in T (f32 for the
 * 16-bit types) per item and per vector lane, then pairwise across them. */

#if XY_IS_F32
#define XY_EXP1 xy_exp_fast_f
#define XY_EXPV xy_exp_fast_f16
#else
#define XY_EXP1 exp
#define XY_EXPV exp
#endif

/* The maximum of the slice and the sum of exp(x - max) over it. */
XY_FORCE_INLINE void KNAME(max_sum_exp)(global const ST* xr, long xs, long b, long e, long step, bool grouped,
                                        local T* tmp, T* max_out, T* sum_out) {
  T m = -INFINITY;
  long j = b;
#ifdef XY_CPU
  if (xs == 1 && step == 1) {
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
  if (xs == 1 && step == 1) {
    VT sv = (VT)(0);
    for (; j + VW <= e; j += VW) sv += XY_EXPV(XY_VLD(xr, j) - m);
    s = XF(xy_hsum_v)(sv);
  }
#endif
  for (; j < e; j += step) s += XY_EXP1(XY_LD(xr, j * xs) - m);
  if (grouped) s = XF(xy_group_sum)(s, tmp);
  *max_out = m;
  *sum_out = s;
}
