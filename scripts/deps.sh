#!/usr/bin/env bash
# Installs the Debian 12 packages xylem builds and tests with (run as root).
# Idempotent: skips apt when everything is already there.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libtbb-dev libhwy-dev libopenblas-dev          # native: threads, SIMD math, BLAS
  libdnnl-dev                                    # native: oneDNN 2.x convolutions (optional)
  libfftw3-dev                                   # native: FFTs (fftw3 and fftw3f)
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev  # opencl plugin, PoCL for CI
  googletest libgtest-dev                        # tests
  clang libclang-rt-14-dev                       # tests: libFuzzer (clang 14's runtime)
  libeigen3-dev                                  # benchmarks: the host peer
  doxygen                                        # the API reference (docs target, docs.api test)
  python3-venv python3-dev                       # the Python package (scripts/python_test.sh)
  ccache                                         # the Python step reuses the Release step's objects
  zlib1g-dev                                     # core: reading gzip'd data files (IDX)
  libopenmpi-dev openmpi-bin                     # dist: the MPI transport (optional module) and mpirun for its tests
  dataset-fashion-mnist                          # tests: the real Fashion-MNIST files (unit.idx skips without)
  fortunes                                       # tests, `xylem lm`: the text of the language model (lm.* skip without)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
