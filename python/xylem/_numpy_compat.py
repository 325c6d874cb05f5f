"""What NumPy and PyTorch users reach for first, built on the extension's ops.

Dtype names as NumPy spells them (``xylem.float32``), the ``*_like``
creators, ``eye``, ``linspace``, ``rand``/``randn``, ``Tensor.copy``,
``clip``, ``std``, ``int(t)``, and indexing with ``None`` (a new axis), a
boolean mask, or a list/array/tensor of integers. Each is written once here,
in terms of ops the extension already runs on every backend; nothing is
computed on the host that a backend could compute, except where NumPy and
PyTorch read the host too (a boolean mask's count decides the result's
shape, so the mask is read, as ``torch`` does with ``x[mask]``).
"""
from __future__ import annotations

import builtins
import numbers
from collections.abc import Sequence

try:
    import numpy as np
except ImportError:  # the package imports without NumPy (the stub generator's build env has none)
    np = None

from . import _xylem
from ._xylem import DType, Tensor

# NumPy's dtype names (and PyTorch's, where they agree).
float16 = half = DType.f16
bfloat16 = DType.bf16
float32 = single = DType.f32
float64 = double = DType.f64
int32 = DType.i32
int64 = DType.i64
uint8 = DType.u8
bool_ = DType.bool
complex64 = DType.c64
complex128 = DType.c128


def _shape(shape) -> list[int]:
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return [int(d) for d in shape]


def zeros_like(x: Tensor, dtype: DType | None = None, **kw) -> Tensor:
    """A new tensor of x's shape (and dtype unless given), all zeros."""
    return _xylem.zeros(list(x.shape), dtype or x.dtype, **kw)


def ones_like(x: Tensor, dtype: DType | None = None, **kw) -> Tensor:
    """A new tensor of x's shape (and dtype unless given), all ones."""
    return _xylem.ones(list(x.shape), dtype or x.dtype, **kw)


def full_like(x: Tensor, value: float, dtype: DType | None = None, **kw) -> Tensor:
    """A new tensor of x's shape (and dtype unless given), all `value`."""
    return _xylem.full(list(x.shape), value, dtype or x.dtype, **kw)


def eye(n: int, m: int | None = None, dtype: DType = DType.f32, **kw) -> Tensor:
    """The n x m identity (m defaults to n): ones on the main diagonal."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise _xylem.InvalidArgument(f"invalid_argument: eye: negative size ({n}, {m})")
    out = _xylem.zeros([n, m], dtype, **kw)
    k = min(n, m)
    if k > 0:
        # The diagonal as a strided view (step m + 1 over the flat storage).
        out.reshape(n * m).slice(0, 0, (k - 1) * (m + 1) + 1, m + 1)[...] = 1
    return out


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True,
             dtype: DType = DType.f32, **kw) -> Tensor:
    """`num` evenly spaced values from start to stop (stop included when
    endpoint), as NumPy's linspace; computed as start + k * step."""
    if num < 0:
        raise _xylem.InvalidArgument(f"invalid_argument: linspace: num is {num}, needs >= 0")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    out = _xylem.arange(num, dtype, start, step, **kw)
    if endpoint and num > 1:
        out[num - 1] = stop  # exactly stop, as NumPy gives
    return out


def rand(*shape, dtype: DType = DType.f32, **kw) -> Tensor:
    """Uniform on [0, 1) of the given shape (``rand(2, 3)`` or ``rand((2, 3))``)."""
    dims = _shape(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else _shape(shape)
    return _xylem.uniform(dims, dtype, 0.0, 1.0, **kw)


def randn(*shape, dtype: DType = DType.f32, **kw) -> Tensor:
    """Standard normal of the given shape (``randn(2, 3)`` or ``randn((2, 3))``)."""
    dims = _shape(shape[0]) if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else _shape(shape)
    return _xylem.normal(dims, dtype, 0.0, 1.0, **kw)


def _numpy():
    if np is None:
        raise ImportError("this needs NumPy: pip install numpy")
    return np


def array(obj, dtype: DType | None = None) -> Tensor:
    """A new tensor holding a copy of `obj` (a sequence, a scalar, an
    ndarray, a tensor), as np.array; asarray shares memory where it can."""
    if isinstance(obj, Tensor):
        out = copy(obj)
        return out if dtype is None or dtype == out.dtype else out.astype(dtype)
    return _xylem.asarray(_numpy().array(obj, copy=True), dtype)


def copy(x: Tensor, **kw) -> Tensor:
    """A new contiguous tensor with x's values, sharing nothing with x."""
    out = _xylem.contiguous(x, **kw)
    if out.shares_data_with(x):
        out = zeros_like(x, **kw)
        _xylem.blas.copy(x, out, **kw)
    return out


def clip(x: Tensor, a_min: float, a_max: float, **kw) -> Tensor:
    """x limited to [a_min, a_max] (NumPy's name for clamp)."""
    return _xylem.clamp(x, a_min, a_max, **kw)


def std(x: Tensor, axis=None, keepdims: bool = False, correction: int = 1, ddof: int | None = None,
        **kw) -> Tensor:
    """The standard deviation: sqrt(var); `ddof` is NumPy's name for
    `correction` (NumPy's default is 0, PyTorch's and xylem's 1)."""
    c = correction if ddof is None else ddof
    return _xylem.sqrt(_xylem.var(x, axis, keepdims, c, **kw), **kw)


def _as_operand(value, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else full_like(like, float(value))


_where = _xylem.where


def where(cond: Tensor, x, y, **kw) -> Tensor:
    """x where cond holds, else y; either may be a Python number."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        like = x if isinstance(x, Tensor) else y
        return _where(cond, _as_operand(x, like), _as_operand(y, like), **kw)
    return _where(cond, _xylem.full(list(cond.shape), float(x)), _xylem.full(list(cond.shape), float(y)), **kw)


# Indexing beyond what the extension's __getitem__ takes (ints, slices,
# Ellipsis): None inserts an axis of one element; a boolean mask selects
# the elements where it is true; integers in a list, ndarray or tensor
# select along the first axis (negative ones counting from the end).
_basic_getitem = Tensor.__getitem__


def _is_int_sequence(key) -> bool:
    if isinstance(key, Tensor):
        return key.dtype in (DType.i32, DType.i64)
    if np is not None and isinstance(key, np.ndarray):
        return key.dtype.kind in "iu"
    return isinstance(key, list) and len(key) > 0 and builtins.all(
        isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in key)


def _is_mask(key) -> bool:
    if isinstance(key, Tensor):
        return key.dtype == DType.bool
    if np is not None and isinstance(key, np.ndarray):
        return key.dtype == np.bool_
    return False


def _select_rows(x: Tensor, rows) -> Tensor:
    np = _numpy()
    n = x.shape[0] if x.ndim > 0 else 0
    idx = np.asarray(rows.numpy() if isinstance(rows, Tensor) else rows, dtype=np.int64).reshape(-1)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise _xylem.IndexOutOfRange(
            f"index_out_of_range: index {int(idx[bad][0])} is out of bounds for axis 0 of size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    return _xylem.index_select(x, 0, _xylem.asarray(idx))


def _getitem(self: Tensor, key):
    if _is_mask(key):
        np = _numpy()
        mask = key.numpy() if isinstance(key, Tensor) else key
        if tuple(mask.shape) != tuple(self.shape[:mask.ndim]):
            raise _xylem.ShapeMismatch(
                f"shape_mismatch: boolean index of shape {list(mask.shape)} does not match the tensor's "
                f"leading dims {list(self.shape[:mask.ndim])}")
        rest = list(self.shape[mask.ndim:])
        flat = self.reshape([int(np.prod(mask.shape, dtype=np.int64))] + rest)
        return _select_rows(flat, np.flatnonzero(mask))
    if _is_int_sequence(key):
        return _select_rows(self, key)
    if key is None or (isinstance(key, tuple) and builtins.any(k is None for k in key)):
        parts = key if isinstance(key, tuple) else (key,)
        used = sum(1 for k in parts if k is not None and k is not Ellipsis)
        expanded: list = []
        for k in parts:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (self.ndim - used))
            else:
                expanded.append(k)
        # Where each None lands in the result: every earlier element that
        # keeps an axis (a slice, another None) moves it one further.
        inserts, basic, out_axis = [], [], 0
        for k in expanded:
            if k is None:
                inserts.append(out_axis)
                out_axis += 1
            else:
                basic.append(k)
                if not isinstance(k, numbers.Integral):
                    out_axis += 1
        out = _basic_getitem(self, tuple(basic)) if basic else self
        for axis in inserts:
            out = out.unsqueeze(axis)
        return out
    return _basic_getitem(self, key)


# Logic on boolean tensors (``(x > 0) & (x < 1)``, ``~mask``, ``mask.any()``):
# through 0/1 in f32, where minimum is "and", maximum "or", inequality
# "xor" and the comparisons give booleans back. Other dtypes raise TypeError,
# as bitwise integer ops are not built.
def _as_mask(t, what: str) -> Tensor:
    if isinstance(t, bool) or (np is not None and isinstance(t, np.bool_)):
        return _xylem.full([], 1.0 if t else 0.0)
    if not isinstance(t, Tensor) or t.dtype != DType.bool:
        raise TypeError(f"{what} takes boolean tensors (or Python bools), not {getattr(t, 'dtype', type(t).__name__)}")
    return t.astype(DType.f32)


def logical_and(a, b, **kw) -> Tensor:
    """Element-wise a and b of boolean tensors (broadcasting)."""
    return _xylem.ne(_xylem.minimum(_as_mask(a, "&"), _as_mask(b, "&"), **kw), _xylem.full([], 0.0), **kw)


def logical_or(a, b, **kw) -> Tensor:
    """Element-wise a or b of boolean tensors (broadcasting)."""
    return _xylem.ne(_xylem.maximum(_as_mask(a, "|"), _as_mask(b, "|"), **kw), _xylem.full([], 0.0), **kw)


def logical_xor(a, b, **kw) -> Tensor:
    """Element-wise a xor b of boolean tensors (broadcasting)."""
    return _xylem.ne(_as_mask(a, "^"), _as_mask(b, "^"), **kw)


def logical_not(a, **kw) -> Tensor:
    """Element-wise not of a boolean tensor."""
    return _xylem.eq(_as_mask(a, "~"), _xylem.full([], 0.0), **kw)


def any(x: Tensor, axis=None, keepdims: bool = False, **kw) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether any element (along `axis`) of a boolean tensor is true."""
    return _xylem.gt(_xylem.max(_as_mask(x, "any"), axis, keepdims, **kw), _xylem.full([], 0.0), **kw)


def all(x: Tensor, axis=None, keepdims: bool = False, **kw) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether every element (along `axis`) of a boolean tensor is true."""
    return _xylem.gt(_xylem.min(_as_mask(x, "all"), axis, keepdims, **kw), _xylem.full([], 0.0), **kw)


def _int(self: Tensor) -> int:
    if self.size != 1:
        raise TypeError(f"only a tensor of one element converts to int, not one of shape {list(self.shape)}")
    return int(self.item())


def _index(self: Tensor) -> int:
    if self.dtype not in (DType.i32, DType.i64, DType.u8) or self.size != 1:
        raise TypeError("only an integer tensor of one element can be used as an index")
    return int(self.item())


Tensor.__getitem__ = _getitem
Tensor.__int__ = _int
Tensor.__index__ = _index
Tensor.copy = copy
Tensor.clone = copy
Tensor.clip = clip
Tensor.std = std
Tensor.__and__ = Tensor.__rand__ = logical_and
Tensor.__or__ = Tensor.__ror__ = logical_or
Tensor.__xor__ = Tensor.__rxor__ = logical_xor
Tensor.__invert__ = logical_not
Tensor.any = any
Tensor.all = all

__all__ = ["float16", "half", "bfloat16", "float32", "single", "float64", "double", "int32", "int64", "uint8",
           "bool_", "complex64", "complex128", "zeros_like", "ones_like", "full_like", "eye", "linspace", "rand",
           "randn", "array", "copy", "clip", "std", "where", "logical_and", "logical_or", "logical_xor",
           "logical_not", "any", "all"]
