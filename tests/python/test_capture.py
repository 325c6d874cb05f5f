"""xylem.capture: a graph replays on new data what its ops computed eagerly;
rebind keeps shape and dtype; host reads inside a capture are refused."""
import numpy as np
import pytest

import xylem
from conftest import check, put


def chain(backend, x, y):
    t = xylem.add(x, y, backend=backend)
    t = xylem.mul(t, x, backend=backend)
    return xylem.exp(xylem.neg(t, backend=backend), backend=backend)


def reference(x, y):
    return np.exp(-((x + y) * x))


@pytest.mark.parametrize("fusion", [False, True])
def test_replay_on_new_data(backend, rng, fusion):
    """Four ops; with automatic fusion on they may be recorded as fewer kernels."""
    xylem.set_fusion(fusion)
    try:
        a, c = rng.uniform(-1, 1, (3, 17)), rng.uniform(-1, 1, (3, 17))
        x, y = put(a, xylem.f32, backend), put(c, xylem.f32, backend)
        out = []
        g = xylem.capture(backend, lambda: out.append(chain(backend, x, y)))
        if fusion:
            assert 1 <= len(g) <= 4
        else:
            assert len(g) == 4
            assert "4 ops" in repr(g)
        check(out[0].numpy(), reference(a, c), xylem.f32)

        a2 = rng.uniform(-1, 1, (3, 17))
        xylem.blas.copy(put(a2.reshape(-1), xylem.f32, backend), x.reshape([-1]), backend=backend)
        g.replay()
        check(out[0].numpy(), reference(a2, c), xylem.f32)
    finally:
        xylem.set_fusion(True)


def test_rebind(backend, rng):
    a = rng.uniform(-1, 1, (4, 5))
    x = put(a, xylem.f32, backend)
    out = []
    g = xylem.capture(backend, lambda: out.append(xylem.exp(x, backend=backend)))
    c = rng.uniform(-1, 1, (4, 5))
    x2 = put(c, xylem.f32, backend)
    g.rebind(x, x2)
    g.replay()
    check(out[0].numpy(), np.exp(c), xylem.f32)
    # x2 now stands where x stood.
    with pytest.raises(xylem.ShapeMismatch):
        g.rebind(x2, put(rng.uniform(-1, 1, (5, 4)), xylem.f32, backend))
    with pytest.raises(xylem.DTypeMismatch):
        g.rebind(x2, put(c, xylem.f64, xylem.Backend.native()))
    with pytest.raises(xylem.InvalidArgument):
        g.rebind(x, put(c, xylem.f32, backend))  # no longer in the graph


def test_host_read_refused(backend, rng):
    x = put(rng.uniform(-1, 1, 8), xylem.f32, backend)
    with pytest.raises(xylem.Unsupported):
        xylem.capture(backend, lambda: xylem.exp(x, backend=backend).numpy())


def test_python_error_leaves_no_capture(backend, rng):
    x = put(rng.uniform(-1, 1, 8), xylem.f32, backend)

    def block():
        xylem.exp(x, backend=backend)
        raise KeyError("inside")

    with pytest.raises(KeyError):
        xylem.capture(backend, block)
    # The thread is no longer capturing: a host read works.
    assert xylem.exp(x, backend=backend).numpy().shape == (8,)
