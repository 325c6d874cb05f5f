/* math::cast between all eight dtypes: one kernel per (source, target),
 * cast_<from>_<to>, over views of any strides (walked in runs, see XY_RUNS
 * in storage.cl). The kernels do not depend on the family's element type,
 * so they are defined once.
 *
 * Each source loads as its natural type (f16, bf16 -> float; bool -> its
 * uchar 0 or 1), then one conversion gives the target, each rounding once:
 * floats to integers truncate toward zero and saturate, NaN -> 0 (OpenCL's
 * _sat_rtz conversions); integers to integers saturate (as the native
 * framework); anything to bool is x != 0; to the 16-bit floats through
 * float, where a value that float cannot hold exactly first rounds to odd
 * (then the second rounding is the correct one). */

#ifndef XY_CAST_ONCE
#define XY_CAST_ONCE

/* ---- loads: element i of the source, as its natural type ---------------- */
inline float xy_cast_ld_f16(global const half* p, long i) { return vload_half(i, p); }
inline float xy_cast_ld_bf16(global const ushort* p, long i) { return as_float(xy_bf16_to_f32_bits((uint)p[i])); }
inline float xy_cast_ld_f32(global const float* p, long i) { return p[i]; }
inline int xy_cast_ld_i32(global const int* p, long i) { return p[i]; }
inline long xy_cast_ld_i64(global const long* p, long i) { return p[i]; }
inline uchar xy_cast_ld_u8(global const uchar* p, long i) { return p[i]; }
inline uchar xy_cast_ld_bool(global const uchar* p, long i) { return p[i] != 0; }

/* ---- float rounded to odd: exact when the value is, otherwise the
 * truncated value with its last bit set ----------------------------------- */
inline float xy_odd_float_i32(int x) {
  const float f = convert_float_rtz(x);
  return convert_int_rtz(f) == x ? f : as_float(as_uint(f) | 1u);
}
inline float xy_odd_float_i64(long x) {
  const float f = convert_float_rtz(x);
  return convert_long_rtz(f) == x ? f : as_float(as_uint(f) | 1u);
}

inline ushort xy_bf16_of(float f) { return (ushort)xy_f32_bits_to_bf16(as_uint(f)); }

/* ---- conversions: xy_to_<target>_<natural source> ------------------------ */
#define XY_TO_BOOL(src, S) \
  inline uchar xy_to_bool_##src(S v) { return v != (S)0; }
XY_TO_BOOL(float, float)
XY_TO_BOOL(int, int)
XY_TO_BOOL(long, long)
XY_TO_BOOL(uchar, uchar)

inline float xy_to_f32_float(float v) { return v; }
inline float xy_to_f32_int(int v) { return convert_float_rte(v); }
inline float xy_to_f32_long(long v) { return convert_float_rte(v); }
inline float xy_to_f32_uchar(uchar v) { return (float)v; }

/* f16: int and long through float directly: a value float cannot hold
 * (|x| > 2^24) overflows f16 to Inf either way. */
inline float xy_to_f16_float(float v) { return v; }
inline float xy_to_f16_int(int v) { return convert_float_rte(v); }
inline float xy_to_f16_long(long v) { return convert_float_rte(v); }
inline float xy_to_f16_uchar(uchar v) { return (float)v; }

inline ushort xy_to_bf16_float(float v) { return xy_bf16_of(v); }
inline ushort xy_to_bf16_int(int v) { return xy_bf16_of(xy_odd_float_i32(v)); }
inline ushort xy_to_bf16_long(long v) { return xy_bf16_of(xy_odd_float_i64(v)); }
inline ushort xy_to_bf16_uchar(uchar v) { return xy_bf16_of((float)v); }

inline int xy_to_i32_float(float v) { return convert_int_sat_rtz(v); }
inline int xy_to_i32_int(int v) { return v; }
inline int xy_to_i32_long(long v) { return convert_int_sat(v); }
inline int xy_to_i32_uchar(uchar v) { return (int)v; }

inline long xy_to_i64_float(float v) { return convert_long_sat_rtz(v); }
inline long xy_to_i64_int(int v) { return (long)v; }
inline long xy_to_i64_long(long v) { return v; }
inline long xy_to_i64_uchar(uchar v) { return (long)v; }

inline uchar xy_to_u8_float(float v) { return convert_uchar_sat_rtz(v); }
inline uchar xy_to_u8_int(int v) { return convert_uchar_sat(v); }
inline uchar xy_to_u8_long(long v) { return convert_uchar_sat(v); }
inline uchar xy_to_u8_uchar(uchar v) { return v; }

#ifdef XY_HAS_FP64
inline double xy_cast_ld_f64(global const double* p, long i) { return p[i]; }
inline float xy_odd_float_f64(double x) {
  const float f = convert_float_rtz(x);
  return (isnan(x) || (double)f == x) ? f : as_float(as_uint(f) | 1u);
}
XY_TO_BOOL(double, double)
inline float xy_to_f32_double(double v) { return convert_float_rte(v); }
inline float xy_to_f16_double(double v) { return xy_odd_float_f64(v); }
inline ushort xy_to_bf16_double(double v) { return xy_bf16_of(xy_odd_float_f64(v)); }
inline int xy_to_i32_double(double v) { return convert_int_sat_rtz(v); }
inline long xy_to_i64_double(double v) { return convert_long_sat_rtz(v); }
inline uchar xy_to_u8_double(double v) { return convert_uchar_sat_rtz(v); }
#define XY_TO_F64(src, S) \
  inline double xy_to_f64_##src(S v) { return convert_double_rte(v); }
XY_TO_F64(float, float)
XY_TO_F64(int, int)
XY_TO_F64(long, long)
XY_TO_F64(uchar, uchar)
XY_TO_F64(double, double)
#endif

/* ---- stores: the converted value as element i of the target ------------- */
inline void xy_cast_st_f16(global half* p, long i, float v) { vstore_half_rte(v, i, p); }
inline void xy_cast_st_bf16(global ushort* p, long i, ushort v) { p[i] = v; }
inline void xy_cast_st_f32(global float* p, long i, float v) { p[i] = v; }
inline void xy_cast_st_i32(global int* p, long i, int v) { p[i] = v; }
inline void xy_cast_st_i64(global long* p, long i, long v) { p[i] = v; }
inline void xy_cast_st_u8(global uchar* p, long i, uchar v) { p[i] = v; }
inline void xy_cast_st_bool(global uchar* p, long i, uchar v) { p[i] = v; }
#ifdef XY_HAS_FP64
inline void xy_cast_st_f64(global double* p, long i, double v) { p[i] = v; }
#endif

/* The kernel from `from` (storage S, natural N) to `to` (storage D). The
 * dense loop is kept apart so that the compiler vectorises it. */
#define XY_CAST(from, S, N, to, D)                                                                   \
  kernel void cast_##from##_##to(global const S* x, global D* y, xy_layout lv, long n, int stream,    \
                                 long per) {                                                         \
    (void)stream;                                                                                    \
    const xy_layout* l = &lv;                                                                        \
    XY_CHUNK_BOUNDS(i, end, n, per);                                                                 \
    XY_RUNS(2, {                                                                                     \
      global const S* xr = x + o[0];                                                                 \
      global D* yr = y + o[1];                                                                       \
      const long sx = XY_STRIDE(0), sy = XY_STRIDE(1);                                               \
      if (sx == 1 && sy == 1) {                                                                      \
        for (long k = 0; k < len; ++k) xy_cast_st_##to(yr, k, xy_to_##to##_##N(xy_cast_ld_##from(xr, k))); \
      } else {                                                                                       \
        for (long k = 0; k < len; ++k)                                                               \
          xy_cast_st_##to(yr, k * sy, xy_to_##to##_##N(xy_cast_ld_##from(xr, k * sx)));              \
      }                                                                                              \
    })                                                                                               \
  }

/* Every target from one source. */
#define XY_CAST_FROM(from, S, N)              \
  XY_CAST(from, S, N, f16, half)              \
  XY_CAST(from, S, N, bf16, ushort)           \
  XY_CAST(from, S, N, f32, float)             \
  XY_CAST(from, S, N, i32, int)               \
  XY_CAST(from, S, N, i64, long)              \
  XY_CAST(from, S, N, u8, uchar)              \
  XY_CAST(from, S, N, bool, uchar)            \
  XY_CAST_TO_F64(from, S, N)

#ifdef XY_HAS_FP64
#define XY_CAST_TO_F64(from, S, N) XY_CAST(from, S, N, f64, double)
#else
#define XY_CAST_TO_F64(from, S, N)
#endif

XY_CAST_FROM(f16, half, float)
XY_CAST_FROM(bf16, ushort, float)
XY_CAST_FROM(f32, float, float)
XY_CAST_FROM(i32, int, int)
XY_CAST_FROM(i64, long, long)
XY_CAST_FROM(u8, uchar, uchar)
XY_CAST_FROM(bool, uchar, uchar)
#ifdef XY_HAS_FP64
XY_CAST_FROM(f64, double, double)
#endif

#endif /* XY_CAST_ONCE */
