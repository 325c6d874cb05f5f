"""NumPy's names and idioms on xylem tensors (xylem/_numpy_compat.py),
checked against NumPy on random inputs, on native and OpenCL."""
import numpy as np
import pytest

import xylem


def _random(rng, shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def test_dtype_names_match_numpy():
    assert xylem.float32 == xylem.f32 and xylem.float64 == xylem.f64 and xylem.float16 == xylem.f16
    assert xylem.bfloat16 == xylem.bf16 and xylem.int32 == xylem.i32 and xylem.int64 == xylem.i64
    assert xylem.uint8 == xylem.u8 and xylem.bool_ == xylem.boolean
    assert xylem.asarray(np.zeros(2, np.float32)).dtype == xylem.float32


def test_like_creators_and_eye_and_linspace(backend, rng):
    x = xylem.asarray(_random(rng, (3, 5)))
    assert np.array_equal(xylem.zeros_like(x).numpy(), np.zeros((3, 5), np.float32))
    assert np.array_equal(xylem.ones_like(x, xylem.float64).numpy(), np.ones((3, 5)))
    assert np.array_equal(xylem.full_like(x, 2.5).numpy(), np.full((3, 5), 2.5, np.float32))
    for n, m in [(4, None), (3, 5), (5, 2), (1, 1), (0, 3)]:
        assert np.array_equal(xylem.eye(n, m).numpy(), np.eye(n, m, dtype=np.float32)), (n, m)
    for start, stop, num, endpoint in [(0, 1, 5, True), (-3.5, 2, 7, False), (2, 3, 1, True), (1, 0, 0, True)]:
        got = xylem.linspace(start, stop, num, endpoint, xylem.float64).numpy()
        np.testing.assert_allclose(got, np.linspace(start, stop, num, endpoint), rtol=1e-12, atol=1e-12)
    with pytest.raises(xylem.InvalidArgument):
        xylem.eye(-1)


def test_rand_randn_shapes_and_ranges(backend):
    u = xylem.rand(64, 32).numpy()
    assert u.shape == (64, 32) and u.min() >= 0 and u.max() < 1 and u.std() > 0.2
    n = xylem.randn((4096,)).numpy()
    assert n.shape == (4096,) and abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1


def test_copy_clip_std_where(backend, rng):
    a = _random(rng, (6, 7))
    x = xylem.asarray(a)
    c = x.copy()
    assert not c.shares_data_with(x)
    c[0, 0] = 100.0
    assert x.numpy()[0, 0] == a[0, 0] and c.numpy()[0, 0] == 100.0
    assert np.array_equal(xylem.array(x).numpy(), a) and not xylem.array(x).shares_data_with(x)
    np.testing.assert_allclose(x.clip(-0.5, 0.75).numpy(), np.clip(a, -0.5, 0.75))
    np.testing.assert_allclose(x.std().item(), a.astype(np.float64).std(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(x.std(axis=0, ddof=0).numpy(), a.astype(np.float64).std(axis=0), rtol=1e-5)
    np.testing.assert_allclose(xylem.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0))
    np.testing.assert_allclose(xylem.where(x > 0, -1.0, x).numpy(), np.where(a > 0, -1, a))


@pytest.mark.parametrize("key", [
    (None,), (slice(None), None), (0, None, 1), (Ellipsis, None), (None, Ellipsis, 0), (1, Ellipsis, None, 2),
    (slice(1, 3), None, slice(None, None, 2)),
])
def test_new_axes(backend, rng, key):
    a = _random(rng, (3, 4, 5))
    got = xylem.asarray(a)[key]
    assert got.shape == a[key].shape
    assert np.array_equal(got.numpy(), a[key])


def test_boolean_and_integer_indexing(backend, rng):
    a = _random(rng, (4, 3, 5))
    x = xylem.asarray(a)
    mask = a > 0.3
    assert np.array_equal(x[xylem.asarray(mask)].numpy(), a[mask])
    rows = mask[:, :, 0]
    assert np.array_equal(x[rows].numpy(), a[rows])
    assert np.array_equal(x[x > 0.3].numpy(), a[mask])
    for key in ([3, 0, -1, 0], np.array([2, 1]), xylem.asarray(np.array([1, -4], np.int64))):
        expected = a[np.asarray(key.numpy() if isinstance(key, xylem.Tensor) else key)]
        assert np.array_equal(x[key].numpy(), expected)
    before = x.numpy().copy()
    with pytest.raises(xylem.IndexOutOfRange):
        x[[4]]
    with pytest.raises(xylem.ShapeMismatch):
        x[xylem.asarray(np.ones(3, bool))]
    assert np.array_equal(x.numpy(), before)


def test_int_and_index_conversions(backend):
    x = xylem.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert int(x[1, 2]) == 5
    i = xylem.asarray(np.array([2], np.int64))
    assert [10, 20, 30][i[0]] == 30  # __index__
    with pytest.raises(TypeError):
        int(x)
    with pytest.raises(TypeError):
        [1, 2][x[0, 1]]  # a float tensor is no index


def test_boolean_logic(backend, rng):
    a = _random(rng, (5, 6))
    x = xylem.asarray(a)
    p, q = a > 0, a < 0.5
    assert np.array_equal(((x > 0) & (x < 0.5)).numpy(), p & q)
    assert np.array_equal(((x > 0) | (x < 0.5)).numpy(), p | q)
    assert np.array_equal(((x > 0) ^ (x < 0.5)).numpy(), p ^ q)
    assert np.array_equal((~(x > 0)).numpy(), ~p)
    assert np.array_equal(((x > 0) & True).numpy(), p) and np.array_equal((False | (x > 0)).numpy(), p)
    assert np.array_equal(xylem.logical_and(x > 0, x < 0.5).numpy(), np.logical_and(p, q))
    assert (x > 0).any().item() == p.any() and (x > -3).all().item() and not (x > 3).any().item()
    for axis in (0, 1):
        assert np.array_equal((x > 0).any(axis=axis).numpy(), p.any(axis=axis))
        assert np.array_equal((x > 0).all(axis=axis, keepdims=True).numpy(), p.all(axis=axis, keepdims=True))
    assert np.array_equal(x[(x > 0) & (x < 0.5)].numpy(), a[p & q])
    with pytest.raises(TypeError):
        x & x  # not booleans


def test_package_imports_without_numpy():
    # pip's isolated build env has no NumPy, and the stub generator imports
    # the package there: importing must not need NumPy.
    import subprocess
    import sys
    code = "import sys; sys.modules['numpy'] = None; import xylem; assert xylem.eye(2).shape == (2, 2)"
    subprocess.run([sys.executable, "-c", code], check=True)
