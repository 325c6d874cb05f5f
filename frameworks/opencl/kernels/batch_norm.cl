/* nn::batch_norm, forward and backward (conventions in
 * include/xylem/plugin/plugin.hpp). Statistics and sums in T; mean and var
 * are in T (the "stat" dtype). Optional tensors (gamma, beta, dgamma,
 * dbeta) arrive as null pointers when absent.
 *
 * Channel statistics: one work-group per channel; two passes (mean, then
 * the mean of squared deviations), which stays accurate where
 * E[x^2] - E[x]^2 cancels. */

/* ---- batch norm: x, y, dy, dx [N, C, Sz]; per-channel tensors [C] --------- */

#define XY_AT3(v, n, c, s) ((v).offset + (n) * (v).s[0] + (c) * (v).s[1] + (s) * (v).s[2])

/* The walk of one channel's N*Sz elements by a work-group. GPUs: items
 * interleaved (XY_CHANNEL_LOOP, neighbouring items on neighbouring
 * elements). CPU devices run a group's items one after another, so there
 * each item takes a contiguous share of the (n, s) positions instead,
 * walked a row segment at a time in vectors where x is dense along Sz:
 * xy_channel_share and xy_next_segment. */
#ifndef XY_BATCH_NORM_ONCE
#define XY_BATCH_NORM_ONCE
typedef struct {
  long i, end; /* this item's positions [i, end) of n*Sz + s */
  long n, s;   /* position i */
} xy_share_walk;

inline xy_share_walk xy_channel_share(long N, long Sz) {
  const long total = N * Sz, items = get_local_size(0);
  const long chunk = (total + items - 1) / items;
  xy_share_walk w;
  w.i = min((long)get_local_id(0) * chunk, total);
  w.end = min(w.i + chunk, total);
  w.n = w.i / Sz;
  w.s = w.i % Sz;
  return w;
}

/* The next segment [*s0, *s1) of row *n; false when the share is done. */
inline bool xy_next_segment(xy_share_walk* w, long Sz, long* n, long* s0, long* s1) {
  if (w->i >= w->end) return false;
  const long len = min(w->end - w->i, Sz - w->s);
  *n = w->n;
  *s0 = w->s;
  *s1 = w->s + len;
  w->i += len;
  ++w->n;
  w->s = 0;
  return true;
}
#endif

/* The sum over this item's elements of channel c of x (squares: of (x -
 * mu)^2); the group then adds the items' sums. */
inline T KNAME(channel_sum)(global const ST* x, xy_view xv, long c, long N, long Sz, bool squares, T mu) {
  T sum = 0;
#ifdef XY_CPU
  xy_share_walk walk = xy_channel_share(N, Sz);
  long n, s0, s1;
  while (xy_next_segment(&walk, Sz, &n, &s0, &s1)) {
    global const ST* xr = x + xv.offset + n * xv.s[0] + c * xv.s[1];
    long s = s0;
    T part = 0;
    if (xv.s[2] == 1) {
      VT acc = 0;
      for (; s + VW <= s1; s += VW) {
        const VT v = XY_VLD(xr, s);
        acc += squares ? (v - mu) * (v - mu) : v;
      }
      part = XV(xy_hsum)(acc);
    }
    for (; s < s1; ++s) {
      const T v = XY_LD(xr, s * xv.s[2]);
      part += squares ? (v - mu) * (v - mu) : v;
    }
    sum += part;
  }
#else
  XY_CHANNEL_LOOP(n, s, N, Sz) {
    const T v = XY_LD(x, XY_AT3(xv, n, c, s));
    sum += squares ? (v - mu) * (v - mu) : v;
  }
#endif
  return sum;
}

/* One group per channel: mean and biased variance over (N, Sz). */
kernel void KNAME(batch_norm_stats)(global const ST* x, xy_view xv, long N, long Sz, global T* mean, xy_view mv,
                                    global T* var, xy_view vv, local T* tmp) {
  const long c = get_group_id(0);
  const T count = (T)(N * Sz);
  const T mu = XF(xy_group_sum)(KNAME(channel_sum)(x, xv, c, N, Sz, false, 0), tmp) / count;
  const T v = XF(xy_group_sum)(KNAME(channel_sum)(x, xv, c, N, Sz, true, mu), tmp) / count;
  if (get_local_id(0) == 0) {
    mean[mv.offset + c * mv.s[0]] = mu;
    var[vv.offset + c * vv.s[0]] = v;
  }
}

/* y = (x - mean)/sqrt(var + eps)*gamma + beta. An item takes a run of one
 * row (n, c) (xy_row_run, ops/row_runs.hpp): its channel's constants
 * once, then the run, in vectors on CPU devices where x and y are dense
 * along Sz. */
kernel void KNAME(batch_norm_apply)(global const ST* x, xy_view xv, global const T* mean, xy_view mv,
                                    global const T* var, xy_view vv, global const ST* gamma, xy_view gv,
                                    global const ST* beta, xy_view bv, global ST* y, xy_view yv, long C, long Sz,
                                    long per, long rows, int narrow, T eps) {
  long row, s0, s1, c;
  if (!xy_row_run(Sz, per, rows, narrow, &row, &s0, &s1)) return;
  const long n = xy_divide(row, C, &c, narrow);
  const T mu = mean[mv.offset + c * mv.s[0]];
  const T rs = (T)1 / sqrt(var[vv.offset + c * vv.s[0]] + eps);
  const T g = gamma ? XY_LD(gamma, gv.offset + c * gv.s[0]) : (T)1;
  const T b = beta ? XY_LD(beta, bv.offset + c * bv.s[0]) : (T)0;
  global const ST* xr = x + xv.offset + n * xv.s[0] + c * xv.s[1];
  global ST* yr = y + yv.offset + n * yv.s[0] + c * yv.s[1];
  long s = s0;
#ifdef XY_CPU
  if (xv.s[2] == 1 && yv.s[2] == 1) {
    for (; s + VW <= s1; s += VW) {
      VT v = (XY_VLD(xr, s) - mu) * rs;
      if (gamma) v = v * g;
      if (beta) v = v + b;
      XY_VST(yr, s, v);
    }
  }
#endif
  for (; s < s1; ++s) {
    T v = (XY_LD(xr, s * xv.s[2]) - mu) * rs;
    if (gamma) v = v * g;
    if (beta) v = v + b;
    XY_ST(yr, s * yv.s[2], v);
  }
}

/* One group per channel: dbeta = sum(dy), dgamma = sum(dy*xh); items walk
 * the channel as in channel_sum. */
kernel void KNAME(batch_norm_grad_params)(global const ST* x, xy_view xv, global const T* mean, xy_view mv,
                                          global const T* var, xy_view vv, global const ST* dy, xy_view dyv,
                                          long N, long Sz, T eps, global ST* dgamma, xy_view dgv, global ST* dbeta,
                                          xy_view dbv, local T* tmp) {
  const long c = get_group_id(0);
  const T mu = mean[mv.offset + c * mv.s[0]];
  const T rs = (T)1 / sqrt(var[vv.offset + c * vv.s[0]] + eps);
  T sum_gamma = 0, sum_beta = 0;
#ifdef XY_CPU
  xy_share_walk walk = xy_channel_share(N, Sz);
  long n, s0, s1;
  while (xy_next_segment(&walk, Sz, &n, &s0, &s1)) {
    global const ST* xr = x + xv.offset + n * xv.s[0] + c * xv.s[1];
    global const ST* dyr = dy + dyv.offset + n * dyv.s[0] + c * dyv.s[1];
    long s = s0;
    T part_gamma = 0, part_beta = 0;
    if (xv.s[2] == 1 && dyv.s[2] == 1) {
      VT acc_gamma = 0, acc_beta = 0;
      for (; s + VW <= s1; s += VW) {
        const VT d = XY_VLD(dyr, s);
        acc_gamma += d * ((XY_VLD(xr, s) - mu) * rs);
        acc_beta += d;
      }
      part_gamma = XV(xy_hsum)(acc_gamma);
      part_beta = XV(xy_hsum)(acc_beta);
    }
    for (; s < s1; ++s) {
      const T d = XY_LD(dyr, s * dyv.s[2]);
      part_gamma += d * ((XY_LD(xr, s * xv.s[2]) - mu) * rs);
      part_beta += d;
    }
    sum_gamma += part_gamma;
    sum_beta += part_beta;
  }
#else
  XY_CHANNEL_LOOP(n, s, N, Sz) {
    const T d = XY_LD(dy, XY_AT3(dyv, n, c, s));
    sum_gamma += d * ((XY_LD(x, XY_AT3(xv, n, c, s)) - mu) * rs);
    sum_beta += d;
  }
#endif
  sum_gamma = XF(xy_group_sum)(sum_gamma, tmp);
  sum_beta = XF(xy_group_sum)(sum_beta, tmp);
  if (get_local_id(0) == 0) {
    if (dgamma) XY_ST(dgamma, dgv.offset + c * dgv.s[0], sum_gamma);
    if (dbeta) XY_ST(dbeta, dbv.offset + c * dbv.s[0], sum_beta);
  }
}

/* training:  dx = gamma*rstd*(dy - dbeta/M - xh*dgamma/M), M = N*Sz
 * inference: dx = gamma*rstd*dy
 * Items take runs of rows as batch_norm_apply. */
kernel void KNAME(batch_norm_grad_input)(global const ST* x, xy_view xv, global const T* mean, xy_view mv,
                                         global const T* var, xy_view vv, global const ST* gamma, xy_view gv,
                                         global const ST* dgamma, xy_view dgv, global const ST* dbeta, xy_view dbv,
                                         global const ST* dy, xy_view dyv, global ST* dx, xy_view dxv, long C,
                                         long Sz, long per, long rows, int narrow, T eps, int training) {
  long row, s0, s1, c;
  if (!xy_row_run(Sz, per, rows, narrow, &row, &s0, &s1)) return;
  const long n = xy_divide(row, C, &c, narrow);
  const T rs = (T)1 / sqrt(var[vv.offset + c * vv.s[0]] + eps);
  const T scale = gamma ? XY_LD(gamma, gv.offset + c * gv.s[0]) * rs : rs;
  T mu = 0, mean_beta = 0, mean_gamma = 0;
  if (training) {
    const T m = (T)(rows / C * Sz);
    mu = mean[mv.offset + c * mv.s[0]];
    mean_beta = XY_LD(dbeta, dbv.offset + c * dbv.s[0]) / m;
    mean_gamma = XY_LD(dgamma, dgv.offset + c * dgv.s[0]) / m;
  }
  global const ST* xr = x + xv.offset + n * xv.s[0] + c * xv.s[1];
  global const ST* dyr = dy + dyv.offset + n * dyv.s[0] + c * dyv.s[1];
  global ST* dxr = dx + dxv.offset + n * dxv.s[0] + c * dxv.s[1];
  long s = s0;
#ifdef XY_CPU
  if (xv.s[2] == 1 && dyv.s[2] == 1 && dxv.s[2] == 1) {
    for (; s + VW <= s1; s += VW) {
      const VT d = XY_VLD(dyr, s);
      VT v;
      if (training) {
        const VT xh = (XY_VLD(xr, s) - mu) * rs;
        v = scale * (d - mean_beta - xh * mean_gamma);
      } else {
        v = scale * d;
      }
      XY_VST(dxr, s, v);
    }
  }
#endif
  for (; s < s1; ++s) {
    const T d = XY_LD(dyr, s * dyv.s[2]);
    T v;
    if (training) {
      const T xh = (XY_LD(xr, s * xv.s[2]) - mu) * rs;
      v = scale * (d - mean_beta - xh * mean_gamma);
    } else {
      v = scale * d;
    }
    XY_ST(dxr, s * dxv.s[2], v);
  }
}

#undef XY_AT3
