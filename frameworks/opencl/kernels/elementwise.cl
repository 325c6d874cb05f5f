/* math::unary, binary, compare and where over views of any strides
 * (broadcast inputs have stride 0). One kernel per op and type; the op's
 * code (math.h's XY_UN_* ...) is a kernel argument, switched on once per
 * work-item: every case is its own loop, inlined with the code constant,
 * so each compiles to the code's formula alone and vectorises.
 *
 * A work-item takes the logical elements [start, end) (`per` of them, see
 * XY_CHUNK_BOUNDS in common.cl) and walks them in runs along the innermost
 * axis: one offsets computation a run, then a loop with the innermost
 * strides. When those are all 1 (every contiguous call: the host collapses
 * it to one axis) or 0 for a broadcast input, CPU devices go through
 * explicit vectors of VW elements (VT), streamed to memory when the host
 * asks (outputs larger than the caches). */


/* ---- math.h's formulas (its X-lists), instantiated for T and for VT:
 * OpenCL C's ?: selects per lane on vectors. f32 exp (sigmoid, softplus,
 * the gradients through it) and tanh are common.cl's branch-free versions
 * (PoCL's own are a call per element). A code outside the list gives NaN
 * (compare: 0); the host rejects such codes before launching. ----------- */

#if XY_IS_F32
#define XY_K XY_LIT_F
/* PoCL's vector sin of float returns 2^-7 for inputs below about 2^-7
 * (seen on 6.1e-5): below 2^-12, sin(x) rounds to x in float anyway. */
#define XY_SIN(x) (fabs(x) < 2.44140625e-4f ? (x) : sin(x))
#define XY_EXP1 xy_exp_fast_f
#define XY_EXPV xy_exp_fast_f16
#define XY_TANH1 xy_tanh_act_f
#define XY_TANHV xy_tanh_act_v_f
#define XY_POWV pow
#else
#define XY_K XY_LIT_D
#define XY_SIN sin
#define XY_EXP1 exp
#define XY_EXPV exp
#define XY_TANH1 tanh
#define XY_TANHV tanh
#define XY_POWV xy_pow_lanes_d
/* PoCL's vector pow of double misses results near the ends of the range
 * (an underflow to the smallest subnormal, an overflow to Inf): pow lane
 * by lane. */
inline double8 xy_pow_lanes_d(double8 a, double8 b) {
  double pa[8], pb[8];
  vstore8(a, 0, pa);
  vstore8(b, 0, pb);
  for (int k = 0; k < 8; ++k) pa[k] = pow(pa[k], pb[k]);
  return vload8(0, pa);
}
#endif

XY_FORCE_INLINE T KNAME(un1)(int code, T x, T p0, T p1) {
  switch (code) {
    XY_UNARY_FORMULAS(XY_RETURN_CASE, T, XY_K, x, p0, p1, XY_EXP1, XY_TANH1, XY_SIN)
    default: return (T)NAN;
  }
}
XY_FORCE_INLINE VT KNAME(unv)(int code, VT x, T p0, T p1) {
  switch (code) {
    XY_UNARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, x, p0, p1, XY_EXPV, XY_TANHV, XY_SIN)
    default: return (VT)(NAN);
  }
}
XY_FORCE_INLINE T KNAME(bin1)(int code, T a, T b, T p0, T p1) {
  switch (code) {
    XY_BINARY_FORMULAS(XY_RETURN_CASE, T, XY_K, a, b, p0, p1, XY_EXP1, pow)
    default: return (T)NAN;
  }
}
XY_FORCE_INLINE VT KNAME(binv)(int code, VT a, VT b, T p0, T p1) {
  switch (code) {
    XY_BINARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, a, b, p0, p1, XY_EXPV, XY_POWV)
    default: return (VT)(NAN);
  }
}
/* Comparisons give 1 for true on scalars and -1 (all bits) per lane on
 * vectors: the vector form negates to 1. */
XY_FORCE_INLINE uchar KNAME(cmp1)(int code, T a, T b) {
  switch (code) {
    XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)
    default: return 0;
  }
}
XY_FORCE_INLINE VI KNAME(cmpv_)(int code, VT a, VT b) {
  switch (code) {
    XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)
    default: return (VI)0;
  }
}
#define XY_CMPV(code, a, b) XY_PASTE(convert_uchar, VW)(-KNAME(cmpv_)(code, a, b))


/* y = f(x) over [i, end), the code a constant after inlining. */
XY_FORCE_INLINE void KNAME(unary_walk)(int code, global const ST* x, global ST* y, const xy_layout* l, long i,
                                       long end, T p0, T p1, int stream) {
  XY_RUNS(2, {
    global const ST* xr = x + o[0];
    global ST* yr = y + o[1];
    long k = 0;
    if (XY_STRIDE(0) == 1 && XY_STRIDE(1) == 1) {
#ifdef XY_CPU
      if (stream) {
        for (; k < len && !XY_ALIGNED(yr + k, XY_VBYTES); ++k) XY_ST(yr, k, KNAME(un1)(code, XY_LD(xr, k), p0, p1));
        for (; k + VW <= len; k += VW) XY_VSTREAM_ST(yr, k, KNAME(unv)(code, XY_VLD(xr, k), p0, p1));
      }
      for (; k + VW <= len; k += VW) XY_VST(yr, k, KNAME(unv)(code, XY_VLD(xr, k), p0, p1));
#endif
      for (; k < len; ++k) XY_ST(yr, k, KNAME(un1)(code, XY_LD(xr, k), p0, p1));
    } else {
      const long sx = XY_STRIDE(0), sy = XY_STRIDE(1);
      for (; k < len; ++k) XY_ST(yr, k * sy, KNAME(un1)(code, XY_LD(xr, k * sx), p0, p1));
    }
  })
}

/* y = f(a, b). The dense path also takes a broadcast operand (innermost
 * stride 0: one value for the run). */
#define XY_A_VEC (sa ? XY_VLD(ar, k) : (VT)(a0))
#define XY_B_VEC (sb ? XY_VLD(br, k) : (VT)(b0))
XY_FORCE_INLINE void KNAME(binary_walk)(int code, global const ST* a, global const ST* b, global ST* y,
                                        const xy_layout* l, long i, long end, T p0, T p1, int stream) {
  XY_RUNS(3, {
    global const ST* ar = a + o[0];
    global const ST* br = b + o[1];
    global ST* yr = y + o[2];
    const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sy = XY_STRIDE(2);
    long k = 0;
    if ((sa == 1 || sa == 0) && (sb == 1 || sb == 0) && sy == 1) {
#ifdef XY_CPU
      const T a0 = XY_LD(ar, 0), b0 = XY_LD(br, 0);
      if (stream) {
        for (; k < len && !XY_ALIGNED(yr + k, XY_VBYTES); ++k)
          XY_ST(yr, k, KNAME(bin1)(code, XY_LD(ar, k * sa), XY_LD(br, k * sb), p0, p1));
        for (; k + VW <= len; k += VW) XY_VSTREAM_ST(yr, k, KNAME(binv)(code, XY_A_VEC, XY_B_VEC, p0, p1));
      }
      for (; k + VW <= len; k += VW) XY_VST(yr, k, KNAME(binv)(code, XY_A_VEC, XY_B_VEC, p0, p1));
#endif
    }
    for (; k < len; ++k) XY_ST(yr, k * sy, KNAME(bin1)(code, XY_LD(ar, k * sa), XY_LD(br, k * sb), p0, p1));
  })
}

/* y (boolean) = compare(a, b). */
XY_FORCE_INLINE void KNAME(compare_walk)(int code, global const ST* a, global const ST* b, global uchar* y,
                                         const xy_layout* l, long i, long end) {
  XY_RUNS(3, {
    global const ST* ar = a + o[0];
    global const ST* br = b + o[1];
    global uchar* yr = y + o[2];
    const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sy = XY_STRIDE(2);
    long k = 0;
#ifdef XY_CPU
    if (sa == 1 && sb == 1 && sy == 1) {
      for (; k + VW <= len; k += VW) VSTORE(XY_CMPV(code, XY_VLD(ar, k), XY_VLD(br, k)), 0, yr + k);
    }
#endif
    for (; k < len; ++k) yr[k * sy] = KNAME(cmp1)(code, XY_LD(ar, k * sa), XY_LD(br, k * sb));
  })
}

/* One case per code of math.h's X-lists (the formula itself is the walk's
 * to inline), each walk inlined with its code constant. An unknown code
 * (the host rejects them) walks with -1: the formulas' NaN (compare: 0),
 * never an unwritten y. */
#define XY_UNARY_WALK(c, formula) \
  case c: KNAME(unary_walk)(c, x, y, &l, i, end, p0, p1, stream); break;
kernel void KNAME(unary)(global const ST* x, global ST* y, xy_layout l, long n, int code, T p0, T p1, int stream,
                         long per) {
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_UNARY_FORMULAS(XY_UNARY_WALK, T, XY_K, x, p0, p1, XY_EXP1, XY_TANH1, XY_SIN)
    default: KNAME(unary_walk)(-1, x, y, &l, i, end, p0, p1, stream);
  }
}

#define XY_BINARY_WALK(c, formula) \
  case c: KNAME(binary_walk)(c, a, b, y, &l, i, end, p0, p1, stream); break;
kernel void KNAME(binary)(global const ST* a, global const ST* b, global ST* y, xy_layout l, long n, int code, T p0,
                          T p1, int stream, long per) {
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_BINARY_FORMULAS(XY_BINARY_WALK, T, XY_K, a, b, p0, p1, XY_EXP1, pow)
    default: KNAME(binary_walk)(-1, a, b, y, &l, i, end, p0, p1, stream);
  }
}

#define XY_COMPARE_WALK(c, formula) \
  case c: KNAME(compare_walk)(c, a, b, y, &l, i, end); break;
kernel void KNAME(compare)(global const ST* a, global const ST* b, global uchar* y, xy_layout l, long n, int code,
                           int stream, long per) {
  (void)stream; /* boolean outputs are small: plain stores */
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_COMPARE_FORMULAS(XY_COMPARE_WALK, a, b)
    default: KNAME(compare_walk)(-1, a, b, y, &l, i, end);
  }
}

/* y = cond ? a : b, y dense (the host stages other views): the layout
 * holds a, b and cond; y's offset is yo + the logical index. */
kernel void KNAME(where)(global const ST* a, global const ST* b, global const uchar* cond, global ST* y, long yo,
                         xy_layout lv, long n, int stream, long per) {
  (void)stream;
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
  y += yo;
  XY_RUNS(3, {
    global const ST* ar = a + o[0];
    global const ST* br = b + o[1];
    global const uchar* cr = cond + o[2];
    global ST* yr = y + i;
    const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sc = XY_STRIDE(2);
    long k = 0;
#ifdef XY_CPU
    if (sa == 1 && sb == 1 && sc == 1) {
      for (; k + VW <= len; k += VW) {
        const VI keep = XY_PASTE(convert_, VI)(VLOAD(0, cr + k)) != (VI_SCALAR)0;
        XY_VST(yr, k, keep ? XY_VLD(ar, k) : XY_VLD(br, k));
      }
    }
#endif
    for (; k < len; ++k) XY_ST(yr, k, cr[k * sc] ? XY_LD(ar, k * sa) : XY_LD(br, k * sb));
  })
}

#undef XY_K
#undef XY_SIN
#undef XY_EXP1
#undef XY_EXPV
#undef XY_TANH1
#undef XY_TANHV
#undef XY_POWV
#undef XY_UNARY_WALK
#undef XY_BINARY_WALK
#undef XY_COMPARE_WALK
