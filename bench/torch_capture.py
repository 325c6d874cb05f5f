#!/usr/bin/env python3
"""PyTorch's peer of xylem_bench_capture's CUDA row: a chain of N in-place
adds on 16 f32 (x.add_(one)), launched eagerly and then synchronized, and the
same chain captured once with torch.cuda.graphs and replayed, synchronized.
Per op: the median of --reps runs, each divided by N, in microseconds.
--json FILE writes the row.
"""
import argparse
import json
import statistics
import time

import torch


def timed(fn, reps):
    fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chain", type=int, default=100)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_capture: no CUDA device; skipped")
        return
    x = torch.zeros(16, device="cuda")
    one = torch.ones(16, device="cuda")

    def chain():
        for _ in range(args.chain):
            x.add_(one)

    def eager():
        chain()
        torch.cuda.synchronize()

    # Warm up on a side stream, as torch.cuda.graphs asks, then capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()

    def replay():
        graph.replay()
        torch.cuda.synchronize()

    eager_us = timed(eager, args.reps) / args.chain * 1e6
    replay_us = timed(replay, args.reps) / args.chain * 1e6
    print(f"{'per op, us':<40} {'eager':>10} {'replay':>10}")
    print(f"{'torch cuda: add 16 f32, chain of ' + str(args.chain):<40} {eager_us:>10.3f} {replay_us:>10.3f}"
          f"   ({eager_us / replay_us:.1f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backend": "torch-cuda", "chain": args.chain, "eager_us_per_op": eager_us,
                       "replay_us_per_op": replay_us}, f)


if __name__ == "__main__":
    main()
