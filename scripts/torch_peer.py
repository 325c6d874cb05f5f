#!/usr/bin/env python3
"""PyTorch's figures for the keys xylem_bench_cuda measures, on the same GPU
in the same call, so the benchmark can print ratios. Writes a flat JSON.

  python scripts/torch_peer.py [--json FILE] [--reps N] [--quick] [--only tensor-cores|rnn]

--only rnn measures the LSTM rows alone (xylem_bench_cuda --only rnn is their
peer). --only tensor-cores measures the gemm and conv2d rows alone: scripts/gpu.sh
alternates such runs with xylem's, so that both see the same clocks and
temperature (these rows are power-bound: their rates move by 5-10% with the
card's recent load, more than the difference being measured).

Device times are medians of CUDA-event timings; host times (small op, alloc)
are wall-clock loops, as the xylem benchmark measures its own.
"""
import argparse
import json
import statistics
import time

import torch


def cuda_time(fn, reps, iters):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(times)


def wall_time(fn, reps, iters, sync=True):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t0) / iters)
        if sync:
            torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["tensor-cores", "rnn"])
    a = ap.parse_args()
    dev = torch.device("cuda:0")
    n = (1 << 22) if a.quick else (1 << 28)
    nbytes = n * 4
    r = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    everything = a.only is None
    if a.only == "rnn":
        rnn(r, a, dev)
    else:
        if everything:
            bandwidth(r, a, dev, n, nbytes)
        gemm(r, a, dev)
        if everything:
            nn(r, a, dev)
        conv(r, a, dev)
        if everything:
            host(r, a, dev, n, nbytes)

    text = json.dumps(r, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


def bandwidth(r, a, dev, n, nbytes):
    x = torch.rand(n, device=dev) * 8 - 4
    y = torch.empty_like(x)
    r["copy_gbs"] = 2 * nbytes / cuda_time(lambda: y.copy_(x), a.reps, 10) / 1e9
    r["sigmoid_gbs"] = 2 * nbytes / cuda_time(lambda: torch.sigmoid(x, out=y), a.reps, 10) / 1e9
    # xylem's fusion row, y = relu(x*a + b)*c, eagerly: four kernels and
    # three temporaries; GB/s counts the 8 bytes an element the chain needs.
    av, bv, cv = (torch.tensor(v, device=dev) for v in (1.5, -0.25, 2.0))
    r["fusion_fused_gbs"] = 2 * nbytes / cuda_time(lambda: torch.mul(torch.relu(x * av + bv), cv, out=y), a.reps, 3) / 1e9
    del x, y
    # xylem's epilogue rows: relu(linear(x, w, bias)), eagerly (PyTorch's
    # linear puts the bias in cuBLASLt's epilogue; the ReLU is a kernel).
    m = 1024 if a.quick else 16384
    for key, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        xe = torch.rand(m, 1024, device=dev, dtype=dtype) * 2 - 1
        we = (torch.rand(4096, 1024, device=dev, dtype=dtype) - 0.5) * 0.1
        be = torch.rand(4096, device=dev, dtype=dtype) - 0.5
        r[f"epilogue_{key}_auto_ms"] = cuda_time(lambda: torch.relu(torch.nn.functional.linear(xe, we, be)), a.reps, 4) * 1e3
        del xe, we, be
    # xylem's conv epilogue rows: relu(conv2d(x, w, bias)), eagerly (cuDNN's
    # convolution, then the bias add and the ReLU as kernels).
    batch = 8 if a.quick else 64
    for key, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        xc = torch.rand(batch, 64, 56, 56, device=dev, dtype=dtype) * 2 - 1
        wc = (torch.rand(64, 64, 3, 3, device=dev, dtype=dtype) - 0.5) * 0.1
        bc = torch.rand(64, device=dev, dtype=dtype) - 0.5
        r[f"conv_epilogue_{key}_auto_ms"] = cuda_time(
            lambda: torch.relu(torch.nn.functional.conv2d(xc, wc, bc, padding=1)), a.reps, 4) * 1e3
        del xc, wc, bc
    # A convolution's bias over an odd H*W, as xylem_bench_cuda's rows.
    batch = 8 if a.quick else 128
    for key, channels, side, iters in (("bias_add_55_gbs", 96, 55, 20), ("bias_add_13_gbs", 256, 13, 200)):
        x = torch.rand(batch, channels, side, side, device=dev) * 2 - 1
        bias = torch.rand(1, channels, 1, 1, device=dev) * 2 - 1
        y = torch.empty_like(x)
        r[key] = 2 * x.numel() * 4 / cuda_time(lambda: torch.add(x, bias, out=y), a.reps, iters) / 1e9
        if side == 55:  # xylem's fused bias + relu row: eagerly, two kernels
            r["bias_relu_55_gbs"] = 2 * x.numel() * 4 / cuda_time(
                lambda: torch.add(x, bias, out=y).relu_(), a.reps, iters) / 1e9
        del x, bias, y



def gemm(r, a, dev):
    m = 1024 if a.quick else 8192
    A = torch.rand(m, m, device=dev) * 2 - 1
    B = torch.rand(m, m, device=dev) * 2 - 1
    C = torch.empty(m, m, device=dev)
    flop = 2.0 * m ** 3
    torch.backends.cuda.matmul.allow_tf32 = False
    r["gemm_fp32_tflops"] = flop / cuda_time(lambda: torch.mm(A, B, out=C), a.reps, 5) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    r["gemm_tf32_tflops"] = flop / cuda_time(lambda: torch.mm(A, B, out=C), a.reps, 5) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    del A, B, C

    # f16 and bf16 inputs and output. First with PyTorch's defaults (cuBLAS
    # may reduce in 16 bits): the figure commonly quoted, reported
    # beside ours. Then with f32 accumulation, as xylem's gemm does: the
    # like-for-like ratio.
    for key, dtype in (("gemm_fp16_default_tflops", torch.float16), ("gemm_bf16_default_tflops", torch.bfloat16)):
        A = (torch.rand(m, m, device=dev) * 2 - 1).to(dtype)
        B = (torch.rand(m, m, device=dev) * 2 - 1).to(dtype)
        C = torch.empty(m, m, device=dev, dtype=dtype)
        r[key] = flop / cuda_time(lambda: torch.mm(A, B, out=C), a.reps, 5) / 1e12
        del A, B, C
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(torch.backends.cuda.matmul, flag):
            setattr(torch.backends.cuda.matmul, flag, False)
    for key, dtype in (("gemm_fp16_tflops", torch.float16), ("gemm_bf16_tflops", torch.bfloat16)):
        A = (torch.rand(m, m, device=dev) * 2 - 1).to(dtype)
        B = (torch.rand(m, m, device=dev) * 2 - 1).to(dtype)
        C = torch.empty(m, m, device=dev, dtype=dtype)
        r[key] = flop / cuda_time(lambda: torch.mm(A, B, out=C), a.reps, 5) / 1e12
        del A, B, C



def nn(r, a, dev):
    # Softmax and layer_norm over the rows of an 8192 x 8192 f32
    # matrix (read once, written once), and conv2d 64x64x56x56 3x3 pad 1
    # with PyTorch's defaults (cuDNN, TF32 allowed for convolutions).
    rows = 1024 if a.quick else 8192
    X = torch.rand(rows, rows, device=dev) * 8 - 4
    mbytes = 2 * X.numel() * 4
    r["softmax_gbs"] = mbytes / cuda_time(lambda: torch.softmax(X, 1), a.reps, 10) / 1e9
    ln = torch.nn.functional.layer_norm
    w = torch.ones(rows, device=dev)
    b = torch.zeros(rows, device=dev)
    r["layer_norm_gbs"] = mbytes / cuda_time(lambda: ln(X, (rows,), w, b, 1e-5), a.reps, 10) / 1e9
    del X
    # Embedding: 64 x 512 indices into a [50000, 1024] f32 table.
    seq = 64 if a.quick else 512
    table = torch.rand(50000, 1024, device=dev)
    ids = torch.randint(0, 50000, (64, seq), device=dev)
    t = cuda_time(lambda: torch.nn.functional.embedding(ids, table), a.reps, 10)
    r["embedding_ms"] = t * 1e3
    r["embedding_gbs"] = 2 * ids.numel() * 1024 * 4 / t / 1e9
    del table
    # One c64 FFT of 2^24 points (cuFFT underneath).
    n = (1 << 20) if a.quick else (1 << 24)
    Z = torch.randn(n, dtype=torch.complex64, device=dev)
    r["fft_c64_2p24_ms"] = cuda_time(lambda: torch.fft.fft(Z), a.reps, 10) * 1e3
    del Z
    attention(r, a, dev)
    rnn(r, a, dev)


def rnn(r, a, dev):
    # nn.LSTM f32, 2 layers, hidden 1024, seq 100, batch 64 (cuDNN's RNN,
    # with PyTorch's defaults: TF32 allowed in cuDNN), forward and
    # forward+backward, as xylem's lstm rows.
    t = 20 if a.quick else 100
    lstm = torch.nn.LSTM(1024, 1024, 2).to(dev)
    x = torch.rand(t, 64, 1024, device=dev) * 2 - 1
    dy = torch.rand(t, 64, 1024, device=dev) * 2 - 1
    with torch.no_grad():
        r["lstm_fwd_ms"] = cuda_time(lambda: lstm(x), a.reps, 3) * 1e3
    xg = x.detach().requires_grad_()

    def both():
        lstm(xg)[0].backward(dy)

    r["lstm_fwdbwd_ms"] = cuda_time(both, a.reps, 3) * 1e3
    del lstm, x, dy, xg


def attention(r, a, dev):
    # scaled_dot_product_attention, bf16 [8, 16, 4096, 128] (the backend PyTorch
    # picks: cuDNN's fused attention on the H100, twice its flash kernel), the
    # FLOP counts of xylem's rows: forward 4*B*H*S*S*D (half when causal),
    # forward+backward 3.5 times that.
    s = 1024 if a.quick else 4096
    q, k, v, dout = (torch.rand(8, 16, s, 128, device=dev, dtype=torch.bfloat16) * 2 - 1 for _ in range(4))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal, tag in ((False, "attention"), (True, "attention_causal")):
        flop = 4.0 * 8 * 16 * s * s * 128 * (0.5 if causal else 1.0)
        r[tag + "_fwd_tflops"] = flop / cuda_time(lambda: sdpa(q, k, v, is_causal=causal), a.reps, 5) / 1e12
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))

        def both():
            sdpa(qg, kg, vg, is_causal=causal).backward(dout)

        r[tag + "_fwdbwd_tflops"] = 3.5 * flop / cuda_time(both, a.reps, 5) / 1e12


def conv(r, a, dev):
    batch = 8 if a.quick else 64
    xc = torch.rand(batch, 64, 56, 56, device=dev) * 2 - 1
    wc = torch.rand(64, 64, 3, 3, device=dev) * 2 - 1
    conv_flop = 2.0 * batch * 64 * 56 * 56 * 64 * 9
    conv = torch.nn.functional.conv2d
    # PyTorch's defaults (cudnn.benchmark off: cuDNN's heuristics pick the
    # algorithm, as xylem's do), then with autotuning for context.
    r["conv2d_tflops"] = conv_flop / cuda_time(lambda: conv(xc, wc, padding=1), a.reps, 10) / 1e12
    torch.backends.cudnn.allow_tf32 = False
    r["conv2d_fp32_tflops"] = conv_flop / cuda_time(lambda: conv(xc, wc, padding=1), a.reps, 10) / 1e12
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    r["conv2d_autotuned_tflops"] = conv_flop / cuda_time(lambda: conv(xc, wc, padding=1), a.reps, 10) / 1e12
    torch.backends.cudnn.benchmark = False
    del xc, wc


def host(r, a, dev, n, nbytes):
    xs = torch.rand(1024, device=dev)
    ys = torch.empty_like(xs)
    r["small_op_us"] = wall_time(lambda: torch.sigmoid(xs, out=ys), a.reps, 2000 if a.quick else 20000) * 1e6
    r["alloc_free_us"] = wall_time(lambda: torch.empty(1 << 18, device=dev), a.reps, 100000, sync=False) * 1e6

    d = torch.empty(n, device=dev)
    pinned = torch.ones(n, pin_memory=True)
    pageable = torch.ones(n)

    def h2d(src):
        d.copy_(src, non_blocking=True)
        torch.cuda.synchronize()

    def d2h():
        pageable.copy_(d)
        torch.cuda.synchronize()

    r["h2d_pinned_gbs"] = nbytes / wall_time(lambda: h2d(pinned), a.reps, 3) / 1e9
    r["h2d_pageable_gbs"] = nbytes / wall_time(lambda: h2d(pageable), a.reps, 3) / 1e9
    r["d2h_pageable_gbs"] = nbytes / wall_time(d2h, a.reps, 3) / 1e9


if __name__ == "__main__":
    main()
