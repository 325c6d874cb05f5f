"""Every math op against NumPy in float64, on random inputs, on every backend."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

UNARY = {
    "exp": (np.exp, -3, 3),
    "log": (np.log, 0.1, 5),
    "sqrt": (np.sqrt, 0, 5),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 5),
    "abs": (np.abs, -3, 3),
    "neg": (np.negative, -3, 3),
    "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}
# Shapes that broadcast, as NumPy does.
SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))]


@pytest.mark.parametrize("name", UNARY)
def test_unary(backend, rng, name):
    reference, low, high = UNARY[name]
    for dtype in float_dtypes(backend):
        x = rng.uniform(low, high, (5, 7))
        check(getattr(xylem, name)(put(x, dtype, backend)), reference(x), dtype)


@pytest.mark.parametrize("name", UNARY)
def test_unary_into_out(backend, rng, name):
    reference, low, high = UNARY[name]
    x = rng.uniform(low, high, 9)
    t = put(x, xylem.f32, backend)
    out = xylem.Tensor([9])
    result = getattr(xylem, name)(t, out=out)
    assert result is out  # as NumPy's out=: the same object back
    with pytest.raises(TypeError):  # out must be a tensor
        getattr(xylem, name)(t, out=np.empty(9, np.float32))
    check(out, reference(x.astype(np.float32).astype(np.float64)), xylem.f32)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary(backend, rng, name, shapes):
    for dtype in float_dtypes(backend):
        x = rng.uniform(0.5, 2, shapes[0])
        y = rng.uniform(0.5, 2, shapes[1])
        xt, yt = put(x, dtype, backend), put(y, dtype, backend)
        check(getattr(xylem, name)(xt, yt), BINARY[name](x, y), dtype)


@pytest.mark.parametrize("name", COMPARE)
def test_compare(backend, rng, name):
    x = rng.integers(0, 3, (4, 5)).astype(np.float64)
    y = rng.integers(0, 3, (5,)).astype(np.float64)
    r = getattr(xylem, name)(put(x, xylem.f32, backend), put(y, xylem.f32, backend))
    assert r.dtype == xylem.boolean
    np.testing.assert_array_equal(r.numpy(), COMPARE[name](x, y))


def test_clamp_and_where(backend, rng):
    x = rng.normal(size=(6, 6))
    check(xylem.clamp(put(x, xylem.f32, backend), -0.5, 0.5), np.clip(x, -0.5, 0.5), xylem.f32)
    cond = rng.integers(0, 2, (6, 1)).astype(bool)
    y = rng.normal(size=6)
    r = xylem.where(put(cond, xylem.boolean, backend), put(x, xylem.f32, backend), put(y, xylem.f32, backend))
    check(r, np.where(cond, x, y), xylem.f32)


REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
          "argmax": None, "argmin": None}


@pytest.mark.parametrize("name", REDUCE)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce(backend, rng, name, axis, keepdims):
    x = rng.normal(size=(3, 4, 5))
    t = put(x, xylem.f64 if backend.hardware.caps.fp64 else xylem.f32, backend)
    r = getattr(xylem, name)(t, axis, keepdims)
    if name in ("argmax", "argmin"):
        # Over several axes, the index into those axes taken together, row-major.
        axes = tuple(range(3)) if axis is None else (axis,) if isinstance(axis, int) else axis
        axes = tuple(a % 3 for a in axes)
        kept = [a for a in range(3) if a not in axes]
        moved = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
        expected = getattr(np, name)(moved, axis=-1)
        if keepdims:
            expected = np.expand_dims(expected, axes)
        assert r.dtype == xylem.i64
        np.testing.assert_array_equal(r.numpy(), expected)
    else:
        check(r, REDUCE[name](x, axis=axis, keepdims=keepdims), t.dtype)


@pytest.mark.parametrize("correction", [0, 1])
def test_var(backend, rng, correction):
    x = rng.normal(size=(4, 6))
    r = xylem.var(put(x, xylem.f32, backend), 1, correction=correction)
    check(r, np.var(x, axis=1, ddof=correction), xylem.f32)


CASTS = [xylem.f16, xylem.bf16, xylem.f32, xylem.f64, xylem.i32, xylem.i64, xylem.u8, xylem.boolean]


@pytest.mark.parametrize("to", CASTS, ids=str)
def test_cast(backend, rng, to):
    if to == xylem.f64 and not backend.hardware.caps.fp64:
        pytest.skip("no fp64")
    x = rng.uniform(0, 100, 17).astype(np.float32)
    r = xylem.cast(put(x, xylem.f32, backend), to)
    assert r.dtype == to
    expected = {xylem.i32: np.trunc(x), xylem.i64: np.trunc(x), xylem.u8: np.trunc(x), xylem.boolean: x != 0}
    np.testing.assert_allclose(r.numpy().astype(np.float64), expected.get(to, x), rtol=1e-2 if to == xylem.bf16 else 1e-3)
