"""xylem.fused: a chain of elementwise ops as one kernel, against NumPy in float64."""
import numpy as np
import pytest

import xylem
from conftest import check, float_dtypes, put


def relu_chain():
    """y = relu(x*a + b)*c, and z = tanh(x*a + b) as a second output."""
    p = xylem.FusedProgram()
    x, a, b, c = (p.input(k) for k in range(4))
    t = p.binary("add", p.binary("mul", x, a), b)
    p.output(0, p.binary("mul", p.unary("relu", t), c))
    p.output(1, p.unary("tanh", t))
    return p


def test_chain(backend, rng):
    for dtype in float_dtypes(backend):
        x = rng.uniform(-2, 2, (6, 9))
        a = rng.uniform(-2, 2, 9)
        b = rng.uniform(-1, 1, (6, 1))
        c = rng.uniform(-2, 2, ())
        ys = [put(np.zeros((6, 9)), dtype, backend) for _ in range(2)]
        out = xylem.fused(relu_chain(), [put(v, dtype, backend) for v in (x, a, b, c)], ys)
        t = x * a + b
        check(out[0], np.maximum(t, 0) * c, dtype)
        check(out[1], np.tanh(t), dtype)
        check(ys[1], np.tanh(t), dtype)  # written in place of the tensors given


def test_in_place_and_params(backend, rng):
    x = rng.uniform(-2, 2, 1001)
    t = put(x, xylem.f32, backend)
    p = xylem.FusedProgram()
    p.output(0, p.unary("clamp", p.unary("neg", p.input(0)), -0.5, 0.75))
    xylem.fused(p, [t], [t])
    check(t, np.clip(-x, -0.5, 0.75), xylem.f32)


def test_names_and_errors(backend):
    assert "relu" in xylem.FusedProgram.unary_ops and "relu_grad" in xylem.FusedProgram.binary_ops
    p = xylem.FusedProgram()
    with pytest.raises(xylem.InvalidArgument):
        p.unary("no_such_op", p.input(0))
    p.output(0, p.binary("add", p.input(0), p.input(1)))
    x = put(np.ones(3), xylem.f32, backend)
    y = put(np.full(3, 7.0), xylem.f32, backend)
    with pytest.raises(xylem.InvalidArgument):
        xylem.fused(p, [x], [y])  # input 1 missing
    with pytest.raises(xylem.ShapeMismatch):
        xylem.fused(p, [x, put(np.ones(4), xylem.f32, backend)], [y])
    np.testing.assert_array_equal(np.asarray(y), np.full(3, 7.0))


def test_automatic_fusion(backend, rng):
    """Eager calls fuse automatically (on by default); off gives the same values."""
    assert xylem.fusion_enabled()
    x, a = rng.uniform(-2, 2, (40, 60)), rng.uniform(-2, 2, 60)
    tx, ta = put(x, xylem.f32, backend), put(a, xylem.f32, backend)
    fused = xylem.nn.relu(xylem.add(xylem.mul(tx, ta, backend=backend), ta, backend=backend), backend=backend)
    check(fused, np.maximum(x * a + a, 0), xylem.f32)
    xylem.set_fusion(False)
    try:
        assert not xylem.fusion_enabled()
        plain = xylem.nn.relu(xylem.add(xylem.mul(tx, ta, backend=backend), ta, backend=backend), backend=backend)
        check(plain, np.maximum(x * a + a, 0), xylem.f32)
    finally:
        xylem.set_fusion(True)
