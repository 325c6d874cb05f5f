"""xylem errors arrive as Python exceptions of the mapped classes, with the
C++ code and message, raised before any tensor changes."""
import numpy as np
import pytest

import xylem
from conftest import put

nn, blas = xylem.nn, xylem.blas

HIERARCHY = {
    "InvalidArgument": ValueError, "ShapeMismatch": ValueError, "DTypeMismatch": TypeError,
    "OutOfMemory": MemoryError, "Unsupported": NotImplementedError, "UninitializedRead": RuntimeError,
    "CompileFailed": RuntimeError, "PluginUnavailable": RuntimeError, "DeviceLost": RuntimeError,
    "IOError": OSError, "InternalError": RuntimeError, "Timeout": TimeoutError,
    "CommunicationError": ConnectionError, "IndexOutOfRange": IndexError,
}


def test_hierarchy():
    for name, builtin in HIERARCHY.items():
        cls = getattr(xylem, name)
        assert issubclass(cls, xylem.Error) and issubclass(cls, builtin), name


def snapshot(*tensors):
    # read() copies; numpy() would lend the host copy, which counts as a write.
    return [(t.version, t.read().result()) for t in tensors]


def unchanged(before, *tensors):
    for (version, values), t in zip(before, tensors):
        assert t.version == version
        np.testing.assert_array_equal(t.read().result(), values)


BAD_CALLS = {
    "add shapes": (xylem.ShapeMismatch, "shape_mismatch",
                   lambda x, y, o: xylem.add(x, y.reshape(4, 3), out=o)),
    "out shape": (xylem.ShapeMismatch, "shape_mismatch", lambda x, y, o: xylem.exp(x, out=o[:2])),
    "dtypes": (xylem.DTypeMismatch, "dtype_mismatch",
               lambda x, y, o: xylem.mul(x, xylem.cast(y, xylem.f64 if x.dtype == xylem.f32 else xylem.f32), out=o)),
    "integer input": (xylem.DTypeMismatch, "dtype_mismatch", lambda x, y, o: xylem.exp(xylem.cast(x, xylem.i32))),
    "operator": (xylem.ShapeMismatch, "shape_mismatch", lambda x, y, o: o.__iadd__(y.reshape(12, 1))),
    "gemm": (xylem.ShapeMismatch, "shape_mismatch", lambda x, y, o: blas.gemm(x, y, o)),
    "axis": (xylem.InvalidArgument, "invalid_argument", lambda x, y, o: xylem.sum(x, 5, out=o)),
    "clamp": (xylem.InvalidArgument, "invalid_argument", lambda x, y, o: xylem.clamp(x, 1, 0, out=o)),
    "softmax": (xylem.InvalidArgument, "invalid_argument", lambda x, y, o: nn.softmax(x, 3, out=o)),
    "axpy": (xylem.ShapeMismatch, "shape_mismatch", lambda x, y, o: blas.axpy(1.0, x[0], o[:, 0])),
}


@pytest.mark.parametrize("case", BAD_CALLS)
def test_bad_calls_raise_and_change_nothing(backend, rng, case):
    cls, code, call = BAD_CALLS[case]
    x = put(rng.normal(size=(3, 4)), xylem.f32, backend)
    y = put(rng.normal(size=(3, 4)), xylem.f32, backend)
    out = put(rng.normal(size=(3, 4)), xylem.f32, backend)
    before = snapshot(x, y, out)
    with pytest.raises(cls) as info:
        call(x, y, out)
    assert info.value.code == code
    assert str(info.value) == f"{code}: {info.value.message}"
    unchanged(before, x, y, out)


def test_uninitialized_read(backend):
    with pytest.raises(xylem.UninitializedRead):
        xylem.exp(xylem.Tensor([3])).numpy()


def test_plugin_unavailable_or_unknown():
    with pytest.raises(xylem.Error) as info:
        xylem.Backend.open("nosuchframework")
    assert info.value.code in ("invalid_argument", "plugin_unavailable")
    for fw in xylem.Backend.frameworks():
        if not fw.available:
            with pytest.raises(xylem.PluginUnavailable, match=fw.name):
                xylem.Backend.open(fw.name)


def test_future_error(backend):
    with pytest.raises(xylem.InvalidArgument):
        blas.iamax(xylem.zeros([0], backend=backend)).result()


def test_item_of_many():
    with pytest.raises(xylem.InvalidArgument):
        xylem.zeros([2]).item()
