"""SiLU, GELU's tanh form, rms_norm, group_norm, instance_norm, cross_entropy's
ignore_index and kl_div against NumPy float64 formulas, with their layers."""
import math

import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

nn = xylem.nn
layers = xylem.layers
K = math.sqrt(2 / math.pi)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(K * (x + 0.044715 * x ** 3)))


def gelu_tanh_grad(x, dy):
    t = np.tanh(K * (x + 0.044715 * x ** 3))
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x))


@pytest.mark.parametrize("name", ["silu", "gelu_tanh"])
def test_activation(backend, rng, name):
    forward, gradient = {
        "silu": (lambda x: x * sigmoid(x), lambda x, dy: dy * sigmoid(x) * (1 + x * (1 - sigmoid(x)))),
        "gelu_tanh": (gelu_tanh, gelu_tanh_grad),
    }[name]
    for dtype in float_dtypes(backend):
        x, dy = rng.normal(size=(4, 9)) * 3, rng.normal(size=(4, 9))
        xt = put(x, dtype, backend)
        check(getattr(nn, name)(xt), forward(x), dtype)
        check(getattr(nn, name + "_grad")(xt, put(dy, dtype, backend)), gradient(x, dy), dtype)
        getattr(nn, name)(xt, out=xt)
        check(xt, forward(x), dtype)


def test_rms_norm(backend, rng):
    for dtype in float_dtypes(backend):
        x, w, dy = rng.normal(size=(3, 4, 5)), rng.normal(size=(4, 5)), rng.normal(size=(3, 4, 5))
        eps = 1e-6
        rstd = 1 / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + eps)
        xh = x * rstd
        r = nn.rms_norm(put(x, dtype, backend), 2, put(w, dtype, backend), eps)
        check(r.y, xh * w, dtype)
        check(r.rstd, rstd.reshape(3), dtype)
        g = nn.rms_norm_grad(put(x, dtype, backend), 2, put(w, dtype, backend), r.rstd, put(dy, dtype, backend))
        gw = dy * w
        check(g.dx, rstd * (gw - xh * (gw * xh).mean(axis=(1, 2), keepdims=True)), dtype)
        check(g.dweight, (dy * xh).sum(axis=0), dtype)
        check(nn.rms_norm(put(x, dtype, backend), 1).y, x / np.sqrt((x * x).mean(axis=2, keepdims=True) + 1e-6), dtype)


def group_reference(x, groups, w, b, eps, dy):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mean, var = xg.mean(axis=2, keepdims=True), xg.var(axis=2, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xh = ((xg - mean) * rstd).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    y = xh * w.reshape(shape) + b.reshape(shape)
    g = (dy * w.reshape(shape)).reshape(n, groups, -1)
    xhg = xh.reshape(n, groups, -1)
    dx = rstd * (g - g.mean(axis=2, keepdims=True) - xhg * (g * xhg).mean(axis=2, keepdims=True))
    axes = (0,) + tuple(range(2, x.ndim))
    return y, mean.reshape(n, groups), rstd.reshape(n, groups), dx.reshape(x.shape), (dy * xh).sum(axis=axes), \
        dy.sum(axis=axes)


@pytest.mark.parametrize("groups", [1, 3, 6])
def test_group_norm(backend, rng, groups):
    for dtype in float_dtypes(backend):
        x, w, b = rng.normal(1.0, 2.0, size=(2, 6, 3, 2)), rng.normal(size=6), rng.normal(size=6)
        dy = rng.normal(size=x.shape)
        y, mean, rstd, dx, dw, db = group_reference(x, groups, w, b, 1e-5, dy)
        xt, wt = put(x, dtype, backend), put(w, dtype, backend)
        r = nn.group_norm(xt, groups, wt, put(b, dtype, backend))
        check(r.y, y, dtype)
        check(r.stats.mean, mean, dtype)
        check(r.stats.rstd, rstd, dtype)
        g = nn.group_norm_grad(xt, groups, wt, r.stats, put(dy, dtype, backend))
        check(g.dx, dx, dtype)
        check(g.dgamma, dw, dtype)
        check(g.dbeta, db, dtype)
        if groups == 6:
            ri = nn.instance_norm(xt, wt, put(b, dtype, backend))
            check(ri.y, y, dtype)
            check(nn.instance_norm_grad(xt, wt, ri.stats, put(dy, dtype, backend)).dx, dx, dtype)


def test_norm_errors(backend):
    x = xylem.ones([2, 6, 3], backend=backend)
    with pytest.raises(xylem.InvalidArgument):
        nn.group_norm(x, 4)
    with pytest.raises(xylem.ShapeMismatch):
        nn.group_norm(x, 2, xylem.ones([5], backend=backend))
    with pytest.raises(xylem.ShapeMismatch):
        nn.rms_norm(x, 1, xylem.ones([4], backend=backend))
    assert np.all(np.asarray(x) == 1)


def test_cross_entropy_ignore_index(backend, rng):
    x = rng.normal(size=(7, 4))
    target = np.array([0, -100, 3, 2, -100, 1, 3])
    xt, tt = put(x, xylem.f32, backend), put(target, xylem.i64, backend)
    kept = target != -100
    lse = np.log(np.exp(x).sum(axis=1))
    rows = lse - x[np.arange(7), np.where(kept, target, 0)]
    check(nn.cross_entropy(xt, tt), [rows[kept].mean()], xylem.f32)
    s = np.exp(x - lse[:, None])
    onehot = np.eye(4)[np.where(kept, target, 0)]
    check(nn.cross_entropy_grad(xt, tt, 2.0), np.where(kept[:, None], 2 * (s - onehot) / kept.sum(), 0), xylem.f32)
    # A class as ignore_index.
    t2 = put(np.array([0, 1, 1, 2, 3, 1, 0]), xylem.i64, backend)
    kept2 = np.array([0, 1, 1, 2, 3, 1, 0]) != 1
    rows2 = lse - x[np.arange(7), np.array([0, 1, 1, 2, 3, 1, 0])]
    check(nn.cross_entropy(xt, t2, ignore_index=1), [rows2[kept2].mean()], xylem.f32)
    with pytest.raises(xylem.InvalidArgument):
        nn.cross_entropy(xt, tt, ignore_index=1)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
def test_kl_div(backend, rng, reduction):
    for dtype in float_dtypes(backend):
        p = rng.uniform(size=(5, 6))
        logq = np.log(rng.dirichlet(np.ones(6), size=5))
        p[0, 0] = 0
        point = np.where(p == 0, 0, p * (np.log(np.where(p == 0, 1, p)) - logq))
        div = {"none": 1, "mean": p.size, "sum": 1, "batchmean": 5}[reduction]
        expect = point if reduction == "none" else [point.sum() / div]
        xt, tt = put(logq, dtype, backend), put(p, dtype, backend)
        check(nn.kl_div(xt, tt, reduction), expect, dtype)
        check(nn.kl_div_grad(xt, tt, reduction, 0.5), -p * 0.5 / div, dtype)
    with pytest.raises(xylem.InvalidArgument):
        nn.kl_div(xt, tt, "average")


def test_layers(backend, rng):
    x = rng.normal(size=(2, 4, 3))
    xt = put(x, xylem.f32, backend)
    check(layers.SiLU()(xt), x * sigmoid(x), xylem.f32)
    check(layers.GELU("tanh")(xt), gelu_tanh(x), xylem.f32)
    with pytest.raises(xylem.InvalidArgument):
        layers.GELU("fast")
    rms = layers.RMSNorm([3])
    check(rms(xt), x / np.sqrt((x * x).mean(axis=2, keepdims=True) + 1e-6), xylem.f32)
    assert layers.RMSNorm([3], elementwise_affine=False).weight is None
    gn = layers.GroupNorm(2, 4)
    y, *_ = group_reference(x, 2, np.ones(4), np.zeros(4), 1e-5, np.zeros_like(x))
    check(gn(xt), y, xylem.f32)
    assert gn.weight is not None and layers.GroupNorm(2, 4, affine=False).bias is None
