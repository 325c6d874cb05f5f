"""xylem.nn against NumPy float64 references, on every backend."""
import math

import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

nn = xylem.nn
erf = np.vectorize(math.erf)


def phi(x):
    return 0.5 * (1 + erf(x / math.sqrt(2)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    "sigmoid": (sigmoid, lambda x, y, dy: dy * y * (1 - y), "y"),
    "relu": (lambda x: np.maximum(x, 0), lambda x, y, dy: dy * (x > 0), "x"),
    "tanh": (np.tanh, lambda x, y, dy: dy * (1 - y * y), "y"),
    "gelu": (lambda x: x * phi(x), lambda x, y, dy: dy * (phi(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
             "x"),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(backend, rng, name):
    forward, gradient, takes = ACTIVATIONS[name]
    for dtype in float_dtypes(backend):
        x, dy = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
        y = forward(x)
        xt = put(x, dtype, backend)
        yt = getattr(nn, name)(xt)
        check(yt, y, dtype)
        first = yt if takes == "y" else xt
        check(getattr(nn, name + "_grad")(first, put(dy, dtype, backend)), gradient(x, y, dy), dtype)
        getattr(nn, name)(xt, out=xt)  # in place
        check(xt, y, dtype)


def test_parametrised_activations(backend, rng):
    x, dy = rng.normal(size=50) * 3, rng.normal(size=50)
    dtype = float_dtypes(backend)[-1]
    xt = put(x, dtype, backend)
    dyt = put(dy, dtype, backend)
    check(nn.leaky_relu(xt, 0.1), np.where(x >= 0, x, 0.1 * x), dtype)
    check(nn.leaky_relu_grad(xt, dyt, 0.1), np.where(x > 0, dy, 0.1 * dy), dtype)
    check(nn.elu(xt, 0.7), np.where(x > 0, x, 0.7 * (np.exp(x) - 1)), dtype)
    check(nn.elu_grad(xt, dyt, 0.7), np.where(x > 0, dy, 0.7 * np.exp(x) * dy), dtype)
    bx = 2 * x
    check(nn.softplus(xt, 2.0, 5.0), np.where(bx > 5, x, np.log1p(np.exp(bx)) / 2), dtype)
    check(nn.softplus_grad(xt, dyt, 2.0, 5.0), np.where(bx > 5, dy, dy * sigmoid(bx)), dtype)


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax(backend, rng, axis):
    for dtype in float_dtypes(backend):
        x, dy = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        s = e / e.sum(axis=axis, keepdims=True)
        ls = np.log(s)
        st, lst = nn.softmax(put(x, dtype, backend), axis), nn.log_softmax(put(x, dtype, backend), axis)
        check(st, s, dtype)
        check(lst, ls, dtype)
        dyt = put(dy, dtype, backend)
        check(nn.softmax_grad(st, dyt, axis), s * (dy - (dy * s).sum(axis=axis, keepdims=True)), dtype)
        check(nn.log_softmax_grad(lst, dyt, axis), dy - s * dy.sum(axis=axis, keepdims=True), dtype)


def test_layer_norm(backend, rng):
    x, g, b, dy = rng.normal(size=(4, 8)), rng.normal(size=8), rng.normal(size=8), rng.normal(size=(4, 8))
    eps = 1e-5
    mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xh = (x - mean) * rstd
    r = nn.layer_norm(put(x, xylem.f32, backend), 1, put(g, xylem.f32, backend), put(b, xylem.f32, backend), eps)
    check(r.y, xh * g + b, xylem.f32)
    check(r.stats.mean, mean[:, 0], xylem.f32)
    check(r.stats.rstd, rstd[:, 0], xylem.f32)
    grads = nn.layer_norm_grad(put(x, xylem.f32, backend), 1, put(g, xylem.f32, backend), r.stats,
                               put(dy, xylem.f32, backend))
    gg = dy * g
    dx = rstd * (gg - gg.mean(axis=1, keepdims=True) - xh * (gg * xh).mean(axis=1, keepdims=True))
    check(grads.dx, dx, xylem.f32)
    check(grads.dgamma, (dy * xh).sum(axis=0), xylem.f32)
    check(grads.dbeta, dy.sum(axis=0), xylem.f32)
    check(nn.layer_norm(put(x, xylem.f32, backend)).y, xh, xylem.f32)


def test_batch_norm(backend, rng):
    x, g, b, dy = rng.normal(size=(4, 3, 5)), rng.normal(size=3), rng.normal(size=3), rng.normal(size=(4, 3, 5))
    eps, momentum = 1e-5, 0.1
    rm, rv = xylem.zeros([3], backend=backend), xylem.ones([3], backend=backend)
    r = nn.batch_norm(put(x, xylem.f32, backend), put(g, xylem.f32, backend), put(b, xylem.f32, backend), rm, rv,
                      True, momentum, eps)
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    rstd = 1 / np.sqrt(var + eps)
    xh = (x - mean[None, :, None]) * rstd[None, :, None]
    check(r.y, xh * g[None, :, None] + b[None, :, None], xylem.f32)
    check(rm, momentum * mean, xylem.f32)
    check(rv, (1 - momentum) + momentum * x.var(axis=(0, 2), ddof=1), xylem.f32)
    grads = nn.batch_norm_grad(put(x, xylem.f32, backend), put(g, xylem.f32, backend), r.stats, True, eps,
                               put(dy, xylem.f32, backend))
    dbeta, dgamma, m = dy.sum(axis=(0, 2)), (dy * xh).sum(axis=(0, 2)), 4 * 5
    dx = (g * rstd)[None, :, None] * (dy - dbeta[None, :, None] / m - xh * dgamma[None, :, None] / m)
    check(grads.dx, dx, xylem.f32)
    check(grads.dgamma, dgamma, xylem.f32)
    check(grads.dbeta, dbeta, xylem.f32)


def conv2d_reference(x, w, stride, pad):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, p, q))
    for i in range(p):
        for j in range(q):
            window = xp[:, :, i * stride:i * stride + r, j * stride:j * stride + s]
            y[:, :, i, j] = np.einsum("ncrs,kcrs->nk", window, w)
    return y


def test_conv2d(backend, rng):
    x, w = rng.normal(size=(2, 3, 7, 6)), rng.normal(size=(4, 3, 3, 3))
    params = nn.Conv2d(stride_h=2, stride_w=2, pad_h=1, pad_w=1)
    y = conv2d_reference(x, w, 2, 1)
    assert nn.conv2d_output_shape([2, 3, 7, 6], [4, 3, 3, 3], params) == list(y.shape)
    xt, wt = put(x, xylem.f32, backend), put(w, xylem.f32, backend)
    check(nn.conv2d(xt, wt, params), y, xylem.f32)
    # Gradients: the adjoint identities <conv(x, w), dy> = <x, dx> = <w, dw>.
    dy = rng.normal(size=y.shape)
    dyt = put(dy, xylem.f32, backend)
    dx = nn.conv2d_grad_data(dyt, wt, [2, 3, 7, 6], params).numpy()
    dw = nn.conv2d_grad_filter(xt, dyt, [4, 3, 3, 3], params).numpy()
    np.testing.assert_allclose((x * dx).sum(), (y * dy).sum(), rtol=1e-4)
    np.testing.assert_allclose((w * dw).sum(), (y * dy).sum(), rtol=1e-4)


def test_pooling(backend, rng):
    x = rng.normal(size=(2, 3, 4, 6))
    p = nn.Pool2d(kernel_h=2, kernel_w=2)
    windows = x.reshape(2, 3, 2, 2, 3, 2)
    xt = put(x, xylem.f32, backend)
    assert nn.pool2d_output_shape([2, 3, 4, 6], p) == [2, 3, 2, 3]
    check(nn.max_pool2d(xt, p), windows.max(axis=(3, 5)), xylem.f32)
    check(nn.avg_pool2d(xt, p), windows.mean(axis=(3, 5)), xylem.f32)
    dy = rng.normal(size=(2, 3, 2, 3))
    dyt = put(dy, xylem.f32, backend)
    avg_dx = np.repeat(np.repeat(dy, 2, axis=2), 2, axis=3) / 4
    check(nn.avg_pool2d_grad(dyt, [2, 3, 4, 6], p), avg_dx, xylem.f32)
    is_max = x == np.repeat(np.repeat(windows.max(axis=(3, 5)), 2, axis=2), 2, axis=3)
    check(nn.max_pool2d_grad(xt, dyt, p), is_max * np.repeat(np.repeat(dy, 2, axis=2), 2, axis=3), xylem.f32)


def test_lrn(backend, rng):
    x = rng.normal(size=(2, 6, 3))
    params = nn.Lrn(size=3, alpha=0.1, beta=0.75, k=2.0)
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0)))
    scale = 2.0 + 0.1 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])
    y = x * scale ** -0.75
    xt = put(x, xylem.f32, backend)
    yt = nn.lrn(xt, params)
    check(yt, y, xylem.f32)
    # The gradient against central differences of sum(y * dy).
    dy = rng.normal(size=x.shape)
    dx = nn.lrn_grad(xt, yt, put(dy, xylem.f32, backend), params).numpy()
    h = 1e-3
    e = np.zeros_like(x)
    e[1, 2, 1] = h
    dtype = float_dtypes(backend)[-1]

    def f(v):
        return (nn.lrn(put(v, dtype, backend), params).numpy() * dy).sum()

    np.testing.assert_allclose(dx[1, 2, 1], (f(x + e) - f(x - e)) / (2 * h), rtol=1e-2, atol=1e-3)


def test_dropout(backend, rng):
    x = rng.normal(size=20000) + 3
    r = nn.dropout(put(x, xylem.f32, backend), 0.25, generator=xylem.Generator(1))
    y = r.y.numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    check(y[kept], x[kept] / 0.75, xylem.f32)
    dx = nn.dropout_grad(put(np.ones_like(x), xylem.f32, backend), r.mask).numpy()
    np.testing.assert_array_equal(dx != 0, kept)


def test_linear(backend, rng):
    x, w, b, dy = rng.normal(size=(5, 3)), rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(5, 4))
    xt, wt = put(x, xylem.f32, backend), put(w, xylem.f32, backend)
    check(nn.linear(xt, wt, put(b, xylem.f32, backend)), x @ w.T + b, xylem.f32)
    check(nn.linear(xt, wt), x @ w.T, xylem.f32)
    g = nn.linear_grad(xt, wt, put(dy, xylem.f32, backend))
    check(g.dx, dy @ w, xylem.f32)
    check(g.dw, dy.T @ x, xylem.f32)
    check(g.dbias, dy.sum(axis=0), xylem.f32)


def test_losses(backend, rng):
    x, target = rng.normal(size=(6, 4)), rng.integers(0, 4, 6)
    xt, tt = put(x, xylem.f32, backend), put(target, xylem.i64, backend)
    lse = np.log(np.exp(x).sum(axis=1))
    check(nn.cross_entropy(xt, tt), [np.mean(lse - x[np.arange(6), target])], xylem.f32)
    s = np.exp(x - lse[:, None])
    onehot = np.eye(4)[target]
    check(nn.cross_entropy_grad(xt, tt, 2.0), 2 * (s - onehot) / 6, xylem.f32)
    y = rng.normal(size=(6, 4))
    yt = put(y, xylem.f32, backend)
    check(nn.mse_loss(xt, yt), [np.mean((x - y) ** 2)], xylem.f32)
    check(nn.mse_loss_grad(xt, yt), 2 * (x - y) / x.size, xylem.f32)
