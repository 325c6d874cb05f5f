#!/usr/bin/env python3
"""The peers of bench/host_ops2_bench.cpp: issue 18's op set 2 on the host CPU
with PyTorch (torch.set_num_threads(N)) and NumPy where NumPy has the op, at
the same sizes and dtypes, under the same op names.

    bench/torch_host_ops2.py [--threads N] [--quick] [--reps N] [--budget S]
                             [--only OP,OP] [--json FILE]

Each figure is wall time per call: one warm-up, then the median of up to
--reps timings, stopping once a row has spent --budget seconds (at least 3);
split is timed over 1000 calls a timing. PyTorch runs forward-only rows under
torch.no_grad() and writes into an existing output (out=) where xylem's call
does; forward+backward rows go through autograd. NumPy's threads (its BLAS's)
are limited to N through the environment before it loads; its FFT runs on
one thread. PyTorch is optional: without it, NumPy's rows alone.

Attention at S = 4096 is measured for memory first (PyTorch), as the C++
side does: the growth of the process's peak resident memory over one call
(VmHWM, reset through /proc/self/clear_refs).

Prints a table, then one JSON line per (op, library): {"op", "seconds",
"library": "torch" | "numpy", ...}, also written to --json FILE.
"""
import argparse
import json
import os
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--quick", action="store_true", help="the small sizes of the C++ side's --quick")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per row, at most")
    p.add_argument("--only", default="", help="comma-separated op names")
    p.add_argument("--json")
    a = p.parse_args()
    a.reps = max(3, a.reps)
    return a


args = parse()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)

import numpy as np  # noqa: E402  (after the thread limits)

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402

    torch.set_num_threads(args.threads)
except ImportError:
    torch = None

only = set(filter(None, args.only.split(",")))
rows = []
# Each row goes to --json FILE as soon as it is measured: a run cut short by
# a timeout keeps its rows.
json_file = open(args.json, "w") if args.json else None


def wants(op):
    return not only or op in only


def timed(fn, calls=1):
    """Seconds per call of fn: a warm-up, then the median of the timings."""
    fn()
    times, start = [], time.perf_counter()
    while len(times) < args.reps and (len(times) < 3 or time.perf_counter() - start < args.budget):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    times.sort()
    n = len(times)
    return (times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])), n


def add(op, shape, library, seconds, timings, **extra):
    rows.append(dict(op=op, seconds=seconds, shape=shape, library=library, threads=args.threads,
                     quick=args.quick, timings=timings, **extra))
    if json_file:
        json_file.write(json.dumps(rows[-1]) + "\n")
        json_file.flush()
    if seconds is not None:
        print(f"{op:<22} {library:<6} {shape:<40} {seconds * 1e3:10.4g} ms  ({timings} timings)", flush=True)


def bench(op, shape, peers, calls=1):
    """Times each peer's callable (None: that library lacks the op)."""
    if not wants(op):
        return
    for library, fn in peers.items():
        if fn is None:
            continue
        try:
            seconds, n = timed(fn, calls)
        except Exception as e:  # a peer that lacks a form of the op: say so, go on
            print(f"{op:<22} {library:<6} {shape:<40} skipped: {type(e).__name__}: {e}", flush=True)
            continue
        add(op, shape, library, seconds, n)


def dims(*d):
    return "[" + ",".join(str(v) for v in d) + "]"


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return -1


def rss_growth(fn):
    """Bytes the process's peak resident memory grew by over fn()."""
    rss0 = status_kib("VmRSS:")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    fn()
    return (status_kib("VmHWM:") - rss0) * 1024


q = args.quick
rng = np.random.default_rng(18)


def uniform(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def T(a):
    return torch.from_numpy(a) if torch is not None else None


def with_torch(fn):
    return fn if torch is not None else None


def no_grad(fn):
    """fn under torch.no_grad(): PyTorch's fastest forward."""
    def run():
        with torch.no_grad():
            fn()
    return with_torch(run)


print(f"host ops (op set 2) peers: PyTorch {torch.__version__ if torch else 'absent'}, NumPy {np.__version__},"
      f" {args.threads} threads, {'quick' if q else 'full'} sizes, median of up to {args.reps}", flush=True)

# ---- attention at the long length, for memory first (then timed) ----------
if torch is not None and (wants("sdpa_long_fwd") or wants("sdpa_long_fwdbwd")):
    H, S = (1, 2048) if q else (8, 4096)
    shape = dims(1, H, S, 64) + " f32"
    qt, k, v, dout = (T(uniform(1, H, S, 64)) for _ in range(4))
    sxs = float(S) * S * 4

    def fwdbwd_long():
        qq, kk, vv = (t.detach().requires_grad_() for t in (qt, k, v))
        F.scaled_dot_product_attention(qq, kk, vv).backward(dout)

    fwd_long = no_grad(lambda: F.scaled_dot_product_attention(qt, k, v))
    for op, fn in (("sdpa_long_fwd", fwd_long), ("sdpa_long_fwdbwd", fwdbwd_long)):
        if not wants(op):
            continue
        growth = rss_growth(fn)
        print(f"{op}: peak resident +{(growth or 0) / 2**20:.1f} MiB; one head's SxS f32: {sxs / 2**20:.1f} MiB",
              flush=True)
        if op == "sdpa_long_fwd":
            seconds, n = timed(fn)
            add(op, shape, "torch", seconds, n, peak_rss_growth_bytes=growth, sxs_bytes=sxs)
        else:
            add(op, shape + " (memory only)", "torch", None, 0, peak_rss_growth_bytes=growth, sxs_bytes=sxs)

# ---- attention [1, 8, 1024, 64] f32 ----------------------------------------
H, S = (2, 256) if q else (8, 1024)
shape = dims(1, H, S, 64) + " f32"
if torch is not None:
    qt, k, v, dout = (T(uniform(1, H, S, 64)) for _ in range(4))

    def sdpa_fwdbwd():
        qq, kk, vv = (t.detach().requires_grad_() for t in (qt, k, v))
        F.scaled_dot_product_attention(qq, kk, vv).backward(dout)

    bench("sdpa_fwd", shape, {"torch": no_grad(lambda: F.scaled_dot_product_attention(qt, k, v))})
    bench("sdpa_fwdbwd", shape, {"torch": sdpa_fwdbwd})

# ---- LSTM and GRU: 1 layer, 256 -> 256, T 50, batch 32 ----------------------
Tn = 10 if q else 50
shape = f"T{Tn} N32 I256 H256 f32"
if torch is not None:
    x, dy = T(uniform(Tn, 32, 256)), T(uniform(Tn, 32, 256))
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        layer = cls(256, 256)

        def fwdbwd(layer=layer):
            xx = x.detach().requires_grad_()
            layer(xx)[0].backward(dy)

        bench(f"{name}_fwd", shape, {"torch": no_grad(lambda layer=layer: layer(x))})
        bench(f"{name}_fwdbwd", shape, {"torch": fwdbwd})

# ---- embedding and its backward --------------------------------------------
V, D, N, L = (5000, 128, 16, 128) if q else (50000, 512, 64, 128)
shape = f"{dims(N, L)} of {dims(V, D)} f32"
w, idx, dy = uniform(V, D), rng.integers(0, V, size=(N, L)), uniform(N, L, D)


def np_embedding_backward():
    dw = np.zeros((V, D), np.float32)
    np.add.at(dw, idx.reshape(-1), dy.reshape(-1, D))


bench("embedding", shape, {"torch": no_grad(lambda: F.embedding(T(idx), T(w))), "numpy": lambda: np.take(w, idx, axis=0)})
bench("embedding_backward", shape, {
    "torch": with_torch(lambda: torch.ops.aten.embedding_dense_backward(T(dy), T(idx), V, -1, False)),
    "numpy": np_embedding_backward})

# ---- one_hot ---------------------------------------------------------------
n, C = (1024 if q else 4096), 1000
idx1 = rng.integers(0, C, size=n)


def np_one_hot():
    y = np.zeros((n, C), np.int64)
    y[np.arange(n), idx1] = 1


bench("one_hot", f"{dims(n)} -> {dims(n, C)} i64", {"torch": no_grad(lambda: F.one_hot(T(idx1), C)), "numpy": np_one_hot})

# ---- gather, scatter, scatter_add along axis 1 -------------------------------
R, C, K = (1024 if q else 4096), 1024, 256
x, gidx, src = uniform(R, C), rng.integers(0, C, size=(R, K)), uniform(R, K)
shape = f"{dims(R, C)} f32, index {dims(R, K)} axis 1"
row_ids = np.arange(R)[:, None]


def np_scatter():
    y = x.copy()
    np.put_along_axis(y, gidx, src, 1)


def np_scatter_add():
    y = x.copy()
    np.add.at(y, (row_ids, gidx), src)


bench("gather", shape, {"torch": no_grad(lambda: torch.gather(T(x), 1, T(gidx))),
                        "numpy": lambda: np.take_along_axis(x, gidx, 1)})
bench("scatter", shape, {"torch": no_grad(lambda: torch.scatter(T(x), 1, T(gidx), T(src))), "numpy": np_scatter})
bench("scatter_add", shape, {"torch": no_grad(lambda: torch.scatter_add(T(x), 1, T(gidx), T(src))),
                             "numpy": np_scatter_add})

# ---- index_select ----------------------------------------------------------
R, C = (4096 if q else 16384), 512
x, sidx = uniform(R, C), rng.integers(0, R, size=R // 2)
bench("index_select", f"{dims(R // 2)} rows of {dims(R, C)} f32", {
    "torch": no_grad(lambda: torch.index_select(T(x), 0, T(sidx))), "numpy": lambda: np.take(x, sidx, axis=0)})

# ---- concatenate, stack, split ---------------------------------------------
R, C = (512 if q else 2048), 512
parts = [uniform(R, C) for _ in range(4)]
tparts = [T(p) for p in parts] if torch is not None else None
shape = f"4 x {dims(R, C)} f32"
bench("concatenate", shape + " axis 1", {"torch": no_grad(lambda: torch.cat(tparts, 1)),
                                         "numpy": lambda: np.concatenate(parts, 1)})
bench("stack", shape + " axis 0", {"torch": no_grad(lambda: torch.stack(tparts, 0)), "numpy": lambda: np.stack(parts, 0)})
big = uniform(8 * R, C)
bench("split", f"{dims(8 * R, C)} f32 into 8 views", {
    "torch": no_grad(lambda: torch.split(T(big), R, 0)), "numpy": lambda: np.split(big, 8, axis=0)}, calls=1000)

# ---- pad, permute, transpose -----------------------------------------------
N = 2 if q else 8
x = uniform(N, 64, 128, 128)
bench("pad", f"{dims(N, 64, 128, 128)} f32, (1,1,1,1)", {
    "torch": no_grad(lambda: F.pad(T(x), (1, 1, 1, 1))),
    "numpy": lambda: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))})
N = 4 if q else 16
x = uniform(N, 64, 64, 64)
bench("permute", f"{dims(N, 64, 64, 64)} f32 (0,2,3,1)", {
    "torch": no_grad(lambda: T(x).permute(0, 2, 3, 1).contiguous()),
    "numpy": lambda: np.ascontiguousarray(x.transpose(0, 2, 3, 1))})
R = 1024 if q else 2048
m = uniform(R, 4096)
bench("transpose", f"{dims(R, 4096)} f32", {"torch": no_grad(lambda: T(m).t().contiguous()),
                                            "numpy": lambda: np.ascontiguousarray(m.T)})

# ---- group, instance and RMS normalisation ---------------------------------
N = 8 if q else 32
x, w, b = uniform(N, 256, 32, 32), uniform(256), uniform(256)
shape = f"{dims(N, 256, 32, 32)} f32"
R = 2048 if q else 8192
r, rw = uniform(R, 1024), uniform(1024)
if torch is not None:
    bench("group_norm", shape + ", 32 groups", {"torch": no_grad(lambda: F.group_norm(T(x), 32, T(w), T(b), 1e-5))})
    bench("instance_norm", shape, {"torch": no_grad(lambda: F.instance_norm(T(x), weight=T(w), bias=T(b), eps=1e-5))})
    if hasattr(F, "rms_norm"):
        bench("rms_norm", f"{dims(R, 1024)} f32", {"torch": no_grad(lambda: F.rms_norm(T(r), (1024,), T(rw), 1e-6))})

# ---- BLAS ------------------------------------------------------------------
n = 1024 if q else 4096
gx, gy, ga = uniform(n), uniform(n), uniform(n, n)
tga = T(ga.copy()) if torch is not None else None
bench("ger", f"{dims(n, n)} f32", {"torch": no_grad(lambda: tga.addr_(T(gx), T(gy), alpha=1e-3)),
                                   "numpy": lambda: np.add(ga, np.outer(gx * np.float32(1e-3), gy), out=ga)})

m = 512 if q else 2048
sa, c = uniform(m, m // 2), np.zeros((m, m), np.float32)
tc = T(c.copy()) if torch is not None else None
bench("syrk", f"a {dims(m, m // 2)} f32, c = a a^T upper", {
    "torch": no_grad(lambda: torch.mm(T(sa), T(sa).t(), out=tc)), "numpy": lambda: np.dot(sa, sa.T, out=c)})

tri = np.tril(rng.uniform(-1, 1, size=(m, m)).astype(np.float32) / m, -1) + np.eye(m, dtype=np.float32)
rhs = uniform(m, 512)
if torch is not None:
    sol = torch.empty(m, 512)
    bench("trsm", f"a {dims(m, m)} lower, b {dims(m, 512)} f32", {
        "torch": no_grad(lambda: torch.linalg.solve_triangular(T(tri), T(rhs), upper=False, out=sol))})

ea, eb, ec = uniform(m, m), uniform(m, m), np.empty((m, m), np.float32)
tec = T(ec.copy()) if torch is not None else None


def np_geam():
    np.multiply(eb.T, np.float32(0.5), out=ec)
    np.add(ec, ea, out=ec)


bench("geam", f"{dims(m, m)} f32, c = a + 0.5 b^T", {
    "torch": no_grad(lambda: torch.add(T(ea), T(eb).t(), alpha=0.5, out=tec)), "numpy": np_geam})

length = (1 << 20) if q else (1 << 22)
vec = uniform(length)
bench("iamin", f"{dims(length)} f32", {"torch": no_grad(lambda: torch.argmin(T(vec).abs())),
                                       "numpy": lambda: np.argmin(np.abs(vec))})

batch = 16 if q else 64
ba, bb, bc = uniform(batch, 256, 256), uniform(batch, 256, 256), np.zeros((batch, 256, 256), np.float32)
tbc = T(bc.copy()) if torch is not None else None
bench("gemm_batched", f"{batch} x {dims(256, 256)} f32", {
    "torch": no_grad(lambda: torch.bmm(T(ba), T(bb), out=tbc)), "numpy": lambda: np.matmul(ba, bb, out=bc)})

# ---- FFT -------------------------------------------------------------------
n1, n2, nrows = ((1 << 18), 512, 256) if q else ((1 << 20), 2048, 1024)
x1 = (uniform(n1) + 1j * uniform(n1)).astype(np.complex64)
x2 = (uniform(n2, n2) + 1j * uniform(n2, n2)).astype(np.complex64)
xr = uniform(nrows, 4096)
bench("fft_c64", f"{dims(n1)} c64", {"torch": no_grad(lambda: torch.fft.fft(T(x1))), "numpy": lambda: np.fft.fft(x1)})
bench("fft2_c64", f"{dims(n2, n2)} c64", {"torch": no_grad(lambda: torch.fft.fft2(T(x2))),
                                          "numpy": lambda: np.fft.fft2(x2)})
bench("rfft_f32", f"{dims(nrows, 4096)} f32", {"torch": no_grad(lambda: torch.fft.rfft(T(xr))),
                                               "numpy": lambda: np.fft.rfft(xr)})

# ---- activations into an existing output ----------------------------------
n = (1 << 21) if q else (1 << 23)
if torch is not None:
    ax, ay = T(uniform(n)), torch.empty(n)
    bench("silu", f"{dims(n)} f32", {"torch": no_grad(lambda: torch.ops.aten.silu.out(ax, out=ay))})
    bench("gelu_tanh", f"{dims(n)} f32", {"torch": no_grad(lambda: torch.ops.aten.gelu.out(ax, approximate="tanh", out=ay))})

# ---- losses ----------------------------------------------------------------
N, C = (256 if q else 1024), 8192
logits = uniform(N, C)
target = np.where(rng.uniform(size=N) < 0.1, -100, rng.integers(0, C, size=N))
shape = f"{dims(N, C)} f32, 10% ignore_index"
R = 512 if q else 2048
if torch is not None:
    tl, tt = T(logits), T(target)

    def ce_fwdbwd():
        lg = tl.detach().requires_grad_()
        F.cross_entropy(lg, tt, ignore_index=-100).backward()

    bench("cross_entropy", shape, {"torch": no_grad(lambda: F.cross_entropy(tl, tt, ignore_index=-100))})
    bench("cross_entropy_fwdbwd", shape, {"torch": ce_fwdbwd})
    kin = torch.log_softmax(T(uniform(R, 4096)), 1)
    kprob = torch.softmax(T(uniform(R, 4096)), 1)
    bench("kl_div", f"{dims(R, 4096)} f32 batchmean", {
        "torch": no_grad(lambda: F.kl_div(kin, kprob, reduction="batchmean"))})

print("\n".join(json.dumps(r) for r in rows))
