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

#endif /* XY_INDEX_WALK_ONCE */
