/* core::copy_view: y = x between views of one shape and any strides. Data
 * moves as bits, so one set of kernels per element size serves every
 * dtype. _c: both dense (chunks walked in vectors of 16 elements, see
 * XY_CHUNK_BOUNDS); _t: a two-axis view whose dense axes differ (a
 * transpose), tile by tile; _s: anything else, element by element. */

#ifndef XY_COPY_ONCE
#define XY_COPY_ONCE

#ifdef XY_CPU
#define XY_COPY_VEC(U)                                                                       \
  if (stream) {                                                                              \
    for (; i < end && !XY_ALIGNED(y + i, sizeof(U##16)); ++i) y[i] = x[i];                  \
    for (; i + 16 <= end; i += 16) XY_VSTREAM(U##16, vload16(0, x + i), y + i);              \
  }                                                                                          \
  for (; i + 16 <= end; i += 16) vstore16(vload16(0, x + i), 0, y + i);
#else
#define XY_COPY_VEC(U) (void)stream;
#endif

/* A transpose read along one axis and written along the other thrashes
 * the cache: each tile of XY_TILE x XY_TILE elements (a cache line's worth
 * of 32-bit words on each side) goes through a private buffer, read in the
 * order of the source's dense axis and written in the destination's. An
 * item takes XY_TILE rows (axis 0) and up to `span` tiles of axis 1. */
#define XY_TILE 16

/* XY_COPY_VEC_1 walks dense chunks in vectors; XY_COPY_VEC_0 is for words
 * OpenCL has no 16-wide vector of (ulong2, the 128-bit word). */
#define XY_COPY_VEC_1(U) XY_COPY_VEC(U)
#define XY_COPY_VEC_0(U) (void)stream;

#define XY_COPY(U, bits, vec)                                                                        \
  kernel void copy_c_##bits(global const U* x, long xo, global U* y, long yo, long n, int stream,   \
                            long per) {                                                              \
    x += xo;                                                                                         \
    y += yo;                                                                                         \
    XY_CHUNK_BOUNDS(i, end, n, per);                                                                 \
    XY_COPY_VEC_##vec(U)                                                                             \
    for (; i < end; ++i) y[i] = x[i];                                                                \
  }                                                                                                  \
  kernel void copy_t_##bits(global const U* x, global U* y, xy_layout l, long span) {               \
    const long d0 = l.dims[0], d1 = l.dims[1];                                                       \
    const long groups1 = (d1 + XY_TILE * span - 1) / (XY_TILE * span);                               \
    const long i0 = ((long)get_global_id(0) / groups1) * XY_TILE;                                    \
    if (i0 >= d0) return;                                                                            \
    const long j_first = ((long)get_global_id(0) % groups1) * XY_TILE * span;                        \
    const long j_last = min(j_first + XY_TILE * span, d1);                                           \
    const long x0 = l.strides[0][0], x1 = l.strides[0][1], y0 = l.strides[1][0], y1 = l.strides[1][1]; \
    const long ni = min((long)XY_TILE, d0 - i0);                                                     \
    U buf[XY_TILE][XY_TILE];                                                                         \
    for (long j0 = j_first; j0 < j_last; j0 += XY_TILE) {                                            \
      const long nj = min((long)XY_TILE, d1 - j0);                                                   \
      global const U* from = x + l.offsets[0] + i0 * x0 + j0 * x1;                                   \
      global U* to = y + l.offsets[1] + i0 * y0 + j0 * y1;                                           \
      if (abs(x0) < abs(x1)) {                                                                     \
        for (long j = 0; j < nj; ++j)                                                                \
          for (long i = 0; i < ni; ++i) buf[i][j] = from[i * x0 + j * x1];                           \
      } else {                                                                                       \
        for (long i = 0; i < ni; ++i)                                                                \
          for (long j = 0; j < nj; ++j) buf[i][j] = from[i * x0 + j * x1];                           \
      }                                                                                              \
      if (abs(y0) < abs(y1)) {                                                                     \
        for (long j = 0; j < nj; ++j)                                                                \
          for (long i = 0; i < ni; ++i) to[i * y0 + j * y1] = buf[i][j];                             \
      } else {                                                                                       \
        for (long i = 0; i < ni; ++i)                                                                \
          for (long j = 0; j < nj; ++j) to[i * y0 + j * y1] = buf[i][j];                             \
      }                                                                                              \
    }                                                                                                \
  }                                                                                                  \
  kernel void copy_s_##bits(global const U* x, global U* y, xy_layout l, long n) {                  \
    const long i = get_global_id(0);                                                                 \
    if (i >= n) return;                                                                              \
    long ox, oy;                                                                                     \
    xy_offsets2(&l, i, &ox, &oy);                                                                    \
    y[oy] = x[ox];                                                                                   \
  }
XY_COPY(uchar, 8, 1)
XY_COPY(ushort, 16, 1)
XY_COPY(uint, 32, 1)
XY_COPY(ulong, 64, 1)
XY_COPY(ulong2, 128, 0)

#endif /* XY_COPY_ONCE */
