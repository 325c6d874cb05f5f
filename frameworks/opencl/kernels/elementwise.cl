/* math::unary, binary, compare and where over views of any strides
 * (broadcast inputs have stride 0). A program holds one of them for one
 * element type: unary, binary and compare for one op code, given as
 * XY_UNARY_CODE, XY_BINARY_CODE or XY_COMPARE_CODE (math.h's XY_UN_* ...),
 * where with XY_WHERE. The formulas switch on that constant, so the
 * compiler emits the code's case alone: a small program builds fast.
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
 * (compare: 0); the host builds no program for such codes. ------------- */

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

#ifdef XY_UNARY_CODE
XY_FORCE_INLINE T KNAME(un1)(T x, T p0, T p1) {
  switch (XY_UNARY_CODE) {
    XY_UNARY_FORMULAS(XY_RETURN_CASE, T, XY_K, x, p0, p1, XY_EXP1, XY_TANH1, XY_SIN)
    default: return (T)NAN;
  }
}
XY_FORCE_INLINE VT KNAME(unv)(VT x, T p0, T p1) {
  switch (XY_UNARY_CODE) {
    XY_UNARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, x, p0, p1, XY_EXPV, XY_TANHV, XY_SIN)
    default: return (VT)(NAN);
  }
}
#endif

#ifdef XY_BINARY_CODE
XY_FORCE_INLINE T KNAME(bin1)(T a, T b, T p0, T p1) {
  switch (XY_BINARY_CODE) {
    XY_BINARY_FORMULAS(XY_RETURN_CASE, T, XY_K, a, b, p0, p1, XY_EXP1, pow)
    default: return (T)NAN;
  }
}
XY_FORCE_INLINE VT KNAME(binv)(VT a, VT b, T p0, T p1) {
  switch (XY_BINARY_CODE) {
    XY_BINARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, a, b, p0, p1, XY_EXPV, XY_POWV)
    default: return (VT)(NAN);
  }
}
#endif

#ifdef XY_COMPARE_CODE
/* Comparisons give 1 for true on scalars and -1 (all bits) per lane on
 * vectors: the vector form negates to 1. */
XY_FORCE_INLINE uchar KNAME(cmp1)(T a, T b) {
  switch (XY_COMPARE_CODE) {
    XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)
    default: return 0;
  }
}
XY_FORCE_INLINE VI KNAME(cmpv_)(VT a, VT b) {
  switch (XY_COMPARE_CODE) {
    XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)
    default: return (VI)0;
  }
}
#define XY_CMPV(a, b) XY_PASTE(convert_uchar, VW)(-KNAME(cmpv_)(a, b))
#endif


#ifdef XY_UNARY_CODE
/* y = f(x). */
kernel void KNAME(unary)(global const ST* x, global ST* y, xy_layout lv, long n, T p0, T p1, int stream, long per) {
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
  XY_RUNS(2, {
    global const ST* xr = x + o[0];
    global ST* yr = y + o[1];
    long k = 0;
    if (XY_STRIDE(0) == 1 && XY_STRIDE(1) == 1) {
#ifdef XY_CPU
      if (stream) {
        for (; k < len && !XY_ALIGNED(yr + k, XY_VBYTES); ++k) XY_ST(yr, k, KNAME(un1)(XY_LD(xr, k), p0, p1));
        for (; k + VW <= len; k += VW) XY_VSTREAM_ST(yr, k, KNAME(unv)(XY_VLD(xr, k), p0, p1));
      }
      for (; k + VW <= len; k += VW) XY_VST(yr, k, KNAME(unv)(XY_VLD(xr, k), p0, p1));
#endif
      for (; k < len; ++k) XY_ST(yr, k, KNAME(un1)(XY_LD(xr, k), p0, p1));
    } else {
      const long sx = XY_STRIDE(0), sy = XY_STRIDE(1);
      for (; k < len; ++k) XY_ST(yr, k * sy, KNAME(un1)(XY_LD(xr, k * sx), p0, p1));
    }
  })
}
#endif

#ifdef XY_BINARY_CODE
/* y = f(a, b). The dense path also takes a broadcast operand (innermost
 * stride 0: one value for the run). */
#define XY_A_VEC (sa ? XY_VLD(ar, k) : (VT)(a0))
#define XY_B_VEC (sb ? XY_VLD(br, k) : (VT)(b0))
kernel void KNAME(binary)(global const ST* a, global const ST* b, global ST* y, xy_layout lv, long n, T p0, T p1,
                          int stream, long per) {
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
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
          XY_ST(yr, k, KNAME(bin1)(XY_LD(ar, k * sa), XY_LD(br, k * sb), p0, p1));
        for (; k + VW <= len; k += VW) XY_VSTREAM_ST(yr, k, KNAME(binv)(XY_A_VEC, XY_B_VEC, p0, p1));
      }
      for (; k + VW <= len; k += VW) XY_VST(yr, k, KNAME(binv)(XY_A_VEC, XY_B_VEC, p0, p1));
#endif
    }
    for (; k < len; ++k) XY_ST(yr, k * sy, KNAME(bin1)(XY_LD(ar, k * sa), XY_LD(br, k * sb), p0, p1));
  })
}
#undef XY_A_VEC
#undef XY_B_VEC
#endif

#ifdef XY_COMPARE_CODE
/* y (boolean) = compare(a, b). Boolean outputs are small: plain stores,
 * whatever `stream` says. */
kernel void KNAME(compare)(global const ST* a, global const ST* b, global uchar* y, xy_layout lv, long n,
                           int stream, long per) {
  (void)stream;
  const xy_layout* l = &lv;
  XY_CHUNK_BOUNDS(i, end, n, per);
  XY_RUNS(3, {
    global const ST* ar = a + o[0];
    global const ST* br = b + o[1];
    global uchar* yr = y + o[2];
    const long sa = XY_STRIDE(0), sb = XY_STRIDE(1), sy = XY_STRIDE(2);
    long k = 0;
#ifdef XY_CPU
    if (sa == 1 && sb == 1 && sy == 1) {
      for (; k + VW <= len; k += VW) VSTORE(XY_CMPV(XY_VLD(ar, k), XY_VLD(br, k)), 0, yr + k);
    }
#endif
    for (; k < len; ++k) yr[k * sy] = KNAME(cmp1)(XY_LD(ar, k * sa), XY_LD(br, k * sb));
  })
}
#endif

#ifdef XY_WHERE
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

#endif

#ifdef XY_FUSED
/* math::fused's vector path (ops/fused.cpp) on CPU devices: the same
 * formulas over VT, for a code the generated kernel passes as a constant. */
XY_FORCE_INLINE VT xy_fused_unary_v(int code, VT x, T p0, T p1) {
  switch (code) {
    XY_UNARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, x, p0, p1, XY_EXPV, XY_TANHV, XY_SIN)
    default: return (VT)(NAN);
  }
}
XY_FORCE_INLINE VT xy_fused_binary_v(int code, VT a, VT b, T p0, T p1) {
  switch (code) {
    XY_BINARY_FORMULAS(XY_RETURN_CASE, VT, XY_K, a, b, p0, p1, XY_EXPV, XY_POWV)
    default: return (VT)(NAN);
  }
}
#endif

#undef XY_K
#undef XY_SIN
#undef XY_EXP1
#undef XY_EXPV
#undef XY_TANH1
#undef XY_TANHV
#undef XY_POWV
