"""xylem.layers and xylem.losses against float64 NumPy: forward, backward,
modes, Sequential, and bad input raising before anything changes."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put
import tiny_cnn

layers, losses = xylem.layers, xylem.losses


def host(t):
    """t's elements as float64, read without counting as a write."""
    return np.asarray(t.read().result(), dtype=np.float64)


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_linear_cross_entropy(backend, rng, smoothing):
    for dtype in float_dtypes(backend):
        n, fin, c = 6, 5, 4
        lin = layers.Linear(fin, c, dtype=dtype, generator=xylem.Generator(int(rng.integers(1 << 30))))
        x, t = rng.normal(size=(n, fin)), rng.integers(0, c, size=n)
        y = lin(put(x, dtype, backend))
        loss, dy = losses.cross_entropy(y, put(t, xylem.i64, backend), label_smoothing=smoothing)
        dx = lin.backward(dy)

        w, b = host(lin.weight.value), host(lin.bias.value)
        z = x @ w.T + b
        ls = log_softmax(z)
        q = np.full((n, c), smoothing / c)
        q[np.arange(n), t] += 1 - smoothing
        dz = (np.exp(ls) - q) / n
        check(y, z, dtype)
        check(loss, -(q * ls).sum() / n, dtype)
        check(dy, dz, dtype)
        check(dx, dz @ w, dtype)
        check(lin.weight.grad, dz.T @ x, dtype)
        check(lin.bias.grad, dz.sum(axis=0), dtype)


def test_initialisation(backend):
    made = {name: layers.Linear(50, 40, init=layers.Init.xavier_uniform, generator=xylem.Generator(9), backend=b)
            for name, b in (("here", backend), ("native", xylem.Backend.native()))}
    w = host(made["here"].weight.value)
    np.testing.assert_array_equal(w, host(made["native"].weight.value))  # one seed, the same weights anywhere
    bound = np.sqrt(6 / (50 + 40))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(host(made["here"].bias.value)).max() <= 1 / np.sqrt(50)


def test_mse_and_gradients_accumulate(backend, rng):
    lin = layers.Linear(3, 2, bias=False, generator=xylem.Generator(1))
    assert lin.bias is None and [p.name for p in lin.parameters()] == ["weight"]
    x, target = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    w = host(lin.weight.value)
    grads = []
    for _ in range(2):
        y = lin(put(x, xylem.f32, backend))
        loss, dy = losses.mse(y, put(target, xylem.f32, backend))
        check(loss, ((x @ w.T - target) ** 2).mean(), xylem.f32)
        lin.backward(dy)
        grads.append(2 * (x @ w.T - target).T @ x / target.size)
    check(lin.weight.grad, grads[0] + grads[1], xylem.f32)
    lin.zero_grad()
    assert lin.weight.grad is None


def test_conv_pool_activations(backend, rng):
    x = rng.normal(size=(2, 3, 6, 6))
    conv = layers.Conv2d(3, 4, 3, padding=1, generator=xylem.Generator(2))
    y = host(conv(put(x, xylem.f32, backend)))
    w, b = host(conv.weight.value), host(conv.bias.value)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 4, 6, 6))
    for i in range(6):
        for j in range(6):
            ref[:, :, i, j] = np.einsum("ncrs,kcrs->nk", xp[:, :, i:i + 3, j:j + 3], w) + b
    check(y, ref, xylem.f32)
    assert conv.output_shape((2, 3, 6, 6)) == (2, 4, 6, 6)

    xt = put(x, xylem.f32, backend)
    windows = x.reshape(2, 3, 3, 2, 3, 2)
    check(layers.MaxPool2d(2)(xt), windows.max(axis=(3, 5)), xylem.f32)
    check(layers.AvgPool2d(2)(xt), windows.mean(axis=(3, 5)), xylem.f32)
    check(layers.ReLU()(xt), np.maximum(x, 0), xylem.f32)
    check(layers.Tanh()(xt), np.tanh(x), xylem.f32)
    sig = layers.Sigmoid()
    s = 1 / (1 + np.exp(-x))
    check(sig(xt), s, xylem.f32)
    check(sig.backward(put(np.ones_like(x), xylem.f32, backend)), s * (1 - s), xylem.f32)
    check(layers.Flatten()(xt), x.reshape(2, -1), xylem.f32)


def test_norms_and_modes(backend, rng):
    x = rng.normal(1.0, 2.0, size=(4, 3, 2, 2))
    bn = layers.BatchNorm2d(3)
    assert bn.training
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    y = bn(put(x, xylem.f32, backend))
    check(y, (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5), xylem.f32)
    check(bn.running_mean.value, 0.1 * mean, xylem.f32)
    check(bn.running_var.value, 0.9 + 0.1 * var * 16 / 15, xylem.f32)
    assert bn.num_batches_tracked.value.item() == 1
    assert bn.eval() is bn and not bn.training
    rm, rv = 0.1 * mean, 0.9 + 0.1 * var * 16 / 15
    check(bn(put(x, xylem.f32, backend)), (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5),
          xylem.f32)

    ln = layers.LayerNorm([3, 2, 2])
    flat = x.reshape(4, -1)
    ref = (flat - flat.mean(axis=1, keepdims=True)) / np.sqrt(flat.var(axis=1, keepdims=True) + 1e-5)
    check(ln(put(x, xylem.f32, backend)), ref.reshape(x.shape), xylem.f32)
    assert layers.LayerNorm([2], elementwise_affine=False).weight is None

    drop = layers.Dropout(0.5, seed=3)
    xt = put(np.ones((64, 64)), xylem.f32, backend)
    kept = host(drop(xt))
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0.3 < (kept == 0).mean() < 0.7
    assert drop.step == 1
    drop.eval()
    check(drop(xt), np.ones((64, 64)), xylem.f32)


def test_sequential(backend, rng):
    first = layers.Linear(4, 8, generator=xylem.Generator(5))
    model = layers.Sequential(first, layers.ReLU(), layers.Linear(8, 3, generator=xylem.Generator(6)))
    assert len(model) == 3 and model[0] is first and model[-1] is model[2]
    assert isinstance(model[1], layers.ReLU)
    assert [p.name for p in model.parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert first.weight.name == "0.weight"
    assert repr(model).startswith("Sequential(Linear(4, 8)")
    model.eval()
    assert not first.training
    model.train()
    assert first.training
    x = rng.normal(size=(5, 4))
    y = model(put(x, xylem.f32, backend))
    w1, b1, w2, b2 = (host(p.value) for p in model.parameters())
    h = np.maximum(x @ w1.T + b1, 0)
    check(y, h @ w2.T + b2, xylem.f32)
    dx = model.backward(put(np.ones((5, 3)), xylem.f32, backend))
    check(dx, ((np.ones((5, 3)) @ w2) * (h > 0)) @ w1, xylem.f32)
    assert first.weight.grad is not None
    model.append(layers.Tanh())
    assert len(model) == 4 and model.output_shape((5, 4)) == (5, 3)
    with pytest.raises(IndexError):
        model[4]


def test_tiny_cnn_learns(backend, rng):
    x, t = tiny_cnn.task(rng)
    values = tiny_cnn.train(backend, x, t, 15, lambda model: xylem.optim.Adam(model, lr=0.02))
    assert values[-1] < 0.5 * values[0], values


BAD_LAYER_CALLS = {
    "input shape": (xylem.ShapeMismatch, lambda lin, x: lin(x.reshape(6, 4))),
    "backward first": (xylem.InvalidArgument, lambda lin, x: lin.backward(x)),
    "smoothing": (xylem.InvalidArgument,
                  lambda lin, x: losses.cross_entropy(x, xylem.zeros([4], xylem.i64), label_smoothing=2.0)),
    "loss target": (xylem.ShapeMismatch, lambda lin, x: losses.mse(x, x.reshape(3, 8))),
}


@pytest.mark.parametrize("case", BAD_LAYER_CALLS)
def test_bad_input_changes_nothing(backend, rng, case):
    cls, call = BAD_LAYER_CALLS[case]
    lin = layers.Linear(6, 2, generator=xylem.Generator(4))
    x = put(rng.normal(size=(4, 6)), xylem.f32, backend)
    before = [host(t) for t in (x, lin.weight.value, lin.bias.value)]
    with pytest.raises(cls):
        call(lin, x)
    for t, values in zip((x, lin.weight.value, lin.bias.value), before):
        np.testing.assert_array_equal(host(t), values)
    assert lin.weight.grad is None
    with pytest.raises(ValueError):  # the mapped exceptions derive from the built-ins
        layers.Dropout(1.5)
