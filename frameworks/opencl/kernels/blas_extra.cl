/* ger, syrk, trsm and geam (ops/blas_extra.cpp): one work-item per output
 * element, or per right-hand side (or vector of them) for trsm, whose
 * products, like syrk's, run as gemm there. Matrices are row-major views
 * (offset, row stride); an operand read transposed gets its two strides
 * swapped by the host. */

/* a[i, j] += alpha*x[i]*y[j] over a [m, n] */
kernel void KNAME(ger)(global const T* x, long xo, long xs, global const T* y, long yo, long ys, global T* a,
                       long ao, long lda, long m, long n, T alpha) {
  const long g = get_global_id(0);
  if (g >= m * n) return;
  const long i = g / n, j = g % n;
  a[ao + i * lda + j] += alpha * x[xo + i * xs] * y[yo + j * ys];
}

/* The same, a row of a per work-item: CPU devices run a group's items as a
 * loop, where the element kernel's division per element and its gathers of
 * y cost 15x of this row's walk (a [4096, 4096] ger on a 16-core Xeon). */
kernel void KNAME(ger_rows)(global const T* x, long xo, long xs, global const T* y, long yo, long ys, global T* a,
                            long ao, long lda, long m, long n, T alpha) {
  const long i = get_global_id(0);
  if (i >= m) return;
  const T ax = alpha * x[xo + i * xs];
  global T* row = a + ao + i * lda;
  global const T* yv = y + yo;
  if (ys == 1) {
    for (long j = 0; j < n; ++j) row[j] += ax * yv[j];
  } else {
    for (long j = 0; j < n; ++j) row[j] += ax * yv[j * ys];
  }
}

/* c[i, j] = d[i, j] + beta*c[i, j] on one triangle of an [n, n] block of
 * c, d dense [n, n] (ldd n) or, with has_d 0, left out: the diagonal blocks
 * of syrk, whose product gemm has put in d, or beta*c alone (ops/
 * blas_extra.cpp). A beta of 0 leaves its term out: c may hold NaN. */
kernel void KNAME(syrk_triangle)(global const T* d, int has_d, global T* c, long co, long ldc, long n, int upper,
                                 T beta) {
  const long g = get_global_id(0);
  if (g >= n * n) return;
  const long i = g / n, j = g % n;
  if (upper ? j < i : j > i) return;
  global T* cij = c + co + i * ldc + j;
  *cij = (has_d ? d[g] : (T)0) + (beta == (T)0 ? (T)0 : beta * *cij);
}

/* Overwrites a right-hand side r (its element e at LOAD(e), of type V) by
 * z solving M z = alpha*r, M [k, k] triangular with M[e, f] =
 * a[ao + e*mr + f*mc]: lower = 1 by forward substitution, else backward;
 * unit = 1 takes the diagonal as ones. */
#define XY_TRSM_SUBSTITUTE(V, LOAD, STORE)                                   \
  for (long s = 0; s < k; ++s) {                                             \
    const long e = lower ? s : k - 1 - s;                                    \
    V acc = alpha * LOAD(e);                                                 \
    const long f0 = lower ? 0 : e + 1, f1 = lower ? e : k;                   \
    for (long f = f0; f < f1; ++f) acc -= a[ao + e * mr + f * mc] * LOAD(f); \
    STORE(unit ? acc : acc / a[ao + e * (mr + mc)], e);                      \
  }

/* One right-hand side per item: r[e] = b[bo + v*inc_v + e*inc_e]. */
kernel void KNAME(trsm)(global const T* a, long ao, long mr, long mc, global T* b, long bo, long inc_e, long inc_v,
                        long k, long count, int lower, int unit, T alpha) {
  const long v = get_global_id(0);
  if (v >= count) return;
  global T* r = b + bo + v * inc_v;
#define XY_LOAD(e) r[(e) * inc_e]
#define XY_STORE(x, e) r[(e) * inc_e] = (x)
  XY_TRSM_SUBSTITUTE(T, XY_LOAD, XY_STORE)
#undef XY_LOAD
#undef XY_STORE
}

/* VW right-hand sides per item, side by side: strip v's element e at
 * b[bo + e*ldb + v*VW], as one vector. For CPU devices, where an item is
 * one thread's loop: one item per column walked its column a cache line
 * per element, 1 GFLOP/s on a 2-core EPYC. */
kernel void KNAME(trsm_strips)(global const T* a, long ao, long mr, long mc, global T* b, long bo, long ldb,
                               long k, long strips, int lower, int unit, T alpha) {
  const long v = get_global_id(0);
  if (v >= strips) return;
  global T* r = b + bo + v * VW;
#define XY_LOAD(e) VLOAD(0, r + (e) * ldb)
#define XY_STORE(x, e) VSTORE((x), 0, r + (e) * ldb)
  XY_TRSM_SUBSTITUTE(VT, XY_LOAD, XY_STORE)
#undef XY_LOAD
#undef XY_STORE
}

#undef XY_TRSM_SUBSTITUTE

/* c[i, j] = alpha*op(a)[i, j] + beta*op(b)[i, j], op(x)[i, j] =
 * x[xo + i*xr + j*xc]; a term of scale 0 is left out. A `tile` x `tile`
 * block of c per work-item: 1 on GPUs (an element per item); 32 on CPU
 * devices, where an operand read transposed then walks 32 lines of the
 * cache, not a line per element, and the division is paid once per tile
 * (an element per item took 2.4x PyTorch's time for a + 0.5 b^T of [2048,
 * 2048] on one PoCL thread). */
kernel void KNAME(geam)(global const T* a, long ao, long ar, long ac, global const T* b, long bo, long br, long bc,
                        global T* c, long co, long ldc, long m, long n, T alpha, T beta, long tile) {
  const long tiles_n = (n + tile - 1) / tile;
  const long g = get_global_id(0);
  if (g >= (m + tile - 1) / tile * tiles_n) return;
  const long i0 = g / tiles_n * tile, j0 = g % tiles_n * tile;
  const long i1 = min(m, i0 + tile), j1 = min(n, j0 + tile);
  for (long i = i0; i < i1; ++i)
    for (long j = j0; j < j1; ++j) {
      const T av = alpha == (T)0 ? (T)0 : alpha * a[ao + i * ar + j * ac];
      const T bv = beta == (T)0 ? (T)0 : beta * b[bo + i * br + j * bc];
      c[co + i * ldc + j] = av + bv;
    }
}
