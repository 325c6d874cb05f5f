#!/usr/bin/env python3
"""PyTorch's side of the two-GPU run (scripts/gpu_multi.sh), the rows
xylem_bench_multi_gpu prints, measured the same way:

  peer         one process: x.to('cuda:1') of a tensor on cuda:0 (--bytes,
               default 1 GiB), seconds per copy and GB/s.
  collectives  torchrun --nproc-per-node N: all_reduce, all_gather_into_tensor
               and reduce_scatter_tensor of f32 through torch.distributed's
               NCCL backend, --min-bytes to --max-bytes by 4x; bus bandwidth
               by nccl-tests' formula (bytes: all_gather's output,
               reduce_scatter's input; factor 2(n-1)/n for all_reduce,
               (n-1)/n for the other two).
  train        torchrun as above (or one plain process): --net fashion
               (scripts/torch_fashion_mnist.py's CNN) or alexnet
               (bench/torch_convnets.py's), --batch images per rank, SGD with
               momentum, DistributedDataParallel on more than one rank;
               samples/s over all ranks, then --check steps each followed by
               a comparison of every rank's parameters and buffers.
               Inputs are random, like xylem's.

One JSON line per row on rank 0's stdout (and appended to --json FILE).
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

here = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(here), str(here.parent / "scripts")]
from torch_convnets import alexnet  # noqa: E402
from torch_fashion_mnist import network as fashion_cnn  # noqa: E402


def emit(args, row):
    if int(os.environ.get("RANK", "0")) != 0:
        return
    line = json.dumps(row)
    print(line, flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(line + "\n")


def peer(args):
    if torch.cuda.device_count() < 2:
        print(json.dumps({"row": "peer_copy", "skipped": "fewer than two GPUs visible"}), flush=True)
        return
    x = torch.zeros(args.bytes // 4, device="cuda:0")
    times = []
    for r in range(args.reps + 1):
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        t0 = time.perf_counter()
        y = x.to("cuda:1")
        torch.cuda.synchronize(1)
        if r > 0:
            times.append(time.perf_counter() - t0)
        del y
    t = statistics.median(times)
    emit(args, {"row": "peer_copy", "impl": "torch", "bytes": args.bytes, "seconds": t, "gbps": args.bytes / t / 1e9,
                "peer_access": torch.cuda.can_device_access_peer(0, 1)})


def start():
    """This rank's device, after joining the group (torchrun's environment)."""
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("nccl", device_id=device)
    return rank, device


def slowest(seconds, device):
    t = torch.tensor([seconds], device=device, dtype=torch.float64)
    if dist.is_initialized():
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def collectives(args):
    _, device = start()
    n = dist.get_world_size()
    for op in args.ops.split(","):
        size = args.min_bytes
        while size <= args.max_bytes:
            count = size // 4
            if op == "all_reduce":
                t = torch.zeros(count, device=device)
                call = lambda: dist.all_reduce(t)  # noqa: E731
            elif op == "all_gather":
                t, out = torch.zeros(count // n, device=device), torch.empty(count // n * n, device=device)
                call = lambda: dist.all_gather_into_tensor(out, t)  # noqa: E731
            elif op == "reduce_scatter":
                t, out = torch.zeros(count // n * n, device=device), torch.empty(count // n, device=device)
                call = lambda: dist.reduce_scatter_tensor(out, t)  # noqa: E731
            else:
                sys.exit(f"--ops: all_reduce, all_gather or reduce_scatter, not {op}")
            inner = max(1, min(200, (5 << 30) // size))  # ~50 ms of calls at 100 GB/s, as xylem's side
            call()
            torch.cuda.synchronize(device)
            times = []
            for _ in range(args.reps):
                dist.barrier(device_ids=[device.index])
                torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                for _ in range(inner):
                    call()
                torch.cuda.synchronize(device)
                times.append(slowest((time.perf_counter() - t0) / inner, device))
            seconds = statistics.median(times)
            factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
            emit(args, {"row": op, "impl": "torch", "ranks": n, "transport": "nccl", "bytes": size, "seconds": seconds,
                        "busbw_gbps": size * factor / seconds / 1e9})
            del t
            size *= 4
    dist.destroy_process_group()


def train(args):
    rank, device = start()
    n = dist.get_world_size() if dist.is_initialized() else 1
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    model = (alexnet() if args.net == "alexnet" else fashion_cnn()).to(device)
    classes, shape = (1000, (3, 224, 224)) if args.net == "alexnet" else (10, (1, 28, 28))
    if n > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    g = torch.Generator(device=device).manual_seed(100 + rank)
    x = torch.rand((args.batch, *shape), device=device, generator=g) * 2 - 1
    y = (torch.arange(args.batch, device=device) * 7 + rank) % classes
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        sgd.step()
        sgd.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize(device)
    if n > 1:
        dist.barrier(device_ids=[device.index])
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize(device)
    seconds = slowest(time.perf_counter() - t0, device)
    synced = 0
    for _ in range(args.check):
        step()
        # Every rank's parameters, compared with rank 0's. Not the buffers:
        # DDP copies rank 0's (batch-norm running statistics) to the others
        # at the start of each forward, so after a step they differ by design.
        flat = torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])
        same = torch.ones(1, device=device)
        if n > 1:
            ref = flat.clone()
            dist.broadcast(ref, 0)
            same = torch.tensor([float(torch.equal(ref, flat))], device=device)
            dist.all_reduce(same, op=dist.ReduceOp.MIN)
        synced += int(same.item())
    emit(args, {"row": f"train_{args.net}", "impl": "torch", "ranks": n, "batch_per_rank": args.batch,
                "steps": args.steps, "seconds": seconds, "samples_per_s": args.batch * n * args.steps / seconds,
                "checked_steps": args.check, "in_sync_steps": synced})
    if dist.is_initialized():
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["peer", "collectives", "train"])
    p.add_argument("--bytes", type=int, default=1 << 30)
    p.add_argument("--min-bytes", type=int, default=1024)
    p.add_argument("--max-bytes", type=int, default=4 << 30)
    p.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter")
    p.add_argument("--net", choices=["fashion", "alexnet"], default="fashion")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--check", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args()
    {"peer": peer, "collectives": collectives, "train": train}[args.mode](args)


if __name__ == "__main__":
    main()
