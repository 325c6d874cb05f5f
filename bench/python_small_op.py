#!/usr/bin/env python3
"""Host time per op through Python, and the same ops through Python and C++.

Rows:
  small op   exp of 1024 f32 into an existing output, N calls then one wait:
             host time per call. xylem on each backend asked for, NumPy on the
             host; PyTorch and CuPy on CUDA where they import. Also xylem's
             nn.sigmoid of 1024.
  small new  exp of 1024 f32 returning a new tensor (NumPy: a new array),
             the last result dropped at each call: allocation and free too.
  sigmoid    nn.sigmoid over --elements f32: read + write GB/s.
  gemm       f32 n^3 (--gemm): GFLOP/s.
--cxx-bin PATH   xylem_bench_same_ops (bench/same_ops_bench.cpp): run in this
             run for each backend, right after the Python rows, with the same
             ops, sizes, calls and rounds, timed by the same per_call; its
             figures are printed beside ours with the ratio Python / C++
             (time for the us rows, throughput for GB/s and GFLOP/s). The
             two sides alternate --pairs times; each prints its medians.
Medians of --rounds rounds after warm-up; NumPy's rows alternate with
xylem's (--numpy-pairs runs of each at the least) and the small ops' ratios
to NumPy close the table. --json FILE writes the rows.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import xylem


# Calls per round of each row; xylem_bench_same_ops is given the same.
SIGMOID_CALLS = 10
GEMM_CALLS = 2


def per_call(fn, calls, wait, rounds):
    """Median seconds per call of `calls` calls followed by one wait()."""
    for _ in range(max(3, calls // 10)):
        fn()
    wait()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        wait()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def xylem_rows(b, args):
    # Each row times one op called again and again: automatic fusion would
    # run such a loop once (the earlier results dropped), so it is off here.
    xylem.set_fusion(False)
    rows = {}
    name = b.framework
    with b:
        x = xylem.contiguous(xylem.asarray(np.ones(1024, np.float32)))
        y = xylem.Tensor([1024])
        rows[f"small_op_exp_us/xylem-{name}"] = 1e6 * per_call(lambda: xylem.exp(x, out=y), args.calls, b.synchronize,
                                                                args.rounds)
        rows[f"small_op_exp_new_us/xylem-{name}"] = 1e6 * per_call(lambda: xylem.exp(x), args.calls, b.synchronize,
                                                                    args.rounds)
        rows[f"small_op_sigmoid_us/xylem-{name}"] = 1e6 * per_call(lambda: xylem.nn.sigmoid(x, out=y), args.calls,
                                                                    b.synchronize, args.rounds)
        n = args.elements
        big = xylem.contiguous(xylem.asarray(np.ones(n, np.float32)))
        out = xylem.Tensor([n])
        t = per_call(lambda: xylem.nn.sigmoid(big, out=out), SIGMOID_CALLS, b.synchronize, args.rounds)
        rows[f"sigmoid_gbs/xylem-{name}"] = 8 * n / t / 1e9
        m = args.gemm
        a = xylem.contiguous(xylem.asarray(np.ones((m, m), np.float32)))
        c = xylem.Tensor([m, m])
        t = per_call(lambda: xylem.blas.gemm(a, a, c), GEMM_CALLS, b.synchronize, args.rounds)
        rows[f"gemm_f32_gflops/xylem-{name}"] = 2 * m**3 / t / 1e9
    return rows


def numpy_rows(args):
    x = np.ones(1024, np.float32)
    y = np.empty_like(x)
    return {"small_op_exp_us/numpy": 1e6 * per_call(lambda: np.exp(x, out=y), args.calls, lambda: None, args.rounds),
            "small_op_exp_new_us/numpy": 1e6 * per_call(lambda: np.exp(x), args.calls, lambda: None, args.rounds)}


def torch_rows(args):
    import torch
    x = torch.rand(1024, device="cuda")
    y = torch.empty_like(x)
    return {"small_op_exp_us/torch-cuda": 1e6 * per_call(lambda: torch.exp(x, out=y), args.calls,
                                                          torch.cuda.synchronize, args.rounds)}


def cupy_rows(args):
    import cupy as cp
    x = cp.random.rand(1024, dtype=cp.float32)
    y = cp.empty_like(x)
    wait = cp.cuda.get_current_stream().synchronize
    return {"small_op_exp_us/cupy-cuda": 1e6 * per_call(lambda: cp.exp(x, out=y), args.calls, wait, args.rounds)}


def cxx_rows(binary, spec, args):
    """xylem_bench_same_ops's rows for backend `spec`: the same ops, sizes and timing."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "same_ops.json")
        subprocess.run([binary, "--backend", spec, "--small", "1024", "--elements", str(args.elements),
                        "--gemm", str(args.gemm), "--small-calls", str(args.calls),
                        "--sigmoid-calls", str(SIGMOID_CALLS), "--gemm-calls", str(GEMM_CALLS),
                        "--reps", str(args.rounds), "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["rows"]


def medians(runs):
    """Each row's median over the runs (dicts of the same rows)."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]} if runs else {}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default="native", help="comma-separated xylem backends, e.g. native,cuda")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--elements", type=int, default=1 << 24, help="sigmoid size")
    p.add_argument("--gemm", type=int, default=512, help="gemm n")
    p.add_argument("--cxx-bin", help="xylem_bench_same_ops, run for each backend to compare with")
    p.add_argument("--pairs", type=int, default=3, help="Python and C++ runs, alternated; the median of each")
    p.add_argument("--numpy-pairs", type=int, default=3, help="NumPy and xylem runs, alternated, at the least")
    p.add_argument("--json")
    args = p.parse_args()

    load = os.getloadavg()
    pairs = args.pairs if args.cxx_bin else 1
    rows, cxx, numpy_runs = {}, {}, []
    for spec in args.backends.split(","):
        # NumPy, Python and C++ alternate, so that drift in the machine's load
        # hits them alike.
        ours, theirs = [], []
        for _ in range(max(pairs, args.numpy_pairs)):
            numpy_runs.append(numpy_rows(args))
            ours.append(xylem_rows(xylem.Backend.open(spec), args))
            if args.cxx_bin and len(theirs) < pairs:
                theirs.append(cxx_rows(args.cxx_bin, spec, args))
        rows.update(medians(ours))
        cxx.update(medians(theirs))
    rows = {**medians(numpy_runs), **rows}
    if "cuda" in args.backends:
        for peer in (torch_rows, cupy_rows):
            try:
                rows.update(peer(args))
            except ImportError as e:
                print(f"({peer.__name__[:-5]} skipped: {e})")
    print(f"sizes: small op 1024, sigmoid {args.elements} f32, gemm n={args.gemm}; median of {args.rounds} rounds "
          f"(and of {pairs} alternated Python and C++ runs); "
          f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after on {os.cpu_count()} cores")
    print(f"{'row':44} {'Python':>10} {'C++':>10} {'Py/C++':>7}")
    for key, value in rows.items():
        ref = cxx.get(key)
        extra = f" {ref:10.3f} {value / ref:7.3f}" if ref else ""
        print(f"{key:44} {value:10.3f}{extra}")
    for spec in args.backends.split(","):
        for op in ("small_op_exp_us", "small_op_exp_new_us"):
            ours, numpys = rows.get(f"{op}/xylem-{spec}"), rows.get(f"{op}/numpy")
            if ours and numpys:
                print(f"{op}: xylem {spec} / NumPy {ours / numpys:.3f} (<= 1: xylem's host time per call is NumPy's or less)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "python_small_op", "rows": rows, "cxx": cxx,
                       "sizes": {"small": 1024, "elements": args.elements, "gemm": args.gemm},
                       "rounds": args.rounds, "pairs": pairs, "load_average": [load[0], os.getloadavg()[0]]}, f, indent=1)


if __name__ == "__main__":
    main()
