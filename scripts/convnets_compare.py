#!/usr/bin/env python3
"""Ratio table of xylem_bench_convnets against bench/torch_convnets.py.

  python scripts/convnets_compare.py FILE...

Each FILE holds JSON lines of either program (other lines, such as their
tables, are skipped, so whole logs may be given). Rows pair up by network,
dtype and batch. Times: PyTorch's milliseconds over xylem's, so >1 means xylem
is faster; memory: PyTorch's peak over xylem's, so >1 means xylem needs less
(PyTorch's figure counts its cuDNN workspace, xylem's tensors only).
"""
import json
import sys


def rows(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    yield json.loads(line)


def ratio(peer, ours):
    if not peer or not ours:
        return "-"
    return f"{peer / ours:.2f}x"


def main(paths):
    if not paths:
        sys.exit(__doc__)
    by = {}
    for r in rows(paths):
        by.setdefault((r["net"], r["dtype"], r["batch"]), {})[r["framework"]] = r
    print(f"{'network':<14} {'dtype':<5} {'batch':>5} {'fwd xylem':>10} {'fwd torch':>10} {'ratio':>7}"
          f" {'f+b xylem':>10} {'f+b torch':>10} {'ratio':>7} {'MiB xylem':>10} {'MiB torch':>10} {'ratio':>7}")
    for (net, dtype, batch), pair in by.items():
        ours, peer = pair.get("xylem"), pair.get("pytorch")
        line = f"{net:<14} {dtype:<5} {batch:>5}"
        missing = [name for name, r in (("xylem", ours), ("pytorch", peer)) if r is None or "error" in r]
        if missing:
            why = "; ".join(f"{name}: {pair[name]['error']}" if name in pair else f"{name}: no row" for name in missing)
            print(f"{line}  {why}")
            continue
        mib = lambda r: r["peak_bytes"] / 2**20 if r.get("peak_bytes") else None
        cell = lambda v: f"{v:10.1f}" if v is not None else f"{'-':>10}"
        print(f"{line} {ours['fwd_ms']:10.2f} {peer['fwd_ms']:10.2f} {ratio(peer['fwd_ms'], ours['fwd_ms']):>7}"
              f" {ours['fwd_bwd_ms']:10.2f} {peer['fwd_bwd_ms']:10.2f} {ratio(peer['fwd_bwd_ms'], ours['fwd_bwd_ms']):>7}"
              f" {cell(mib(ours))} {cell(mib(peer))} {ratio(mib(peer), mib(ours)):>7}")
    print("times in ms (medians); ratio = PyTorch / xylem: >1 means xylem is faster or needs less memory")


if __name__ == "__main__":
    main(sys.argv[1:])
