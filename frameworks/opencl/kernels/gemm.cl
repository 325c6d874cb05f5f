/* blas::gemm, our own: c = alpha*op(a)*op(b) + beta*c, row-major. The host
 * passes a's element (i, p) as a[i*sai + p*sak], which covers both
 * transposes of a, and b always untransposed (ops/gemm.cpp packs a
 * transposed b first), so that a row of b is dense.
 *
 * Register blocking: each work-item computes an XY_GEMM_RM x 2*VW tile of
 * c in 2*XY_GEMM_RM vector accumulators (16 of the 32 512-bit registers
 * of an AVX-512 core), adding per step of p two vectors of b's row p times
 * XY_GEMM_RM broadcast elements of a's column p. Items run down the rows of
 * c first, so the items of one group share one panel of b, which stays in
 * that core's cache. Tiles cut by the edges of c take a scalar loop. With
 * beta == 0, c is written without being read (it may hold NaN). */

#define XY_GEMM_RM 8

kernel void KNAME(gemm)(global const T* a, long ao, long sai, long sak, global const T* b, long bo, long ldb,
                        global T* c, long co, long ldc, long m, long n, long k, T alpha, T beta) {
  const long tiles_m = (m + XY_GEMM_RM - 1) / XY_GEMM_RM;
  const long i0 = ((long)get_global_id(0) % tiles_m) * XY_GEMM_RM;
  const long j0 = ((long)get_global_id(0) / tiles_m) * (2 * VW);
  if (j0 >= n) return;
  a += ao;
  b += bo;
  c += co;
  if (i0 + XY_GEMM_RM <= m && j0 + 2 * VW <= n) {
    VT acc0[XY_GEMM_RM], acc1[XY_GEMM_RM];
#pragma unroll
    for (int r = 0; r < XY_GEMM_RM; ++r) acc0[r] = acc1[r] = (VT)0;
    global const T* bp = b + j0;
    global const T* ap = a + i0 * sai;
    for (long p = 0; p < k; ++p, bp += ldb, ap += sak) {
      const VT b0 = VLOAD(0, bp), b1 = VLOAD(1, bp);
#pragma unroll
      for (int r = 0; r < XY_GEMM_RM; ++r) {
        const VT ar = (VT)(ap[r * sai]);
        acc0[r] = fma(ar, b0, acc0[r]);
        acc1[r] = fma(ar, b1, acc1[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < XY_GEMM_RM; ++r) {
      global T* cr = c + (i0 + r) * ldc + j0;
      if (beta == 0) {
        VSTORE(alpha * acc0[r], 0, cr);
        VSTORE(alpha * acc1[r], 1, cr);
      } else {
        VSTORE(alpha * acc0[r] + beta * VLOAD(0, cr), 0, cr);
        VSTORE(alpha * acc1[r] + beta * VLOAD(1, cr), 1, cr);
      }
    }
    return;
  }
  const long i_end = min(i0 + XY_GEMM_RM, m), j_end = min(j0 + 2 * VW, n);
  for (long i = i0; i < i_end; ++i) {
    for (long j = j0; j < j_end; ++j) {
      T acc = 0;
      for (long p = 0; p < k; ++p) acc = fma(a[i * sai + p * sak], b[p * ldb + j], acc);
      global T* cij = c + i * ldc + j;
      *cij = beta == 0 ? alpha * acc : alpha * acc + beta * *cij;
    }
  }
}

#undef XY_GEMM_RM
