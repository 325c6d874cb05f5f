/* Helpers every family uses. Compiled after math.h; each family's file is
 * then compiled once per element type with T (float, double), SUF (kernel
 * name suffix: f32, f64) and FS (math.h suffix: f, d) defined. */

/* No fused multiply-adds the C++ reference does not make: same formulas,
 * same roundings as the native framework. */
#pragma OPENCL FP_CONTRACT OFF

#define XY_CAT_(a, b) a##_##b
#define XY_CAT(a, b) XY_CAT_(a, b)
#define KNAME(n) XY_CAT(n, SUF) /* sigmoid_c -> sigmoid_c_f32 */
#define XF(n) XY_CAT(n, FS)     /* xy_normal -> xy_normal_f */
#define XV(n) XY_CAT(XY_CAT(n, v), FS) /* xy_hsum -> xy_hsum_v_f (over VT) */

/* Dimensions and strides (in elements) of up to three operands of one
 * shape, as the host collapsed them (dims of one element dropped, runs of
 * dims contiguous in every operand merged). Mirrors KernelLayout in
 * ops/launch.hpp. */
#define XY_MAX_RANK 8
typedef struct {
  long rank;
  long dims[XY_MAX_RANK];
  long strides[3][XY_MAX_RANK];
  long offsets[3];
} xy_layout;

/* Storage offsets of the element with row-major logical index i. */
inline void xy_offsets1(const xy_layout* l, long i, long* o0) {
  long a = l->offsets[0];
  for (long d = l->rank - 1; d >= 0; --d) {
    const long c = i % l->dims[d];
    i /= l->dims[d];
    a += c * l->strides[0][d];
  }
  *o0 = a;
}

inline void xy_offsets2(const xy_layout* l, long i, long* o0, long* o1) {
  long a = l->offsets[0], b = l->offsets[1];
  for (long d = l->rank - 1; d >= 0; --d) {
    const long c = i % l->dims[d];
    i /= l->dims[d];
    a += c * l->strides[0][d];
    b += c * l->strides[1][d];
  }
  *o0 = a;
  *o1 = b;
}

inline void xy_offsets3(const xy_layout* l, long i, long* o0, long* o1, long* o2) {
  long a = l->offsets[0], b = l->offsets[1], c2 = l->offsets[2];
  for (long d = l->rank - 1; d >= 0; --d) {
    const long c = i % l->dims[d];
    i /= l->dims[d];
    a += c * l->strides[0][d];
    b += c * l->strides[1][d];
    c2 += c * l->strides[2][d];
  }
  *o0 = a;
  *o1 = b;
  *o2 = c2;
}

/* How a work-item walks its elements. CPU devices run a work-group as a
 * loop over its items, so each item takes a run of XY_PER_ITEM neighbours
 * (a loop the compiler vectorises) and each reduction item a contiguous
 * share; GPUs want neighbouring items on neighbouring elements. The host
 * reads the same numbers from DeviceInfo::per_item. */
#ifdef XY_CPU
#define XY_PER_ITEM 16
#else
#define XY_PER_ITEM 1
#endif

/* for (i over this item's run of a contiguous elementwise kernel) */
#define XY_FOR_RUN(i, n)                                                      \
  for (long i##_end = min(((long)get_global_id(0) + 1) * XY_PER_ITEM, (long)(n)), \
            i = (long)get_global_id(0) * XY_PER_ITEM;                         \
       i < i##_end; ++i)

/* for (i over this item's share of a reduction over n elements) */
#ifdef XY_CPU
#define XY_FOR_SHARE(i, n)                                                                    \
  for (long i##_chunk = ((long)(n) + (long)get_global_size(0) - 1) / (long)get_global_size(0), \
            i##_end = min(((long)get_global_id(0) + 1) * i##_chunk, (long)(n)),               \
            i = (long)get_global_id(0) * i##_chunk;                                           \
       i < i##_end; ++i)
#else
#define XY_FOR_SHARE(i, n) for (long i = get_global_id(0); i < (long)(n); i += (long)get_global_size(0))
#endif

/* The bounds [begin, end) of this item's share of n elements, for the
 * reductions' explicitly vectorised CPU path (same split as XY_FOR_SHARE). */
inline void xy_share(long n, long* begin, long* end) {
  const long chunk = (n + (long)get_global_size(0) - 1) / (long)get_global_size(0);
  *begin = min((long)get_global_id(0) * chunk, n);
  *end = min(*begin + chunk, n);
}

/* Chunked elementwise kernels (_c of activation, copy, axpy, scal): the
 * host passes `per`, the elements of each work-item (ops/launch.hpp
 * run_chunks): a large chunk on CPUs, which the kernel walks in explicit
 * vectors of XY_VW elements (VT, one 512-bit register) with a scalar head
 * and tail, and 1 on GPUs (neighbouring items on neighbouring elements).
 * PoCL vectorises across work-items only loops simpler than these, and
 * runtime calls such as expf defeat it; explicit vectors do not depend on
 * it. With `stream` (outputs larger than the caches) the vectors go out
 * through non-temporal stores, which skip reading each destination line
 * before overwriting it: a third of an elementwise op's memory traffic.
 * PoCL signals a finished command through locked instructions, which x86
 * orders after earlier non-temporal stores, so no fence is needed here. */
#define XY_CHUNK_BOUNDS(i, end, n, per)           \
  long i = (long)get_global_id(0) * (per);        \
  const long end = min(i + (long)(per), (long)(n))

#if defined(XY_CPU) && defined(__clang__)
#define XY_VSTREAM(VT, v, p) __builtin_nontemporal_store((v), (global VT*)(p))
#define XY_ALIGNED(p, bytes) ((((ulong)(p)) & ((bytes) - 1)) == 0)
#else
#define XY_VSTREAM(VT, v, p) (*(global VT*)(p) = (v))
#define XY_ALIGNED(p, bytes) 1
#endif

/* Horizontal sums of the reductions' vector accumulators. */
inline float xy_hsum_v_f(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}
#ifdef XY_HAS_FP64
inline double xy_hsum_v_d(double8 v) {
  const double4 b = v.lo + v.hi;
  const double2 c = b.lo + b.hi;
  return c.x + c.y;
}
#endif

/* The widest float the device computes in: arange forms start + k*step in
 * double where it can, as the native framework does. */
#ifdef XY_HAS_FP64
typedef double xy_wide;
#else
typedef float xy_wide;
#endif

/* exp for float, branch-free so that a loop of it vectorises (the
 * runtime's own expf, a call per element, runs at a third of the speed on
 * PoCL). Cody-Waite reduction x = k*ln2 + r with |r| <= ln2/2, Cephes'
 * degree-6 polynomial for e^r, then 2^k applied in two halves so that
 * results down to the subnormals come out right. Max error 1 ulp against
 * a float64 reference over [-104, 89] (bench/opencl_bench.cpp measures
 * it); below that range it gives 0, above +inf, NaN stays NaN.
 * k = rint(x*log2(e)) by adding and subtracting 1.5*2^23, which rounds to
 * nearest even in two adds (PoCL emulates rint in a dozen instructions
 * without SSE4.1's round); the integer k is then the low bits of the sum. */
#define XY_EXP_FAST(name, VF, VI, as_vf, as_vi)                        \
  inline VF name(VF x) {                                               \
    const VF xc = clamp(x, (VF)(-104.0f), (VF)(89.0f));                \
    const VF shifted = xc * 1.44269504088896341f + 12582912.0f;        \
    const VF k = shifted - 12582912.0f;                                \
    VF r = xc - k * 0.693359375f;                                      \
    r = r - k * -2.12194440e-4f;                                       \
    const VF z = r * r;                                                \
    VF p = (VF)(1.9875691500e-4f);                                     \
    p = p * r + 1.3981999507e-3f;                                      \
    p = p * r + 8.3334519073e-3f;                                      \
    p = p * r + 4.1665795894e-2f;                                      \
    p = p * r + 1.6666665459e-1f;                                      \
    p = p * r + 5.0000001201e-1f;                                      \
    p = p * z + r + 1.0f;                                              \
    const VI ki = as_vi(shifted) - 0x4B400000;                         \
    const VI k1 = ki / 2, k2 = ki - k1;                                \
    const VF result = p * as_vf((k1 + 127) << 23) * as_vf((k2 + 127) << 23); \
    return select(result, x, isnan(x));                                \
  }
XY_EXP_FAST(xy_exp_fast_f, float, int, as_float, as_int)
XY_EXP_FAST(xy_exp_fast_f16, float16, int16, as_float16, as_int16)

/* e^x for tanh's large branch only, x in [1.25, 18.2]: the exp above
 * without what that range never needs (clamps, 2^k in two halves for the
 * subnormals, NaN), so 2^k (k <= 27) is one multiply. tanh is
 * compute-bound on CPUs, so its polynomials go through mad: one fused
 * multiply-add where the device has one (PoCL on AVX2/AVX-512), which also
 * rounds once. Together: tanh twice as fast as on the general exp. */
#define XY_EXP_TANH(name, VF, VI, as_vf, as_vi)                        \
  inline VF name(VF x) {                                               \
    const VF shifted = mad(x, (VF)(1.44269504088896341f), (VF)(12582912.0f)); \
    const VF k = shifted - 12582912.0f;                                \
    VF r = mad(k, (VF)(-0.693359375f), x);                             \
    r = mad(k, (VF)(2.12194440e-4f), r);                               \
    const VF z = r * r;                                                \
    VF p = (VF)(1.9875691500e-4f);                                     \
    p = mad(p, r, (VF)(1.3981999507e-3f));                             \
    p = mad(p, r, (VF)(8.3334519073e-3f));                             \
    p = mad(p, r, (VF)(4.1665795894e-2f));                             \
    p = mad(p, r, (VF)(1.6666665459e-1f));                             \
    p = mad(p, r, (VF)(5.0000001201e-1f));                             \
    p = mad(p, z, r) + 1.0f;                                           \
    return p * as_vf((as_vi(shifted) - (0x4B400000 - 127)) << 23);    \
  }
XY_EXP_TANH(xy_exp_tanh_f, float, int, as_float, as_int)
XY_EXP_TANH(xy_exp_tanh_f16, float16, int16, as_float16, as_int16)

/* tanh, branch-free so that it vectorises: for |x| < 0.625 Cephes' odd
 * polynomial (tanhf.c: the cancellation in the exp form is worst there),
 * above it 1 - 2/(e^2|x| + 1) with |x| capped at 9.1, past which tanh
 * rounds to 1 in float (1 - 2e^-18.2 is within half an ulp of 1), so
 * large |x| and infinities give exactly 1 and the exp needs no range
 * handling (the cap is a compare and select, not fmin, whose NaN rule
 * costs more; NaN lanes are restored last anyway); the sign is put back
 * last (tanh(-0) = -0), NaN stays NaN.
 * bench/opencl_bench.cpp measures the error against float64 over a dense
 * sweep (max 1.3 ulp when last measured). */
#define XY_TANH_FAST(name, VF, exp_fn)                                        \
  inline VF name(VF x) {                                                     \
    const VF a = fabs(x);                                                    \
    const VF z = a * a;                                                      \
    VF p = (VF)(-5.70498872745e-3f);                                         \
    p = mad(p, z, (VF)(2.06390887954e-2f));                                  \
    p = mad(p, z, (VF)(-5.37397155531e-2f));                                 \
    p = mad(p, z, (VF)(1.33314422036e-1f));                                  \
    p = mad(p, z, (VF)(-3.33332819422e-1f));                                 \
    const VF small = p * z * a + a; /* unfused: a mad may flush a subnormal a */ \
    const VF capped = select((VF)(9.1f), a, a < 9.1f);                       \
    const VF large = 1.0f - 2.0f / (exp_fn(capped + capped) + 1.0f);         \
    const VF t = select(large, small, a < 0.625f);                           \
    return select(copysign(t, x), x, isnan(x));                              \
  }
XY_TANH_FAST(xy_tanh_act_f, float, xy_exp_tanh_f)
XY_TANH_FAST(xy_tanh_act_v_f, float16, xy_exp_tanh_f16)

