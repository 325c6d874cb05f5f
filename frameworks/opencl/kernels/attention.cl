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

/* ---- CPU devices ----------------------------------------------------------
 * The kernels above keep one row per item: on a CPU device (PoCL runs a
 * group's items as a loop, split at each barrier) every score is a scalar
 * dot product and the barriers cut the loops short; [1, 8, 1024, 64] f32
 * took 19x the native framework's time on a 2-core EPYC, its backward 20x.
 * There the *_rows kernels run instead: an item (a group of its own, one
 * thread's loop) takes XY_ATTN_ROWS rows of a head (query rows; key rows
 * for dk, dv) and XY_ATTN_COLS output columns, and walks the other side VW
 * rows at a time: each block of scores (and of dP) a small product in
 * vectors across that block, from the other side's operands transposed by
 * blocks (attention_blocks), the softmax a vector step, and the outputs
 * products of the block's weights with rows of v, k, dout or q in vectors
 * across the columns. Memory stays O(S*D): the transposed copies, no
 * [Sq, Sk] buffer. */

#define XY_ATTN_ROWS 4
#define XY_ATTN_VECS 4
#define XY_ATTN_COLS (XY_ATTN_VECS * VW)

/* Rows of x [B, heads, S, width] by blocks of VW, transposed, in T: row
 * r0 + e of block r0 / VW of (b, h) at dst[((b*heads + h)*blocks + r0/VW)
 * *width*VW + c*VW + e], so that a block's vectors lie in one run (rows of
 * all S keys would put them a power of two apart, on one set of the
 * cache). Lanes past S hold 0. One item per block. */
kernel void KNAME(attention_blocks)(global const ST* x, xy_view xv, global T* dst, long B, long heads, long S,
                                    long width) {
  const long blocks = (S + VW - 1) / VW, g = get_global_id(0);
  if (g >= B * heads * blocks) return;
  const long bh = g / blocks, r0 = g % blocks * VW;
  global T* out = dst + g * width * VW;
  for (long e = 0; e < VW; ++e) {
    global const ST* src = x + xy_attn_at(xv, bh / heads, bh % heads, min(r0 + e, S - 1));
    for (long c = 0; c < width; ++c) out[c * VW + e] = r0 + e < S ? XY_LD(src, c) : (T)0;
  }
}

/* The largest of a vector's lanes (NaN left out, as fmax does). */
inline T KNAME(attn_vmax)(VT v) {
#if XY_IS_F32
  const float8 h = fmax(v.lo, v.hi);
  const float4 q = fmax(h.lo, h.hi);
#else
  const double4 q = fmax(v.lo, v.hi);
#endif
  return fmax(fmax(q.x, q.y), fmax(q.z, q.w));
}

/* exp of a vector: common.cl's branch-free one for float (the runtime's
 * is a call per lane). */
#if XY_IS_F32
#define XY_ATTN_EXPV xy_exp_fast_f16
#else
#define XY_ATTN_EXPV exp
#endif

/* s[r] (+)= the dots of `n` values of row r (row r of x at xr[r]) with a
 * block of VW transposed rows (value c of lane e at blk[c*VW + e]). */
XY_FORCE_INLINE void KNAME(attn_dots)(VT* s, global const ST* const* xr, global const T* blk, long n) {
  for (long c = 0; c < n; ++c) {
    const VT bc = VLOAD(0, blk + c * VW);
#pragma unroll
    for (int r = 0; r < XY_ATTN_ROWS; ++r) s[r] = fma((VT)(XY_LD(xr[r], c)), bc, s[r]);
  }
}

/* The same for two blocks at once (s0 and s1): each value of a row, loaded
 * and broadcast once, feeds two multiply-adds, which one load per
 * multiply-add (attn_dots) held to ~60% of the FMA units' rate. */
XY_FORCE_INLINE void KNAME(attn_dots2)(VT* s0, VT* s1, global const ST* const* xr, global const T* blk0,
                                       global const T* blk1, long n) {
  for (long c = 0; c < n; ++c) {
    const VT b0 = VLOAD(0, blk0 + c * VW), b1 = VLOAD(0, blk1 + c * VW);
#pragma unroll
    for (int r = 0; r < XY_ATTN_ROWS; ++r) {
      const VT x = (VT)(XY_LD(xr[r], c));
      s0[r] = fma(x, b0, s0[r]);
      s1[r] = fma(x, b1, s1[r]);
    }
  }
}

/* Scores of a vector of dots, lane e of query i + e*di against key
 * j + e*dj (one of di, dj 1, the other 0), through attn_score; lanes
 * outside [lo, hi) are out (-Inf). `lanes` 0 when there is no mask: then
 * the causal rule, which the caller has folded into lo and hi, is all
 * there is, and the lanes go as one vector. */
XY_FORCE_INLINE VT KNAME(attn_scores)(VT dots, T scale, global const uchar* mb, global const ST* ma, xy_view mv,
                                      xy_attn a, long b, long h, long i, long j, long di, long dj, long lo, long hi,
                                      bool lanes) {
  const VI e = VIOTA;
  const VI out = (e < (VI)((VI_SCALAR)clamp(lo, 0L, (long)VW))) | (e >= (VI)((VI_SCALAR)clamp(hi, 0L, (long)VW)));
  if (!lanes) return select(dots * scale, (VT)(-INFINITY), out);
  T t[VW];
  VSTORE(dots, 0, t);
  for (long x = 0; x < VW; ++x)
    t[x] = x >= lo && x < hi ? KNAME(attn_score)(t[x], scale, mb, ma, mv, a, b, h, i + x * di, j + x * dj)
                             : -INFINITY;
  return VLOAD(0, t);
}

/* attn_keep of each lane (lanes as in attn_scores). */
XY_FORCE_INLINE VT KNAME(attn_keeps)(xy_attn a, float p, T inv_keep, long b, long h, long i, long j, long di,
                                     long dj) {
  if (p <= 0.0f) return (VT)1;
  T t[VW];
  for (long x = 0; x < VW; ++x) t[x] = KNAME(attn_keep)(a, p, inv_keep, b, h, i + x * di, j + x * dj);
  return VLOAD(0, t);
}

/* The weights of a pair of blocks, exp(s - lse) (0 where s is -Inf, also
 * for a row whose lse is -Inf). */
inline VT KNAME(attn_weights)(VT s, VT lse) {
  return select(XY_ATTN_EXPV(s - lse), (VT)0, s == (VT)(-INFINITY));
}

/* acc[r][c] += sum over jj < nk of w[r][jj] * row jj's columns
 * [c*VW, (c+1)*VW) (row jj at base + jj*stride, nc columns, those past nc
 * taken as 0): every row's accumulators in registers (16 vectors), each
 * row jj loaded once for all rows. Row by row, which reloaded row jj for
 * each, made a load per multiply-add: 0.85x this on one PoCL thread. */
XY_FORCE_INLINE void KNAME(attn_accumulate)(VT* acc, const T* w, global const ST* base, long stride, long nk,
                                            long nc) {
#define XY_ATTN_ACC(LOAD)                                                                    \
  {                                                                                          \
    VT o[XY_ATTN_ROWS * XY_ATTN_VECS];                                                       \
    _Pragma("unroll") for (int e = 0; e < XY_ATTN_ROWS * XY_ATTN_VECS; ++e) o[e] = acc[e];   \
    for (long jj = 0; jj < nk; ++jj) {                                                       \
      VT vj[XY_ATTN_VECS];                                                                   \
      _Pragma("unroll") for (int c = 0; c < XY_ATTN_VECS; ++c) vj[c] = LOAD(jj, c);          \
      _Pragma("unroll") for (int r = 0; r < XY_ATTN_ROWS; ++r) {                             \
        const VT wv = (VT)(w[r * VW + jj]);                                                  \
        _Pragma("unroll") for (int c = 0; c < XY_ATTN_VECS; ++c)                             \
          o[r * XY_ATTN_VECS + c] = fma(wv, vj[c], o[r * XY_ATTN_VECS + c]);                 \
      }                                                                                      \
    }                                                                                        \
    _Pragma("unroll") for (int e = 0; e < XY_ATTN_ROWS * XY_ATTN_VECS; ++e) acc[e] = o[e];   \
  }
  if (nc == XY_ATTN_COLS) {
#define XY_ATTN_LD(jj, c) XY_VLD(base + (jj) * stride, (c) * VW)
    XY_ATTN_ACC(XY_ATTN_LD)
#undef XY_ATTN_LD
  } else if (nc > 0) { /* the last chunk of columns, short */
    T t[VW * XY_ATTN_COLS];
    for (long e = 0; e < nk * XY_ATTN_COLS; ++e)
      t[e] = e % XY_ATTN_COLS < nc ? XY_LD(base + e / XY_ATTN_COLS * stride, e % XY_ATTN_COLS) : (T)0;
#define XY_ATTN_LD(jj, c) VLOAD((jj) * XY_ATTN_VECS + (c), t)
    XY_ATTN_ACC(XY_ATTN_LD)
#undef XY_ATTN_LD
  }
#undef XY_ATTN_ACC
}

/* Row r of acc times f, its first nc columns, into dst. */
XY_FORCE_INLINE void KNAME(attn_store)(const VT* acc, int r, T f, global ST* dst, long nc) {
  T t[XY_ATTN_COLS];
  for (int c = 0; c < XY_ATTN_VECS; ++c) VSTORE(acc[r * XY_ATTN_VECS + c] * f, c, t);
  for (long c = 0; c < nc; ++c) XY_ST(dst, c, t[c]);
}

/* Item g of a *_rows kernel: (b, head, block of rows from r0, chunk of
 * columns from c0); rows past `rows` repeat the last, their results dropped. */
#define XY_ATTN_ITEM(heads, rows)                                                             \
  const long tiles = ((rows) + XY_ATTN_ROWS - 1) / XY_ATTN_ROWS;                              \
  const long g = get_global_id(0) / a.chunks, c0 = get_global_id(0) % a.chunks * XY_ATTN_COLS; \
  if (g >= a.B * (heads) * tiles) return;                                                     \
  const long b = g / ((heads) * tiles), hh = g / tiles % (heads), r0 = g % tiles * XY_ATTN_ROWS; \
  const long nr = min((long)XY_ATTN_ROWS, (rows) - r0);                                       \
  const bool lanes = mb || ma;

kernel void KNAME(attention_rows)(global const ST* q, xy_view qv, global const T* kt, global const ST* v,
                                  xy_view vv, global const uchar* mb, global const ST* ma, xy_view mv, global ST* out,
                                  xy_view ov, global T* lse, xy_view lv, xy_attn a, T scale, float p, T inv_keep) {
  XY_ATTN_ITEM(a.H, a.Sq)
  const long h = hh, i0 = r0, hk = h / (a.H / a.Hkv), nc = min((long)XY_ATTN_COLS, a.Dv - c0);
  global const T* kb = kt + (b * a.Hkv + hk) * ((a.Sk + VW - 1) / VW) * a.D * VW;
  global const ST* qr[XY_ATTN_ROWS];
  VT acc[XY_ATTN_ROWS * XY_ATTN_VECS];
  T m[XY_ATTN_ROWS];
  VT l[XY_ATTN_ROWS]; /* the rows' sums of weights, by lane: added across once, at the end */
  for (int r = 0; r < XY_ATTN_ROWS; ++r) {
    qr[r] = q + xy_attn_at(qv, b, h, i0 + min((long)r, nr - 1));
    m[r] = -INFINITY;
    l[r] = (VT)0;
  }
  for (int c = 0; c < XY_ATTN_ROWS * XY_ATTN_VECS; ++c) acc[c] = (VT)0;
  const long j_end = a.causal ? min(a.Sk, i0 + nr) : a.Sk;
  /* Two blocks of VW keys a step (the second, past j_end, all out). */
  for (long j0 = 0; j0 < j_end; j0 += 2 * VW) {
    const bool two = j0 + VW < j_end;
    VT s[2][XY_ATTN_ROWS];
    for (int r = 0; r < XY_ATTN_ROWS; ++r) s[0][r] = s[1][r] = (VT)0;
    if (two)
      KNAME(attn_dots2)(s[0], s[1], qr, kb + j0 * a.D, kb + (j0 + VW) * a.D, a.D);
    else
      KNAME(attn_dots)(s[0], qr, kb + j0 * a.D, a.D);
    T w[2][XY_ATTN_ROWS * VW]; /* the blocks' weights, dropout applied */
    for (int r = 0; r < XY_ATTN_ROWS; ++r) {
      const long i = i0 + min((long)r, nr - 1), hi = (a.causal ? min(a.Sk, i + 1) : a.Sk) - j0;
      VT sc[2];
      for (int t = 0; t < 2; ++t)
        sc[t] = KNAME(attn_scores)(s[t][r], scale, mb, ma, mv, a, b, h, i, j0 + t * VW, 0, 1, 0, hi - t * VW,
                                   lanes && (t == 0 || two));
      const T top = fmax(KNAME(attn_vmax)(sc[0]), KNAME(attn_vmax)(sc[1]));
      if (top == -INFINITY) {
        VSTORE((VT)0, 0, w[0] + r * VW);
        VSTORE((VT)0, 0, w[1] + r * VW);
        continue;
      }
      if (top > m[r]) { /* a new maximum: rescale what the row holds (by 1 otherwise: skipped) */
        const T shrink = exp(m[r] - top);
        m[r] = top;
        l[r] *= shrink;
        for (int c = 0; c < XY_ATTN_VECS; ++c) acc[r * XY_ATTN_VECS + c] *= shrink;
      }
      for (int t = 0; t < 2; ++t) {
        const VT e = XY_ATTN_EXPV(sc[t] - m[r]);
        l[r] += e;
        VSTORE(t == 0 || two ? e * KNAME(attn_keeps)(a, p, inv_keep, b, h, i, j0 + t * VW, 0, 1) : (VT)0, 0,
               w[t] + r * VW);
      }
    }
    for (int t = 0; t < (two ? 2 : 1); ++t) {
      const long jt = j0 + t * VW;
      KNAME(attn_accumulate)(acc, w[t], v + xy_attn_at(vv, b, hk, jt) + c0, vv.s[2], min((long)VW, j_end - jt), nc);
    }
  }
  for (int r = 0; r < nr; ++r) {
    const long i = i0 + r;
    const T sum = XV(xy_hsum)(l[r]);
    KNAME(attn_store)(acc, r, sum > 0 ? 1 / sum : (T)0, out + xy_attn_at(ov, b, h, i) + c0, nc);
    if (c0 == 0) lse[xy_attn_at(lv, b, h, i)] = sum > 0 ? m[r] + log(sum) : -INFINITY;
  }
}

/* dq: rows of queries against blocks of keys (k^T and v^T by blocks). */
kernel void KNAME(attention_grad_q_rows)(global const ST* q, xy_view qv, global const ST* k, xy_view kv,
                                         global const T* kt, global const T* vt, global const uchar* mb,
                                         global const ST* ma, xy_view mv, global const ST* dout, xy_view dov,
                                         global const T* stats, xy_view sv, global ST* dq, xy_view dqv, xy_attn a,
                                         T scale, float p, T inv_keep) {
  XY_ATTN_ITEM(a.H, a.Sq)
  const long h = hh, i0 = r0, hk = h / (a.H / a.Hkv), nc = min((long)XY_ATTN_COLS, a.D - c0);
  const long blocks = (a.Sk + VW - 1) / VW;
  global const T* kb = kt + (b * a.Hkv + hk) * blocks * a.D * VW;
  global const T* vb = vt + (b * a.Hkv + hk) * blocks * a.Dv * VW;
  global const ST *qr[XY_ATTN_ROWS], *dr[XY_ATTN_ROWS];
  T lse[XY_ATTN_ROWS], delta[XY_ATTN_ROWS];
  VT acc[XY_ATTN_ROWS * XY_ATTN_VECS];
  for (int r = 0; r < XY_ATTN_ROWS; ++r) {
    const long i = i0 + min((long)r, nr - 1), row = (b * a.H + h) * a.Sq + i;
    qr[r] = q + xy_attn_at(qv, b, h, i);
    dr[r] = dout + xy_attn_at(dov, b, h, i);
    lse[r] = stats[sv.offset + 2 * row];
    delta[r] = stats[sv.offset + 2 * row + 1];
  }
  for (int c = 0; c < XY_ATTN_ROWS * XY_ATTN_VECS; ++c) acc[c] = (VT)0;
  const long j_end = a.causal ? min(a.Sk, i0 + nr) : a.Sk;
  for (long j0 = 0; j0 < j_end; j0 += VW) {
    VT s[XY_ATTN_ROWS], dp[XY_ATTN_ROWS];
    for (int r = 0; r < XY_ATTN_ROWS; ++r) s[r] = dp[r] = (VT)0;
    KNAME(attn_dots)(s, qr, kb + j0 * a.D, a.D);
    KNAME(attn_dots)(dp, dr, vb + j0 * a.Dv, a.Dv);
    T w[XY_ATTN_ROWS * VW]; /* dS */
    for (int r = 0; r < XY_ATTN_ROWS; ++r) {
      const long i = i0 + min((long)r, nr - 1);
      const VT sc = KNAME(attn_scores)(s[r], scale, mb, ma, mv, a, b, h, i, j0, 0, 1, 0,
                                       (a.causal ? min(a.Sk, i + 1) : a.Sk) - j0, lanes);
      const VT keep = KNAME(attn_keeps)(a, p, inv_keep, b, h, i, j0, 0, 1);
      VSTORE(KNAME(attn_weights)(sc, (VT)(lse[r])) * (dp[r] * keep - delta[r]), 0, w + r * VW);
    }
    KNAME(attn_accumulate)(acc, w, k + xy_attn_at(kv, b, hk, j0) + c0, kv.s[2], min((long)VW, j_end - j0), nc);
  }
  for (int r = 0; r < nr; ++r) KNAME(attn_store)(acc, r, scale, dq + xy_attn_at(dqv, b, h, i0 + r) + c0, nc);
}

/* dk, dv: rows of keys against blocks of queries (q^T and dout^T by
 * blocks), over every query head of the key's group; chunk c0 covers
 * columns [c0, c0 + XY_ATTN_COLS) of dk and of dv (each as far as it goes). */
kernel void KNAME(attention_grad_kv_rows)(global const ST* q, xy_view qv, global const ST* k, xy_view kv,
                                          global const ST* v, xy_view vv, global const T* qt, global const T* dot_t,
                                          global const uchar* mb, global const ST* ma, xy_view mv,
                                          global const ST* dout, xy_view dov, global const T* stats, xy_view sv,
                                          global ST* dk, xy_view dkv, global ST* dv, xy_view dvv, xy_attn a, T scale,
                                          float p, T inv_keep) {
  XY_ATTN_ITEM(a.Hkv, a.Sk)
  const long hk = hh, j0 = r0, group = a.H / a.Hkv, blocks = (a.Sq + VW - 1) / VW;
  const long nck = max(0L, min((long)XY_ATTN_COLS, a.D - c0)), ncv = max(0L, min((long)XY_ATTN_COLS, a.Dv - c0));
  global const ST *kr[XY_ATTN_ROWS], *vr[XY_ATTN_ROWS];
  VT dk_acc[XY_ATTN_ROWS * XY_ATTN_VECS], dv_acc[XY_ATTN_ROWS * XY_ATTN_VECS];
  for (int r = 0; r < XY_ATTN_ROWS; ++r) {
    kr[r] = k + xy_attn_at(kv, b, hk, j0 + min((long)r, nr - 1));
    vr[r] = v + xy_attn_at(vv, b, hk, j0 + min((long)r, nr - 1));
  }
  for (int c = 0; c < XY_ATTN_ROWS * XY_ATTN_VECS; ++c) dk_acc[c] = dv_acc[c] = (VT)0;
  /* Causal: queries before the block's first key leave all its keys out. */
  const long i_begin = a.causal ? j0 / VW * VW : 0;
  for (long h = hk * group; h < (hk + 1) * group; ++h) {
    global const T* qb = qt + (b * a.H + h) * blocks * a.D * VW;
    global const T* db = dot_t + (b * a.H + h) * blocks * a.Dv * VW;
    for (long i0 = i_begin; i0 < a.Sq; i0 += VW) {
      const long nq = min((long)VW, a.Sq - i0);
      VT s[XY_ATTN_ROWS], dp[XY_ATTN_ROWS];
      for (int r = 0; r < XY_ATTN_ROWS; ++r) s[r] = dp[r] = (VT)0;
      KNAME(attn_dots)(s, kr, qb + i0 * a.D, a.D);
      KNAME(attn_dots)(dp, vr, db + i0 * a.Dv, a.Dv);
      T t[2 * VW];
      for (long x = 0; x < VW; ++x) {
        const long row = (b * a.H + h) * a.Sq + min(i0 + x, a.Sq - 1);
        t[x] = stats[sv.offset + 2 * row];
        t[VW + x] = stats[sv.offset + 2 * row + 1];
      }
      const VT lse = VLOAD(0, t), delta = VLOAD(1, t);
      T wd[XY_ATTN_ROWS * VW], ds[XY_ATTN_ROWS * VW]; /* dropout(P), dS */
      for (int r = 0; r < XY_ATTN_ROWS; ++r) {
        const long j = j0 + min((long)r, nr - 1);
        const VT sc = KNAME(attn_scores)(s[r], scale, mb, ma, mv, a, b, h, i0, j, 1, 0, a.causal ? j - i0 : 0, nq,
                                         lanes);
        const VT w = KNAME(attn_weights)(sc, lse), keep = KNAME(attn_keeps)(a, p, inv_keep, b, h, i0, j, 1, 0);
        VSTORE(w * keep, 0, wd + r * VW);
        VSTORE(w * (dp[r] * keep - delta), 0, ds + r * VW);
      }
      KNAME(attn_accumulate)(dv_acc, wd, dout + xy_attn_at(dov, b, h, i0) + c0, dov.s[2], nq, ncv);
      KNAME(attn_accumulate)(dk_acc, ds, q + xy_attn_at(qv, b, h, i0) + c0, qv.s[2], nq, nck);
    }
  }
  for (int r = 0; r < nr; ++r) {
    KNAME(attn_store)(dk_acc, r, scale, dk + xy_attn_at(dkv, b, hk, j0 + r) + c0, nck);
    KNAME(attn_store)(dv_acc, r, (T)1, dv + xy_attn_at(dvv, b, hk, j0 + r) + c0, ncv);
  }
}

#undef XY_ATTN_ITEM
#undef XY_ATTN_EXPV
