/* Helpers of the nn families (layer_norm, batch_norm, conv2d, pool, lrn), compiled once per
 * program before the family's text. Those families have f16 and bf16
 * passes (package.cpp): their kernels compute in T and move elements of
 * the storage type ST through kernels/storage.cl's XY_LD / XY_ST. */

/* A view of rank <= 4 as a kernel takes it: the offset and the strides of
 * its axes, in elements (ops/nn_launch.hpp's ViewArg). */
typedef struct {
  long offset;
  long s[4];
} xy_view;

/* The geometry of a sliding window over the H x W planes of an NCHW
 * tensor giving P x Q outputs: window kh x kw, stride, zero padding,
 * dilation (ops/nn_launch.hpp's WindowArg). Output (p, q) covers input rows
 * p*sh - ph + r*dh, r < kh (columns likewise). */
typedef struct {
  long H, W, P, Q;
  long kh, kw, sh, sw, ph, pw, dh, dw;
} xy_window;

/* Work-group sums, the result in every item (every item must call them).
 * tmp holds get_local_size(0) elements, a power of two. Each item first
 * accumulates its own strided share, then the tree halves: blocked,
 * pairwise-like accumulation. */
#define XY_GROUP_SUM(name, TT)                                      \
  inline TT name(TT v, local TT* tmp) {                            \
    const size_t lid = get_local_id(0);                            \
    tmp[lid] = v;                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                  \
    for (size_t w = get_local_size(0) / 2; w > 0; w /= 2) {        \
      if (lid < w) tmp[lid] += tmp[lid + w];                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                \
    }                                                              \
    const TT sum = tmp[0];                                         \
    barrier(CLK_LOCAL_MEM_FENCE); /* tmp is reused by the caller */ \
    return sum;                                                    \
  }
XY_GROUP_SUM(xy_group_sum_f, float)
#ifdef XY_HAS_FP64
XY_GROUP_SUM(xy_group_sum_d, double)
#endif
#undef XY_GROUP_SUM

/* This item's (n, s) over the N*Sz elements of one channel of an
 * [N, C, Sz] view, in steps of the group size: the division only when s
 * wraps past a row (once per step at most when Sz >= the group size). */
#define XY_CHANNEL_LOOP(n, s, N, Sz)                                                    \
  for (long n = (long)get_local_id(0) / (Sz), s = (long)get_local_id(0) % (Sz); n < (N); \
       s += (long)get_local_size(0), (s >= (Sz) ? (n += s / (Sz), s %= (Sz)) : 0))

/* q = i / d and *rem = i % d for i >= 0, d > 0: in 32-bit arithmetic when
 * `narrow`, which the host passes when every index of the launch fits in
 * 31 bits (ops/row_runs.hpp). A 64-bit division costs several
 * times a 32-bit one; kernels that divide per element pay it per element. */
inline long xy_divide(long i, long d, long* rem, int narrow) {
  if (narrow) {
    const uint q = (uint)i / (uint)d;
    *rem = (long)((uint)i - q * (uint)d);
    return (long)q;
  }
  const long q = i / d;
  *rem = i - q * d;
  return q;
}

/* Item get_global_id(0) of a walk of `rows` rows of B elements, each row in
 * runs of `per` (ops/row_runs.hpp): its row and run [*b0, *b1); false for
 * the items past the end. */
inline bool xy_row_run(long B, long per, long rows, int narrow, long* row, long* b0, long* b1) {
  long chunk;
  *row = xy_divide((long)get_global_id(0), (B + per - 1) / per, &chunk, narrow);
  if (*row >= rows) return false;
  *b0 = chunk * per;
  *b1 = min(*b0 + per, B);
  return true;
}
