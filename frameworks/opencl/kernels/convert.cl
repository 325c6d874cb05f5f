/* Conversions between the 16-bit floats and f32 for blas::gemm of f16 and
 * bf16 (ops/gemm_half.cpp): the inputs are widened into dense f32 buffers,
 * the f32 gemm runs, and its result is rounded back into c's view. Neither
 * dtype needs the device to compute in it: f16 moves through vload_half
 * and vstore_half_rte (core OpenCL C, no cl_khr_fp16), bf16 through bit
 * operations. Rounding is to nearest even; a NaN stays a NaN (bf16 keeps
 * its sign and top payload bits, and sets the quiet bit).
 *
 * A matrix view is rows x cols with row stride ld (elements); each
 * work-item takes XY_CVT_W consecutive elements of one row, as one vector
 * where the whole run is inside the row. The kernels do not depend on the
 * element type the family is built for, so they are defined once. */

#ifndef XY_CONVERT_ONCE
#define XY_CONVERT_ONCE

#define XY_CVT_W 16

/* Which row and which first column an item takes; false past the end. */
#define XY_CVT_ITEM(i, j0, rows, cols)                      \
  const long runs = (cols + XY_CVT_W - 1) / XY_CVT_W;       \
  const long item = get_global_id(0);                       \
  if (item >= rows * runs) return;                          \
  const long i = item / runs, j0 = (item % runs) * XY_CVT_W

inline float xy_bf16_to_f32(ushort h) { return as_float((uint)h << 16); }

inline ushort xy_f32_to_bf16(float f) { return (ushort)xy_f32_bits_to_bf16(as_uint(f)); }

inline float16 xy_bf16_to_f32_16(ushort16 h) { return as_float16(convert_uint16(h) << 16); }

inline ushort16 xy_f32_to_bf16_16(float16 f) {
  const uint16 u = as_uint16(f);
  return convert_ushort16(XY_F32_BITS_TO_BF16(u));
}

/* y (dense rows x cols) = x (the view at xo, row stride ldx). */
kernel void to_f32_f16(global const half* x, long xo, long ldx, long rows, long cols, global float* y) {
  XY_CVT_ITEM(i, j0, rows, cols);
  global const half* from = x + xo + i * ldx + j0;
  global float* to = y + i * cols + j0;
  if (j0 + XY_CVT_W <= cols) {
    vstore16(vload_half16(0, from), 0, to);
    return;
  }
  for (long j = 0; j < cols - j0; ++j) to[j] = vload_half(j, from);
}

kernel void to_f32_bf16(global const ushort* x, long xo, long ldx, long rows, long cols, global float* y) {
  XY_CVT_ITEM(i, j0, rows, cols);
  global const ushort* from = x + xo + i * ldx + j0;
  global float* to = y + i * cols + j0;
  if (j0 + XY_CVT_W <= cols) {
    vstore16(xy_bf16_to_f32_16(vload16(0, from)), 0, to);
    return;
  }
  for (long j = 0; j < cols - j0; ++j) to[j] = xy_bf16_to_f32(from[j]);
}

/* c (the view at co, row stride ldc) = t (dense rows x cols) + beta * c,
 * in f32, rounded once. With beta == 0, c is written without being read
 * (it may hold NaN). */
kernel void from_f32_f16(global const float* t, global half* c, long co, long ldc, long rows, long cols,
                         float beta) {
  XY_CVT_ITEM(i, j0, rows, cols);
  global const float* from = t + i * cols + j0;
  global half* to = c + co + i * ldc + j0;
  if (j0 + XY_CVT_W <= cols) {
    float16 v = vload16(0, from);
    if (beta != 0) v += beta * vload_half16(0, to);
    vstore_half16_rte(v, 0, to);
    return;
  }
  for (long j = 0; j < cols - j0; ++j) {
    float v = from[j];
    if (beta != 0) v += beta * vload_half(j, to);
    vstore_half_rte(v, j, to);
  }
}

kernel void from_f32_bf16(global const float* t, global ushort* c, long co, long ldc, long rows, long cols,
                          float beta) {
  XY_CVT_ITEM(i, j0, rows, cols);
  global const float* from = t + i * cols + j0;
  global ushort* to = c + co + i * ldc + j0;
  if (j0 + XY_CVT_W <= cols) {
    float16 v = vload16(0, from);
    if (beta != 0) v += beta * xy_bf16_to_f32_16(vload16(0, to));
    vstore16(xy_f32_to_bf16_16(v), 0, to);
    return;
  }
  for (long j = 0; j < cols - j0; ++j) {
    float v = from[j];
    if (beta != 0) v += beta * xy_bf16_to_f32(to[j]);
    to[j] = xy_f32_to_bf16(v);
  }
}

#undef XY_CVT_ITEM

#endif /* XY_CONVERT_ONCE */
