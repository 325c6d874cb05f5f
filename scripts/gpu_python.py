#!/usr/bin/env python3
"""DLPack between xylem on CUDA and PyTorch, CuPy and JAX (the GPU machine's
check; scripts/gpu.sh python runs it). Each library round trip must share
memory (the data pointers agree) and a write on one side must be seen on the
other; then the stream check: a PyTorch stream writes x with a long chain of
kernels, xylem computes y = exp(x) after from_dlpack (so xylem's stream waits
for PyTorch's), and PyTorch reads y on its stream, with no host
synchronisation in between. Then a small CNN trained a few steps through
xylem.layers, losses and optim on CUDA and on native from one seed: the loss
falls, the same on both. Prints one line per check; exits 1 if any fails.
"""
import os
import sys

import numpy as np

import xylem

failed = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failed.append(name)


def torch_checks():
    import torch
    x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    t = xylem.from_dlpack(x)
    check("torch -> xylem device", t.__dlpack_device__() == (2, 0), str(t.__dlpack_device__()))
    back = torch.from_dlpack(t)
    check("torch -> xylem -> torch shares memory", back.data_ptr() == x.data_ptr(),
          f"{back.data_ptr():#x} {x.data_ptr():#x}")
    check("xylem reads torch's data", xylem.sum(t).item() == 66)
    zeros = xylem.from_dlpack(torch.zeros(3, 4, device="cuda"))
    xylem.exp(zeros, out=t)
    check("torch sees xylem's write", bool(torch.all(torch.from_dlpack(t) == 1)))
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8, torch.bool):
        a = torch.ones(5, 3, dtype=dtype, device="cuda")[:, ::2]
        b = torch.from_dlpack(xylem.from_dlpack(a))
        check(f"torch {dtype} round trip", b.data_ptr() == a.data_ptr() and b.stride() == a.stride())
    host = torch.arange(4.0)
    check("torch cpu -> xylem -> numpy shares memory",
          np.from_dlpack(xylem.from_dlpack(host)).ctypes.data == host.data_ptr())

    # The stream check: no torch.cuda.synchronize between the three steps.
    stream = torch.cuda.Stream()
    n = 4096
    with torch.cuda.stream(stream):
        w = torch.eye(n, device="cuda")
        a = torch.full((n, n), 0.5, device="cuda")
        for _ in range(40):  # ~tens of ms of queued gemms writing a (values stay 0.5)
            a = a @ w
        x = a[:4].clone()
        t = xylem.from_dlpack(x)  # xylem's stream waits for `stream`
        y = xylem.exp(t)
        r = torch.from_dlpack(y)  # `stream` waits for xylem's exp
        got = r.clone()
    torch.cuda.synchronize()
    check("stream order torch -> xylem -> torch, no host sync",
          bool(torch.allclose(got, torch.full_like(got, float(np.exp(0.5))))),
          f"{got[0, :3].tolist()}")


def cupy_checks():
    import cupy as cp
    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    t = xylem.from_dlpack(x)
    back = cp.from_dlpack(t)
    check("cupy -> xylem -> cupy shares memory", back.data.ptr == x.data.ptr, f"{back.data.ptr:#x} {x.data.ptr:#x}")
    x[0, 0] = 100
    check("xylem reads cupy's write", xylem.sum(t).item() == 166)
    xylem.exp(xylem.from_dlpack(cp.zeros((3, 4), cp.float32)), out=t)
    check("cupy sees xylem's write", bool((cp.from_dlpack(t) == 1).all()))


def jax_checks():
    import jax
    import jax.numpy as jnp
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    t = xylem.from_dlpack(x)
    check("jax -> xylem values", np.array_equal(np.asarray(xylem.contiguous(t, backend=xylem.Backend.native())),
                                               np.arange(12).reshape(3, 4)))
    y = xylem.exp(t)
    j = jax.dlpack.from_dlpack(y) if not hasattr(jnp, "from_dlpack") else jnp.from_dlpack(y)
    ptr = j.unsafe_buffer_pointer()
    check("xylem -> jax shares memory", ptr == int(cuda_address(y)), f"{ptr:#x}")
    check("jax reads xylem's result", bool(jnp.allclose(j, jnp.exp(x))))
    # JAX arrays are immutable: xylem copies them only if the capsule is flagged read-only.
    print(f"     jax -> xylem pointer {cuda_address(t):#x}, jax's {x.unsafe_buffer_pointer():#x}")


def training_checks():
    """The Python layers, losses and optimizers on CUDA against native: same seed, same losses."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    import tiny_cnn
    x, t = tiny_cnn.task(np.random.default_rng(0))
    runs = {name: tiny_cnn.train(backend, x, t, 8, lambda model: xylem.optim.SGD(model, lr=0.1, momentum=0.9))
            for name, backend in (("cuda", xylem.Backend.open("cuda")), ("native", xylem.Backend.native()))}
    cuda, native = runs["cuda"], runs["native"]
    check("layers on cuda: the loss falls", cuda[-1] < 0.5 * cuda[0], f"{cuda[0]:.4f} -> {cuda[-1]:.4f}")
    check("layers on cuda match native", np.allclose(cuda, native, rtol=1e-3, atol=1e-4),
          f"max difference {np.max(np.abs(np.subtract(cuda, native))):.2e}")


def cuda_address(t):
    """The CUDA address of a xylem tensor, read from its DLPack capsule by CuPy."""
    import cupy as cp
    return cp.from_dlpack(t).data.ptr


def main():
    cuda = xylem.Backend.open("cuda")
    print(f"xylem on {cuda.id}: {cuda.hardware.name}")
    with cuda:
        for name, fn in (("torch", torch_checks), ("cupy", cupy_checks), ("jax", jax_checks),
                         ("layers", training_checks)):
            try:
                fn()
            except ImportError as e:
                print(f"skip {name}: {e}")
            except Exception as e:  # noqa: BLE001 - report and go on to the next library
                check(f"{name} raised", False, f"{type(e).__name__}: {e}")
    print(f"{len(failed)} failed" + (": " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
