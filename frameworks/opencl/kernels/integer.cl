/* math::unary, binary, compare, where and reduce over i32 and i64: one pass
 * per type (T = int or long, SUF = FS = i32 or i64), math.h's integer
 * formulas (xy_int_binary_i32 ...: wrapping add, sub, mul; maximum,
 * minimum; neg, abs; the comparisons). The code is a kernel argument: each
 * kernel switches on it once, outside its loops, and every case's loop
 * calls the formula with a constant code, which folds.
 *
 * The elementwise kernels walk [i, end) in runs along the innermost axis
 * (XY_RUNS, storage.cl). Reductions: an item per (output, part of the
 * reduced axis); with several parts, each writes a partial (value, index)
 * and ireduce_finish combines an output's parts in order, so results never
 * depend on timing. Sums accumulate in long (wrapping modulo 2^64), and an
 * i32 sum's y is long (math.h). */

#define XY_IUN_LOOP(c, expression) \
  case c:                          \
    for (long k = 0; k < len; ++k) yr[k * sy] = XF(xy_int_unary)(c, xr[k * sx]); \
    break;
kernel void KNAME(iunary)(global const T* x, global T* y, xy_layout lv, long n, int code, int stream, long per) {
  (void)stream;
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
  XY_RUNS(2, {
    global const T* xr = x + o[0];
    global T* yr = y + o[1];
    const long sx = XY_STRIDE(0), sy = XY_STRIDE(1);
    switch (code) {
      XY_INT_UNARY_FORMULAS(XY_IUN_LOOP, , , )
      default: break; /* the host refuses other codes */
    }
  })
}
#undef XY_IUN_LOOP

/* A dense run (a broadcast operand: stride 0) and the strided one. */
#define XY_IBIN_LOOP(c, expression)                                                        \
  case c:                                                                                  \
    if (sa == 1 && sb == 1 && sy == 1) {                                                   \
      for (long k = 0; k < len; ++k) yr[k] = XY_IFN(c, ar[k], br[k]);                      \
    } else {                                                                               \
      for (long k = 0; k < len; ++k) yr[k * sy] = XY_IFN(c, ar[k * sa], br[k * sb]);       \
    }                                                                                      \
    break;
#define XY_IBIN_KERNEL(kname, Y, FORMULAS)                                                                  \
  kernel void KNAME(kname)(global const T* a, global const T* b, global Y* y, xy_layout lv, long n, int code, \
                           int stream, long per) {                                                          \
    (void)stream;                                                                                           \
    const xy_layout* l = &lv;                                                                               \
    XY_CHUNK_BOUNDS(i, end, n, per);                                                                        \
    XY_RUNS(3, {                                                                                            \
      global const T* ar = a + o[0];                                                                        \
      global const T* br = b + o[1];                                                                        \
      global Y* yr = y + o[2];                                                                              \
      const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sy = XY_STRIDE(2);                                   \
      switch (code) {                                                                                       \
        FORMULAS                                                                                            \
        default: break; /* the host refuses other codes */                                                  \
      }                                                                                                     \
    })                                                                                                      \
  }
#define XY_IFN(c, a, b) XF(xy_int_binary)(c, a, b)
XY_IBIN_KERNEL(ibinary, T, XY_INT_BINARY_FORMULAS(XY_IBIN_LOOP, , , , ))
#undef XY_IFN
#define XY_IFN(c, a, b) (uchar)XF(xy_int_compare)(c, a, b)
XY_IBIN_KERNEL(icompare, uchar, XY_COMPARE_FORMULAS(XY_IBIN_LOOP, , ))
#undef XY_IFN
#undef XY_IBIN_KERNEL
#undef XY_IBIN_LOOP

/* y = cond ? a : b, y dense (the host stages other views), as
 * elementwise.cl's where. */
kernel void KNAME(iwhere)(global const T* a, global const T* b, global const uchar* cond, global T* y, long yo,
                          xy_layout lv, long n, int stream, long per) {
  (void)stream;
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
  y += yo;
  XY_RUNS(3, {
    global const T* ar = a + o[0];
    global const T* br = b + o[1];
    global const uchar* cr = cond + o[2];
    global T* yr = y + i;
    const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sc = XY_STRIDE(2);
    for (long k = 0; k < len; ++k) yr[k] = cr[k * sc] ? ar[k * sa] : br[k * sb];
  })
}

/* ---- reductions: sum, max, min, argmax, argmin ---------------------------- */

/* b (a later part) into (value, index): the first extreme wins ties. */
inline void KNAME(icombine)(int code, long* value, long* index, long b, long bi) {
  if (code == XY_RED_SUM)
    *value = xy_int_binary_i64(XY_BIN_ADD, *value, b);
  else if ((code == XY_RED_MAX || code == XY_RED_ARGMAX) ? b > *value : b < *value) {
    *value = b;
    *index = bi;
  }
}

/* Stores an output: sums and indices as long, extremes as T. */
inline void KNAME(istore)(int code, global T* y, global long* yl, long at, long value, long index) {
  if (code == XY_RED_ARGMAX || code == XY_RED_ARGMIN)
    yl[at] = index;
  else if (code == XY_RED_SUM)
    yl[at] = value;
  else
    y[at] = (T)value;
}

/* Item (output, part) reduces rows [j0, j1) of its part. parts == 1: it
 * writes y; else part[(output * parts + p) * 2 + {0, 1}] = (value, index).
 * y and yl are the same buffer (yl: the long view of it). */
kernel void KNAME(ireduce)(global const T* x, xy_view xv, global T* y, global long* yl, xy_view yv, long inner, long r,
                           int code, long parts, long items, global long* part) {
  const long item = get_global_id(0);
  if (item >= items) return;
  const long out = item / parts, p = item % parts;
  const long chunk = (r + parts - 1) / parts;
  const long j0 = min(r, p * chunk), j1 = min(r, j0 + chunk);
  global const T* xr = x + xv.offset + (out / inner) * xv.s[0] + (out % inner) * xv.s[2];
  const long xs = xv.s[1];
  long value = 0, index = j0;
  if (j0 < j1) {
    switch (code) {
      case XY_RED_SUM: {
        long sum = 0;
        for (long j = j0; j < j1; ++j) sum = xy_int_binary_i64(XY_BIN_ADD, sum, (long)xr[j * xs]);
        value = sum;
        break;
      }
      case XY_RED_MAX:
      case XY_RED_MIN: {
        T m = xr[j0 * xs];
        if (code == XY_RED_MAX)
          for (long j = j0 + 1; j < j1; ++j) m = XF(xy_int_binary)(XY_BIN_MAXIMUM, m, xr[j * xs]);
        else
          for (long j = j0 + 1; j < j1; ++j) m = XF(xy_int_binary)(XY_BIN_MINIMUM, m, xr[j * xs]);
        value = m;
        break;
      }
      default: {
        const bool is_max = code == XY_RED_ARGMAX;
        T m = xr[j0 * xs];
        for (long j = j0 + 1; j < j1; ++j) {
          const T v = xr[j * xs];
          if (is_max ? v > m : v < m) {
            m = v;
            index = j;
          }
        }
        value = m;
      }
    }
  }
  if (parts == 1) {
    KNAME(istore)(code, y, yl, yv.offset + (out / inner) * yv.s[0] + (out % inner) * yv.s[1], value, index);
  } else {
    part[item * 2] = value;
    part[item * 2 + 1] = j0 < j1 ? index : -1; /* -1: an empty part (r < parts) */
  }
}

/* An item per output: its parts combined in order. */
kernel void KNAME(ireduce_finish)(global const long* part, long parts, long outputs, int code, global T* y,
                                  global long* yl, xy_view yv, long inner) {
  const long out = get_global_id(0);
  if (out >= outputs) return;
  global const long* pp = part + out * parts * 2;
  long value = pp[0], index = pp[1];
  for (long p = 1; p < parts; ++p)
    if (pp[p * 2 + 1] >= 0) KNAME(icombine)(code, &value, &index, pp[p * 2], pp[p * 2 + 1]);
  KNAME(istore)(code, y, yl, yv.offset + (out / inner) * yv.s[0] + (out % inner) * yv.s[1], value, index);
}
