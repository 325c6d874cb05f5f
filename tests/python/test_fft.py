"""xylem.fft against numpy.fft: every transform and norm, prime and
power-of-two lengths, batches as views, irfft's n; OpenCL devices run the
transforms only with the native fallback."""
import numpy as np
import pytest

import xylem

NORMS = [None, "backward", "ortho", "forward"]


def _fallback(backend):
    """The backend itself where it runs the transforms, else the same device
    with Fallback.native (OpenCL: the transforms run on the host)."""
    if backend.supports(xylem.Op.fft_c2c, xylem.c64):
        return backend
    with pytest.raises(xylem.Unsupported):
        xylem.fft.fft(xylem.asarray(np.ones(4, np.complex64)), backend=backend)
    config = xylem.BackendConfig(framework=backend.framework, fallback=xylem.Fallback.native)
    return xylem.Backend(config)


def _signal(rng, shape, dtype):
    if np.dtype(dtype).kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _tol(dtype):
    return (2e-5, 2e-5) if np.dtype(dtype) in (np.complex64, np.float32) else (1e-12, 1e-12)


def _check(got, expected, dtype, scale):
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 7, 16, 97])
@pytest.mark.parametrize("norm", NORMS)
def test_fft_ifft(backend, rng, dtype, n, norm):
    b = _fallback(backend)
    a = _signal(rng, (3, n), dtype)
    x = xylem.asarray(a)
    for ours, theirs in ((xylem.fft.fft, np.fft.fft), (xylem.fft.ifft, np.fft.ifft)):
        y = ours(x, norm=norm, backend=b)
        assert y.dtype == x.dtype and y.shape == a.shape
        _check(y, theirs(a.astype(np.complex128), norm=norm), dtype, n)
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, 16, 97])
@pytest.mark.parametrize("norm", NORMS)
def test_rfft_irfft(backend, rng, dtype, n, norm):
    b = _fallback(backend)
    a = _signal(rng, (2, 3, n), dtype)
    y = xylem.fft.rfft(xylem.asarray(a), norm=norm, backend=b)
    expected = np.fft.rfft(a.astype(np.float64), norm=norm)
    assert y.shape == expected.shape
    _check(y, expected, dtype, n)
    back = xylem.fft.irfft(y, n, norm=norm, backend=b)
    assert back.shape == a.shape and np.asarray(back).dtype == a.dtype
    _check(back, a, dtype, n)
    spectrum = y.numpy().astype(np.complex128)
    # None: 2*(m - 1), which is 0 (an error, as NumPy's) for one frequency.
    for m in [max(1, n - 1), n + 3] + ([None] if n > 1 else []):
        _check(xylem.fft.irfft(y, m, norm=norm, backend=b), np.fft.irfft(spectrum, m, norm=norm), dtype, n + 3)


@pytest.mark.parametrize("shape", [(1, 1), (7, 8), (4, 97)])
@pytest.mark.parametrize("norm", NORMS)
def test_2d(backend, rng, shape, norm):
    b = _fallback(backend)
    c = _signal(rng, (2,) + shape, np.complex128)
    r = _signal(rng, (2,) + shape, np.float64)
    scale = shape[0] * shape[1]
    _check(xylem.fft.fft2(xylem.asarray(c), norm=norm, backend=b), np.fft.fft2(c, norm=norm), np.complex128, scale)
    _check(xylem.fft.ifft2(xylem.asarray(c), norm=norm, backend=b), np.fft.ifft2(c, norm=norm), np.complex128, scale)
    y = xylem.fft.rfft2(xylem.asarray(r), norm=norm, backend=b)
    _check(y, np.fft.rfft2(r, norm=norm), np.complex128, scale)
    _check(xylem.fft.irfft2(y, shape[1], norm=norm, backend=b), r, np.float64, scale)


def test_views(backend, rng):
    b = _fallback(backend)
    a = _signal(rng, (5, 6, 9), np.complex64)
    view = xylem.asarray(a)[::2, :, 1:8]
    _check(xylem.fft.fft(view, backend=b), np.fft.fft(a[::2, :, 1:8].astype(np.complex128)), np.complex64, 7)
    t = xylem.asarray(a[0]).T
    _check(xylem.fft.fft(t, backend=b), np.fft.fft(a[0].T.astype(np.complex128)), np.complex64, 6)


def test_errors(backend):
    x = xylem.asarray(np.ones((2, 4), np.float32))
    with pytest.raises(xylem.DTypeMismatch):
        xylem.fft.fft(x, backend=backend)
    with pytest.raises(xylem.InvalidArgument):
        xylem.fft.fft(xylem.asarray(np.ones(4, np.complex64)), norm="sideways", backend=backend)
    with pytest.raises(xylem.InvalidArgument):
        xylem.fft.irfft(xylem.asarray(np.ones(4, np.complex64)), 0, backend=backend)
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 4), np.float32))
