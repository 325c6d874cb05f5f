"""xylem.optim's fused updates against PyTorch's rules written in NumPy."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

optim = xylem.optim


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd(backend, rng, nesterov):
    for dtype in float_dtypes(backend):
        p, buf = rng.normal(size=20), None
        opts = optim.SgdOptions(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
        pt, bt = put(p, dtype, backend), xylem.zeros([20], dtype, backend=backend)
        for step in range(3):
            g = rng.normal(size=20)
            optim.sgd_step(pt, put(g, dtype, backend), bt, opts, step == 0)
            d = g + 0.01 * p
            buf = d if buf is None else 0.9 * buf + d
            p = p - 0.1 * (d + 0.9 * buf if nesterov else buf)
        check(pt, p, dtype)
        check(bt, buf, dtype)


def test_sgd_without_momentum(backend, rng):
    p, g = rng.normal(size=8), rng.normal(size=8)
    pt = put(p, xylem.f32, backend)
    optim.sgd_step(pt, put(g, xylem.f32, backend), None, optim.SgdOptions(lr=0.5))
    check(pt, p - 0.5 * g, xylem.f32)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam(backend, rng, decoupled):
    for dtype in float_dtypes(backend):
        p, m, v = rng.normal(size=16), np.zeros(16), np.zeros(16)
        opts = optim.AdamOptions(lr=0.01, weight_decay=0.1, decoupled=decoupled)
        pt = put(p, dtype, backend)
        mt, vt = xylem.zeros([16], dtype, backend=backend), xylem.zeros([16], dtype, backend=backend)
        for t in range(1, 4):
            g = rng.normal(size=16)
            optim.adam_step(pt, put(g, dtype, backend), mt, vt, opts, t)
            if decoupled:
                p = p * (1 - 0.01 * 0.1)
            else:
                g = g + 0.1 * p
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            p = p - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        check(pt, p, dtype)
        check(mt, m, dtype)
        check(vt, v, dtype)


def test_bad_options():
    with pytest.raises(xylem.InvalidArgument):
        optim.AdamOptions(beta1=1.5)
