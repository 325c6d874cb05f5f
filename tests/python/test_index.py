"""Indexing and shaping against NumPy: index_select, gather, scatter,
scatter_add, one_hot, nn.embedding and its gradient, layers.Embedding,
concatenate, stack, split, chunk, pad, permute, transpose; out-of-range
indices raise IndexOutOfRange (an IndexError) at the next host wait and change
nothing but the output."""
import numpy as np
import pytest

import xylem
from conftest import check, put

INDEX_DTYPES = [np.int32, np.int64]


def gather_ref(x, axis, index):
    return np.take_along_axis(x, index, axis)


@pytest.mark.parametrize("itype", INDEX_DTYPES)
def test_gather_index_select_embedding(backend, rng, itype):
    x = rng.normal(size=(5, 6, 4))
    xt = put(x, xylem.f64 if backend.hardware.caps.fp64 else xylem.f32, backend)
    dtype = xt.dtype
    index = rng.integers(0, 6, size=(5, 3, 4)).astype(itype)
    check(xylem.gather(xt, 1, xylem.asarray(index)), gather_ref(x, 1, index), dtype)
    sel = rng.integers(0, 4, size=7).astype(itype)
    check(xylem.index_select(xt, -1, xylem.asarray(sel)), np.take(x, sel, axis=-1), dtype)
    w = rng.normal(size=(11, 8))
    ids = rng.integers(0, 11, size=(2, 3)).astype(itype)
    check(xylem.nn.embedding(put(w, dtype, backend), xylem.asarray(ids)), w[ids], dtype)


@pytest.mark.parametrize("itype", INDEX_DTYPES)
def test_scatter_and_gradients(backend, rng, itype):
    y = rng.normal(size=(4, 5))
    src = rng.integers(-4, 5, size=(9, 5)).astype(np.float64)
    index = rng.integers(0, 4, size=(9, 5)).astype(itype)
    expect = y.copy()
    np.add.at(expect, (index, np.arange(5)[None, :].repeat(9, 0)), src)
    check(xylem.scatter_add(put(y, xylem.f32, backend), 0, xylem.asarray(index), put(src, xylem.f32, backend)),
          expect, xylem.f32)
    # Unique targets per column: scatter is a plain assignment.
    perm = np.stack([rng.permutation(4) for _ in range(5)], axis=1).astype(itype)
    src4 = rng.normal(size=(4, 5))
    expect = y.copy()
    np.put_along_axis(expect, perm, src4, 0)
    check(xylem.scatter(put(y, xylem.f32, backend), 0, xylem.asarray(perm), put(src4, xylem.f32, backend)), expect,
          xylem.f32)
    # The embedding gradient: rows summed, the padding row left at 0.
    ids = rng.integers(0, 6, size=(3, 7)).astype(itype)
    dy = rng.integers(-3, 4, size=(3, 7, 2)).astype(np.float64)
    grad = np.zeros((6, 2))
    np.add.at(grad, ids, dy)
    grad[2] = 0
    got = xylem.nn.embedding_backward(put(dy, xylem.f32, backend), xylem.asarray(ids), 6, padding_idx=2)
    np.testing.assert_array_equal(got.numpy(), grad)


def test_one_hot(backend, rng):
    ids = rng.integers(0, 5, size=(2, 3))
    np.testing.assert_array_equal(xylem.one_hot(xylem.asarray(ids), 5).numpy(), np.eye(5, dtype=np.int64)[ids])
    np.testing.assert_array_equal(xylem.one_hot(xylem.asarray(ids), 5, xylem.f32).numpy(), np.eye(5)[ids])


def test_out_of_range_raises_index_error(backend, rng):
    x = put(rng.normal(size=(4, 3)), xylem.f32, backend)
    before = x.numpy().copy()
    for bad in (4, -1):
        index = xylem.asarray(np.array([0, bad, 1], dtype=np.int64))
        # The device finds it; the next host wait (here the read) raises.
        y = xylem.index_select(x, 0, index)
        with pytest.raises(IndexError):
            y.numpy()
        y = xylem.nn.embedding(x, index)
        with pytest.raises(xylem.IndexOutOfRange):
            y.numpy()
    np.testing.assert_array_equal(x.numpy(), before)


def test_embedding_layer(backend, rng):
    layer = xylem.layers.Embedding(7, 3, padding_idx=0, generator=xylem.Generator(1))
    w = layer.weight.value.numpy()
    assert np.all(w[0] == 0)
    ids = xylem.asarray(np.array([[1, 0, 6]], dtype=np.int64))
    y = layer(ids)
    np.testing.assert_array_equal(y.numpy(), w[[[1, 0, 6]]])
    assert layer.backward(xylem.asarray(np.ones((1, 3, 3), dtype=np.float32))) is None
    grad = np.zeros((7, 3))
    grad[[1, 6]] = 1
    np.testing.assert_array_equal(layer.weight.grad.numpy(), grad)


def test_shaping(backend, rng):
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(4, 3))
    at, bt = put(a, xylem.f32, backend), put(b, xylem.f32, backend)
    check(xylem.concatenate([at, bt], 0), np.concatenate([a, b], 0), xylem.f32)
    check(xylem.stack([at, at], 1), np.stack([a, a], 1), xylem.f32)
    parts = xylem.split(bt, [1, 3], 0)
    check(parts[1], b[1:], xylem.f32)
    assert len(xylem.chunk(bt, 3, 0)) == 2
    check(xylem.pad(at, [1, 2, 0, 1], 5.0), np.pad(a, ((0, 1), (1, 2)), constant_values=5.0), xylem.f32)
    x = rng.normal(size=(2, 3, 4))
    xt = put(x, xylem.f32, backend)
    check(xylem.permute(xt, [2, 0, 1]), np.transpose(x, (2, 0, 1)), xylem.f32)
    check(xylem.transpose(xt, 0, 2), np.swapaxes(x, 0, 2), xylem.f32)
