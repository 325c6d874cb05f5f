/* blas::gemm, our own: c = alpha*op(a)*op(b) + beta*c, row-major. The host
 * passes a's element (i, p) as a[i*sai + p*sak], which covers both
 * transposes of a, and b always untransposed (ops/gemm.cpp packs a
 * transposed b first), so that a row of b is dense.
 *
 * Register blocking: each work-item computes an XY_GEMM_RM x XY_GEMM_CV*GW
 * tile of c in XY_GEMM_RM*XY_GEMM_CV vector accumulators, adding per step
 * of p XY_GEMM_CV vectors of b's row p times XY_GEMM_RM broadcast elements
 * of a's column p. The tile comes from the program's variant (defined
 * ahead of this text from ops/gemm_candidates.hpp's kGemmTiles): the
 * tuning cache picks the fastest per device and shape class. Tiles cut by
 * the edges of c take a scalar loop. With beta == 0, c is written without
 * being read (it may hold NaN).
 *
 * Which tile an item computes. Without bands (XY_GEMM_BAND 0) items run
 * down all the rows of c first, so the items of one group share one panel
 * of b, but each reads a strip of a that no other item of the group reads:
 * a large m*k streams all of a from memory once per panel. With bands,
 * items run down XY_GEMM_BAND row tiles, then across every panel of that
 * band: consecutive items share the panel of b, and the band's strip of a
 * (in L2 for a slice of k) serves every panel. b then comes packed
 * (gemm_pack_b): panel jb's row p at b[jb*ldb + p*TN], so a panel is one
 * contiguous block whatever n is, where a panel of b itself touches a
 * cache line and a page per row. */

#if XY_GEMM_NARROW && XY_IS_F32
#define GVT float8
#define GW 8
#define GLOAD vload8
#define GSTORE vstore8
#elif XY_GEMM_NARROW
#define GVT double4
#define GW 4
#define GLOAD vload4
#define GSTORE vstore4
#else
#define GVT VT
#define GW VW
#define GLOAD VLOAD
#define GSTORE VSTORE
#endif
#define XY_GEMM_TN (XY_GEMM_CV * GW)
#if XY_GEMM_BAND
#define B_PANEL(j0) ((j0) / XY_GEMM_TN * ldb)
#define B_STEP XY_GEMM_TN
#define B_AT(p, j) b[(j) / XY_GEMM_TN * ldb + (p) * XY_GEMM_TN + (j) % XY_GEMM_TN]
#else
#define B_PANEL(j0) (j0)
#define B_STEP ldb
#define B_AT(p, j) b[(p) * ldb + (j)]
#endif

#if XY_GEMM_BAND
/* b's rows k x n into panels of XY_GEMM_TN columns, the last padded with
 * zeros: one item per row of a panel. */
kernel void KNAME(gemm_pack_b)(global const T* b, long bo, long ldb, global T* out, long k, long n, long batch,
                                long b_bs) {
  const long per_matrix = (n + XY_GEMM_TN - 1) / XY_GEMM_TN * k;
  const long q_all = get_global_id(0);
  if (q_all >= per_matrix * batch) return;
  const long matrix = q_all / per_matrix, q = q_all - matrix * per_matrix;
  const long j0 = q / k * XY_GEMM_TN;
  global const T* src = b + bo + matrix * b_bs + (q % k) * ldb + j0;
  global T* dst = out + q_all * XY_GEMM_TN;
  if (j0 + XY_GEMM_TN <= n) {
#pragma unroll
    for (int v = 0; v < XY_GEMM_CV; ++v) GSTORE(GLOAD(v, src), v, dst);
  } else {
    for (int j = 0; j < XY_GEMM_TN; ++j) dst[j] = j0 + j < n ? src[j] : (T)0;
  }
}
#endif

kernel void KNAME(gemm)(global const T* a, long ao, long sai, long sak, global const T* b, long bo, long ldb,
                        global T* c, long co, long ldc, long m, long n, long k, T alpha, T beta, long per_matrix,
                        long a_bs, long b_bs, long c_bs) {
  /* A batch of matrices (blas::gemm_batched) runs as one launch: items
   * [i*per_matrix, (i+1)*per_matrix) compute matrix i, whose operands sit
   * a_bs, b_bs and c_bs elements after matrix i-1's. */
  const long matrix = (long)get_global_id(0) / per_matrix;
  const long item = (long)get_global_id(0) - matrix * per_matrix;
  ao += matrix * a_bs;
  bo += matrix * b_bs;
  co += matrix * c_bs;
#if XY_GEMM_BAND
  const long per_band = XY_GEMM_BAND * ((n + XY_GEMM_TN - 1) / XY_GEMM_TN);
  const long band = item / per_band, in_band = item % per_band;
  const long i0 = (band * XY_GEMM_BAND + in_band % XY_GEMM_BAND) * XY_GEMM_RM;
  const long j0 = in_band / XY_GEMM_BAND * XY_GEMM_TN;
  if (i0 >= m) return;
#else
  const long tiles_m = (m + XY_GEMM_RM - 1) / XY_GEMM_RM;
  const long i0 = (item % tiles_m) * XY_GEMM_RM;
  const long j0 = (item / tiles_m) * XY_GEMM_TN;
  if (j0 >= n) return;
#endif
  a += ao;
  b += bo;
  c += co;
  if (i0 + XY_GEMM_RM <= m && j0 + XY_GEMM_TN <= n) {
    GVT acc[XY_GEMM_RM][XY_GEMM_CV];
#pragma unroll
    for (int r = 0; r < XY_GEMM_RM; ++r) {
#pragma unroll
      for (int v = 0; v < XY_GEMM_CV; ++v) acc[r][v] = (GVT)0;
    }
    global const T* bp = b + B_PANEL(j0);
    global const T* ap = a + i0 * sai;
    for (long p = 0; p < k; ++p, bp += B_STEP, ap += sak) {
      GVT bv[XY_GEMM_CV];
#pragma unroll
      for (int v = 0; v < XY_GEMM_CV; ++v) bv[v] = GLOAD(v, bp);
#pragma unroll
      for (int r = 0; r < XY_GEMM_RM; ++r) {
        const GVT ar = (GVT)(ap[r * sai]);
#pragma unroll
        for (int v = 0; v < XY_GEMM_CV; ++v) acc[r][v] = fma(ar, bv[v], acc[r][v]);
      }
    }
#pragma unroll
    for (int r = 0; r < XY_GEMM_RM; ++r) {
      global T* cr = c + (i0 + r) * ldc + j0;
#pragma unroll
      for (int v = 0; v < XY_GEMM_CV; ++v) {
        if (beta == 0) {
          GSTORE(alpha * acc[r][v], v, cr);
        } else {
          GSTORE(alpha * acc[r][v] + beta * GLOAD(v, cr), v, cr);
        }
      }
    }
    return;
  }
  const long i_end = min(i0 + XY_GEMM_RM, m), j_end = min(j0 + XY_GEMM_TN, n);
  for (long i = i0; i < i_end; ++i) {
    for (long j = j0; j < j_end; ++j) {
      T acc = 0;
      for (long p = 0; p < k; ++p) acc = fma(a[i * sai + p * sak], B_AT(p, j), acc);
      global T* cij = c + i * ldc + j;
      *cij = beta == 0 ? alpha * acc : alpha * acc + beta * *cij;
    }
  }
}

#undef XY_GEMM_TN
#undef B_PANEL
#undef B_STEP
#undef B_AT
#undef GVT
#undef GW
#undef GLOAD
#undef GSTORE
