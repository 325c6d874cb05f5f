/* The column walk of index::scatter, shared by the assigning kernels
 * (kernels/index.cl) and the accumulating ones (kernels/index_add.cl): one
 * item per column of the host's collapse of (index, src, y's line starts)
 * with the axis reduced to one element (include/xylem/plugin/index.hpp),
 * walking the column along the axis in order, so a repeated index keeps
 * the last value, and sums come out the same every run, with no atomics.
 * An index outside [0, n) or equal to `skip` is passed over. UPDATE sees
 * `at` (y's element) and `from` (src's). */

#ifndef XY_INDEX_WALK_ONCE
#define XY_INDEX_WALK_ONCE

#define XY_SCATTER_KERNEL(name, I, SRC, Y, UPDATE)                                                         \
  kernel void name(global const I* index, global const SRC* src, global Y* y, xy_layout l, long columns, \
                   long k, long is, long ss, long ys, long n, long skip) {                                  \
    const long c = get_global_id(0);                                                                        \
    if (c >= columns) return;                                                                               \
    long oi, os, oy;                                                                                        \
    xy_offsets3(&l, c, &oi, &os, &oy);                                                                      \
    for (long j = 0; j < k; ++j) {                                                                          \
      const long v = index[oi + j * is];                                                                    \
      if (v == skip || v < 0 || v >= n) continue;                                                           \
      const long at = oy + v * ys, from = os + j * ss;                                                      \
      UPDATE;                                                                                               \
    }                                                                                                       \
  }

/* CPU devices: an item per chunk of `per` columns, walked in runs along
 * the collapse's innermost axis (XY_RUNS). Where a run shares one index
 * per step (the embedding gradient: a row of indices broadcast along D),
 * the steps go outermost and each moves the run's dense stretch of src
 * into y's row in vectors of VW_ (VUPDATE, same `at` and `from`): a line of
 * src is read once instead of once per column. Otherwise each column is
 * walked as above. Either way every column takes its steps in order, so
 * the results are those of the column walk, bit for bit. */
#ifdef XY_CPU
#define XY_SCATTER_RUNS_KERNEL(name, I, SRC, Y, UPDATE, VUPDATE, VW_)                                      \
  kernel void name(global const I* index, global const SRC* src, global Y* y, xy_layout lv, long columns, \
                   long k, long is, long ss, long ys, long n, long skip, long per) {                        \
    const xy_layout* l = &lv;                                                                               \
    XY_CHUNK_BOUNDS(i, end, columns, per);                                                                  \
    XY_RUNS(3, {                                                                                            \
      const long ci = XY_STRIDE(0), cs = XY_STRIDE(1), cy = XY_STRIDE(2);                                   \
      if (ci == 0) {                                                                                        \
        for (long j = 0; j < k; ++j) {                                                                      \
          const long v = index[o[0] + j * is];                                                              \
          if (v == skip || v < 0 || v >= n) continue;                                                       \
          long c = 0;                                                                                       \
          if (cs == 1 && cy == 1) {                                                                         \
            for (; c + VW_ <= len; c += VW_) {                                                              \
              const long at = o[2] + v * ys + c, from = o[1] + j * ss + c;                                  \
              VUPDATE;                                                                                      \
            }                                                                                               \
          }                                                                                                 \
          for (; c < len; ++c) {                                                                            \
            const long at = o[2] + c * cy + v * ys, from = o[1] + c * cs + j * ss;                          \
            UPDATE;                                                                                         \
          }                                                                                                 \
        }                                                                                                   \
      } else {                                                                                              \
        for (long c = 0; c < len; ++c) {                                                                    \
          for (long j = 0; j < k; ++j) {                                                                    \
            const long v = index[o[0] + c * ci + j * is];                                                   \
            if (v == skip || v < 0 || v >= n) continue;                                                     \
            const long at = o[2] + c * cy + v * ys, from = o[1] + c * cs + j * ss;                          \
            UPDATE;                                                                                         \
          }                                                                                                 \
        }                                                                                                   \
      }                                                                                                     \
    })                                                                                                      \
  }
#else
#define XY_SCATTER_RUNS_KERNEL(name, I, SRC, Y, UPDATE, VUPDATE, VW_)
#endif

#endif /* XY_INDEX_WALK_ONCE */
