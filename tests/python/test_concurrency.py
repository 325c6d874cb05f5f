"""Several Python threads call xylem at once (the GIL is released while xylem
waits or works); futures are awaitable from asyncio."""
import asyncio
import threading

import numpy as np

import xylem
from conftest import check, put


def test_threads(backend, rng):
    inputs = [rng.normal(size=(64, 64)) for _ in range(8)]
    results, errors = [None] * 8, []

    def work(i):
        try:
            with backend:
                t = put(inputs[i], xylem.f32, backend)
                for _ in range(10):
                    t = xylem.nn.tanh(t @ t.T * 0.01)
                results[i] = xylem.sum(t, 1).numpy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, x in enumerate(inputs):
        expected = x
        for _ in range(10):
            expected = np.tanh(expected @ expected.T * 0.01)
        np.testing.assert_allclose(results[i], expected.sum(axis=1), rtol=1e-3, atol=1e-4)


def test_shared_tensor_from_threads(backend, rng):
    x = rng.normal(size=1000)
    t = put(x, xylem.f32, backend)
    sums = []

    def read():
        sums.append(xylem.blas.asum(t, backend=backend).result())

    threads = [threading.Thread(target=read) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    np.testing.assert_allclose(sums, [np.abs(x).sum()] * 6, rtol=1e-4)


def test_gil_released_while_waiting(backend):
    # A long reduction on one thread while another thread runs Python: the
    # counter advances, so the waiting call does not hold the GIL.
    big = xylem.uniform([4_000_000], backend=backend)
    ticks, done = [0], threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    for _ in range(5):
        xylem.sum(xylem.exp(big)).numpy()
    done.set()
    spinner.join()
    assert ticks[0] > 0


def test_await_future(backend, rng):
    x = rng.normal(size=100)
    t = put(x, xylem.f64 if backend.hardware.caps.fp64 else xylem.f32, backend)

    async def main():
        total, values = await asyncio.gather(xylem.blas.asum(t), t.read())
        return total, values

    total, values = asyncio.run(main())
    check(total, np.abs(x).sum(), t.dtype)
    check(values, x, t.dtype)


def test_await_error(backend):
    async def main():
        return await xylem.blas.iamax(xylem.zeros([0], backend=backend))

    try:
        asyncio.run(main())
    except xylem.InvalidArgument:
        return
    raise AssertionError("expected InvalidArgument")


def test_future_done(backend):
    f = xylem.blas.nrm2(xylem.ones([4], backend=backend))
    assert f.result() == 2.0 and f.done()
