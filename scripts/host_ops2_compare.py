#!/usr/bin/env python3
"""Issue 18's bar for op set 2 on the host: xylem against the best of PyTorch
CPU and NumPy, op by op.

  python scripts/host_ops2_compare.py FILE...

Each FILE holds JSON lines of bench/host_ops2_bench.cpp (library "xylem") or
bench/torch_host_ops2.py (libraries "torch", "numpy"); other lines, such as
their tables, are skipped, so whole logs may be given. Give the files of one
thread count. Per op: xylem's time, the best peer's time and which peer, the
ratio xylem / best (below 1: xylem is faster) and whether it is within 2x;
then the memory of attention at the long length (one head's S x S f32 matrix
against what the call added: xylem's tensor storage and resident memory,
PyTorch's resident memory), and a summary line.
"""
import sys

from convnets_compare import rows  # the JSON lines of whole logs (this folder)

BAR = 2.0


def mib(v):
    return f"{v / 2**20:.1f}" if isinstance(v, (int, float)) else "-"


def main(paths):
    if not paths:
        sys.exit(__doc__)
    ours, peers, order, settings = {}, {}, [], {}
    for r in rows(paths):
        settings.setdefault("xylem" if r["library"] == "xylem" else "peers", set()).add(
            (str(r.get("threads")), r.get("quick")))
        if r["library"] == "xylem":
            ours[r["op"]] = r
        else:
            peers.setdefault(r["op"], {})[r["library"]] = r
        if r["op"] not in order:
            order.append(r["op"])
    # Both sides should be of one thread count and size (xylem's "all":
    # XYLEM_NATIVE_THREADS unset).
    if len(set().union(*settings.values())) > 1:
        print("warning: rows of different settings (threads, quick): "
              + "; ".join(f"{side} {sorted(s, key=str)}" for side, s in settings.items()))

    print(f"{'op':<22} {'shape':<40} {'xylem ms':>10} {'best ms':>10} {'peer':<6} {'xylem/best':>10}  within {BAR:g}x")
    within, over, xylem_only, peer_only = [], [], [], []
    for op in order:
        x, p = ours.get(op), peers.get(op, {})
        timed = {lib: r for lib, r in p.items() if r.get("seconds")}
        shape = (x or next(iter(p.values())))["shape"]
        if x is not None and x.get("seconds") is None:
            continue  # memory only: below
        if x is None:
            peer_only.append(op)
            print(f"{op:<22} {shape:<40} {'-':>10}  (no xylem row)")
            continue
        if not timed:
            xylem_only.append(op)
            print(f"{op:<22} {shape:<40} {x['seconds'] * 1e3:10.4g} {'-':>10} {'-':<6} {'-':>10}  (no peer)")
            continue
        lib, best = min(timed.items(), key=lambda kv: kv[1]["seconds"])
        ratio = x["seconds"] / best["seconds"]
        ok = ratio <= BAR
        (within if ok else over).append(op)
        print(f"{op:<22} {shape:<40} {x['seconds'] * 1e3:10.4g} {best['seconds'] * 1e3:10.4g} {lib:<6}"
              f" {ratio:10.2f}  {'yes' if ok else 'NO'}")

    memory = [op for op in order if any(k in ours.get(op, {}) for k in ("peak_tensor_bytes", "peak_rss_growth_bytes"))
              or any("peak_rss_growth_bytes" in r for r in peers.get(op, {}).values())]
    efficient = []
    if memory:
        print(f"\nattention memory (MiB added by one call): {'xylem tensors':>14} {'xylem RSS':>10} {'torch RSS':>10}"
              f" {'one SxS f32':>12}  no SxS buffer in xylem")
        for op in memory:
            x, t = ours.get(op, {}), peers.get(op, {}).get("torch", {})
            sxs = x.get("sxs_bytes") or t.get("sxs_bytes")
            flag = x.get("memory_efficient")
            if flag is not None:
                efficient.append(bool(flag))
            print(f"{op:<41} {mib(x.get('peak_tensor_bytes')):>14} {mib(x.get('peak_rss_growth_bytes')):>10}"
                  f" {mib(t.get('peak_rss_growth_bytes')):>10} {mib(sxs):>12}  "
                  f"{'-' if flag is None else 'yes' if flag else 'NO'}")

    compared = len(within) + len(over)
    summary = f"summary: {len(within)} of {compared} ops within {BAR:g}x of the best peer"
    if over:
        summary += f"; over: {', '.join(over)}"
    if xylem_only:
        summary += f"; no peer: {', '.join(xylem_only)}"
    if peer_only:
        summary += f"; not measured by xylem: {', '.join(peer_only)}"
    if efficient:
        summary += f"; attention at the long length memory-efficient: {'yes' if all(efficient) else 'NO'}"
    print(summary)


if __name__ == "__main__":
    main(sys.argv[1:])
