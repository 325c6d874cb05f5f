/* ger, syrk, trsm and geam (ops/blas_extra.cpp): one work-item per output
 * element, or per right-hand side for trsm. Matrices are row-major views
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

/* c[i, j] = alpha*sum_p op(a)[i, p]*op(a)[j, p] + beta*c[i, j] on one
 * triangle of c [n, n]; op(a)[i, p] = a[ao + i*ai + p*ap]. A scale of 0
 * leaves its term out (a NaN there must not spread). */
kernel void KNAME(syrk)(global const T* a, long ao, long ai, long ap, global T* c, long co, long ldc, long n, long k,
                        int upper, T alpha, T beta) {
  const long g = get_global_id(0);
  if (g >= n * n) return;
  const long i = g / n, j = g % n;
  if (upper ? j < i : j > i) return;
  T s = 0;
  if (alpha != (T)0)
    for (long p = 0; p < k; ++p) s += a[ao + i * ai + p * ap] * a[ao + j * ai + p * ap];
  global T* cij = c + co + i * ldc + j;
  *cij = (alpha == (T)0 ? (T)0 : alpha * s) + (beta == (T)0 ? (T)0 : beta * *cij);
}

/* One right-hand side r per item (r[e] = b[bo + v*inc_v + e*inc_e]),
 * overwritten by z solving M z = alpha*r, M [k, k] triangular with
 * M[e, f] = a[ao + e*mr + f*mc]: lower = 1 by forward substitution, else
 * backward; unit = 1 takes the diagonal as ones. */
kernel void KNAME(trsm)(global const T* a, long ao, long mr, long mc, global T* b, long bo, long inc_e, long inc_v,
                        long k, long count, int lower, int unit, T alpha) {
  const long v = get_global_id(0);
  if (v >= count) return;
  global T* r = b + bo + v * inc_v;
  for (long s = 0; s < k; ++s) {
    const long e = lower ? s : k - 1 - s;
    T acc = alpha * r[e * inc_e];
    const long f0 = lower ? 0 : e + 1, f1 = lower ? e : k;
    for (long f = f0; f < f1; ++f) acc -= a[ao + e * mr + f * mc] * r[f * inc_e];
    r[e * inc_e] = unit ? acc : acc / a[ao + e * (mr + mc)];
  }
}

/* c[i, j] = alpha*op(a)[i, j] + beta*op(b)[i, j], op(x)[i, j] =
 * x[xo + i*xr + j*xc]; a term of scale 0 is left out. */
kernel void KNAME(geam)(global const T* a, long ao, long ar, long ac, global const T* b, long bo, long br, long bc,
                        global T* c, long co, long ldc, long m, long n, T alpha, T beta) {
  const long g = get_global_id(0);
  if (g >= m * n) return;
  const long i = g / n, j = g % n;
  const T av = alpha == (T)0 ? (T)0 : alpha * a[ao + i * ar + j * ac];
  const T bv = beta == (T)0 ? (T)0 : beta * b[bo + i * br + j * bc];
  c[co + i * ldc + j] = av + bv;
}
