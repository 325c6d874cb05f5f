/* nn::attention, forward and backward (the contract in include/xylem/op.hpp).
 * One work-item per query row (per key row in attention_grad_kv); the items
 * of a work-group share tiles of keys (queries) staged in local memory, and
 * each keeps XY_ATTN_CHUNK output columns in private memory: group g
 * computes column chunk g % chunks of its rows, recomputing the scores over
 * the full head dimension, so any head dimension runs. The softmax is
 * online (running maximum and sum per row); the backward recomputes each
 * weight from the row's logsumexp. Sums in T (f32 for f16/bf16). */

#define XY_ATTN_CHUNK 32

/* Mirrors ops/attention.cpp's AttnArg. */
typedef struct {
  long B, H, Hkv, Sq, Sk, D, Dv, causal, chunks, tile;
  ulong seed, offset;
} xy_attn;

inline long xy_attn_at(xy_view t, long b, long h, long i) { return t.offset + b * t.s[0] + h * t.s[1] + i * t.s[2]; }

/* The score of query i against key j from their dot product: scaled, the
 * mask applied (mb boolean, ma additive; both null: none), -Inf when left out. */
inline T KNAME(attn_score)(T dot, T scale, global const uchar* mb, global const ST* ma, xy_view mv, xy_attn a,
                           long b, long h, long i, long j) {
  if (a.causal && j > i) return -INFINITY;
  T s = dot * scale;
  const long at = mv.offset + b * mv.s[0] + h * mv.s[1] + i * mv.s[2] + j * mv.s[3];
  if (mb) s = mb[at] ? s : -INFINITY;
  if (ma) s += XY_LD(ma, at);
  return s;
}

/* Dropout's factor for weight (b, h, i, j): 0, inv_keep, or 1 without dropout. */
inline T KNAME(attn_keep)(xy_attn a, float p, T inv_keep, long b, long h, long i, long j) {
  if (p <= 0.0f) return (T)1;
  const ulong counter = a.offset + (ulong)(((b * a.H + h) * a.Sq + i) * a.Sk + j);
  return xy_dropout_keep(a.seed, counter, p) ? inv_keep : (T)0;
}

/* Rows [r0, r0 + n) of (b, h), columns [c0, c0 + cols), into a contiguous
 * local tile, by the group's items. */
inline void KNAME(attn_tile)(local T* dst, global const ST* src, xy_view v, long b, long h, long r0, long n, long c0,
                             long cols) {
  for (long e = get_local_id(0); e < n * cols; e += get_local_size(0))
    dst[e] = XY_LD(src, xy_attn_at(v, b, h, r0 + e / cols) + c0 + e % cols);
}

/* Group g: (b, h, row tile, column chunk) of rows `rows` in tiles of the group size. */
#define XY_ATTN_GROUP(heads, rows)                                                   \
  const long lid = get_local_id(0), wg = get_local_size(0);                          \
  const long tiles = ((rows) + wg - 1) / wg;                                         \
  const long g = get_group_id(0) / a.chunks, c0 = get_group_id(0) % a.chunks * XY_ATTN_CHUNK; \
  const long b = g / ((heads) * tiles), hh = g / tiles % (heads), r0 = g % tiles * wg; \
  const long r = r0 + lid;                                                           \
  const bool live = r < (rows);

kernel void KNAME(attention)(global const ST* q, xy_view qv, global const ST* k, xy_view kv, global const ST* v,
                             xy_view vv, global const uchar* mb, global const ST* ma, xy_view mv, global ST* out,
                             xy_view ov, global T* lse, xy_view lv, xy_attn a, T scale, float p, T inv_keep,
                             local T* kt, local T* vt) {
  XY_ATTN_GROUP(a.H, a.Sq)
  const long h = hh, i = r, hk = h / (a.H / a.Hkv);
  const long nc = min((long)XY_ATTN_CHUNK, a.Dv - c0);
  T acc[XY_ATTN_CHUNK];
  for (long c = 0; c < XY_ATTN_CHUNK; ++c) acc[c] = 0;
  T m = -INFINITY, l = 0;
  global const ST* qr = q + xy_attn_at(qv, b, h, live ? i : r0);
  const long j_end = a.causal ? min(a.Sk, min(a.Sq, r0 + wg)) : a.Sk;
  for (long j0 = 0; j0 < j_end; j0 += a.tile) {
    const long nk = min(a.tile, j_end - j0);
    barrier(CLK_LOCAL_MEM_FENCE);
    KNAME(attn_tile)(kt, k, kv, b, hk, j0, nk, 0, a.D);
    KNAME(attn_tile)(vt, v, vv, b, hk, j0, nk, c0, nc);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live) continue;
    for (long jj = 0; jj < nk; ++jj) {
      const long j = j0 + jj;
      T dot = 0;
      for (long d = 0; d < a.D; ++d) dot += XY_LD(qr, d) * kt[jj * a.D + d];
      const T s = KNAME(attn_score)(dot, scale, mb, ma, mv, a, b, h, i, j);
      if (s == -INFINITY) continue;
      if (s > m) {
        const T shrink = exp(m - s);
        l *= shrink;
        for (long c = 0; c < nc; ++c) acc[c] *= shrink;
        m = s;
      }
      const T w = exp(s - m);
      l += w;
      const T wd = w * KNAME(attn_keep)(a, p, inv_keep, b, h, i, j);
      for (long c = 0; c < nc; ++c) acc[c] += wd * vt[jj * nc + c];
    }
  }
  if (!live) return;
  global ST* orow = out + xy_attn_at(ov, b, h, i) + c0;
  for (long c = 0; c < nc; ++c) XY_ST(orow, c, l > 0 ? acc[c] / l : (T)0);
  if (c0 == 0) lse[xy_attn_at(lv, b, h, i)] = l > 0 ? m + log(l) : -INFINITY;
}

/* stats[row] = (lse, sum over Dv of dout*out); one item per row. */
kernel void KNAME(attention_grad_rows)(global const ST* out, xy_view ov, global const ST* dout, xy_view dv,
                                       global const T* lse, xy_view lv, global T* stats, xy_view sv, long H, long Sq,
                                       long Dv, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  const long b = row / (H * Sq), h = row / Sq % H, i = row % Sq;
  global const ST* o = out + xy_attn_at(ov, b, h, i);
  global const ST* d = dout + xy_attn_at(dv, b, h, i);
  T delta = 0;
  for (long e = 0; e < Dv; ++e) delta += XY_LD(o, e) * XY_LD(d, e);
  stats[sv.offset + 2 * row] = lse[lv.offset + row];
  stats[sv.offset + 2 * row + 1] = delta;
}

/* dq: one item per query row, key tiles (k in full, v in full) in local memory. */
kernel void KNAME(attention_grad_q)(global const ST* q, xy_view qv, global const ST* k, xy_view kv,
                                    global const ST* v, xy_view vv, global const uchar* mb, global const ST* ma,
                                    xy_view mv, global const ST* dout, xy_view dov, global const T* stats,
                                    xy_view sv, global ST* dq, xy_view dqv, xy_attn a, T scale, float p, T inv_keep,
                                    local T* kt, local T* vt) {
  XY_ATTN_GROUP(a.H, a.Sq)
  const long h = hh, i = r, hk = h / (a.H / a.Hkv);
  const long nc = min((long)XY_ATTN_CHUNK, a.D - c0);
  T acc[XY_ATTN_CHUNK];
  for (long c = 0; c < XY_ATTN_CHUNK; ++c) acc[c] = 0;
  const long row = ((b * a.H + h) * a.Sq + (live ? i : r0));
  const T lse = stats[sv.offset + 2 * row], delta = stats[sv.offset + 2 * row + 1];
  global const ST* qr = q + xy_attn_at(qv, b, h, live ? i : r0);
  global const ST* dor = dout + xy_attn_at(dov, b, h, live ? i : r0);
  const long j_end = a.causal ? min(a.Sk, min(a.Sq, r0 + wg)) : a.Sk;
  for (long j0 = 0; j0 < j_end; j0 += a.tile) {
    const long nk = min(a.tile, j_end - j0);
    barrier(CLK_LOCAL_MEM_FENCE);
    KNAME(attn_tile)(kt, k, kv, b, hk, j0, nk, 0, a.D);
    KNAME(attn_tile)(vt, v, vv, b, hk, j0, nk, 0, a.Dv);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live || lse == -INFINITY) continue;
    for (long jj = 0; jj < nk; ++jj) {
      const long j = j0 + jj;
      T dot = 0;
      for (long d = 0; d < a.D; ++d) dot += XY_LD(qr, d) * kt[jj * a.D + d];
      const T s = KNAME(attn_score)(dot, scale, mb, ma, mv, a, b, h, i, j);
      if (s == -INFINITY) continue;
      T dp = 0;
      for (long e = 0; e < a.Dv; ++e) dp += XY_LD(dor, e) * vt[jj * a.Dv + e];
      const T ds = exp(s - lse) * (dp * KNAME(attn_keep)(a, p, inv_keep, b, h, i, j) - delta);
      for (long c = 0; c < nc; ++c) acc[c] += ds * kt[jj * a.D + c0 + c];
    }
  }
  if (!live) return;
  global ST* o = dq + xy_attn_at(dqv, b, h, i) + c0;
  for (long c = 0; c < nc; ++c) XY_ST(o, c, acc[c] * scale);
}

/* dk, dv: one item per key row, query tiles (q, dout, their statistics) in
 * local memory, over every query head of the key's group. Chunk c0 covers
 * columns [c0, c0 + XY_ATTN_CHUNK) of dk and of dv (each as far as it goes). */
kernel void KNAME(attention_grad_kv)(global const ST* q, xy_view qv, global const ST* k, xy_view kv,
                                     global const ST* v, xy_view vv, global const uchar* mb, global const ST* ma,
                                     xy_view mv, global const ST* dout, xy_view dov, global const T* stats,
                                     xy_view sv, global ST* dk, xy_view dkv, global ST* dv, xy_view dvv, xy_attn a,
                                     T scale, float p, T inv_keep, local T* qt, local T* dot_t, local T* st) {
  XY_ATTN_GROUP(a.Hkv, a.Sk)
  const long hk = hh, j = r, group = a.H / a.Hkv;
  const long nck = max(0L, min((long)XY_ATTN_CHUNK, a.D - c0)), ncv = max(0L, min((long)XY_ATTN_CHUNK, a.Dv - c0));
  T dk_acc[XY_ATTN_CHUNK], dv_acc[XY_ATTN_CHUNK];
  for (long c = 0; c < XY_ATTN_CHUNK; ++c) dk_acc[c] = dv_acc[c] = 0;
  global const ST* kr = k + xy_attn_at(kv, b, hk, live ? j : r0);
  global const ST* vr = v + xy_attn_at(vv, b, hk, live ? j : r0);
  const long i_begin = a.causal ? r0 : 0;  /* rows above r0 leave the group's keys out */
  for (long h = hk * group; h < (hk + 1) * group; ++h) {
    for (long i0 = i_begin; i0 < a.Sq; i0 += a.tile) {
      const long nq = min(a.tile, a.Sq - i0);
      barrier(CLK_LOCAL_MEM_FENCE);
      KNAME(attn_tile)(qt, q, qv, b, h, i0, nq, 0, a.D);
      KNAME(attn_tile)(dot_t, dout, dov, b, h, i0, nq, 0, a.Dv);
      for (long e = lid; e < 2 * nq; e += wg) st[e] = stats[sv.offset + 2 * ((b * a.H + h) * a.Sq + i0) + e];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (!live) continue;
      for (long ii = 0; ii < nq; ++ii) {
        const long i = i0 + ii;
        const T lse = st[2 * ii], delta = st[2 * ii + 1];
        if (lse == -INFINITY) continue;
        T dot = 0;
        for (long d = 0; d < a.D; ++d) dot += qt[ii * a.D + d] * XY_LD(kr, d);
        const T s = KNAME(attn_score)(dot, scale, mb, ma, mv, a, b, h, i, j);
        if (s == -INFINITY) continue;
        T dp = 0;
        for (long e = 0; e < a.Dv; ++e) dp += dot_t[ii * a.Dv + e] * XY_LD(vr, e);
        const T w = exp(s - lse), keep = KNAME(attn_keep)(a, p, inv_keep, b, h, i, j);
        const T ds = w * (dp * keep - delta), wd = w * keep;
        for (long c = 0; c < ncv; ++c) dv_acc[c] += wd * dot_t[ii * a.Dv + c0 + c];
        for (long c = 0; c < nck; ++c) dk_acc[c] += ds * qt[ii * a.D + c0 + c];
      }
    }
  }
  if (!live) return;
  global ST* ok = dk + xy_attn_at(dkv, b, hk, j) + c0;
  global ST* ov = dv + xy_attn_at(dvv, b, hk, j) + c0;
  for (long c = 0; c < nck; ++c) XY_ST(ok, c, dk_acc[c] * scale);
  for (long c = 0; c < ncv; ++c) XY_ST(ov, c, dv_acc[c]);
}

#undef XY_ATTN_GROUP
