/* nn::dropout and dropout_grad (the same map): element k (row-major
 * logical index) is kept when xy_uniform01_f(xy_philox(seed, offset + k))
 * >= p, the f32 test on every framework, so every framework drops the same
 * elements. y = keep ? x / keep_scale : 0, keep_scale = 1 - p in T. CPU
 * devices run Philox over VW lanes at once: mul_hi and a multiply give the
 * 64-bit products of math.h's xy_philox. */
#define XY_UV XY_PASTE(uint, VW)
#define XY_ULV XY_PASTE(ulong, VW)
#define XY_FV XY_PASTE(float, VW)

/* The first word of xy_philox(seed, counter) for VW consecutive counters. */
inline XY_UV KNAME(philox_first_word)(ulong seed, ulong counter) {
  const XY_ULV ctr = (XY_ULV)(counter) + XY_PASTE(convert_ulong, VW)(VIOTA);
  XY_UV c0 = XY_PASTE(convert_uint, VW)(ctr), c1 = XY_PASTE(convert_uint, VW)(ctr >> 32);
  XY_UV c2 = (XY_UV)(0u), c3 = (XY_UV)(0u);
  uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const XY_UV hi0 = mul_hi((XY_UV)(0xD2511F53u), c0), lo0 = (XY_UV)(0xD2511F53u) * c0;
    const XY_UV hi1 = mul_hi((XY_UV)(0xCD9E8D57u), c2), lo1 = (XY_UV)(0xCD9E8D57u) * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
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
