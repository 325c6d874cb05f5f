"""Tensors: NumPy round trips for every dtype, views and indexing, operators,
printing, creation and random numbers, copies across devices."""
import ml_dtypes
import numpy as np
import pytest

import xylem
from conftest import check, put

ROUND_TRIP = [
    (np.float16, xylem.f16), (ml_dtypes.bfloat16, xylem.bf16), (np.float32, xylem.f32),
    (np.float64, xylem.f64), (np.int32, xylem.i32), (np.int64, xylem.i64), (np.uint8, xylem.u8),
    (np.bool_, xylem.boolean), (np.complex64, xylem.c64), (np.complex128, xylem.c128),
]


@pytest.mark.parametrize("np_dtype,dtype", ROUND_TRIP, ids=lambda v: str(v))
def test_round_trip(backend, rng, np_dtype, dtype):
    if dtype.is_complex:
        a = (rng.uniform(-50, 50, (3, 4, 5)) + 1j * rng.uniform(-50, 50, (3, 4, 5))).astype(np_dtype)
    elif dtype.is_floating:
        a = rng.uniform(-50, 50, (3, 4, 5)).astype(np_dtype)
    else:
        a = rng.integers(0, 100, (3, 4, 5)).astype(np_dtype)
    t = xylem.asarray(a)
    assert t.dtype == dtype and t.shape == a.shape
    # Through the device and back: a copy made there, read from there.
    on_device = t.to(backend)
    assert on_device.is_current_on(backend)
    for back in (t.numpy(), np.asarray(on_device), on_device.read().result()):
        assert back.dtype == np.dtype(np_dtype)
        np.testing.assert_array_equal(back, a)


def test_asarray_conversions():
    assert xylem.asarray([1.5, 2.5]).dtype == xylem.f64
    assert xylem.asarray([[1, 2]], xylem.f32).shape == (1, 2)
    np.testing.assert_array_equal(xylem.asarray(np.arange(6).reshape(2, 3).T).numpy(), np.arange(6).reshape(2, 3).T)
    with pytest.raises(xylem.DTypeMismatch):
        xylem.asarray(np.zeros(2, np.int16))


def test_properties():
    t = xylem.Tensor([2, 3], xylem.f64)
    assert (t.shape, t.strides, t.offset, t.ndim, t.size, len(t)) == ((2, 3), (3, 1), 0, 2, 6, 2)
    assert t.dtype == xylem.f64 and t.version == 0 and t.is_contiguous


def test_views_and_indexing(backend, rng):
    a = rng.normal(size=(4, 5, 6))
    t = put(a, xylem.f64, backend)
    for key in [1, -1, (1, 2), slice(1, 3), (slice(None), slice(None, None, 2)), (..., 3), (None, 0),
                (slice(None, None, -1), 2), (2, ..., slice(4, 0, -2))]:
        v = t[key]
        assert v.shares_data_with(t)
        np.testing.assert_array_equal(v.numpy(), a[key])
    np.testing.assert_array_equal(t.reshape(20, 6).numpy(), a.reshape(20, 6))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.slice(1, 1, 5, 2).numpy(), a[:, 1:5:2])
    with pytest.raises(IndexError):
        t[4]


def test_setitem(backend, rng):
    a = rng.normal(size=(3, 4))
    t = put(a, xylem.f32, backend)
    t[1] = 7.0
    t[:, 0] = xylem.asarray(np.arange(3.0), xylem.f32)
    t[2, 1:3] = np.array([5.0, 6.0])
    a[1] = 7
    a[:, 0] = np.arange(3)
    a[2, 1:3] = [5, 6]
    check(t, a, xylem.f32)


OPERATORS = [
    (lambda x, y: x + y, np.add), (lambda x, y: x - y, np.subtract), (lambda x, y: x * y, np.multiply),
    (lambda x, y: x / y, np.divide), (lambda x, y: x ** y, np.power),
]


@pytest.mark.parametrize("op,reference", OPERATORS)
def test_operators(backend, rng, op, reference):
    x = rng.uniform(0.5, 2, (3, 4))
    y = rng.uniform(0.5, 2, (4,))
    xt, yt = put(x, xylem.f32, backend), put(y, xylem.f32, backend)
    check(op(xt, yt), reference(x, y), xylem.f32)
    check(op(xt, 1.5), reference(x, 1.5), xylem.f32)       # a number
    check(op(2.0, xt), reference(2.0, x), xylem.f32)       # reflected
    check(op(y, xt), reference(y, x), xylem.f32)           # NumPy on the left
    before = xt
    xt_in_place = xt
    if reference is np.add:
        xt_in_place += yt
    elif reference is np.subtract:
        xt_in_place -= yt
    elif reference is np.multiply:
        xt_in_place *= yt
    elif reference is np.divide:
        xt_in_place /= yt
    else:
        xt_in_place **= yt
    assert xt_in_place is before
    check(xt_in_place, reference(x, y), xylem.f32)


def test_comparisons_and_unary_operators(backend, rng):
    x = rng.integers(0, 3, (3, 3)).astype(np.float64)
    t = put(x, xylem.f64, backend)
    for got, want in [(t < 1, x < 1), (t <= 1, x <= 1), (t > 1, x > 1), (t >= 1, x >= 1),
                      (t == 1, x == 1), (t != 1, x != 1)]:
        np.testing.assert_array_equal(got.numpy(), want)
    check(-t, -x, xylem.f64)
    check(abs(t - 1), np.abs(x - 1), xylem.f64)


def test_matmul(backend, rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    at, bt = put(a, xylem.f32, backend), put(b, xylem.f32, backend)
    check(at @ bt, a @ b, xylem.f32)
    v = rng.normal(size=4)
    check(at @ put(v, xylem.f32, backend), a @ v, xylem.f32)
    w = rng.normal(size=3)
    check(put(w, xylem.f32, backend) @ at, w @ a, xylem.f32)
    batch = rng.normal(size=(2, 3, 4))
    check(put(batch, xylem.f32, backend) @ bt, batch @ b, xylem.f32)
    check(xylem.matmul(put(v, xylem.f32, backend), put(v, xylem.f32, backend)), v @ v, xylem.f32)
    # Stacks: batch axes broadcast as NumPy's do; a vector beside a stack.
    stack, other = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(5, 4, 2))
    check(put(stack, xylem.f32, backend) @ put(other, xylem.f32, backend), stack @ other, xylem.f32)
    check(put(v, xylem.f32, backend) @ put(other, xylem.f32, backend), v @ other, xylem.f32)
    with pytest.raises(xylem.ShapeMismatch):
        put(stack, xylem.f32, backend) @ put(rng.normal(size=(3, 5, 4, 2)), xylem.f32, backend)


def test_methods(backend, rng):
    """NumPy's and PyTorch's array methods: reductions, elementwise math,
    axes of size 1 dropped and added, flattening."""
    x = rng.normal(size=(3, 4, 5))
    t = put(x, xylem.f32, backend)
    check(t.sum(), x.sum(), xylem.f32)
    check(t.sum(1), x.sum(1), xylem.f32)
    check(t.mean((0, 2), keepdims=True), x.mean((0, 2), keepdims=True), xylem.f32)
    check(t.max(-1), x.max(-1), xylem.f32)
    check(t.min(axis=0), x.min(axis=0), xylem.f32)
    assert np.array_equal(t.argmax(2).numpy(), x.astype(np.float32).argmax(2))
    assert np.array_equal(t.argmin(0).numpy(), x.astype(np.float32).argmin(0))
    check(t.var(1), x.var(1, ddof=1), xylem.f32)
    check(t.var(correction=0), x.var(), xylem.f32)
    check(t.exp(), np.exp(x), xylem.f32)
    check(t.abs().sqrt(), np.sqrt(np.abs(x)), xylem.f32)
    check(t.clamp(-0.5, 0.5), np.clip(x, -0.5, 0.5), xylem.f32)
    check(t.sin() + t.cos(), np.sin(x) + np.cos(x), xylem.f32)

    column = put(rng.normal(size=(4, 1, 3, 1)), xylem.f32, backend)
    assert column.squeeze().shape == (4, 3)
    assert column.squeeze(1).shape == (4, 3, 1) and column.squeeze((-1, 1)).shape == (4, 3)
    assert column.squeeze().shares_data_with(column)
    with pytest.raises(xylem.InvalidArgument):
        column.squeeze(0)
    assert t.unsqueeze(0).shape == (1, 3, 4, 5) and t.unsqueeze(-1).shape == (3, 4, 5, 1)
    assert t.unsqueeze(1).shape == (3, 1, 4, 5)
    check(t.unsqueeze(1), x[:, None], xylem.f32)
    with pytest.raises(xylem.InvalidArgument):
        t.unsqueeze(5)
    flat = t.flatten()
    assert flat.shape == (60,) and flat.shares_data_with(t)
    check(flat, x.reshape(-1), xylem.f32)
    strided = t.transpose(0, 2)
    check(strided.flatten(), x.transpose(2, 1, 0).reshape(-1), xylem.f32)
    check(strided.squeeze().unsqueeze(0), x.transpose(2, 1, 0)[None], xylem.f32)


def test_printing(backend):
    t = put(np.array([[1.5, 2.0], [3.0, 4.0]]), xylem.f32, backend)
    assert str(t) == "[[1.5, 2], [3, 4]] shape=[2, 2], strides=[2, 1]"
    assert repr(t).startswith("xylem.Tensor([[1.5, 2]") and "dtype=f32" in repr(t)
    assert t[0, 1].item() == 2.0 and float(t[1, 1]) == 4.0


def test_creation(backend):
    check(xylem.zeros([2, 3], xylem.f32, backend=backend), np.zeros((2, 3)), xylem.f32)
    check(xylem.ones([4], xylem.f64, backend=backend), np.ones(4), xylem.f64)
    check(xylem.full([2, 2], 3.5, backend=backend), np.full((2, 2), 3.5), xylem.f32)
    check(xylem.arange(5, xylem.f32, 1.0, 0.5, backend=backend), 1 + 0.5 * np.arange(5), xylem.f32)
    y = xylem.Tensor([3])
    xylem.fill(y, 2.0, backend=backend)
    check(y, np.full(3, 2.0), xylem.f32)


def test_random(backend):
    u = xylem.uniform([100000], xylem.f32, -1, 1, generator=xylem.Generator(7), backend=backend).numpy()
    assert -1 <= u.min() and u.max() < 1 and abs(u.mean()) < 0.02
    n = xylem.normal([100000], xylem.f32, 1, 2, generator=xylem.Generator(7), backend=backend).numpy()
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    # The same seed gives the same numbers on every framework.
    same = xylem.uniform([1000], generator=xylem.Generator(7), backend=xylem.Backend.native()).numpy()
    np.testing.assert_array_equal(xylem.uniform([1000], generator=xylem.Generator(7), backend=backend).numpy(), same)
    xylem.seed(3)
    first = xylem.normal([10], backend=backend).numpy()
    xylem.seed(3)
    np.testing.assert_array_equal(xylem.normal([10], backend=backend).numpy(), first)
    t = xylem.Tensor([50])
    xylem.fill_uniform(t, 2, 3, backend=backend)
    xylem.fill_normal(t[:10], backend=backend)
    assert (t.numpy()[10:] >= 2).all()


def test_transfers_between_devices(backend, rng):
    native = xylem.Backend.native()
    t = xylem.asarray(rng.normal(size=64).astype(np.float32))
    before = t.transfers
    routes_before = xylem.transfer_routes()
    y = xylem.exp(t, backend=backend)
    y.numpy()
    y.numpy()  # a copy that is current is not transferred again
    assert t.is_current_on(native)
    if backend != native:
        assert t.is_allocated_on(backend) and t.transfers == before + 1
        assert t.transfer_routes.uploads == 1 and t.transfer_routes.bytes == 64 * 4
        assert y.transfer_routes.downloads == 1
        assert xylem.transfer_routes().uploads >= routes_before.uploads + 1
    assert t.transfer_routes.total == t.transfers
