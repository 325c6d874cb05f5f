/* nn::dropout and dropout_grad (the same map): element k (row-major
 * logical index) is kept when xy_uniform01_f(xy_philox(seed, offset + k))
 * >= p, the f32 test on every framework, so every framework drops the same
 * elements. y = keep ? x / keep_scale : 0, keep_scale = 1 - p in T. CPU
 * devices run math.h's Philox rounds over VW lanes at once. */
#define XY_UV XY_PASTE(uint, VW)
#define XY_ULV XY_PASTE(ulong, VW)
#define XY_FV XY_PASTE(float, VW)

/* math.h's rounds on VW lanes: no 64-bit product, so the "product" is the
 * word itself and mul_hi and a (wrapping) 32-bit multiply give its halves. */
#define XY_PHILOX_WORD_V(m, c) (c)
#define XY_PHILOX_HI_V(m, c) mul_hi((XY_UV)(m), c)
#define XY_PHILOX_LO_V(m, c) ((m) * (c))

/* The first word of xy_philox(seed, counter) for VW consecutive counters. */
inline XY_UV KNAME(philox_first_word)(ulong seed, ulong counter) {
  const XY_ULV ctr = (XY_ULV)(counter) + XY_PASTE(convert_ulong, VW)(VIOTA);
  XY_UV c0 = XY_PASTE(convert_uint, VW)(ctr), c1 = XY_PASTE(convert_uint, VW)(ctr >> 32);
  XY_UV c2 = (XY_UV)(0u), c3 = (XY_UV)(0u);
  uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
  XY_PHILOX_ROUNDS(XY_UV, XY_PHILOX_WORD_V, XY_PHILOX_HI_V, XY_PHILOX_LO_V, XY_PHILOX_XOR3, XY_PHILOX_KEY_ADD, c0, c1, c2, c3, k0, k1)
  return c0;
}

kernel void KNAME(dropout)(global const ST* x, global ST* y, xy_layout lv, long n, float p, T keep_p, ulong seed,
                           ulong offset, int stream, long per) {
  (void)stream;
  const xy_layout* l = &lv;
  const T keep_scale = (T)1 - keep_p;
  XY_CHUNK_BOUNDS(i, end, n, per);
  XY_RUNS(2, {
    global const ST* xr = x + o[0];
    global ST* yr = y + o[1];
    const ulong first = offset + (ulong)i;
    long k = 0;
#ifdef XY_CPU
    if (XY_STRIDE(0) == 1 && XY_STRIDE(1) == 1) {
      for (; k + VW <= len; k += VW) {
        const XY_FV u = XY_PASTE(convert_float, VW)(KNAME(philox_first_word)(seed, first + (ulong)k) >> 8) *
                        (1.0f / 16777216.0f);
        const VI keep = XY_PASTE(convert_, VI)(u >= p);
        XY_VST(yr, k, keep ? XY_VLD(xr, k) / keep_scale : (VT)(0));
      }
    }
#endif
    for (; k < len; ++k) {
      const bool keep = xy_uniform01_f(xy_philox(seed, first + (ulong)k)) >= p;
      XY_ST(yr, k * XY_STRIDE(1), keep ? XY_LD(xr, k * XY_STRIDE(0)) / keep_scale : (T)0);
    }
  })
}

#undef XY_UV
#undef XY_ULV
#undef XY_FV
#undef XY_PHILOX_WORD_V
#undef XY_PHILOX_HI_V
#undef XY_PHILOX_LO_V
