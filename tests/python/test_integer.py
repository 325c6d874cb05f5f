"""Integer tensors (i32, i64) against NumPy: operators with tensors and
Python ints (wrapping as NumPy's), comparisons, -x and abs, sum/max/min
(an i32 sum is i64), true division and Python floats promoting to float64,
and the ops integers do not take raising DTypeMismatch."""
import numpy as np
import pytest

import xylem

INT_DTYPES = [(xylem.i32, np.int32), (xylem.i64, np.int64)]


def ints(rng, np_dtype, shape):
    """Small values of either sign, and values near the limits (they wrap)."""
    info = np.iinfo(np_dtype)
    small = rng.integers(-100, 101, shape)
    near = np.where(rng.integers(0, 2, shape) == 1, info.max - rng.integers(0, 100, shape),
                    info.min + rng.integers(0, 100, shape))
    return np.where(rng.integers(0, 2, shape) == 1, small, near).astype(np_dtype)


def put(array, backend):
    return xylem.contiguous(xylem.asarray(array), backend=backend)


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))])
def test_operators(backend, rng, dtype, np_dtype, shapes):
    x, y = ints(rng, np_dtype, shapes[0]), ints(rng, np_dtype, shapes[1])
    xt, yt = put(x, backend), put(y, backend)
    assert xt.dtype == dtype
    with np.errstate(over="ignore"):
        for got, want in [(xt + yt, x + y), (xt - yt, x - y), (xt * yt, x * y), (-xt, -x), (abs(xt), np.abs(x)),
                          (xylem.maximum(xt, yt), np.maximum(x, y)), (xylem.minimum(xt, yt), np.minimum(x, y))]:
            assert got.dtype == dtype
            np.testing.assert_array_equal(got.numpy(), want)
    for got, want in [(xt < yt, x < y), (xt <= yt, x <= y), (xt > yt, x > y), (xt >= yt, x >= y),
                      (xt == yt, x == y), (xt != yt, x != y)]:
        assert got.dtype == xylem.boolean
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_python_ints(backend, rng, dtype, np_dtype):
    x = ints(rng, np_dtype, (4, 5))
    t = put(x, backend)
    with np.errstate(over="ignore"):
        for got, want in [(t + 1, x + np_dtype(1)), (2 * t, np_dtype(2) * x), (1 - t, np_dtype(1) - x),
                          (t * -3, x * np_dtype(-3))]:
            assert got.dtype == dtype
            np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal((t >= 0).numpy(), x >= 0)
    u = put(x, backend)
    u += 7
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(u.numpy(), x + np_dtype(7))
    if np_dtype == np.int64:  # beyond 2^53: exact
        big = 2**62 + 1
        np.testing.assert_array_equal((t - big).numpy(), x - np.int64(big))
    else:
        with pytest.raises(xylem.Error):
            t + 2**40  # out of bounds for i32, as NumPy


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_true_division_and_floats_give_f64(backend, rng, dtype, np_dtype):
    if not backend.hardware.caps.fp64:
        pytest.skip("the device has no fp64")
    x = rng.integers(-50, 50, (3, 4)).astype(np_dtype)
    y = rng.integers(1, 9, (3, 4)).astype(np_dtype)
    t, s = put(x, backend), put(y, backend)
    for got, want in [(t / 2, x / 2), (3 / s, 3 / y), (t / s, x / y), (t * 0.5, x * 0.5), (t + 1.5, x + 1.5),
                      (t < 0.5, x < 0.5)]:
        assert str(np.asarray(got).dtype) == str(want.dtype)
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want.astype(np.float64), rtol=1e-15)
    with pytest.raises(xylem.DTypeMismatch):
        t += 1.5  # NumPy's UFuncTypeError: the f64 result cannot be stored in an int tensor
    with pytest.raises(TypeError):
        t /= 2


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_reductions(backend, rng, dtype, np_dtype):
    x = ints(rng, np_dtype, (6, 7, 5))
    t = put(x, backend)
    wide = x.astype(np.int64)
    with np.errstate(over="ignore"):
        for axis in [None, 0, 1, (0, 2), -1]:
            s = t.sum(axis=axis)
            assert s.dtype == xylem.i64  # NumPy's and PyTorch's: an i32 sum is i64
            np.testing.assert_array_equal(np.asarray(s.numpy()), np.sum(wide, axis=axis))
            np.testing.assert_array_equal(np.asarray(t.max(axis=axis).numpy()), np.max(x, axis=axis))
            np.testing.assert_array_equal(np.asarray(t.min(axis=axis, keepdims=True).numpy()),
                                          np.min(x, axis=axis, keepdims=True))
            assert t.max(axis=axis).dtype == dtype
    np.testing.assert_array_equal(xylem.argmax(t, axis=1).numpy(), np.argmax(x, axis=1))
    np.testing.assert_array_equal(xylem.argmin(t, axis=0).numpy(), np.argmin(x, axis=0))


def test_counting_correct_predictions(backend, rng):
    logits = rng.standard_normal((50, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 50).astype(np.int64)
    hits = xylem.argmax(put(logits, backend), axis=1) == put(labels, backend)
    count = hits.sum()  # a boolean sum: the count of trues, i64 (NumPy's, PyTorch's)
    assert count.dtype == xylem.i64
    assert count.item() == int((logits.argmax(1) == labels).sum())


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_where(backend, rng, dtype, np_dtype):
    x, y = ints(rng, np_dtype, (4, 5)), ints(rng, np_dtype, (5,))
    c = rng.integers(0, 2, (4, 5)).astype(bool)
    got = xylem.where(put(c, backend), put(x, backend), put(y, backend))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), np.where(c, x, y))


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_what_integers_do_not_take(backend, rng, dtype, np_dtype):
    x = ints(rng, np_dtype, (3, 4))
    t = put(x, backend)
    for call in [lambda: xylem.div(t, t), lambda: t ** 2, lambda: xylem.exp(t), lambda: t.mean(), lambda: t.var(),
                 lambda: xylem.sqrt(t), lambda: t.clamp(0, 1)]:
        with pytest.raises(xylem.DTypeMismatch) as info:
            call()
        assert ("i32" if dtype == xylem.i32 else "i64") in str(info.value)  # names the dtype
    other = xylem.i64 if dtype == xylem.i32 else xylem.i32
    with pytest.raises(xylem.DTypeMismatch):
        t + xylem.cast(t, other)
    np.testing.assert_array_equal(t.numpy(), x)  # nothing changed
