/* index::check, index::gather and the assigning index::scatter, moving
 * elements as bits of their size (one kernel per size and index type
 * serves every dtype). A gather walks the host's collapse of (index, y,
 * x's line starts) over index's dims (include/xylem/plugin/index.hpp), one
 * item per element (gather_r, CPU devices: a chunk of runs along the
 * innermost axis per item, a dense run of one index moved in vectors); a
 * scatter is kernels/index_walk.cl's column walk. An index outside [0, n)
 * gives 0 (gather) or is skipped (scatter), which keeps memory safe;
 * index_check's flag reports it to the host. */

#ifndef XY_INDEX_ONCE
#define XY_INDEX_ONCE

/* flag = 1 when some index is outside [0, n) (all writers store 1). */
#define XY_INDEX_CHECK(I)                                                                       \
  kernel void index_check_##I(global const I* index, xy_layout l, long n, long count,            \
                              global int* flag, long flag_offset) {                              \
    const long i = get_global_id(0);                                                             \
    if (i >= count) return;                                                                      \
    long o;                                                                                      \
    xy_offsets1(&l, i, &o);                                                                      \
    const long v = index[o];                                                                     \
    if (v < 0 || v >= n) flag[flag_offset] = 1;                                                  \
  }
XY_INDEX_CHECK(int)
XY_INDEX_CHECK(long)

/* CPU devices: a chunk of runs per item, each run's test a plain loop
 * that the compiler vectorises (index_check's item per element took 40%
 * of a gather's time on one PoCL thread). */
#ifdef XY_CPU
#define XY_INDEX_CHECK_RUNS(I)                                                                  \
  kernel void index_check_r_##I(global const I* index, xy_layout lv, long n, long count,         \
                                global int* flag, long flag_offset, int stream, long per) {      \
    (void)stream;                                                                                \
    const xy_layout* l = &lv;                                                                    \
    XY_CHUNK_BOUNDS(i, end, count, per);                                                         \
    int outside = 0;                                                                             \
    XY_RUNS(1, {                                                                                 \
      global const I* at = index + o[0];                                                         \
      const long s = XY_STRIDE(0);                                                               \
      if (s == 1) {                                                                              \
        for (long k = 0; k < len; ++k) outside |= at[k] < 0 || at[k] >= n;                       \
      } else {                                                                                   \
        for (long k = 0; k < len; ++k) outside |= at[k * s] < 0 || at[k * s] >= n;               \
      }                                                                                          \
    })                                                                                           \
    if (outside) flag[flag_offset] = 1;                                                          \
  }
XY_INDEX_CHECK_RUNS(int)
XY_INDEX_CHECK_RUNS(long)
#endif

#define XY_INDEX_MOVE(U, bits, I)                                                                \
  kernel void gather_##bits##_##I(global const I* index, global U* y, global const U* x,         \
                                  xy_layout l, long n, long step, long count) {                  \
    const long i = get_global_id(0);                                                             \
    if (i >= count) return;                                                                      \
    long oi, oy, ox;                                                                             \
    xy_offsets3(&l, i, &oi, &oy, &ox);                                                           \
    const long v = index[oi];                                                                    \
    y[oy] = (v >= 0 && v < n) ? x[ox + v * step] : (U)0;                                         \
  }                                                                                              \
  kernel void gather_r_##bits##_##I(global const I* index, global U* y, global const U* x,       \
                                    xy_layout lv, long n, long step, long count, int stream,     \
                                    long per) {                                                  \
    const xy_layout* l = &lv;                                                                    \
    XY_CHUNK_BOUNDS(i, end, count, per);                                                         \
    XY_RUNS(3, {                                                                                 \
      global const I* at = index + o[0];                                                         \
      global U* to = y + o[1];                                                                   \
      global const U* from = x + o[2];                                                           \
      const long si = XY_STRIDE(0), sy = XY_STRIDE(1), sx = XY_STRIDE(2);                        \
      long k = 0;                                                                                \
      if (si == 0 && sy == 1 && sx == 1) {                                                       \
        const long v = at[0];                                                                    \
        if (v >= 0 && v < n) {                                                                   \
          from += v * step;                                                                      \
          XY_MOVE_VEC(U, from, to, k, len)                                                       \
          for (; k < len; ++k) to[k] = from[k];                                                  \
        }                                                                                        \
        for (; k < len; ++k) to[k] = (U)0;                                                       \
      } else if (si == 1 && sy == 1 && sx == 0) {                                                \
        /* along the innermost axis (take_along_axis's -1): a plain loop, \
         * which the compiler vectorises with gathers */                                         \
        for (; k < len; ++k) {                                                                   \
          const long v = at[k];                                                                  \
          to[k] = (v >= 0 && v < n) ? from[v * step] : (U)0;                                     \
        }                                                                                        \
      } else {                                                                                   \
        for (; k < len; ++k) {                                                                   \
          const long v = at[k * si];                                                             \
          to[k * sy] = (v >= 0 && v < n) ? from[k * sx + v * step] : (U)0;                      \
        }                                                                                        \
      }                                                                                          \
    })                                                                                           \
  }                                                                                              \
  XY_SCATTER_KERNEL(scatter_##bits##_##I, I, U, U, y[at] = src[from])                               \
  XY_SCATTER_RUNS_KERNEL(scatter_r_##bits##_##I, I, U, U, y[at] = src[from],                      \
                         vstore16(vload16(0, src + from), 0, y + at), 16)
#define XY_INDEX_SIZES(I)   \
  XY_INDEX_MOVE(uchar, 8, I)  \
  XY_INDEX_MOVE(ushort, 16, I) \
  XY_INDEX_MOVE(uint, 32, I)  \
  XY_INDEX_MOVE(ulong, 64, I)
XY_INDEX_SIZES(int)
XY_INDEX_SIZES(long)

#endif /* XY_INDEX_ONCE */
