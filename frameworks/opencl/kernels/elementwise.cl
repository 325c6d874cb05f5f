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


/* ---- math.h's formulas, written once for T and for VT: OpenCL C's ?:
 * selects per lane on vectors. f32 exp, sigmoid and tanh are common.cl's
 * branch-free versions (PoCL's own are a call per element). ------------- */

#if XY_IS_F32
#define XY_HALF_T 0.5f
#define XY_RSQRT2 0.70710678118654752f
#define XY_RSQRT2PI 0.39894228040143268f
#else
#define XY_HALF_T 0.5
#define XY_RSQRT2 0.70710678118654752440
#define XY_RSQRT2PI 0.39894228040143267794
#endif

#define XY_UNARY_CASES(V, x, p0, p1, exp_fn, sigmoid_fn, tanh_fn)          \
  case XY_UN_EXP: return exp_fn(x);                                        \
  case XY_UN_LOG: return log(x);                                           \
  case XY_UN_SQRT: return sqrt(x);                                         \
  case XY_UN_RSQRT: return (T)1 / sqrt(x);                                 \
  case XY_UN_ABS: return fabs(x);                                          \
  case XY_UN_NEG: return -(x);                                             \
  case XY_UN_SIN: return XY_SIN(x);                                        \
  case XY_UN_COS: return cos(x);                                           \
  case XY_UN_CLAMP: return x < p0 ? (V)(p0) : (x > p1 ? (V)(p1) : x);      \
  case XY_UN_SIGMOID: return sigmoid_fn(x);                                \
  case XY_UN_RELU: return x < (T)0 ? (V)(0) : x; /* NaN stays NaN */       \
  case XY_UN_TANH: return tanh_fn(x);                                      \
  case XY_UN_LEAKY_RELU: return x < (T)0 ? x * p0 : x;                     \
  case XY_UN_ELU: return x > (T)0 ? x : p0 * expm1(x);                     \
  case XY_UN_GELU: return XY_HALF_T * x * erfc(x * -XY_RSQRT2);               \
  case XY_UN_SOFTPLUS: return x * p0 > p1 ? x : log1p(exp_fn(x * p0)) / p0;

#define XY_BINARY_CASES(V, a, b, p0, p1, exp_fn, sigmoid_fn, pow_fn)                            \
  case XY_BIN_ADD: return a + b;                                                        \
  case XY_BIN_SUB: return a - b;                                                        \
  case XY_BIN_MUL: return a * b;                                                        \
  case XY_BIN_DIV: return a / b;                                                        \
  case XY_BIN_POW: return pow_fn(a, b);                                                 \
  case XY_BIN_MAXIMUM: return (a > b || isnan(a)) ? a : b;                              \
  case XY_BIN_MINIMUM: return (a < b || isnan(a)) ? a : b;                              \
  case XY_BIN_SIGMOID_GRAD: return b * a * ((T)1 - a);                                  \
  case XY_BIN_RELU_GRAD: return a > (T)0 ? b : (V)(0);                                  \
  case XY_BIN_TANH_GRAD: return b * ((T)1 - a * a);                                     \
  case XY_BIN_LEAKY_RELU_GRAD: return a > (T)0 ? b : b * p0;                            \
  case XY_BIN_ELU_GRAD: return a > (T)0 ? b : b * p0 * exp_fn(a);                       \
  case XY_BIN_GELU_GRAD:                                                                \
    return b * (XY_HALF_T * erfc(a * -XY_RSQRT2) + a * (XY_RSQRT2PI * exp_fn(-XY_HALF_T * a * a))); \
  case XY_BIN_SOFTPLUS_GRAD: return a * p0 > p1 ? b : b * sigmoid_fn(a * p0);

#define XY_COMPARE_CASES(a, b)          \
  case XY_CMP_EQ: return a == b;        \
  case XY_CMP_NE: return a != b;        \
  case XY_CMP_LT: return a < b;         \
  case XY_CMP_LE: return a <= b;        \
  case XY_CMP_GT: return a > b;         \
  case XY_CMP_GE: return a >= b;

/* PoCL's vector sin of float returns 2^-7 for inputs below about 2^-7
 * (seen on 6.1e-5): below 2^-12, sin(x) rounds to x in float anyway. */
#if XY_IS_F32
#define XY_SIN(x) (fabs(x) < 2.44140625e-4f ? (x) : sin(x))
#else
#define XY_SIN(x) sin(x)
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

#if XY_IS_F32
XY_FORCE_INLINE T KNAME(un1)(int code, T x, T p0, T p1) {
  switch (code) { XY_UNARY_CASES(T, x, p0, p1, xy_exp_fast_f, xy_sigmoid_act_f, xy_tanh_act_f) }
  return x;
}
XY_FORCE_INLINE VT KNAME(unv)(int code, VT x, T p0, T p1) {
  switch (code) { XY_UNARY_CASES(VT, x, p0, p1, xy_exp_fast_f16, xy_sigmoid_act_v_f, xy_tanh_act_v_f) }
  return x;
}
XY_FORCE_INLINE T KNAME(bin1)(int code, T a, T b, T p0, T p1) {
  switch (code) { XY_BINARY_CASES(T, a, b, p0, p1, xy_exp_fast_f, xy_sigmoid_act_f, pow) }
  return a;
}
XY_FORCE_INLINE VT KNAME(binv)(int code, VT a, VT b, T p0, T p1) {
  switch (code) { XY_BINARY_CASES(VT, a, b, p0, p1, xy_exp_fast_f16, xy_sigmoid_act_v_f, pow) }
  return a;
}
#else
XY_FORCE_INLINE T KNAME(un1)(int code, T x, T p0, T p1) {
  switch (code) { XY_UNARY_CASES(T, x, p0, p1, exp, xy_sigmoid_act_d, xy_tanh_act_d) }
  return x;
}
XY_FORCE_INLINE VT KNAME(unv)(int code, VT x, T p0, T p1) {
  switch (code) { XY_UNARY_CASES(VT, x, p0, p1, exp, xy_sigmoid_act_v_d, xy_tanh_act_v_d) }
  return x;
}
XY_FORCE_INLINE T KNAME(bin1)(int code, T a, T b, T p0, T p1) {
  switch (code) { XY_BINARY_CASES(T, a, b, p0, p1, exp, xy_sigmoid_act_d, pow) }
  return a;
}
XY_FORCE_INLINE VT KNAME(binv)(int code, VT a, VT b, T p0, T p1) {
  switch (code) { XY_BINARY_CASES(VT, a, b, p0, p1, exp, xy_sigmoid_act_v_d, xy_pow_lanes_d) }
  return a;
}
#endif
/* Comparisons give 1 for true on scalars and -1 (all bits) per lane on
 * vectors: the vector form negates to 1. */
XY_FORCE_INLINE uchar KNAME(cmp1)(int code, T a, T b) {
  switch (code) { XY_COMPARE_CASES(a, b) }
  return 0;
}
XY_FORCE_INLINE VI KNAME(cmpv_)(int code, VT a, VT b) {
  switch (code) { XY_COMPARE_CASES(a, b) }
  return (VI)0;
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

#define XY_UNARY_CASE(c) \
  case c: KNAME(unary_walk)(c, x, y, &l, i, end, p0, p1, stream); break;
kernel void KNAME(unary)(global const ST* x, global ST* y, xy_layout l, long n, int code, T p0, T p1, int stream,
                         long per) {
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_UNARY_CASE(XY_UN_EXP) XY_UNARY_CASE(XY_UN_LOG) XY_UNARY_CASE(XY_UN_SQRT) XY_UNARY_CASE(XY_UN_RSQRT)
    XY_UNARY_CASE(XY_UN_ABS) XY_UNARY_CASE(XY_UN_NEG) XY_UNARY_CASE(XY_UN_SIN) XY_UNARY_CASE(XY_UN_COS)
    XY_UNARY_CASE(XY_UN_CLAMP) XY_UNARY_CASE(XY_UN_SIGMOID) XY_UNARY_CASE(XY_UN_RELU) XY_UNARY_CASE(XY_UN_TANH)
    XY_UNARY_CASE(XY_UN_LEAKY_RELU) XY_UNARY_CASE(XY_UN_ELU) XY_UNARY_CASE(XY_UN_GELU)
    XY_UNARY_CASE(XY_UN_SOFTPLUS)
  }
}

#define XY_BINARY_CASE(c) \
  case c: KNAME(binary_walk)(c, a, b, y, &l, i, end, p0, p1, stream); break;
kernel void KNAME(binary)(global const ST* a, global const ST* b, global ST* y, xy_layout l, long n, int code, T p0,
                          T p1, int stream, long per) {
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_BINARY_CASE(XY_BIN_ADD) XY_BINARY_CASE(XY_BIN_SUB) XY_BINARY_CASE(XY_BIN_MUL) XY_BINARY_CASE(XY_BIN_DIV)
    XY_BINARY_CASE(XY_BIN_POW) XY_BINARY_CASE(XY_BIN_MAXIMUM) XY_BINARY_CASE(XY_BIN_MINIMUM)
    XY_BINARY_CASE(XY_BIN_SIGMOID_GRAD) XY_BINARY_CASE(XY_BIN_RELU_GRAD) XY_BINARY_CASE(XY_BIN_TANH_GRAD)
    XY_BINARY_CASE(XY_BIN_LEAKY_RELU_GRAD) XY_BINARY_CASE(XY_BIN_ELU_GRAD) XY_BINARY_CASE(XY_BIN_GELU_GRAD)
    XY_BINARY_CASE(XY_BIN_SOFTPLUS_GRAD)
  }
}

#define XY_COMPARE_CASE(c) \
  case c: KNAME(compare_walk)(c, a, b, y, &l, i, end); break;
kernel void KNAME(compare)(global const ST* a, global const ST* b, global uchar* y, xy_layout l, long n, int code,
                           int stream, long per) {
  (void)stream; /* boolean outputs are small: plain stores */
  XY_CHUNK_BOUNDS(i, end, n, per);
  switch (code) {
    XY_COMPARE_CASE(XY_CMP_EQ) XY_COMPARE_CASE(XY_CMP_NE) XY_COMPARE_CASE(XY_CMP_LT)
    XY_COMPARE_CASE(XY_CMP_LE) XY_COMPARE_CASE(XY_CMP_GT) XY_COMPARE_CASE(XY_CMP_GE)
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

#undef XY_SIN
#undef XY_HALF_T
#undef XY_RSQRT2
#undef XY_RSQRT2PI
