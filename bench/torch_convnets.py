#!/usr/bin/env python3
"""PyTorch's side of xylem_bench_convnets: the same three networks (AlexNet,
Overfeat fast, VGG-A) as flat nn.Sequentials in plain PyTorch, layer for
layer as xylem::models builds them, timed the same way, with JSON lines of
the same schema (scripts/convnets_compare.py reads both).

  python bench/torch_convnets.py [--device cuda|cpu] [--batch N] [--dtype f32|tf32|bf16]
                                 [--nets alexnet,vgg_a] [--reps N] [--warmup N] [--json FILE]

Training mode (dropout on); forward, and forward plus backward from a fixed
output gradient, the input's gradient included (xylem's Sequential.backward
always computes it). Medians over --reps runs after --warmup runs: CUDA
events around each run on the GPU, the wall clock on the CPU. cudnn.benchmark
is on. f32 turns TF32 off for matmuls and cuDNN, tf32 turns it on for both
(CUDA only), bf16 runs the f32 model under torch.autocast(bfloat16).
Peak memory: torch.cuda.max_memory_allocated over the forward+backward runs
(none on the CPU).
"""
import argparse
import json
import statistics
import sys
import time

import torch
from torch import nn

# name -> (builder, input channels, height, width, the benchmark's batch)
NETS = {}


def net(name, shape, batch):
    def register(build):
        NETS[name] = (build, *shape, batch)
        return build

    return register


@net("alexnet", (3, 224, 224), 128)
def alexnet():
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(384, 256, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(256, 256, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, 1000))


@net("overfeat_fast", (3, 231, 231), 128)
def overfeat_fast():
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, 4), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(96, 256, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(256, 512, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(512, 1024, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(1024, 1024, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(1024 * 6 * 6, 3072), nn.ReLU(),
        nn.Linear(3072, 4096), nn.ReLU(),
        nn.Linear(4096, 1000))


@net("vgg_a", (3, 224, 224), 64)
def vgg_a():
    layers, channels = [], 3
    for out in [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]:
        if out == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, out, 3, 1, 1), nn.ReLU()]
            channels = out
    return nn.Sequential(
        *layers, nn.Flatten(),
        nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 1000))


def median_ms(fn, a, cuda):
    """Milliseconds per run of fn: warm-up runs, then the median of reps."""
    for _ in range(a.warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(a.reps):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def print_layers(name, model, x, a, cuda, autocast):
    """Each layer alone on the input the layers before it give: its forward,
    and its backward (the input's gradient and the weights'), as xylem's
    --layers on prints them."""
    print(f"\n{name}, per layer (ms, medians of {a.reps})\n{'#':<4} {'layer':<50} {'forward':>10} {'backward':>10}")
    inp = x.detach()
    for i, layer in enumerate(model):
        src = inp.detach().requires_grad_(True)
        with autocast:
            out = layer(src)
        dy = torch.empty_like(out).uniform_(-1, 1)

        def forward():
            with autocast:
                layer(src)

        fwd = median_ms(forward, a, cuda)
        times = []
        for r in range(a.warmup + a.reps):
            with autocast:
                y = layer(src)
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            y.backward(dy)
            if cuda:
                torch.cuda.synchronize()
            if r >= a.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
        layer.zero_grad(set_to_none=True)
        print(f"{i:<4} {str(layer)[:50]:<50} {fwd:10.3f} {statistics.median(times):10.3f}")
        inp = out.detach()


def measure(name, a, dev):
    build, c, h, w, default_batch = NETS[name]
    batch = a.batch or default_batch
    cuda = dev.type == "cuda"
    print(f"{name}, batch {batch}: building", file=sys.stderr, flush=True)
    torch.manual_seed(1)
    model = build().to(dev).train()
    row = {"framework": "pytorch", "net": name, "backend": str(dev),
           "device": torch.cuda.get_device_name(dev) if cuda else "cpu", "dtype": a.dtype,
           "batch": batch, "reps": a.reps, "params": sum(p.numel() for p in model.parameters())}
    x = torch.empty(batch, c, h, w, device=dev).uniform_(-1, 1).requires_grad_(True)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.dtype == "bf16")
    with autocast:
        dy = torch.empty_like(model(x)).uniform_(-1, 1)

    def forward():
        with autocast:
            model(x)

    def step():
        model.zero_grad(set_to_none=True)
        x.grad = None
        with autocast:
            y = model(x)
        y.backward(dy)

    print(f"{name}: forward", file=sys.stderr, flush=True)
    row["fwd_ms"] = median_ms(forward, a, cuda)
    print(f"{name}: forward + backward", file=sys.stderr, flush=True)
    step()
    model.zero_grad(set_to_none=True)
    x.grad = None
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(dev)
    row["fwd_bwd_ms"] = median_ms(step, a, cuda)
    if cuda:
        row["peak_bytes"] = torch.cuda.max_memory_allocated(dev)
    if a.layers:
        print_layers(name, model, x, a, cuda, autocast)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=0, help="0: each network's benchmark batch")
    ap.add_argument("--dtype", choices=["f32", "tf32", "bf16"], default="f32")
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--layers", action="store_true", help="each layer's forward and backward too")
    ap.add_argument("--json")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if a.dtype == "tf32" and dev.type != "cuda":
        sys.exit("--dtype tf32: TF32 is a CUDA switch")
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = a.dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = a.dtype == "tf32"

    rows = []
    for name in a.nets.split(","):
        try:
            rows.append(measure(name, a, dev))
        except torch.cuda.OutOfMemoryError as e:
            rows.append({"framework": "pytorch", "net": name, "backend": str(dev), "dtype": a.dtype,
                         "batch": a.batch or NETS[name][4], "reps": a.reps, "error": f"out_of_memory: {e}"})
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    print(f"\nPyTorch {torch.__version__} {rows[0]['device'] if rows else dev}, {a.dtype}, "
          f"medians of {a.reps} runs after {a.warmup} warm-up")
    print(f"{'network':<14} {'batch':>6} {'forward ms':>12} {'fwd+bwd ms':>14} {'peak MiB':>12}")
    for r in rows:
        if "error" in r:
            print(f"{r['net']:<14} {r['batch']:>6}  not run: {r['error']}")
        else:
            peak = f"{r['peak_bytes'] / 2**20:12.1f}" if "peak_bytes" in r else f"{'-':>12}"
            print(f"{r['net']:<14} {r['batch']:>6} {r['fwd_ms']:12.2f} {r['fwd_bwd_ms']:14.2f} {peak}")
    lines = [json.dumps(r) for r in rows]
    print("\n".join(lines))
    if a.json:
        with open(a.json, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
