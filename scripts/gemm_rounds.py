#!/usr/bin/env python3
"""Summarises scripts/gpu.sh's alternating gemm and conv2d rounds.

  python scripts/gemm_rounds.py DIR

DIR holds torch_gemm_N.json (scripts/torch_peer.py --only tensor-cores)
and xylem_gemm_N.json (xylem_bench_cuda --only tensor-cores) for rounds
N = 1, 2, ... An 8192 gemm and the 64x64x56x56 conv2d are power-bound:
their rates move with the card's recent load by more than the difference
between two callers of the same cuBLAS or cuDNN kernel, so a single pair of
figures taken minutes apart (the main table) can say 0.89x or 1.06x for the
same kernel. The rounds alternate the two programs (ABBA order) so both see
the same conditions; the table gives each side's median and every round's
ratio.
"""
import glob
import json
import os
import statistics
import sys

KEYS = ["gemm_fp32_tflops", "gemm_tf32_tflops", "gemm_fp16_tflops", "gemm_bf16_tflops",
        "conv2d_tflops", "conv2d_fp32_tflops", "conv2d_legacy_tflops", "conv2d_timed_tflops"]
NAMES = {"conv2d_tflops": "conv2d", "conv2d_fp32_tflops": "conv2d f32",
         "conv2d_legacy_tflops": "c2d legacy", "conv2d_timed_tflops": "c2d timed"}
# Our variants of a row that PyTorch has once: compared with PyTorch's default.
PEER_KEYS = {"conv2d_legacy_tflops": "conv2d_tflops", "conv2d_timed_tflops": "conv2d_tflops"}


def load(pattern):
    runs = []
    for path in sorted(glob.glob(pattern), key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0])):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def main():
    d = sys.argv[1]
    ours, peer = load(os.path.join(d, "xylem_gemm_*.json")), load(os.path.join(d, "torch_gemm_*.json"))
    rounds = min(len(ours), len(peer))
    if rounds == 0:
        print("gemm rounds: no results")
        return 1
    print(f"gemm 8192 and conv2d 64x64x56x56 3x3, {rounds} alternating rounds (TFLOP/s, medians; ratio = ours / PyTorch)")
    print(f"{'':10} {'ours':>8} {'PyTorch':>8} {'ratio':>7}   per round")
    for key in KEYS:
        o = [r[key] for r in ours[:rounds] if key in r]
        p = [r[PEER_KEYS.get(key, key)] for r in peer[:rounds] if PEER_KEYS.get(key, key) in r]
        if len(o) != rounds or len(p) != rounds:
            continue
        per = " ".join(f"{a / b:.2f}" for a, b in zip(o, p))
        name = NAMES.get(key, key.split("_")[1])
        print(f"{name:10} {statistics.median(o):8.1f} {statistics.median(p):8.1f} "
              f"{statistics.median(o) / statistics.median(p):6.2f}x   {per}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
