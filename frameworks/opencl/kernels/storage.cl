/* Loads and stores of the storage types. Families with 16-bit float
 * kernels (package.cpp has_half_passes) are compiled once more per 16-bit
 * type with T = float (compute), ST = the storage type (half, ushort for
 * bf16) and SUF = f16 / bf16; their kernels move elements only through the
 * macros below, which pick the functions of the pass by SUF. f16 goes
 * through vload_half / vstore_half_rte (core OpenCL C: no cl_khr_fp16),
 * bf16 through math.h's bit conversions; both round to nearest even.
 *
 *   XY_LD(p, i)          element i of p, as T
 *   XY_ST(p, i, v)       stores T v as element i of p
 *   XY_VLD(p, i)         elements i .. i+VW-1 as one VT
 *   XY_VST(p, i, v)      stores a VT there
 *   XY_VSTREAM_ST(p, i, v)  the same through a non-temporal store (CPU devices;
 *                        p + i aligned to XY_VBYTES)
 */

#define XY_LD(p, i) XY_CAT(xy_ld, SUF)((p), (i))
#define XY_ST(p, i, v) XY_CAT(xy_st, SUF)((p), (i), (v))
#define XY_VLD(p, i) XY_CAT(xy_vld, SUF)((p), (i))
#define XY_VST(p, i, v) XY_CAT(xy_vst, SUF)((p), (i), (v))
#define XY_VSTREAM_ST(p, i, v) XY_CAT(xy_vstream, SUF)((p), (i), (v))
#define XY_VBYTES (VW * sizeof(ST))

/* Helpers whose callers pass constants (op codes, flags) that must fold. */
#define XY_FORCE_INLINE inline __attribute__((always_inline))

#define XY_PASTE_(a, b) a##b
#define XY_PASTE(a, b) XY_PASTE_(a, b)

/* ---- walking views in runs ----------------------------------------------
 * XY_RUNS(nops, body): runs body for each run of [i, end) along
 * the innermost axis, the offsets o[] of its first element in each of the
 * nops operands (XY_STRIDE(k): the innermost stride of operand k); `len`
 * elements. Needs `l` (const xy_layout*, rank >= 1), `i` and `end`. */
#define XY_RUNS(nops, ...)                                                  \
  {                                                                         \
    const int last = (int)l->rank - 1;                                      \
    const long inner = l->dims[last];                                       \
    while (i < end) {                                                       \
      long o[3];                                                            \
      XY_PASTE(xy_offsets, nops)(l, i, XY_OFFSET_ARGS_##nops);              \
      const long len = min(end, (i / inner + 1) * inner) - i;               \
      __VA_ARGS__                                                           \
      i += len;                                                             \
    }                                                                       \
  }
#define XY_OFFSET_ARGS_1 &o[0]
#define XY_OFFSET_ARGS_2 &o[0], &o[1]
#define XY_OFFSET_ARGS_3 &o[0], &o[1], &o[2]
#define XY_STRIDE(k) l->strides[k][last]

/* Moves [k, end) of a dense run of words U from `from` to `to` in vectors
 * of 16 (through non-temporal stores when the kernel's `stream` is set),
 * leaving the scalar rest from k to the caller (copy, gather). GPUs move
 * one element per item and skip it. The vectors are read and written as
 * the <U>16_u types, U16 at the alignment of one word: PoCL's vload16 and
 * vstore16 moved 16 bytes at a time and shuffled them together, these go
 * through whole AVX registers (a row gather of 8192 x 512 f32 ran ~20%
 * faster). */
#ifdef XY_CPU
typedef uchar16 uchar16_u __attribute__((aligned(1)));
typedef ushort16 ushort16_u __attribute__((aligned(2)));
typedef uint16 uint16_u __attribute__((aligned(4)));
typedef ulong16 ulong16_u __attribute__((aligned(8)));
#define XY_MOVE_LD(U, p) (*(global const U##16_u*)(p))
#define XY_MOVE_VEC(U, from, to, k, end)                                                     \
  if (stream) {                                                                              \
    for (; k < end && !XY_ALIGNED(to + k, sizeof(U##16)); ++k) to[k] = from[k];             \
    for (; k + 16 <= end; k += 16) XY_VSTREAM(U##16, XY_MOVE_LD(U, from + k), to + k);       \
  }                                                                                          \
  for (; k + 16 <= end; k += 16) *(global U##16_u*)(to + k) = XY_MOVE_LD(U, from + k);
#else
#define XY_MOVE_VEC(U, from, to, k, end) (void)stream;
#endif

/* f32 */
inline float xy_ld_f32(global const float* p, long i) { return p[i]; }
inline void xy_st_f32(global float* p, long i, float v) { p[i] = v; }
inline float16 xy_vld_f32(global const float* p, long i) { return vload16(0, p + i); }
inline void xy_vst_f32(global float* p, long i, float16 v) { vstore16(v, 0, p + i); }
inline void xy_vstream_f32(global float* p, long i, float16 v) { XY_VSTREAM(float16, v, p + i); }

/* f16 */
inline float xy_ld_f16(global const half* p, long i) { return vload_half(i, p); }
inline void xy_st_f16(global half* p, long i, float v) { vstore_half_rte(v, i, p); }
inline float16 xy_vld_f16(global const half* p, long i) { return vload_half16(0, p + i); }
inline void xy_vst_f16(global half* p, long i, float16 v) { vstore_half16_rte(v, 0, p + i); }
inline void xy_vstream_f16(global half* p, long i, float16 v) {
  /* The half bits as a vector of ushort (converting to half values needs
   * cl_khr_fp16; a store to private memory does not). */
  ushort16 bits;
  vstore_half16_rte(v, 0, (private half*)&bits);
  XY_VSTREAM(ushort16, bits, p + i);
}

/* bf16: the top half of an f32 */
inline float xy_ld_bf16(global const ushort* p, long i) { return as_float(xy_bf16_to_f32_bits((uint)p[i])); }
inline void xy_st_bf16(global ushort* p, long i, float v) { p[i] = (ushort)xy_f32_bits_to_bf16(as_uint(v)); }
inline ushort16 xy_bf16_bits16(float16 f) {
  const uint16 u = as_uint16(f);
  return convert_ushort16(XY_F32_BITS_TO_BF16(u));
}
inline float16 xy_vld_bf16(global const ushort* p, long i) { return as_float16(convert_uint16(vload16(0, p + i)) << 16); }
inline void xy_vst_bf16(global ushort* p, long i, float16 v) { vstore16(xy_bf16_bits16(v), 0, p + i); }
inline void xy_vstream_bf16(global ushort* p, long i, float16 v) { XY_VSTREAM(ushort16, xy_bf16_bits16(v), p + i); }

/* f64 */
#ifdef XY_HAS_FP64
inline double xy_ld_f64(global const double* p, long i) { return p[i]; }
inline void xy_st_f64(global double* p, long i, double v) { p[i] = v; }
inline double8 xy_vld_f64(global const double* p, long i) { return vload8(0, p + i); }
inline void xy_vst_f64(global double* p, long i, double8 v) { vstore8(v, 0, p + i); }
inline void xy_vstream_f64(global double* p, long i, double8 v) { XY_VSTREAM(double8, v, p + i); }
#endif
