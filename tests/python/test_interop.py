"""Zero-copy exchange with NumPy and DLPack: shared addresses, writes seen
on both sides, copies where asked, BufferError for what is unsupported."""
import ml_dtypes
import numpy as np
import pytest

import xylem

DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_asarray_and_numpy_share_memory(dtype):
    a = np.ones((4, 6), dtype=dtype)
    t = xylem.asarray(a)
    v = t.numpy()
    assert address(v) == address(a) and v.dtype == a.dtype and v.flags.writeable
    assert address(np.asarray(t)) == address(a)


def test_strided_and_reversed_arrays_are_shared():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = base[::2, ::-2]
    t = xylem.asarray(a)
    assert address(t.numpy()) == address(a)
    np.testing.assert_array_equal(xylem.contiguous(t).numpy(), a)


def test_writes_are_seen_on_both_sides():
    a = np.arange(6, dtype=np.float32)
    t = xylem.asarray(a)
    a[0] = 100
    assert xylem.sum(t).item() == 115
    xylem.exp(xylem.asarray(np.zeros(6, np.float32)), out=t)
    np.testing.assert_array_equal(t.numpy(), np.ones(6))  # waits for the write
    assert a[0] == 1
    t.numpy()[1] = 5
    assert xylem.sum(t).item() == 10


def test_what_cannot_be_shared_is_copied():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    swapped = np.arange(3.0).astype(">f8")
    for a in (ro, swapped, np.arange(3.0).astype(np.float32)):
        t = xylem.asarray(a, xylem.f64)
        assert address(t.numpy()) != address(a)
        np.testing.assert_array_equal(t.numpy(), np.arange(3.0))


def test_numpy_array_outlives_tensor_and_tensor_outlives_array():
    t = xylem.asarray(np.arange(5, dtype=np.int64))
    v = t.numpy()
    del t
    np.testing.assert_array_equal(v, np.arange(5))
    v = xylem.asarray(np.arange(5, dtype=np.int64)).numpy()
    np.testing.assert_array_equal(v, np.arange(5))


def test_asarray_copy_requests():
    t = xylem.asarray(np.arange(4, dtype=np.float32))
    assert address(np.asarray(t, copy=True)) != address(t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)


@pytest.mark.parametrize("dtype", DTYPES[:1] + DTYPES[2:], ids=lambda d: np.dtype(d).name)
def test_dlpack_round_trips_share_memory(dtype):
    a = np.ones((3, 5), dtype=dtype)[:, ::2]
    t = xylem.from_dlpack(a)
    assert t.__dlpack_device__() == (1, 0)
    assert address(t.numpy()) == address(a)
    b = np.from_dlpack(t)
    assert address(b) == address(a) and b.strides == a.strides
    b[0, 0] = 0
    assert not t.numpy()[0, 0]


def test_dlpack_capsules_follow_max_version():
    t = xylem.asarray(np.ones(3, np.float32))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 2)))
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))


def test_dlpack_copy_true_copies():
    a = np.arange(4, dtype=np.float32)
    t = xylem.asarray(a)
    c = np.from_dlpack(t, copy=True)
    assert address(c) != address(a)
    np.testing.assert_array_equal(c, a)
    assert address(xylem.from_dlpack(a, copy=True).numpy()) != address(a)


def test_dlpack_unsupported_requests_raise_buffer_error():
    t = xylem.asarray(np.ones(3, np.float32))
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(4, 0))  # OpenCL
    with pytest.raises(BufferError):
        t.__dlpack__(stream=5)  # host memory takes no stream
    ro = np.ones(3)
    ro.flags.writeable = False
    with pytest.raises(BufferError):
        xylem.from_dlpack(ro, copy=False)


def test_read_only_dlpack_arrays_are_copied():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = xylem.from_dlpack(ro)
    assert address(t.numpy()) != address(ro)
    np.testing.assert_array_equal(t.numpy(), ro)


def test_host_copy_semantics_on_each_backend(backend):
    a = np.arange(6, dtype=np.float32)
    t = xylem.contiguous(xylem.asarray(a), backend=backend)
    v = t.numpy()  # the host copy, current and counted as written
    v[0] = 10
    assert xylem.sum(t, backend=backend).item() == 25
    xylem.exp(xylem.contiguous(xylem.asarray(np.zeros(6, np.float32)), backend=backend), out=t)
    w = t.numpy()
    np.testing.assert_array_equal(w, np.ones(6))
    if backend.framework == "native":
        assert address(w) == address(v)  # one memory: no host copy apart
    cap = np.from_dlpack(t)
    np.testing.assert_array_equal(cap, np.ones(6))
