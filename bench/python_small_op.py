#!/usr/bin/env python3
"""Host time per op through Python, and large ops through Python against C++.

Rows:
  small op   exp of 1024 f32 into an existing output, N calls then one wait:
             host time per call. xylem on each backend asked for, NumPy on the
             host; PyTorch and CuPy on CUDA where they import. Also xylem's
             nn.sigmoid of 1024, the op xylem_bench_cuda's "small_op_us" and
             xylem_bench_native's enqueue row time from C++.
  sigmoid    nn.sigmoid over a large f32 tensor: read + write GB/s.
  gemm       f32 n^3: GFLOP/s.
--cxx FILE   the JSON of xylem_bench_native or xylem_bench_cuda from the same
             machine: its figures are printed beside ours (Python / C++).
Medians of --rounds rounds after warm-up. --json FILE writes the rows.
"""
import argparse
import json
import statistics
import time

import numpy as np

import xylem


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
    rows = {}
    name = b.framework
    with b:
        x = xylem.contiguous(xylem.asarray(np.random.default_rng(0).uniform(-1, 1, 1024).astype(np.float32)))
        y = xylem.Tensor([1024])
        rows[f"small_op_exp_us/xylem-{name}"] = 1e6 * per_call(lambda: xylem.exp(x, out=y), args.calls, b.synchronize,
                                                                args.rounds)
        rows[f"small_op_sigmoid_us/xylem-{name}"] = 1e6 * per_call(lambda: xylem.nn.sigmoid(x, out=y), args.calls,
                                                                    b.synchronize, args.rounds)
        n = args.elements
        big = xylem.contiguous(xylem.asarray(np.ones(n, np.float32)))
        out = xylem.Tensor([n])
        t = per_call(lambda: xylem.nn.sigmoid(big, out=out), 3, b.synchronize, args.rounds)
        rows[f"sigmoid_gbs/xylem-{name}"] = 8 * n / t / 1e9
        m = args.gemm
        a = xylem.contiguous(xylem.asarray(np.ones((m, m), np.float32)))
        c = xylem.Tensor([m, m])
        t = per_call(lambda: xylem.blas.gemm(a, a, c), 2, b.synchronize, args.rounds)
        rows[f"gemm_f32_gflops/xylem-{name}"] = 2 * m**3 / t / 1e9
    return rows


def numpy_rows(args):
    x = np.random.default_rng(0).uniform(-1, 1, 1024).astype(np.float32)
    y = np.empty_like(x)
    return {"small_op_exp_us/numpy": 1e6 * per_call(lambda: np.exp(x, out=y), args.calls, lambda: None, args.rounds)}


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


def cxx_figures(path):
    """The C++ benchmark's figures under our row names."""
    if not path:
        return {}
    j = json.load(open(path))
    if j.get("benchmark") == "xylem_bench_native":
        return {"small_op_sigmoid_us/xylem-native": j["enqueue"]["total_us_per_op"],
                "sigmoid_gbs/xylem-native": j.get("sigmoid_f32", {}).get("gbps"),
                "gemm_f32_gflops/xylem-native": j.get("gemm_f32", {}).get("gflops"),
                "gemm_n": j.get("gemm_f32", {}).get("n"), "sigmoid_n": j.get("sigmoid_f32", {}).get("elements")}
    return {"small_op_sigmoid_us/xylem-cuda": j.get("small_op_drained_us"),
            "sigmoid_gbs/xylem-cuda": j.get("sigmoid_gbs"),
            "gemm_f32_gflops/xylem-cuda": 1e3 * j["gemm_fp32_tflops"] if "gemm_fp32_tflops" in j else None}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default="native", help="comma-separated xylem backends, e.g. native,cuda")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--elements", type=int, default=1 << 24, help="sigmoid size")
    p.add_argument("--gemm", type=int, default=512, help="gemm n")
    p.add_argument("--cxx", help="xylem_bench_native / xylem_bench_cuda JSON to compare with")
    p.add_argument("--json")
    args = p.parse_args()

    rows = numpy_rows(args)
    for spec in args.backends.split(","):
        rows.update(xylem_rows(xylem.Backend.open(spec), args))
    if "cuda" in args.backends:
        for peer in (torch_rows, cupy_rows):
            try:
                rows.update(peer(args))
            except ImportError as e:
                print(f"({peer.__name__[:-5]} skipped: {e})")
    cxx = cxx_figures(args.cxx)
    if cxx:
        print(f"C++ figures from {args.cxx} (its sizes: gemm n={cxx.get('gemm_n')}, "
              f"sigmoid {cxx.get('sigmoid_n')} elements; ours: n={args.gemm}, {args.elements})")
    print(f"{'row':44} {'Python':>10} {'C++':>10} {'Py/C++':>7}")
    for key, value in rows.items():
        ref = cxx.get(key)
        extra = f" {ref:10.3f} {value / ref:7.3f}" if ref else ""
        print(f"{key:44} {value:10.3f}{extra}")
    if args.json:
        json.dump({"benchmark": "python_small_op", "rows": rows, "cxx": cxx}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
