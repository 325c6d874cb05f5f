#!/usr/bin/env python3
"""Host FFTs: xylem.fft on the native backend (FFTW) against numpy.fft.

Rows, each in both libraries on the same array, median of --rounds rounds
after one warm-up call (so xylem's plan is made before timing):
  c64 1-D 2^20 points, c64 1024 x 1024-point batch, c64 4096 x 97 points
  (a prime length), f32 rfft 1024 x 1024, c128 fft2 1024 x 1024.
The ratio is NumPy's time over ours (above 1: xylem is faster). NumPy 2
keeps complex64 in complex64; its pocketfft runs on one thread, and so
does xylem's FFTW plan. --json FILE writes the rows.
"""
import argparse
import json
import statistics
import time

import numpy as np

import xylem


def median_time(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    b = xylem.Backend.native()

    def cplx(shape, dtype):
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)

    cases = [
        ("fft_c64_2p20", cplx((1 << 20,), np.complex64), xylem.fft.fft, np.fft.fft),
        ("fft_c64_1024x1024", cplx((1024, 1024), np.complex64), xylem.fft.fft, np.fft.fft),
        ("fft_c64_4096x97", cplx((4096, 97), np.complex64), xylem.fft.fft, np.fft.fft),
        ("rfft_f32_1024x1024", rng.uniform(-1, 1, (1024, 1024)).astype(np.float32), xylem.fft.rfft, np.fft.rfft),
        ("fft2_c128_1024x1024", cplx((1024, 1024), np.complex128), xylem.fft.fft2, np.fft.fft2),
    ]
    rows = {}
    print(f"{'host fft':24} {'xylem ms':>10} {'numpy ms':>10} {'ratio':>7}")
    for key, array, ours, theirs in cases:
        x = xylem.asarray(array)
        t_ours = median_time(lambda: (ours(x, backend=b), b.synchronize()), a.rounds)
        t_numpy = median_time(lambda: theirs(array), a.rounds)
        rows[key] = {"xylem_ms": t_ours * 1e3, "numpy_ms": t_numpy * 1e3, "ratio": t_numpy / t_ours}
        print(f"{key:24} {t_ours * 1e3:10.3f} {t_numpy * 1e3:10.3f} {t_numpy / t_ours:7.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
