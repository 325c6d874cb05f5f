"""Shared fixtures: every test that takes `backend` runs on native and OpenCL.

A framework that is absent is skipped by name (pytest -rs lists it), unless
XYLEM_TEST_REQUIRE names it (CI, where PoCL must run): then it fails.
"""
import os

import numpy as np
import pytest

import xylem

FRAMEWORKS = ["native", "opencl"]


def _open(name):
    required = os.environ.get("XYLEM_TEST_REQUIRE", "").replace(",", " ").split()
    try:
        return xylem.Backend.open(name)
    except xylem.Error as e:
        if name in required:
            pytest.fail(f"{name} is required (XYLEM_TEST_REQUIRE) but unavailable: {e}")
        pytest.skip(f"{name} unavailable: {e}")


@pytest.fixture(params=FRAMEWORKS)
def backend(request):
    b = _open(request.param)
    with b:  # the default of this thread too, for operators
        yield b


@pytest.fixture
def rng(request):
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"seed {seed}")  # shown when the test fails
    return np.random.default_rng(seed)


def tolerance(dtype):
    """rtol, atol for results computed in `dtype` against float64."""
    return {xylem.f64: (1e-10, 1e-12), xylem.f32: (2e-5, 1e-6),
            xylem.f16: (2e-3, 1e-3), xylem.bf16: (2e-2, 1e-2)}[dtype]


def check(actual, expected, dtype):
    rtol, atol = tolerance(dtype)
    a = np.asarray(actual).astype(np.float64)
    np.testing.assert_allclose(a, expected, rtol=rtol, atol=atol, equal_nan=True)


def put(array, dtype, backend):
    """A tensor of `array` in `dtype`, already used on `backend`."""
    return xylem.contiguous(xylem.asarray(array, dtype), backend=backend)


def float_dtypes(backend):
    """f32, and f64 where the device computes it."""
    return [xylem.f32] + ([xylem.f64] if backend.hardware.caps.fp64 else [])
