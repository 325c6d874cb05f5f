"""xylem.optim's SGD, Adam and AdamW objects over layers' parameters,
against PyTorch's update rules written in NumPy."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put
from test_layers import host

layers, optim = xylem.layers, xylem.optim


def gradients(model, backend, rng, dtype):
    """Fills every parameter's grad from one forward and backward; returns them."""
    y = model(put(rng.normal(size=(3, 4)), dtype, backend))
    model.backward(put(rng.normal(size=y.shape), dtype, backend))
    return [host(p.grad) for p in model.parameters()]


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd(backend, rng, nesterov):
    for dtype in float_dtypes(backend):
        model = layers.Linear(4, 2, dtype=dtype, generator=xylem.Generator(1))
        opt = optim.SGD(model, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=nesterov)
        assert opt.options.nesterov == nesterov and opt.momentum_buffer(0) is None
        params = [host(p.value) for p in model.parameters()]
        bufs = [None] * len(params)
        for _ in range(3):
            opt.zero_grad()
            for i, g in enumerate(gradients(model, backend, rng, dtype)):
                d = g + 0.01 * params[i]
                bufs[i] = d if bufs[i] is None else 0.9 * bufs[i] + d
                params[i] = params[i] - 0.1 * (d + 0.9 * bufs[i] if nesterov else bufs[i])
            opt.step()
        for i, p in enumerate(model.parameters()):
            check(p.value, params[i], dtype)
            check(opt.momentum_buffer(i), bufs[i], dtype)


@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam(backend, rng, kind):
    for dtype in float_dtypes(backend):
        model = layers.Linear(4, 2, dtype=dtype, generator=xylem.Generator(2))
        opt = getattr(optim, kind)(model.parameters(), lr=0.01, weight_decay=0.1)
        decoupled = kind == "AdamW"
        assert opt.options.decoupled == decoupled
        params = [host(p.value) for p in model.parameters()]
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        for t in range(1, 4):
            opt.zero_grad()
            for i, g in enumerate(gradients(model, backend, rng, dtype)):
                if decoupled:
                    params[i] = params[i] * (1 - 0.01 * 0.1)
                else:
                    g = g + 0.1 * params[i]
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                params[i] = params[i] - 0.01 * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
            opt.step()
        for i, p in enumerate(model.parameters()):
            check(p.value, params[i], dtype)
            check(opt.exp_avg(i), m[i], dtype)
            check(opt.exp_avg_sq(i), v[i], dtype)
            assert opt.steps(i) == 3


def test_parameters_without_grad_are_skipped(backend):
    model = layers.Linear(2, 2, generator=xylem.Generator(3))
    opt = optim.SGD(model, lr=0.5)
    before = [host(p.value) for p in model.parameters()]
    opt.step()
    for p, values in zip(model.parameters(), before):
        np.testing.assert_array_equal(host(p.value), values)
    assert opt.lr == 0.5
    opt.lr = 0.25
    assert opt.lr == 0.25 and len(opt.parameters) == 2


def test_bad_gradient_changes_nothing(backend, rng):
    model = layers.Linear(4, 2, generator=xylem.Generator(4))
    opt = optim.Adam(model, lr=0.1)
    gradients(model, backend, rng, xylem.f32)
    model.bias.grad = put(np.ones(5), xylem.f32, backend)
    before = [host(p.value) for p in model.parameters()]
    with pytest.raises(xylem.ShapeMismatch):
        opt.step()
    for p, values in zip(model.parameters(), before):
        np.testing.assert_array_equal(host(p.value), values)
    assert opt.exp_avg(0) is None
    with pytest.raises(xylem.InvalidArgument):
        optim.SGD(model, lr=-1.0)
    with pytest.raises(xylem.InvalidArgument):
        opt.lr = -0.5
    with pytest.raises(IndexError):
        opt.steps(2)
