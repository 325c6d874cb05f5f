"""xylem.blas against NumPy in float64, on every backend."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put

blas = xylem.blas


def test_level1_reductions(backend, rng):
    for dtype in float_dtypes(backend):
        x, y = rng.normal(size=33), rng.normal(size=33)
        xt, yt = put(x, dtype, backend), put(y, dtype, backend)
        check(blas.asum(xt).result(), np.abs(x).sum(), dtype)
        check(blas.nrm2(xt).result(), np.linalg.norm(x), dtype)
        check(blas.dot(xt, yt).result(), x @ y, dtype)
        assert blas.iamax(xt).result() == np.argmax(np.abs(x))
        out = xylem.Tensor([1], dtype)
        assert blas.dot(xt, yt, out=out) is None
        check(out, [x @ y], dtype)
        index = xylem.Tensor([1], xylem.i64)
        blas.iamax(xt[::2], out=index)
        assert index.item() == np.argmax(np.abs(x[::2]))


def test_level1_updates(backend, rng):
    for dtype in float_dtypes(backend):
        x, y = rng.normal(size=10), rng.normal(size=10)
        xt, yt = put(x, dtype, backend), put(y, dtype, backend)
        blas.axpy(2.0, xt, yt)
        check(yt, y + 2 * x, dtype)
        blas.scal(0.5, xt)
        check(xt, 0.5 * x, dtype)
        blas.swap(xt, yt)
        check(xt, y + 2 * x, dtype)
        check(yt, 0.5 * x, dtype)
        blas.copy(yt, xt)
        check(xt, 0.5 * x, dtype)
        a, b = rng.normal(size=10), rng.normal(size=10)
        at, bt = put(a, dtype, backend), put(b, dtype, backend)
        blas.rot(at, bt, 0.6, 0.8)
        check(at, 0.6 * a + 0.8 * b, dtype)
        check(bt, 0.6 * b - 0.8 * a, dtype)


@pytest.mark.parametrize("trans", [False, True])
def test_gemv(backend, rng, trans):
    for dtype in float_dtypes(backend):
        a = rng.normal(size=(5, 7))
        x = rng.normal(size=5 if trans else 7)
        y = rng.normal(size=7 if trans else 5)
        op = a.T if trans else a
        check(blas.gemv(put(a, dtype, backend), put(x, dtype, backend), trans=trans), op @ x, dtype)
        yt = put(y, dtype, backend)
        blas.gemv(put(a, dtype, backend), put(x, dtype, backend), yt, alpha=2, beta=0.5, trans=trans)
        check(yt, 2 * op @ x + 0.5 * y, dtype)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm(backend, rng, trans_a, trans_b):
    dtypes = float_dtypes(backend) + [xylem.f16, xylem.bf16]
    for dtype in dtypes:
        a = rng.normal(size=(6, 4) if trans_a else (4, 6))
        b = rng.normal(size=(5, 6) if trans_b else (6, 5))
        c = rng.normal(size=(4, 5))
        # The reference takes the inputs as the dtype stores them.
        a_, b_, c_ = (put(v, dtype, backend) for v in (a, b, c))
        stored = [np.asarray(t).astype(np.float64) for t in (a_, b_, c_)]
        sa, sb, sc = stored
        ref_a, ref_b = (sa.T if trans_a else sa), (sb.T if trans_b else sb)
        check(blas.gemm(a_, b_, trans_a=trans_a, trans_b=trans_b), ref_a @ ref_b, dtype)
        blas.gemm(a_, b_, c_, alpha=1.5, beta=-1, trans_a=trans_a, trans_b=trans_b)
        check(c_, 1.5 * ref_a @ ref_b - sc, dtype)


def test_gemm_batched(backend, rng):
    a, b = rng.normal(size=(3, 4, 6)), rng.normal(size=(1, 6, 2))
    check(blas.gemm(put(a, xylem.f32, backend), put(b, xylem.f32, backend)), a @ b, xylem.f32)


def test_iamin(backend, rng):
    for dtype in float_dtypes(backend):
        x = rng.normal(size=41)
        xt = put(x, dtype, backend)
        stored = np.asarray(xt).astype(np.float64)
        assert blas.iamin(xt).result() == np.argmin(np.abs(stored))
        index = xylem.Tensor([1], xylem.i64)
        assert blas.iamin(xt[::3], out=index) is None
        assert index.item() == np.argmin(np.abs(stored[::3]))
    with pytest.raises(xylem.InvalidArgument):
        blas.iamin(put(np.zeros(0), xylem.f32, backend))


def test_ger(backend, rng):
    for dtype in float_dtypes(backend):
        a, x, y = rng.normal(size=(4, 6)), rng.normal(size=4), rng.normal(size=6)
        at = put(a, dtype, backend)
        blas.ger(-0.5, put(x, dtype, backend), put(y, dtype, backend), at)
        check(at, a - 0.5 * np.outer(x, y), dtype)


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [False, True])
def test_syrk(backend, rng, lower, trans):
    for dtype in float_dtypes(backend):
        a, c = rng.normal(size=(3, 5) if trans else (5, 3)), rng.normal(size=(5, 5))
        op = a.T if trans else a
        full = 2 * op @ op.T + 0.5 * c
        expect = np.where(np.tril(np.ones((5, 5))) if lower else np.triu(np.ones((5, 5))), full, c)
        ct = put(c, dtype, backend)
        blas.syrk(put(a, dtype, backend), ct, alpha=2, beta=0.5, lower=lower, trans=trans)
        check(ct, expect, dtype)


@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_trsm(backend, rng, left, lower, trans, unit_diagonal):
    for dtype in float_dtypes(backend):
        k = 6 if left else 4
        a = rng.normal(size=(k, k)) * 0.1 + np.diag(rng.uniform(1, 2, size=k))
        b = rng.normal(size=(6, 4))
        tri = np.tril(a) if lower else np.triu(a)
        if unit_diagonal:
            np.fill_diagonal(tri, 1)
        op = tri.T if trans else tri
        expect = np.linalg.solve(op, 1.5 * b) if left else np.linalg.solve(op.T, 1.5 * b.T).T
        bt = put(b, dtype, backend)
        blas.trsm(put(a, dtype, backend), bt, alpha=1.5, left=left, lower=lower, trans=trans,
                  unit_diagonal=unit_diagonal)
        check(bt, expect, dtype)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_geam(backend, rng, trans_a, trans_b):
    for dtype in float_dtypes(backend):
        a = rng.normal(size=(5, 3) if trans_a else (3, 5))
        b = rng.normal(size=(5, 3) if trans_b else (3, 5))
        ref = 2 * (a.T if trans_a else a) - 0.5 * (b.T if trans_b else b)
        out = blas.geam(put(a, dtype, backend), put(b, dtype, backend), alpha=2, beta=-0.5, trans_a=trans_a,
                        trans_b=trans_b)
        check(out, ref, dtype)
        # A term scaled by 0 is left out, NaN and all.
        nan = put(np.full(b.shape, np.nan), dtype, backend)
        out = blas.geam(put(a, dtype, backend), nan, alpha=2, beta=0, trans_a=trans_a, trans_b=trans_b)
        check(out, 2 * (a.T if trans_a else a), dtype)


def test_gemm_batched_lists(backend, rng):
    for dtype in float_dtypes(backend):
        a = [rng.normal(size=(3, 4)) for _ in range(3)]
        b = [rng.normal(size=(4, 2)) for _ in range(3)]
        c = [rng.normal(size=(3, 2)) for _ in range(3)]
        ct = [put(v, dtype, backend) for v in c]
        blas.gemm_batched([put(v, dtype, backend) for v in a], [put(v, dtype, backend) for v in b], ct,
                          alpha=1.5, beta=-1)
        for i in range(3):
            check(ct[i], 1.5 * a[i] @ b[i] - c[i], dtype)
        with pytest.raises(xylem.ShapeMismatch):
            blas.gemm_batched([put(a[0], dtype, backend)], [], [ct[0]])
