"""xylem.layers.LSTM and GRU against a step-by-step float64 NumPy
transcription of torch.nn.LSTM / torch.nn.GRU: forward with and without
initial states, batch first, bidirectional, several layers; backward against
central differences of that reference; bad input raising typed errors."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

layers = xylem.layers


def host(t):
    return np.asarray(t.read().result(), dtype=np.float64)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference(mode, params, x, h0, c0, num_layers, bidirectional, batch_first):
    """(output, h_n, c_n) of PyTorch's recurrence, from the layer's parameters (in its order)."""
    d = 2 if bidirectional else 1
    seq = np.swapaxes(x, 0, 1) if batch_first else x
    t_len = seq.shape[0]
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(d):
            k = layer * d + direction
            w_ih, w_hh, b_ih, b_hh = params[4 * k:4 * k + 4]
            h, c = h0[k].copy(), c0[k].copy()
            out = [None] * t_len
            for t in (range(t_len) if direction == 0 else reversed(range(t_len))):
                xi, hh = seq[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
                if mode == "lstm":
                    i, f, g, o = np.split(xi + hh, 4, axis=1)
                    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
                    h = sigmoid(o) * np.tanh(c)
                else:
                    xr, xz, xn = np.split(xi, 3, axis=1)
                    hr, hz, hn = np.split(hh, 3, axis=1)
                    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
                    h = (1 - z) * np.tanh(xn + r * hn) + z * h
                out[t] = h
            outs.append(np.stack(out))
            h_n.append(h)
            c_n.append(c)
        seq = np.concatenate(outs, axis=2)
    y = np.swapaxes(seq, 0, 1) if batch_first else seq
    return y, np.stack(h_n), np.stack(c_n)


def make(mode, *args, **kwargs):
    return (layers.LSTM if mode == "lstm" else layers.GRU)(*args, **kwargs)


CONFIGS = [  # mode, T, N, I, H, num_layers, bidirectional, batch_first, initial states
    ("lstm", 5, 3, 4, 6, 1, False, False, False),
    ("lstm", 4, 2, 3, 5, 2, True, True, True),
    ("gru", 5, 3, 4, 6, 1, False, True, False),
    ("gru", 4, 2, 3, 5, 2, True, False, True),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_forward_matches_numpy(backend, rng, cfg):
    mode, t_len, n, i, h, num_layers, bidir, batch_first, states = cfg
    d = 2 if bidir else 1
    for dtype in float_dtypes(backend):
        layer = make(mode, i, h, num_layers, bidir, batch_first, dtype=dtype,
                     generator=xylem.Generator(int(rng.integers(1 << 30))))
        names = [p.name for p in layer.parameters()]
        assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
        assert ("weight_ih_l0_reverse" in names) == bidir
        params = [host(p.value) for p in layer.parameters()]
        x = rng.normal(size=(n, t_len, i) if batch_first else (t_len, n, i))
        h0 = rng.normal(size=(num_layers * d, n, h)) if states else np.zeros((num_layers * d, n, h))
        c0 = rng.normal(size=h0.shape) if states and mode == "lstm" else np.zeros(h0.shape)
        x, h0, c0 = (host(put(a, dtype, backend)) for a in (x, h0, c0))  # as the layer sees them
        y, h_n, c_n = reference(mode, params, x, h0, c0, num_layers, bidir, batch_first)
        given_c0 = put(c0, dtype, backend) if states and mode == "lstm" else None
        out, got_h, got_c = layer.forward_states(put(x, dtype, backend), put(h0, dtype, backend) if states else None,
                                                 given_c0)
        rtol = 1e-4 if dtype == xylem.f32 else 1e-10
        np.testing.assert_allclose(host(out), y, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(host(got_h), h_n, rtol=rtol, atol=rtol)
        if mode == "lstm":
            np.testing.assert_allclose(host(got_c), c_n, rtol=rtol, atol=rtol)
        else:
            assert got_c is None
        if not states and dtype == xylem.f64:  # layer(x): the output alone, from zero states
            check(layer(put(x, dtype, backend)), y, dtype)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_backward_matches_finite_differences(backend, rng, mode):
    if xylem.f64 not in float_dtypes(backend):
        pytest.skip("no f64 on this device")
    t_len, n, i, h, num_layers = 3, 2, 3, 2, 2
    layer = make(mode, i, h, num_layers, True, True, dtype=xylem.f64, generator=xylem.Generator(7))
    params = [host(p.value) for p in layer.parameters()]
    x = rng.normal(size=(n, t_len, i))
    h0, c0 = rng.normal(size=(4, n, h)), rng.normal(size=(4, n, h))
    wy, wh, wc = rng.normal(size=(n, t_len, 2 * h)), rng.normal(size=(4, n, h)), rng.normal(size=(4, n, h))
    lstm = mode == "lstm"

    def objective():
        y, h_n, c_n = reference(mode, params, x, h0, c0 if lstm else 0 * c0, num_layers, True, True)
        return (wy * y).sum() + (wh * h_n).sum() + ((wc * c_n).sum() if lstm else 0)

    def numeric(a, index, step=1e-6):
        keep = a[index]
        a[index] = keep + step
        up = objective()
        a[index] = keep - step
        down = objective()
        a[index] = keep
        return (up - down) / (2 * step)

    layer.forward_states(put(x, xylem.f64, backend), put(h0, xylem.f64, backend),
                         put(c0, xylem.f64, backend) if lstm else None)
    dx, dh0, dc0 = layer.backward_states(put(wy, xylem.f64, backend), put(wh, xylem.f64, backend),
                                         put(wc, xylem.f64, backend) if lstm else None)
    dx, dh0 = host(dx), host(dh0)
    for index in [(0, 0, 0), (1, 2, 1), (0, 1, 2)]:
        assert dx[index] == pytest.approx(numeric(x, index), rel=1e-6, abs=1e-7)
    for index in [(0, 0, 0), (3, 1, 1), (2, 0, 1)]:
        assert dh0[index] == pytest.approx(numeric(h0, index), rel=1e-6, abs=1e-7)
        if lstm:
            assert host(dc0)[index] == pytest.approx(numeric(c0, index), rel=1e-6, abs=1e-7)
    if not lstm:
        assert dc0 is None
    for p, value in zip(layer.parameters(), params):
        grad = host(p.grad)
        for index in [tuple(0 for _ in value.shape), tuple(s - 1 for s in value.shape)]:
            assert grad[index] == pytest.approx(numeric(value, index), rel=1e-6, abs=1e-7), p.name


def test_bad_input(backend, rng):
    lstm = layers.LSTM(4, 3, 2, generator=xylem.Generator(3))
    gru = layers.GRU(4, 3, generator=xylem.Generator(3))
    x = put(rng.normal(size=(5, 2, 4)), xylem.f32, backend)
    with pytest.raises(xylem.ShapeMismatch):
        lstm(put(rng.normal(size=(5, 2, 3)), xylem.f32, backend))
    with pytest.raises(xylem.ShapeMismatch):
        lstm.forward_states(x, put(rng.normal(size=(1, 2, 3)), xylem.f32, backend))
    with pytest.raises(xylem.DTypeMismatch):
        lstm(put(rng.normal(size=(5, 2, 4)), xylem.f64, backend))
    with pytest.raises(xylem.InvalidArgument):
        gru.forward_states(x, None, put(rng.normal(size=(1, 2, 3)), xylem.f32, backend))
    with pytest.raises(xylem.InvalidArgument):
        gru.backward(put(rng.normal(size=(5, 2, 3)), xylem.f32, backend))
    assert all(p.grad is None for p in lstm.parameters())
