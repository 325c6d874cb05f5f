/* blas level 1 (and the scaling step of gemm). Vectors are rank-1 views:
 * element i of x is x[xo + i*xs], with any stride, negative too.
 *
 * Reductions run in two passes. Pass 1 (_p1): each work-item accumulates a
 * grid-strided share, the work-group combines its items in a tree in local
 * memory and writes one partial per group. Pass 2 (_p2): one work-group
 * combines the partials the same way and writes the result. The local size
 * is a power of two. */

/* Tree combine of tmp[0..L) into tmp[0]; every item must call it. */
#define XY_TREE(tmp, combine)                          \
  do {                                                 \
    const size_t lid_ = get_local_id(0);               \
    barrier(CLK_LOCAL_MEM_FENCE);                      \
    for (size_t s_ = get_local_size(0) / 2; s_ > 0; s_ >>= 1) { \
      if (lid_ < s_) combine(tmp, lid_, lid_ + s_);    \
      barrier(CLK_LOCAL_MEM_FENCE);                    \
    }                                                  \
  } while (0)

#define XY_ADD(tmp, a, b) tmp[a] += tmp[b]

/* Sums: asum (|x|), dot (x*y). On CPUs a unit-stride share is walked in
 * vectors with two accumulators (the adds of one would wait on each
 * other), then the scalar rest. */
kernel void KNAME(asum_p1)(global const T* x, long xo, long xs, long n, global T* part, local T* tmp) {
  T acc = 0;
#ifdef XY_CPU
  if (xs == 1) {
    long i, end;
    xy_share(n, &i, &end);
    x += xo;
    VT v0 = 0, v1 = 0;
    for (; i + 2 * VW <= end; i += 2 * VW) {
      v0 += fabs(VLOAD(0, x + i));
      v1 += fabs(VLOAD(1, x + i));
    }
    acc = XV(xy_hsum)(v0 + v1);
    for (; i < end; ++i) acc += fabs(x[i]);
  } else
#endif
  {
    XY_FOR_SHARE(i, n) acc += fabs(x[xo + i * xs]);
  }
  tmp[get_local_id(0)] = acc;
  XY_TREE(tmp, XY_ADD);
  if (get_local_id(0) == 0) part[get_group_id(0)] = tmp[0];
}

kernel void KNAME(dot_p1)(global const T* x, long xo, long xs, global const T* y, long yo, long ys, long n,
                          global T* part, local T* tmp) {
  T acc = 0;
#ifdef XY_CPU
  if (xs == 1 && ys == 1) {
    long i, end;
    xy_share(n, &i, &end);
    x += xo;
    y += yo;
    VT v0 = 0, v1 = 0;
    for (; i + 2 * VW <= end; i += 2 * VW) {
      v0 += VLOAD(0, x + i) * VLOAD(0, y + i);
      v1 += VLOAD(1, x + i) * VLOAD(1, y + i);
    }
    acc = XV(xy_hsum)(v0 + v1);
    for (; i < end; ++i) acc += x[i] * y[i];
  } else
#endif
  {
    XY_FOR_SHARE(i, n) acc += x[xo + i * xs] * y[yo + i * ys];
  }
  tmp[get_local_id(0)] = acc;
  XY_TREE(tmp, XY_ADD);
  if (get_local_id(0) == 0) part[get_group_id(0)] = tmp[0];
}

kernel void KNAME(sum_p2)(global const T* part, long m, global T* out, long oo, local T* tmp) {
  T acc = 0;
  for (long i = get_local_id(0); i < m; i += get_local_size(0)) acc += part[i];
  tmp[get_local_id(0)] = acc;
  XY_TREE(tmp, XY_ADD);
  if (get_local_id(0) == 0) out[oo] = tmp[0];
}

/* nrm2 without overflow or underflow: each partial is a pair (scale, ssq)
 * with norm = scale*sqrt(ssq), as LAPACK's lassq keeps it. */
inline void XF(xy_lassq_add)(T* scale, T* ssq, T v) {
  const T a = fabs(v);
  if (a == 0) return;
  if (a > *scale) {
    const T r = *scale / a;
    *ssq = 1 + *ssq * r * r;
    *scale = a;
  } else {
    const T r = a / *scale;
    *ssq += r * r;
  }
}
inline void XF(xy_lassq_merge)(local T* scale, local T* ssq, size_t a, size_t b) {
  if (scale[b] == 0) return;
  if (scale[b] > scale[a]) {
    const T r = scale[a] / scale[b];
    ssq[a] = ssq[b] + ssq[a] * r * r;
    scale[a] = scale[b];
  } else {
    const T r = scale[b] / scale[a];
    ssq[a] += ssq[b] * r * r;
  }
}

#define XY_LASSQ_TREE(scale, ssq)                                  \
  do {                                                             \
    const size_t lid_ = get_local_id(0);                           \
    barrier(CLK_LOCAL_MEM_FENCE);                                  \
    for (size_t s_ = get_local_size(0) / 2; s_ > 0; s_ >>= 1) {    \
      if (lid_ < s_) XF(xy_lassq_merge)(scale, ssq, lid_, lid_ + s_); \
      barrier(CLK_LOCAL_MEM_FENCE);                                \
    }                                                              \
  } while (0)

/* f32 on a CPU with fp64: the squares summed in double cannot overflow or
 * underflow (FLT_MAX^2 and the smallest subnormal squared are both well
 * inside double's range), so the share needs no scaling and runs in
 * vectors; it leaves the pair (its norm, 1). Everything else: lassq. */
#if defined(XY_CPU) && defined(XY_HAS_FP64) && XY_IS_F32
#define XY_NRM2_WIDE 1
#else
#define XY_NRM2_WIDE 0
#endif

kernel void KNAME(nrm2_p1)(global const T* x, long xo, long xs, long n, global T* part, local T* scale,
                           local T* ssq) {
  T s = 0, q = 1;
#if XY_NRM2_WIDE
  if (xs == 1) {
    long i, end;
    xy_share(n, &i, &end);
    x += xo;
    double8 w0 = 0, w1 = 0;
    for (; i + 16 <= end; i += 16) {
      const float16 v = vload16(0, x + i);
      const double8 lo = convert_double8(v.lo), hi = convert_double8(v.hi);
      w0 += lo * lo;
      w1 += hi * hi;
    }
    double sum = xy_hsum_v_d(w0 + w1);
    for (; i < end; ++i) sum += (double)x[i] * (double)x[i];
    s = (float)sqrt(sum);
  } else
#endif
  {
    XY_FOR_SHARE(i, n) XF(xy_lassq_add)(&s, &q, x[xo + i * xs]);
  }
  const size_t lid = get_local_id(0);
  scale[lid] = s;
  ssq[lid] = s == 0 ? 0 : q;
  XY_LASSQ_TREE(scale, ssq);
  if (lid == 0) {
    part[2 * get_group_id(0)] = scale[0];
    part[2 * get_group_id(0) + 1] = ssq[0];
  }
}
#undef XY_NRM2_WIDE

kernel void KNAME(nrm2_p2)(global const T* part, long m, global T* out, long oo, local T* scale, local T* ssq) {
  const size_t lid = get_local_id(0);
  scale[lid] = 0;
  ssq[lid] = 0;
  for (long i = lid; i < m; i += get_local_size(0)) {
    /* fold partial i into this item's pair */
    const T ps = part[2 * i], pq = part[2 * i + 1];
    if (ps == 0) continue;
    if (ps > scale[lid]) {
      const T r = scale[lid] / ps;
      ssq[lid] = pq + ssq[lid] * r * r;
      scale[lid] = ps;
    } else {
      const T r = ps / scale[lid];
      ssq[lid] += pq * r * r;
    }
  }
  XY_LASSQ_TREE(scale, ssq);
  if (lid == 0) out[oo] = scale[0] * sqrt(ssq[0]);
}

/* iamax: the first index of the largest |x_i| (iamin, least = 1: the
 * smallest), a NaN counting as the extreme (the first NaN wins, as NumPy's
 * argmax and argmin); -1 for an empty vector. Pairs (value, index); an
 * empty slot has index -1 and loses to anything. */
inline bool XF(xy_iamax_better)(T va, long ia, T vb, long ib, int least) {
  if (ib < 0) return false;
  if (ia < 0) return true;
  if (isnan(va)) return isnan(vb) && ib < ia;
  return isnan(vb) || (least ? vb < va : vb > va) || (vb == va && ib < ia);
}

#define XY_IAMAX_TREE(val, idx, least)                                                         \
  do {                                                                                     \
    const size_t lid_ = get_local_id(0);                                                   \
    barrier(CLK_LOCAL_MEM_FENCE);                                                          \
    for (size_t s_ = get_local_size(0) / 2; s_ > 0; s_ >>= 1) {                            \
      if (lid_ < s_ && XF(xy_iamax_better)(val[lid_], idx[lid_], val[lid_ + s_], idx[lid_ + s_], least)) { \
        val[lid_] = val[lid_ + s_];                                                        \
        idx[lid_] = idx[lid_ + s_];                                                        \
      }                                                                                    \
      barrier(CLK_LOCAL_MEM_FENCE);                                                        \
    }                                                                                      \
  } while (0)

kernel void KNAME(iamax_p1)(global const T* x, long xo, long xs, long n, global T* part_val,
                            global long* part_idx, local T* val, local long* idx, int least) {
  T best = 0;
  long at = -1;
#ifdef XY_CPU
  long i, end;
  xy_share(n, &i, &end);
  if (xs == 1 && end - i > VW && end - i < 0x7fffffffL) {
    /* Per lane the first largest |x| (strictly greater replaces), seeded
     * with the share's first element as the scalar walk is; then the
     * lanes' best, ties to the lowest index; then the rest. */
    x += xo;
    const long begin = i;
    VT vbest = (VT)fabs(x[begin]);
    VI vat = (VI)0;
    for (; i + VW <= end; i += VW) {
      const VT v = fabs(VLOAD(0, x + i));
      /* A lane keeps its first NaN: nothing is greater than a NaN. */
      const VI better = (least ? v < vbest : v > vbest) | (isnan(v) & ~isnan(vbest));
      vbest = select(vbest, v, better);
      vat = select(vat, (VI)(i - begin) + VIOTA, better);
    }
    T lane_best[VW];
    VI_SCALAR lane_at[VW];
    VSTORE(vbest, 0, lane_best);
    VSTORE(vat, 0, lane_at);
    best = lane_best[0];
    at = lane_at[0];
    for (int l = 1; l < VW; ++l) {
      if (XF(xy_iamax_better)(best, at, lane_best[l], lane_at[l], least)) {
        best = lane_best[l];
        at = lane_at[l];
      }
    }
    at += begin;
    for (; i < end; ++i) {
      const T v = fabs(x[i]);
      if ((least ? v < best : v > best) || (isnan(v) && !isnan(best))) {
        best = v;
        at = i;
      }
    }
  } else
#endif
  {
    XY_FOR_SHARE(i, n) {
      const T v = fabs(x[xo + i * xs]);
      if (at < 0 || (least ? v < best : v > best) || (isnan(v) && !isnan(best))) {
        best = v;
        at = i;
      }
    }
  }
  const size_t lid = get_local_id(0);
  val[lid] = best;
  idx[lid] = at;
  XY_IAMAX_TREE(val, idx, least);
  if (lid == 0) {
    part_val[get_group_id(0)] = val[0];
    part_idx[get_group_id(0)] = idx[0];
  }
}

kernel void KNAME(iamax_p2)(global const T* part_val, global const long* part_idx, long m, global long* out,
                            long oo, local T* val, local long* idx, int least) {
  const size_t lid = get_local_id(0);
  T best = 0;
  long at = -1;
  for (long i = lid; i < m; i += get_local_size(0)) {
    if (XF(xy_iamax_better)(best, at, part_val[i], part_idx[i], least)) {
      best = part_val[i];
      at = part_idx[i];
    }
  }
  val[lid] = best;
  idx[lid] = at;
  XY_IAMAX_TREE(val, idx, least);
  if (lid == 0) out[oo] = idx[0];
}

/* Elementwise: axpy (y += alpha*x), scal (x *= alpha), swap. _c: unit
 * strides, chunked (XY_CHUNK_BOUNDS without `stream`: see
 * Launcher::run_chunks_in_place) and walked in explicit vectors on CPUs.
 * Out of memory both this and PoCL's own vectorisation of a run per
 * work-item reach OpenBLAS's speed (1.0x at 64 MB), but from the cache
 * (4 MB) the run form measured 0.6x (scal) and 0.8x (axpy), this 0.9-1.4x. */
kernel void KNAME(axpy_c)(global const T* x, long xo, global T* y, long yo, long n, T alpha, long per) {
  x += xo;
  y += yo;
  XY_CHUNK_BOUNDS(i, end, n, per);
#ifdef XY_CPU
  for (; i + VW <= end; i += VW) VSTORE(VLOAD(0, y + i) + alpha * VLOAD(0, x + i), 0, y + i);
#endif
  for (; i < end; ++i) y[i] += alpha * x[i];
}
kernel void KNAME(axpy_s)(global const T* x, long xo, long xs, global T* y, long yo, long ys, long n, T alpha) {
  const long i = get_global_id(0);
  if (i < n) y[yo + i * ys] += alpha * x[xo + i * xs];
}
kernel void KNAME(scal_c)(global T* x, long xo, long n, T alpha, long per) {
  x += xo;
  XY_CHUNK_BOUNDS(i, end, n, per);
#ifdef XY_CPU
  for (; i + VW <= end; i += VW) VSTORE(VLOAD(0, x + i) * alpha, 0, x + i);
#endif
  for (; i < end; ++i) x[i] *= alpha;
}
kernel void KNAME(scal_s)(global T* x, long xo, long xs, long n, T alpha) {
  const long i = get_global_id(0);
  if (i < n) x[xo + i * xs] *= alpha;
}
kernel void KNAME(swap_s)(global T* x, long xo, long xs, global T* y, long yo, long ys, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const T t = x[xo + i * xs];
  x[xo + i * xs] = y[yo + i * ys];
  y[yo + i * ys] = t;
}

/* c = beta*c over an m x n row-major view with leading dimension ldc; with
 * beta == 0, c is written without being read (it may hold NaN). One
 * work-item per element, row-major order. */
kernel void KNAME(scale_matrix)(global T* c, long co, long ldc, long m, long n, T beta) {
  const long k = get_global_id(0);
  if (k >= m * n) return;
  const long at = co + (k / n) * ldc + k % n;
  c[at] = beta == 0 ? 0 : beta * c[at];
}

/* Plane rotation: (x, y) <- (c*x + s*y, c*y - s*x). */
kernel void KNAME(rot_s)(global T* x, long xo, long xs, global T* y, long yo, long ys, long n, T c, T s) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const T a = x[xo + i * xs], b = y[yo + i * ys];
  x[xo + i * xs] = c * a + s * b;
  y[yo + i * ys] = c * b - s * a;
}

/* gemv: y = alpha*op(a)*x + beta*y for a [m, n], row-major with row stride
 * lda; with beta == 0, y is written without being read (it may hold NaN).
 * gemv_n (y = a*x): one work-group per row, its items' strided shares of
 * the row's dot product combined in a tree (one item per group on CPUs,
 * walking its row alone). gemv_t (y = a^T*x): one item per column of a,
 * walking down it, so that neighbouring items read neighbouring elements. */
kernel void KNAME(gemv_n)(global const T* a, long ao, long lda, long n, global const T* x, long xo, long xs,
                          global T* y, long yo, long ys, T alpha, T beta, local T* tmp) {
  const long row = get_group_id(0);
  const size_t lid = get_local_id(0);
  global const T* ar = a + ao + row * lda;
  T sum = 0;
  for (long j = lid; j < n; j += (long)get_local_size(0)) sum += ar[j] * x[xo + j * xs];
  tmp[lid] = sum;
  XY_TREE(tmp, XY_ADD);
  if (lid == 0) {
    global T* yi = y + yo + row * ys;
    *yi = beta == 0 ? alpha * tmp[0] : alpha * tmp[0] + beta * *yi;
  }
}

kernel void KNAME(gemv_t)(global const T* a, long ao, long lda, long m, long n, global const T* x, long xo, long xs,
                          global T* y, long yo, long ys, T alpha, T beta) {
  const long j = get_global_id(0);
  if (j >= n) return;
  T sum = 0;
  for (long i = 0; i < m; ++i) sum += a[ao + i * lda + j] * x[xo + i * xs];
  global T* yj = y + yo + j * ys;
  *yj = beta == 0 ? alpha * sum : alpha * sum + beta * *yj;
}
