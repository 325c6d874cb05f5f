/* Helpers of the families that reduce along one axis of [outer, r, inner]
 * views (reduce, softmax, cross_entropy), compiled once per program after nn_common.cl
 * (whose xy_group_sum_f / _d they use too).
 *
 * One work-group takes one slice (o, i): its items split the r elements,
 * each a contiguous share on CPU devices (a loop the explicit vectors walk)
 * and a strided one on GPUs (neighbouring items on neighbouring elements),
 * then combine through local memory. */

/* for (j over this item's share of [0, r)); XY_SHARE_STEP is its step. */
#ifdef XY_CPU
#define XY_SHARE_BOUNDS(b, e, r)                                                       \
  const long b##_chunk = ((r) + (long)get_local_size(0) - 1) / (long)get_local_size(0); \
  const long b = min((long)get_local_id(0) * b##_chunk, (long)(r));                   \
  const long e = min(b + b##_chunk, (long)(r))
#define XY_SHARE_STEP 1
#else
#define XY_SHARE_BOUNDS(b, e, r)     \
  const long b = get_local_id(0);    \
  const long e = (r)
#define XY_SHARE_STEP ((long)get_local_size(0))
#endif

/* Work-group maximum (NaN propagating: a NaN anywhere gives NaN), the
 * result in every item; tmp as xy_group_sum's. */
#define XY_GROUP_MAX(name, TT)                                             \
  inline TT name(TT v, local TT* tmp) {                                   \
    const size_t lid = get_local_id(0);                                   \
    tmp[lid] = v;                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                         \
    for (size_t w = get_local_size(0) / 2; w > 0; w /= 2) {               \
      if (lid < w) {                                                      \
        const TT a = tmp[lid], b = tmp[lid + w];                          \
        tmp[lid] = (a > b || isnan(a)) ? a : b;                           \
      }                                                                   \
      barrier(CLK_LOCAL_MEM_FENCE);                                       \
    }                                                                     \
    const TT result = tmp[0];                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                         \
    return result;                                                        \
  }
XY_GROUP_MAX(xy_group_max_f, float)
#ifdef XY_HAS_FP64
XY_GROUP_MAX(xy_group_max_d, double)
#endif
#undef XY_GROUP_MAX

/* Lane-wise maximum and minimum of vectors, NaN propagating. */
#define XY_VMAX(a, b) (((a) > (b) || isnan(a)) ? (a) : (b))
#define XY_VMIN(a, b) (((a) < (b) || isnan(a)) ? (a) : (b))
/* ... and their horizontal forms over one VT (float16, double8). */
#define XY_HREDUCE16(name, op)                   \
  inline float name(float16 v) {                 \
    const float8 h = op(v.lo, v.hi);             \
    const float4 a = op(h.lo, h.hi);             \
    const float2 c = op(a.lo, a.hi);             \
    return op(c.x, c.y);                         \
  }
XY_HREDUCE16(xy_hmax_v_f, XY_VMAX)
XY_HREDUCE16(xy_hmin_v_f, XY_VMIN)
#ifdef XY_HAS_FP64
#define XY_HREDUCE8(name, op)                    \
  inline double name(double8 v) {                \
    const double4 a = op(v.lo, v.hi);            \
    const double2 c = op(a.lo, a.hi);            \
    return op(c.x, c.y);                         \
  }
XY_HREDUCE8(xy_hmax_v_d, XY_VMAX)
XY_HREDUCE8(xy_hmin_v_d, XY_VMIN)
#undef XY_HREDUCE8
#endif
#undef XY_HREDUCE16
