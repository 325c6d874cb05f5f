"""`python -m xylem info` prints what `xylem info` prints."""
import os
import shutil
import subprocess
import sys


def run_info():
    return subprocess.run([sys.executable, "-m", "xylem", "info"], capture_output=True, text=True, check=True).stdout


def test_info():
    out = run_info()
    assert out.startswith("xylem frameworks\n")
    assert "  native   available (built in)" in out
    assert "opencl" in out and "cuda" in out
    assert out.rstrip().splitlines()[-1].startswith("best backend: ")


def test_same_as_the_command():
    # The command of a C++ build, where one is on PATH or named (XYLEM_CLI).
    cli = os.environ.get("XYLEM_CLI") or shutil.which("xylem")
    if not cli:
        import pytest
        pytest.skip("no xylem command to compare with (XYLEM_CLI)")
    expected = subprocess.run([cli, "info"], capture_output=True, text=True, check=True).stdout
    # The plugins the two find may differ (each looks next to its libxylem):
    # the native framework's lines and the layout must be the same.
    assert run_info().splitlines()[0] == expected.splitlines()[0]
    native = [line for line in expected.splitlines() if line.startswith("  native")]
    assert native and native[0] in run_info()


def test_usage():
    r = subprocess.run([sys.executable, "-m", "xylem"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
