"""xylem.nn.scaled_dot_product_attention against a NumPy float64 reference, on every backend."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

nn = xylem.nn


def reference(q, k, v, mask=None, causal=False, scale=None):
    """out and the softmax weights, with grouped heads repeated as PyTorch's enable_gqa does."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    w = np.exp(s - top)
    w /= w.sum(axis=-1, keepdims=True)
    return w @ v, w


def grads(q, k, v, dout, w, scale=None):
    group = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    dw = dout @ np.swapaxes(vr, -1, -2)
    ds = w * (dw - (dw * w).sum(axis=-1, keepdims=True))
    dq = ds @ kr * scale
    dk = (np.swapaxes(ds, -1, -2) @ q * scale).reshape(k.shape[0], k.shape[1], group, *k.shape[2:]).sum(axis=2)
    dv = (np.swapaxes(w, -1, -2) @ dout).reshape(v.shape[0], v.shape[1], group, *v.shape[2:]).sum(axis=2)
    return dq, dk, dv


CASES = [
    dict(shape=(2, 3, 3, 17, 23, 16, 16)),
    dict(shape=(1, 4, 2, 70, 70, 32, 24), causal=True),
    dict(shape=(2, 2, 1, 1, 65, 40, 40)),
    dict(shape=(1, 2, 2, 9, 13, 8, 8), mask="bool"),
    dict(shape=(2, 2, 2, 9, 13, 8, 8), mask="additive", scale=0.5),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_attention(backend, rng, case):
    B, H, Hkv, Sq, Sk, D, Dv = case["shape"]
    for dtype in float_dtypes(backend):
        q = rng.uniform(-1, 1, (B, H, Sq, D))
        k = rng.uniform(-1, 1, (B, Hkv, Sk, D))
        v = rng.uniform(-1, 1, (B, Hkv, Sk, Dv))
        dout = rng.uniform(-1, 1, (B, H, Sq, Dv))
        mask = None
        mask_t = None
        if case.get("mask") == "bool":
            mask = rng.uniform(size=(Sq, Sk)) > 0.2
            mask[:, 0] = True  # every row keeps a key
            mask_t = put(mask, xylem.boolean, backend)
        elif case.get("mask") == "additive":
            mask = rng.uniform(-2, 1, (B, 1, Sq, Sk))
            mask_t = put(mask, dtype, backend)
        causal, scale = case.get("causal", False), case.get("scale")
        out, w = reference(q, k, v, mask, causal, scale)
        qt, kt, vt = (put(a, dtype, backend) for a in (q, k, v))
        got = nn.scaled_dot_product_attention(qt, kt, vt, mask_t, is_causal=causal, scale=scale)
        check(got, out, dtype)
        fwd = nn.scaled_dot_product_attention_forward(qt, kt, vt, mask_t, is_causal=causal, scale=scale)
        g = nn.scaled_dot_product_attention_grad(qt, kt, vt, fwd, put(dout, dtype, backend), mask_t, is_causal=causal,
                                                 scale=scale)
        for got_g, want in zip((g.dq, g.dk, g.dv), grads(q, k, v, dout, w, scale)):
            check(got_g, want, dtype)


def test_attention_dropout_same_on_every_backend(backend, rng):
    q = rng.uniform(-1, 1, (1, 2, 11, 8))
    v = rng.uniform(0.5, 1.5, (1, 2, 11, 8))
    args = [put(a, xylem.f32, backend) for a in (q, q, v)]
    native = [put(a, xylem.f32, xylem.Backend.open("native")) for a in (q, q, v)]
    a = nn.scaled_dot_product_attention(*args, dropout_p=0.3, generator=xylem.Generator(5)).numpy()
    b = nn.scaled_dot_product_attention(*native, dropout_p=0.3, generator=xylem.Generator(5),
                                        backend=xylem.Backend.open("native")).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    plain = nn.scaled_dot_product_attention(*args).numpy()
    assert not np.allclose(a, plain), "dropout changed nothing"


def test_attention_errors(backend):
    q = put(np.ones((2, 3, 4, 8)), xylem.f32, backend)
    k = put(np.ones((2, 2, 4, 8)), xylem.f32, backend)
    with pytest.raises(xylem.ShapeMismatch):
        nn.scaled_dot_product_attention(q, k, k)
    with pytest.raises(xylem.InvalidArgument):
        nn.scaled_dot_product_attention(q, q, q, put(np.ones((4, 4)), xylem.f32, backend), is_causal=True)
    assert np.all(q.numpy() == 1)


@pytest.mark.parametrize("causal", [False, True])
def test_multihead_attention_layer(backend, rng, causal):
    layers = xylem.layers
    n, seq, e, heads = 2, 7, 12, 3
    for dtype in float_dtypes(backend):
        mha = layers.MultiheadAttention(e, heads, causal, dtype=dtype, generator=xylem.Generator(3))
        w_in, w_out = (np.asarray(p.value.read().result(), np.float64) for p in (mha.in_proj_weight, mha.out_proj_weight))
        x, dy = rng.uniform(-1, 1, (n, seq, e)), rng.uniform(-1, 1, (n, seq, e))
        y = mha(put(x, dtype, backend))
        dx = mha.backward(put(dy, dtype, backend))

        def split(t):  # [N, L, E] -> [N, heads, L, E/heads]
            return t.reshape(n, seq, heads, e // heads).transpose(0, 2, 1, 3)

        qkv = x @ w_in.T  # the biases start at 0
        q, k, v = (split(qkv[..., i * e:(i + 1) * e]) for i in range(3))
        att, w = reference(q, k, v, causal=causal)
        flat = att.transpose(0, 2, 1, 3).reshape(n, seq, e)
        check(y, flat @ w_out.T, dtype)
        dflat = dy @ w_out
        dq, dk, dv = grads(q, k, v, split(dflat), w)
        dqkv = np.concatenate([g.transpose(0, 2, 1, 3).reshape(n, seq, e) for g in (dq, dk, dv)], axis=-1)
        check(dx, dqkv @ w_in, dtype)
        check(mha.out_proj_weight.grad, dy.reshape(-1, e).T @ flat.reshape(-1, e), dtype)
        check(mha.in_proj_weight.grad, dqkv.reshape(-1, 3 * e).T @ x.reshape(-1, e), dtype)
