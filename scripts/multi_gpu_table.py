#!/usr/bin/env python3
"""The short table of the two-GPU run (scripts/gpu_multi.sh), printed last.

Reads the JSON lines xylem_bench_multi_gpu and bench/torch_multi_gpu.py
wrote (every *.jsonl file given) and prints, for each row, xylem against
PyTorch and the bar the run must clear:
  peer_copy        GB/s, xylem / torch >= 0.95
  all_reduce, all_gather, reduce_scatter
                   bus bandwidth per size, xylem / torch >= 0.95 from 1 MiB up
                   (when a size was measured several times, the median)
  train_<net>      samples/s on 2 ranks / 1 rank >= 1.9 for each side, and
                   every checked step in sync
Exits 1 when a bar is missed, 0 otherwise (skipped rows are listed, not
failed).
"""
import collections
import json
import statistics
import sys

MIB = 1 << 20


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.startswith("{")]
    return rows


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


def main():
    rows = load(sys.argv[1:])
    ok = True
    for r in rows:
        if "skipped" in r:
            print(f"skipped: {r['row']}: {r['skipped']}")

    peer = {r["impl"]: r for r in rows if r["row"] == "peer_copy" and "impl" in r}
    if {"xylem", "torch"} <= peer.keys():
        ratio = peer["xylem"]["gbps"] / peer["torch"]["gbps"]
        ok &= ratio >= 0.95
        print(f"peer copy cuda:0 -> cuda:1, {human(peer['xylem']['bytes'])}: xylem {peer['xylem']['gbps']:.1f} GB/s "
              f"({peer['xylem']['route']}), torch {peer['torch']['gbps']:.1f} GB/s, ratio {ratio:.3f} "
              f"{'ok' if ratio >= 0.95 else 'BELOW 0.95'}")
    if "xylem staged" in peer:
        staged = peer["xylem staged"]
        print(f"peer copy with XYLEM_CUDA_PEER_ACCESS=0: {staged['gbps']:.1f} GB/s ({staged['route']}, "
              f"{staged['staged']} staged copies)")

    bus = collections.defaultdict(list)
    per_call = collections.defaultdict(list)  # seconds: with one rank bus bandwidth is 0
    for r in rows:
        if r["row"] in ("all_reduce", "all_gather", "reduce_scatter") and "impl" in r:
            bus[(r["row"], r["ranks"], r["bytes"], r["impl"])].append(r["busbw_gbps"])
            per_call[(r["row"], r["ranks"], r["bytes"], r["impl"])].append(r["seconds"])
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        keys = sorted({(k[1], k[2]) for k in bus if k[0] == op})
        if not keys:
            continue
        print(f"{op}: bus bandwidth GB/s (ranks, bytes: xylem torch ratio; us per call xylem torch"
              f"{', xylem on non-blocking communicators' if any(k[3] == 'xylem non-blocking' for k in bus) else ''})")
        for ranks, size in keys:
            x, t = bus.get((op, ranks, size, "xylem")), bus.get((op, ranks, size, "torch"))
            if not x or not t:
                # A side that ran no sweep at all was skipped (listed above).
                sides = {k[3] for k in bus if k[0] == op}
                ok &= len(sides) < 2
                print(f"  {ranks} {human(size):>9}: " + (f"{statistics.median(x or t):8.2f} (only {sides.pop()})"
                                                          if len(sides) == 1 else "missing a side"))
                continue
            us = [f"{statistics.median(per_call[(op, ranks, size, impl)]) * 1e6:8.1f}"
                  for impl in ("xylem", "torch", "xylem non-blocking") if per_call.get((op, ranks, size, impl))]
            x, t = statistics.median(x), statistics.median(t)
            ratio = x / t if t > 0 else float("nan")
            bar = size >= MIB and ranks > 1
            ok &= not bar or ratio >= 0.95
            mark = "" if not bar else (" ok" if ratio >= 0.95 else " BELOW 0.95")
            print(f"  {ranks} {human(size):>9}: {x:8.2f} {t:8.2f} {ratio:6.3f}{mark}  us/call" + " ".join(us))

    # Training: 2 ranks against 1 with the same flags, for each way xylem
    # ran (eager; each variant such as "--capture") and for PyTorch's DDP.
    # The bar (1.9x) holds for a network when one of xylem's ways meets it;
    # PyTorch's ratio is there to compare. Every row must stay in sync.
    for net in sorted({r["row"] for r in rows if r["row"].startswith("train_")}):
        print(f"{net}: samples/s on 1 rank -> 2 ranks (batch per rank as given)")
        runs = collections.defaultdict(list)  # (impl, ranks) -> rows, one per repetition
        for r in rows:
            if r["row"] == net:
                runs[(r.get("impl", ""), r["ranks"])].append(r)
                if r["in_sync_steps"] != r["checked_steps"]:
                    ok = False
                    print(f"  {r.get('impl')}, {r['ranks']} ranks: OUT OF SYNC ({r['in_sync_steps']}/{r['checked_steps']})")

        def median_row(key):
            got = sorted(runs.get(key, []), key=lambda r: r["samples_per_s"])
            return got[len(got) // 2] if got else None

        def one_rank(impl):
            # The flags that only DataParallel reads change nothing on one rank.
            words = impl.replace(",", " ").split()
            kept, skip = [], False
            for w in words:
                if skip:
                    skip = False
                elif w == "--bucket-kib":
                    skip = True
                elif w != "--no-buffer-broadcast":
                    kept.append(w)
            base = kept[0] + (", " + " ".join(kept[1:]) if len(kept) > 1 else "")
            return median_row((impl, 1)) or median_row((base, 1))

        best = None
        for impl in sorted({k[0] for k in runs}, key=lambda i: (i != "xylem", i)):
            cells = []
            for ranks in sorted(k[1] for k in runs if k[0] == impl):
                r, reps = median_row((impl, ranks)), len(runs[(impl, ranks)])
                per = 1e6 / r["steps"]
                cells.append(f"{ranks} rank(s) {r['samples_per_s']:.0f} ({r['seconds'] * per:.0f} us/step, host "
                             f"{r.get('host_seconds', r['seconds']) * per:.0f}{f'; median of {reps}' if reps > 1 else ''})")
            line = f"  {impl}: " + ", ".join(cells)
            one, two = one_rank(impl), median_row((impl, 2))
            if one and two:
                speedup = two["samples_per_s"] / one["samples_per_s"]
                line += f": {speedup:.2f}x"
                if impl.startswith("xylem"):
                    best = speedup if best is None else max(best, speedup)
            print(line)
        if best is not None:
            ok &= best >= 1.9
            print(f"  xylem's best 2/1: {best:.2f}x {'ok' if best >= 1.9 else 'BELOW 1.9x'}")
        # Where xylem's eager step time goes: the host's enqueueing per phase.
        for r in rows:
            if r["row"] == net and r.get("impl") == "xylem" and "forward_host_seconds" in r:
                per = 1e6 / r["steps"]
                parts = ", ".join(f"{k} {r[k + '_host_seconds'] * per:.0f}" for k in ("forward", "backward", "optimizer"))
                print(f"  xylem eager, {r['ranks']} rank(s): host us/step by phase: {parts}")
    print("all bars met" if ok else "some bars missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
