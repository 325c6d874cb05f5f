#!/usr/bin/env python3
"""Plots the benchmarks' JSON (bench/*.cpp --json FILE) as SVG bar charts.

    scripts/plot_benchmarks.py [JSON ...] [--out DIR]

Without JSON arguments it plots docs/bench/*.json into docs/plots/ (one
NAME.svg per NAME.json). Each chart shows xylem's figure as a ratio to the
bound or peer the benchmark measured in the same run (1.0 = equal), so runs
on different machines are never mixed in one bar.

Understood: xylem_bench_native, xylem_bench_eigen, xylem_bench_host_nn,
xylem_bench_opencl, and recorded figures ({"rows": [{"what", "low",
"high"}]}, for results kept from runs whose JSON is gone). Other files are
skipped with a message.

matplotlib comes from PyPI: when it is missing the script makes a virtual
environment (build/plot-venv, or $XYLEM_PLOT_VENV), installs it there and
runs itself again inside it.
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    env = Path(os.environ.get("XYLEM_PLOT_VENV", ROOT / "build" / "plot-venv"))
    python = env / "bin" / "python"
    if Path(sys.prefix).resolve() == env.resolve():  # already inside it
        sys.exit("plot_benchmarks: matplotlib did not install into " + str(env))
    if not python.exists():
        print(f"plot_benchmarks: making {env} with matplotlib", file=sys.stderr)
        venv.create(env, with_pip=True)
    if subprocess.run([str(python), "-c", "import matplotlib"], capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "matplotlib"], check=True)
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


# Each reader turns one benchmark's JSON into a Chart: bars of (label,
# value, low, high), low/high a spread or None. Against a peer (parity) a
# bar is green at 1 and above, orange below; against a bound (a share of
# copy bandwidth) all are blue, and a peer's own figures grey.
class Chart:
    def __init__(self, title, bars, unit, parity=True, peer_rows=(), recorded=False):
        self.title, self.bars, self.unit, self.parity, self.peer_rows = title, bars, unit, parity, set(peer_rows)
        self.recorded = recorded  # a bar is a range of results (drawn at its middle), not a median and its spread


def native_chart(d):
    bars = [(f"sigmoid f32 ({d['sigmoid_f32']['elements'] >> 20}M) / copy", d["sigmoid_f32"]["ratio"]),
            ("scalar std::exp loop / copy", d["exp_loop_f32"]["ratio"]),
            (f"gemm f32 {d['gemm_f32']['n']} / OpenBLAS", d["gemm_f32"]["ratio"]),
            (f"gemm f64 {d['gemm_f64']['n']} / OpenBLAS", d["gemm_f64"]["ratio"])] if "sigmoid_f32" in d else []
    note = (f"enqueue {d['enqueue']['enqueue_us_per_op']:.2f} us/op, "
            f"op + host read {d['round_trip']['relu_read_us']:.2f} us")
    return Chart(f"native ({d['hardware_threads']} threads): {note}", [(l, r, None, None) for l, r in bars],
                 "xylem / bound or peer, same run")


def eigen_chart(d):
    bars = [(r["op"], r["xylem_gbps"] / r["eigen_gbps"], None, None) for r in d["ops"]]
    return Chart(f"native ({d['threads']} threads) vs Eigen 3.4 on one thread, n = {d['n']}", bars,
                 "xylem / Eigen, same run")


def host_nn_chart(d):
    bars = [(f"{r['case']} {r['pass']}", r["onednn_gflops"] / r["im2col_gflops"], None, None) for r in d["conv2d_f32"]]
    return Chart("native conv2d f32: oneDNN engine vs im2col + OpenBLAS", bars, "oneDNN / im2col, same run")


def opencl_chart(d):
    bars = []
    for r in d["ops"]:
        spread = r.get("ratio_q3", 0) > 0
        bars.append((r["op"], r["ratio"], r["ratio_q1"] if spread else None, r["ratio_q3"] if spread else None))
    return Chart(f"OpenCL ({d['hardware']}) vs native, n = {d['n']} f32, {d['runs']} runs; "
                 "lines: the middle half of the per-run ratios", bars, "OpenCL / native, same run")


def recorded_chart(d):
    bars = [(r["what"], (r["low"] + r["high"]) / 2, r["low"], r["high"]) for r in d["rows"]]
    return Chart(d["title"], bars, d.get("unit", "ratio"), d.get("parity", True),
                 [r["what"] for r in d["rows"] if r.get("peer")], recorded=True)


def chart_of(d):
    kind = d.get("benchmark")
    if kind == "xylem_bench_native":
        return native_chart(d)
    if kind == "xylem_bench_eigen":
        return eigen_chart(d)
    if kind == "xylem_bench_host_nn":
        return host_nn_chart(d)
    if "rows" in d and "title" in d:
        return recorded_chart(d)
    if isinstance(d.get("ops"), list) and d["ops"] and "opencl" in d["ops"][0]:
        return opencl_chart(d)
    return None


def plot(chart, path):
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.hashsalt"] = "xylem"  # the same JSON gives the same file
    bars = chart.bars
    labels = [b[0] for b in bars]
    values = [b[1] for b in bars]
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.32 * len(bars)))

    def colour(label, value):
        if label in chart.peer_rows:
            return "#9a9a9a"
        if not chart.parity:
            return "#3d6fa8"
        return "#3a7d44" if value >= 1 else "#c0652f"

    ax.barh(range(len(bars)), values, color=[colour(l, v) for l, v in zip(labels, values)], height=0.6)
    for i, (_, v, low, high) in enumerate(bars):
        if low is not None and high > low:
            ax.plot([low, high], [i, i], color="black", linewidth=1.2)
            text = f"{low:.2f}-{high:.2f}" if chart.recorded else f"{v:.2f} (runs {low:.2f}-{high:.2f})"
        else:
            text = f"{v:.2f}"
        ax.text(max(v, high or v), i, "  " + text, va="center", fontsize=8)
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(bars)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(chart.unit)
    ax.set_xlim(0, max(max(values), max((b[3] or 0) for b in bars)) * 1.22)
    fig.suptitle(textwrap.fill(chart.title, 100), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description="Plot xylem benchmark JSON as SVG.")
    parser.add_argument("json", nargs="*", type=Path, help="benchmark JSON files (default: docs/bench/*.json)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "plots", help="output directory")
    args = parser.parse_args()
    ensure_matplotlib()
    files = args.json or sorted((ROOT / "docs" / "bench").glob("*.json"))
    args.out.mkdir(parents=True, exist_ok=True)
    for f in files:
        chart = chart_of(json.loads(f.read_text()))
        if chart is None or not chart.bars:
            print(f"{f}: not a benchmark this script knows, skipped", file=sys.stderr)
            continue
        target = args.out / (f.stem + ".svg")
        plot(chart, target)
        print(f"{f} -> {target}")


if __name__ == "__main__":
    main()
