/* creation: fill, arange, uniform, normal over views of any strides.
 * Element k of the row-major logical order gets value(k); _c kernels write
 * a contiguous run at an offset, _s kernels find element k's place from the
 * layout. */

#ifndef XY_CREATION_ONCE
#define XY_CREATION_ONCE

/* fill writes a bit pattern the host made from the value (f16/bf16
 * rounding, integer saturation), so one kernel per element size serves
 * every dtype. fill_r (CPU devices, strided views): a chunk of runs along
 * the innermost axis per item (XY_RUNS). */
#define XY_FILL(U, bits)                                                       \
  kernel void fill_c_##bits(global U* y, long yo, long n, U v) {              \
    XY_FOR_RUN(i, n) y[yo + i] = v;                                            \
  }                                                                            \
  kernel void fill_s_##bits(global U* y, xy_layout l, long n, U v) {          \
    const long i = get_global_id(0);                                           \
    if (i >= n) return;                                                        \
    long o;                                                                    \
    xy_offsets1(&l, i, &o);                                                    \
    y[o] = v;                                                                  \
  }                                                                            \
  kernel void fill_r_##bits(global U* y, xy_layout lv, long n, U v, long per) { \
    const xy_layout* l = &lv;                                                  \
    XY_CHUNK_BOUNDS(i, end, n, per);                                           \
    XY_RUNS(1, {                                                               \
      global U* to = y + o[0];                                                 \
      const long s = XY_STRIDE(0);                                             \
      for (long k = 0; k < len; ++k) to[k * s] = v;                            \
    })                                                                         \
  }
XY_FILL(uchar, 8)
XY_FILL(ushort, 16)
XY_FILL(uint, 32)
XY_FILL(ulong, 64)
XY_FILL(ulong2, 128)

/* Conversions from the computed value to each dtype's storage, as the
 * native framework makes them: f16 and bf16 round a float to nearest
 * even, integers truncate toward zero and saturate (NaN gives 0). */
inline ushort xy_to_f16(float v) {
  ushort bits; /* half values need cl_khr_fp16; a half pointer does not */
  vstore_half_rte(v, 0, (private half*)&bits);
  return bits;
}
inline ushort xy_to_bf16(float v) { return (ushort)xy_f32_bits_to_bf16(as_uint(v)); }

/* arange: start + k*step, formed in double where the device has it (in
 * float otherwise), rounded once to the dtype. When start and step are
 * whole numbers the host passes them as integers too, and the value is
 * exact in any precision. */
inline xy_wide xy_arange_value(xy_wide start, xy_wide step, long istart, long istep, int integral, long k) {
  return integral ? (xy_wide)(istart + k * istep) : start + (xy_wide)k * step;
}

#define XY_ARANGE(name, U, from_wide, from_long)                                                          \
  kernel void arange_c_##name(global U* y, long yo, long n, xy_wide start, xy_wide step, long istart,    \
                              long istep, int integral) {                                                 \
    const long k = get_global_id(0);                                                                      \
    if (k >= n) return;                                                                                   \
    y[yo + k] = integral ? from_long(istart + k * istep)                                                  \
                         : from_wide(xy_arange_value(start, step, istart, istep, 0, k));                  \
  }                                                                                                       \
  kernel void arange_s_##name(global U* y, xy_layout l, long n, xy_wide start, xy_wide step, long istart, \
                              long istep, int integral) {                                                 \
    const long k = get_global_id(0);                                                                      \
    if (k >= n) return;                                                                                   \
    long o;                                                                                               \
    xy_offsets1(&l, k, &o);                                                                               \
    y[o] = integral ? from_long(istart + k * istep)                                                       \
                    : from_wide(xy_arange_value(start, step, istart, istep, 0, k));                       \
  }

#define XY_F16_FROM_WIDE(v) xy_to_f16((float)(v))
#define XY_F16_FROM_LONG(v) xy_to_f16((float)(xy_wide)(v))
#define XY_BF16_FROM_WIDE(v) xy_to_bf16((float)(v))
#define XY_BF16_FROM_LONG(v) xy_to_bf16((float)(xy_wide)(v))
#define XY_F32_FROM_WIDE(v) ((float)(v))
#define XY_F32_FROM_LONG(v) ((float)(xy_wide)(v))
XY_ARANGE(f16, ushort, XY_F16_FROM_WIDE, XY_F16_FROM_LONG)
XY_ARANGE(bf16, ushort, XY_BF16_FROM_WIDE, XY_BF16_FROM_LONG)
XY_ARANGE(f32, float, XY_F32_FROM_WIDE, XY_F32_FROM_LONG)
#ifdef XY_HAS_FP64
#define XY_F64_FROM_WIDE(v) ((double)(v))
#define XY_F64_FROM_LONG(v) ((double)(v))
XY_ARANGE(f64, double, XY_F64_FROM_WIDE, XY_F64_FROM_LONG)
#endif
XY_ARANGE(i32, int, convert_int_sat_rtz, convert_int_sat)
XY_ARANGE(i64, long, convert_long_sat_rtz, (long))
XY_ARANGE(u8, uchar, convert_uchar_sat_rtz, convert_uchar_sat)

#endif /* XY_CREATION_ONCE */

/* uniform and normal: element k draws Philox counter `counter + k` under
 * key `seed` (math.h), then low + span*u or mean + stddev*z in T. */
kernel void KNAME(uniform_c)(global T* y, long yo, long n, T low, T span, ulong seed, ulong counter) {
  const long k = get_global_id(0);
  if (k < n) y[yo + k] = low + span * XF(xy_uniform01)(xy_philox(seed, counter + (ulong)k));
}
kernel void KNAME(uniform_s)(global T* y, xy_layout l, long n, T low, T span, ulong seed, ulong counter) {
  const long k = get_global_id(0);
  if (k >= n) return;
  long o;
  xy_offsets1(&l, k, &o);
  y[o] = low + span * XF(xy_uniform01)(xy_philox(seed, counter + (ulong)k));
}
kernel void KNAME(normal_c)(global T* y, long yo, long n, T mean, T stddev, ulong seed, ulong counter) {
  const long k = get_global_id(0);
  if (k < n) y[yo + k] = mean + stddev * XF(xy_normal)(xy_philox(seed, counter + (ulong)k));
}
kernel void KNAME(normal_s)(global T* y, xy_layout l, long n, T mean, T stddev, ulong seed, ulong counter) {
  const long k = get_global_id(0);
  if (k >= n) return;
  long o;
  xy_offsets1(&l, k, &o);
  y[o] = mean + stddev * XF(xy_normal)(xy_philox(seed, counter + (ulong)k));
}
