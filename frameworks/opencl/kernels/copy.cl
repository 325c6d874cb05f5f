/* core::copy_view: y = x between views of one shape and any strides. Data
 * moves as bits, so one kernel per element size serves every dtype. The
 * contiguous case also uses these (_c) rather than clEnqueueCopyBuffer
 * where the device runs them faster (see ops/copy.cpp). */

#ifndef XY_COPY_ONCE
#define XY_COPY_ONCE

#define XY_COPY(U, bits)                                                                   \
  kernel void copy_c_##bits(global const U* x, long xo, global U* y, long yo, long n) {   \
    XY_FOR_RUN(i, n) y[yo + i] = x[xo + i];                                                \
  }                                                                                        \
  kernel void copy_s_##bits(global const U* x, global U* y, xy_layout l, long n) {        \
    const long i = get_global_id(0);                                                       \
    if (i >= n) return;                                                                    \
    long ox, oy;                                                                           \
    xy_offsets2(&l, i, &ox, &oy);                                                          \
    y[oy] = x[ox];                                                                         \
  }
XY_COPY(uchar, 8)
XY_COPY(ushort, 16)
XY_COPY(uint, 32)
XY_COPY(ulong, 64)

#endif /* XY_COPY_ONCE */
