#!/usr/bin/env bash
# Builds and installs the Python package the way a user does (`pip install .`
# in a fresh virtual environment: scikit-build-core builds the project's
# CMake with nanobind from PyPI), then runs its pytest suite (tests/python).
# Usage: scripts/python_test.sh [pytest arguments]
#   CMAKE_ARGS="-D..."   extra CMake options for the build (scikit-build-core reads them)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build-python/venv
rm -rf "$venv"
python3 -m venv "$venv"
python=$PWD/$venv/bin/python

# The build folder persists between runs. It sits at the depth of build/,
# so that with ccache (and CCACHE_BASEDIR the checkout) objects the Release
# build compiled with the same flags are not compiled again.
# The compilers CMake picks by default, not the ones Python was built with
# (pip passes sysconfig's): the compiler's name is part of ccache's key.
export CC=${CC:-cc} CXX=${CXX:-c++}
settings=(-C build-dir=build-python)
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  settings+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
start=$SECONDS
"$python" -m pip install -v "${settings[@]}" .
echo "pip install . took $((SECONDS - start)) s"

"$python" -m pip install -q pytest
# From the tests folder, so that `import xylem` is the installed package.
cd tests/python
"$python" -m pytest -q -rs "$@"
