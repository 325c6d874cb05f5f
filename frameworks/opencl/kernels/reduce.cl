/* math::reduce: y[o, i] = reduce over j of x[o, j, i], x a [outer, r,
 * inner] view, y [outer, inner] (i64 for argmax and argmin). As softmax:
 * _rows, one work-group per output (its items split the r elements, see
 * rows.cl), for long reductions; _cols, one work-item per output. A
 * program holds one reduction: its code (math.h's XY_RED_*) is
 * XY_REDUCE_CODE, a constant the switches fold, so each kernel compiles
 * that case alone.
 *
 * Sums accumulate in T (f32 for the 16-bit types): per vector lane and in
 * blocks of XY_BLOCK elements per item, then pairwise across items, so the
 * error grows with the block size and log(r), not with r. var is two-pass
 * (the mean first, then the squared deviations from it); r - correction
 * <= 0 divides by 0 (Inf, or NaN for 0/0). */

#define XY_BLOCK 1024

/* The sum over the slice of f(x) (f: identity, or the squared deviation
 * from `mean` when `squares`), this item's share, combined when grouped. */
XY_FORCE_INLINE T KNAME(slice_sum)(global const ST* xr, long xs, long b, long e, long step, bool squares, T mean,
                                   bool grouped, local T* tmp) {
  T total = 0;
  long j = b;
#ifdef XY_CPU
  if (xs == 1 && step == 1) {
    VT acc = (VT)(0);
    for (; j + VW <= e; j += VW) {
      const VT v = XY_VLD(xr, j);
      acc += squares ? (v - mean) * (v - mean) : v;
    }
    total = XF(xy_hsum_v)(acc);
  }
#endif
  while (j < e) {
    const long block_end = min(e, j + XY_BLOCK * step);
    T part = 0;
    for (; j < block_end; j += step) {
      const T v = XY_LD(xr, j * xs);
      part += squares ? (v - mean) * (v - mean) : v;
    }
    total += part;
  }
  return grouped ? XF(xy_group_sum)(total, tmp) : total;
}

/* The NaN-propagating maximum (or minimum) over the slice. */
XY_FORCE_INLINE T KNAME(slice_extreme)(global const ST* xr, long xs, long b, long e, long step, bool is_max,
                                       bool grouped, local T* tmp) {
  T m = is_max ? -INFINITY : INFINITY;
  long j = b;
#ifdef XY_CPU
  if (xs == 1 && step == 1) {
    VT mv = (VT)(m);
    for (; j + VW <= e; j += VW) mv = is_max ? XY_VMAX(mv, XY_VLD(xr, j)) : XY_VMIN(mv, XY_VLD(xr, j));
    m = is_max ? XF(xy_hmax_v)(mv) : XF(xy_hmin_v)(mv);
  }
#endif
  for (; j < e; j += step) m = is_max ? XY_VMAX(m, XY_LD(xr, j * xs)) : XY_VMIN(m, XY_LD(xr, j * xs));
  if (!grouped) return m;
  /* The group minimum is minus the maximum of the negations. */
  return is_max ? XF(xy_group_max)(m, tmp) : -XF(xy_group_max)(-m, tmp);
}

/* Whether (v, j) beats the best so far (best, at): a NaN beats any number
 * and the first NaN stays; among numbers the strictly greater (is_max) or
 * smaller wins, ties to the lower index. at < 0: no best yet. */
XY_FORCE_INLINE bool KNAME(beats)(T v, long j, T best, long at, bool is_max) {
  if (j < 0) return false;
  if (at < 0) return true;
  if (isnan(best)) return isnan(v) && j < at;
  if (isnan(v)) return true;
  if (v == best) return j < at;
  return is_max ? v > best : v < best;
}

/* The index (along r) of the first extreme over the slice. */
XY_FORCE_INLINE long KNAME(slice_arg)(global const ST* xr, long xs, long b, long e, long step, bool is_max,
                                      bool grouped, local T* tmp, local long* itmp) {
  T best = 0;
  long at = -1;
  for (long j = b; j < e; j += step) {
    const T v = XY_LD(xr, j * xs);
    if (KNAME(beats)(v, j, best, at, is_max)) {
      best = v;
      at = j;
    }
  }
  if (!grouped) return at;
  const size_t lid = get_local_id(0);
  tmp[lid] = best;
  itmp[lid] = at;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t w = get_local_size(0) / 2; w > 0; w /= 2) {
    if (lid < w && KNAME(beats)(tmp[lid + w], itmp[lid + w], tmp[lid], itmp[lid], is_max)) {
      tmp[lid] = tmp[lid + w];
      itmp[lid] = itmp[lid + w];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return itmp[0];
}

/* One output: the reduction of the slice, written by the group's first
 * item (or the item itself). */
XY_FORCE_INLINE void KNAME(reduce_slice)(int code, global const ST* xr, long xs, long r, long b, long e, long step,
                                         bool grouped, local T* tmp, local long* itmp, global ST* y, global long* yi,
                                         long yo, long correction) {
  const bool writer = !grouped || get_local_id(0) == 0;
  switch (code) {
    case XY_RED_SUM:
    case XY_RED_MEAN: {
      const T sum = KNAME(slice_sum)(xr, xs, b, e, step, false, 0, grouped, tmp);
      if (writer) XY_ST(y, yo, code == XY_RED_MEAN ? sum / (T)r : sum);
      break;
    }
    case XY_RED_VAR: {
      const T mean = KNAME(slice_sum)(xr, xs, b, e, step, false, 0, grouped, tmp) / (T)r;
      const T squares = KNAME(slice_sum)(xr, xs, b, e, step, true, mean, grouped, tmp);
      if (writer) XY_ST(y, yo, squares / (T)max(r - correction, 0L));
      break;
    }
    case XY_RED_MAX:
    case XY_RED_MIN: {
      const T m = KNAME(slice_extreme)(xr, xs, b, e, step, code == XY_RED_MAX, grouped, tmp);
      if (writer) XY_ST(y, yo, m);
      break;
    }
    case XY_RED_ARGMAX:
    case XY_RED_ARGMIN: {
      const long at = KNAME(slice_arg)(xr, xs, b, e, step, code == XY_RED_ARGMAX, grouped, tmp, itmp);
      if (writer) yi[yo] = at;
      break;
    }
    default: /* the host builds no program for unknown codes; never leave y unwritten */
      if (writer) XY_ST(y, yo, (T)NAN);
  }
}

/* The output slice (o, i): x's first element and y's element. */
#define XY_REDUCE_X(slice) (x + xv.offset + ((slice) / inner) * xv.s[0] + ((slice) % inner) * xv.s[2])
#define XY_REDUCE_Y(slice) (yv.offset + ((slice) / inner) * yv.s[0] + ((slice) % inner) * yv.s[1])

#define XY_REDUCE_ROWS_CALL(c)                                                                                 \
  KNAME(reduce_slice)(c, XY_REDUCE_X(slice), xv.s[1], r, b, e, XY_SHARE_STEP, true, tmp, itmp, y, yi,          \
                      XY_REDUCE_Y(slice), correction);                                                         \
  break;
#define XY_REDUCE_ROWS_CASE(c) \
  case c: XY_REDUCE_ROWS_CALL(c)
/* y and yi are the same buffer: yi for argmax and argmin. */
kernel void KNAME(reduce_rows)(global const ST* x, xy_view xv, global ST* y, global long* yi, xy_view yv, long inner,
                               long r, long correction, local T* tmp, local long* itmp) {
  const long slice = get_group_id(0);
  XY_SHARE_BOUNDS(b, e, r);
  switch (XY_REDUCE_CODE) {
    XY_REDUCE_ROWS_CASE(XY_RED_SUM) XY_REDUCE_ROWS_CASE(XY_RED_MEAN) XY_REDUCE_ROWS_CASE(XY_RED_MAX)
    XY_REDUCE_ROWS_CASE(XY_RED_MIN) XY_REDUCE_ROWS_CASE(XY_RED_ARGMAX) XY_REDUCE_ROWS_CASE(XY_RED_ARGMIN)
    XY_REDUCE_ROWS_CASE(XY_RED_VAR)
    default: XY_REDUCE_ROWS_CALL(-1) /* reduce_slice's NaN */
  }
}

#define XY_REDUCE_COLS_CALL(c)                                                                                   \
  KNAME(reduce_slice)(c, XY_REDUCE_X(slice), xv.s[1], r, 0, r, 1, false, (local T*)0, (local long*)0, y, yi,     \
                      XY_REDUCE_Y(slice), correction);                                                           \
  break;
#define XY_REDUCE_COLS_CASE(c) \
  case c: XY_REDUCE_COLS_CALL(c)
kernel void KNAME(reduce_cols)(global const ST* x, xy_view xv, global ST* y, global long* yi, xy_view yv, long inner,
                               long r, long correction, long slices) {
  const long slice = get_global_id(0);
  if (slice >= slices) return;
  switch (XY_REDUCE_CODE) {
    XY_REDUCE_COLS_CASE(XY_RED_SUM) XY_REDUCE_COLS_CASE(XY_RED_MEAN) XY_REDUCE_COLS_CASE(XY_RED_MAX)
    XY_REDUCE_COLS_CASE(XY_RED_MIN) XY_REDUCE_COLS_CASE(XY_RED_ARGMAX) XY_REDUCE_COLS_CASE(XY_RED_ARGMIN)
    XY_REDUCE_COLS_CASE(XY_RED_VAR)
    default: XY_REDUCE_COLS_CALL(-1) /* reduce_slice's NaN */
  }
}

/* CPU devices, x contiguous along inner: an item takes VW neighbouring
 * outputs (o, i0 .. i0+VW-1) and walks r once, one vector a step, so x's
 * rows stream in order, whole lines at a time (an item per output would
 * read a line per element). argmax, argmin and a last partial block take
 * the per-output path. */
kernel void KNAME(reduce_vcols)(global const ST* x, xy_view xv, global ST* y, global long* yi, xy_view yv, long inner,
                                long r, long correction, long items) {
  const int code = XY_REDUCE_CODE;
  const long item = get_global_id(0);
  if (item >= items) return;
  const long blocks = (inner + VW - 1) / VW;
  const long o = item / blocks, i0 = (item % blocks) * VW;
  /* Bitwise, not ||: the code is a constant, and clang warns about || on constants. */
  const bool by_index = (code == XY_RED_ARGMAX) | (code == XY_RED_ARGMIN);
  if (i0 + VW > inner || by_index) {
    const long first = o * inner + i0, last = o * inner + min(i0 + VW, inner);
    for (long slice = first; slice < last; ++slice) {
      switch (XY_REDUCE_CODE) {
        XY_REDUCE_COLS_CASE(XY_RED_SUM) XY_REDUCE_COLS_CASE(XY_RED_MEAN) XY_REDUCE_COLS_CASE(XY_RED_MAX)
        XY_REDUCE_COLS_CASE(XY_RED_MIN) XY_REDUCE_COLS_CASE(XY_RED_ARGMAX) XY_REDUCE_COLS_CASE(XY_RED_ARGMIN)
        XY_REDUCE_COLS_CASE(XY_RED_VAR)
        default: XY_REDUCE_COLS_CALL(-1)
      }
    }
    return;
  }
  global const ST* xr = x + xv.offset + o * xv.s[0] + i0;
  const long xs = xv.s[1];
  VT result;
  if ((code == XY_RED_MAX) | (code == XY_RED_MIN)) {
    const bool is_max = code == XY_RED_MAX;
    result = XY_VLD(xr, 0);
    for (long j = 1; j < r; ++j) {
      const VT v = XY_VLD(xr, j * xs);
      result = is_max ? XY_VMAX(result, v) : XY_VMIN(result, v);
    }
  } else {
    /* Blocked sums per lane; var's second pass sums squared deviations. */
    VT mean = (VT)(0);
    for (int pass = 0; pass < (code == XY_RED_VAR ? 2 : 1); ++pass) {
      VT total = (VT)(0);
      for (long j = 0; j < r;) {
        const long block_end = min(r, j + XY_BLOCK);
        VT part = (VT)(0);
        if (pass == 0) {
          for (; j < block_end; ++j) part += XY_VLD(xr, j * xs);
        } else {
          for (; j < block_end; ++j) {
            const VT d = XY_VLD(xr, j * xs) - mean;
            part += d * d;
          }
        }
        total += part;
      }
      if (pass == 0) mean = total / (T)r;
      result = code == XY_RED_SUM ? total : code == XY_RED_MEAN ? mean : total / (T)max(r - correction, 0L);
    }
  }
  const long yo = yv.offset + o * yv.s[0] + i0 * yv.s[1];
  if (yv.s[1] == 1) {
    XY_VST(y, yo, result);
  } else {
    T lanes[VW];
    VSTORE(result, 0, lanes);
    for (int k = 0; k < VW; ++k) XY_ST(y, yo + k * yv.s[1], lanes[k]);
  }
}

/* Sums along r of x contiguous along inner, on CPU devices, in two passes
 * (ops/reduce.cpp column_chunks): first item (o, chunk, block) adds its
 * chunk of rows over a block of XY_COLS_BLOCK columns into part[o, chunk,
 * block's columns], a row at a time, so each item streams whole row
 * segments (an item per column vector would read one line per row, a page
 * apart); the block of part stays in the core's cache meanwhile. Then one
 * item per column vector adds the chunks in order. */
#define XY_COLS_BLOCK 4096
kernel void KNAME(reduce_col_chunks)(global const ST* x, xy_view xv, long inner, long r, long chunks,
                                     long rows_per_chunk, long items, global T* part) {
  const long item = get_global_id(0);
  if (item >= items) return;
  const long blocks = (inner + XY_COLS_BLOCK - 1) / XY_COLS_BLOCK;
  const long block = item % blocks, oc = item / blocks;
  const long chunk = oc % chunks, o = oc / chunks;
  const long i0 = block * XY_COLS_BLOCK, i1 = min(i0 + XY_COLS_BLOCK, inner);
  const long j0 = chunk * rows_per_chunk, j1 = min(j0 + rows_per_chunk, r);
  global T* acc = part + (o * chunks + chunk) * inner;
  long i = i0;
  for (; i + VW <= i1; i += VW) VSTORE((VT)(0), 0, acc + i);
  for (; i < i1; ++i) acc[i] = 0;
  global const ST* xo = x + xv.offset + o * xv.s[0];
  for (long j = j0; j < j1; ++j) {
    global const ST* xr = xo + j * xv.s[1];
    for (i = i0; i + VW <= i1; i += VW) VSTORE(VLOAD(0, acc + i) + XY_VLD(xr, i), 0, acc + i);
    for (; i < i1; ++i) acc[i] += XY_LD(xr, i);
  }
}
#undef XY_COLS_BLOCK

/* y[o, i] = the sum over chunks of part[o, chunk, i] (divided by r for
 * mean); item (o, vector of VW columns). */
kernel void KNAME(reduce_col_total)(global const T* part, long inner, long r, long chunks, int mean, long items,
                                    global ST* y, xy_view yv) {
  const long item = get_global_id(0);
  if (item >= items) return;
  const long vectors = (inner + VW - 1) / VW;
  const long o = item / vectors, i0 = (item % vectors) * VW;
  global const T* po = part + o * chunks * inner;
  const long yo = yv.offset + o * yv.s[0];
  if (i0 + VW <= inner) {
    VT total = VLOAD(0, po + i0);
    for (long chunk = 1; chunk < chunks; ++chunk) total += VLOAD(0, po + chunk * inner + i0);
    if (mean) total = total / (T)r;
    if (yv.s[1] == 1) {
      XY_VST(y, yo + i0, total);
    } else {
      T lanes[VW];
      VSTORE(total, 0, lanes);
      for (int k = 0; k < VW; ++k) XY_ST(y, yo + (i0 + k) * yv.s[1], lanes[k]);
    }
    return;
  }
  for (long i = i0; i < inner; ++i) {
    T total = po[i];
    for (long chunk = 1; chunk < chunks; ++chunk) total += po[chunk * inner + i];
    XY_ST(y, yo + i * yv.s[1], mean ? total / (T)r : total);
  }
}
