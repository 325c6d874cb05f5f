#!/usr/bin/env bash
# Builds and runs the whole test suite: the Release build (with the OpenCL
# and CUDA plugins where their toolkits are present; CUDA tests skip
# themselves without a GPU), then AddressSanitizer+UBSan, then the
# libFuzzer fuzzers (clang), then ThreadSanitizer over the runtime's
# concurrency tests and the soak test; the Python package runs after the
# Release step.
# Usage: scripts/test.sh            (all five)
#        XYLEM_TEST_QUICK=1 scripts/test.sh   (Release only)
#        XYLEM_FUZZ_SECONDS=600 scripts/test.sh  (longer fuzzing; tests/fuzz/CMakeLists.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
# PoCL (installed by deps.sh) runs the OpenCL plugin: its tests must run, not
# skip (tests/conformance/targets.cpp). XYLEM_TEST_REQUIRE= to allow skipping.
export XYLEM_TEST_REQUIRE=${XYLEM_TEST_REQUIRE-opencl}

step() { echo; echo "==== $* ===="; }

step "Release build and tests"
# CI has no GPU: the CUDA plugin is compiled and linked for one architecture
# (Hopper, through ptxas) to keep the 2-core run short; scripts/main.sh and
# scripts/gpu.sh build every architecture (PTX 7.5, sm_80, sm_90).
cuda_arch=()
[[ -n "${XYLEM_TEST_ALL_CUDA_ARCHS:-}" ]] || cuda_arch=(-DXYLEM_CUDA_ARCHITECTURES=90-real)
# Through ccache, so that the Python step (which builds the same sources with
# the same flags in build-python) compiles nothing twice.
export CCACHE_BASEDIR=$PWD
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" "${launcher[@]}"
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900

if [[ -n "${XYLEM_TEST_QUICK:-}" ]]; then exit 0; fi

step "Python package (pip install . in a fresh venv, then pytest tests/python)"
# XYLEM_CLI: the Release step's command, which `python -m xylem info` must match.
XYLEM_CLI=$PWD/build/bin/xylem CMAKE_ARGS="${CMAKE_ARGS:-} ${cuda_arch[*]}" scripts/python_test.sh

step "AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXYLEM_SANITIZE=address,undefined \
  -DXYLEM_CUDA=OFF -DXYLEM_BUILD_BENCH=OFF
cmake --build build-asan -j"$jobs"
# allocator_may_return_null: the out-of-memory tests ask for absurd sizes and
# expect xylem's out_of_memory error, not ASan's abort.
# use_sigaltstack=0: PoCL's LLVM installs its own alternate signal stack (a
# malloc'd buffer) in whichever thread first opens OpenCL; ASan's thread
# teardown then tries to munmap that buffer as if it were its own and aborts
# (google/sanitizers#1152, fixed in LLVM 22's compiler-rt, not in Debian's gcc).
# LSAN_OPTIONS: PoCL's own leaks (scripts/lsan.supp says which).
ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:use_sigaltstack=0 UBSAN_OPTIONS=print_stacktrace=1 \
LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

step "Fuzzing (libFuzzer under ASan + UBSan, each fuzzer for XYLEM_FUZZ_SECONDS on its seed corpus)"
# clang, as libFuzzer is clang's; its own tree (the sanitizers and coverage
# of clang's build differ from gcc's). Tests on: the fuzzers are CTest tests.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXYLEM_FUZZ=ON \
  -DXYLEM_SANITIZE=address,undefined -DXYLEM_OPENCL=OFF -DXYLEM_CUDA=OFF -DXYLEM_BUILD_BENCH=OFF \
  -DXYLEM_BUILD_TESTS=ON -DXYLEM_FUZZ_SECONDS="${XYLEM_FUZZ_SECONDS:-30}"
cmake --build build-fuzz -j"$jobs" --target xylem_fuzzers
ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz

step "ThreadSanitizer (the runtime: unit tests of queue, coherence, futures, threads; the soak test)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXYLEM_SANITIZE=thread \
  -DXYLEM_CUDA=OFF -DXYLEM_OPENCL=OFF -DXYLEM_BUILD_BENCH=OFF
# Only what the tests labelled unit and soak need (the target xylem_runtime_tests,
# tests/CMakeLists.txt): the conformance suite is the ASan step's.
cmake --build build-tsan -j"$jobs" --target xylem_runtime_tests
# The soak test here is native only (OpenCL is off) and shorter than in the
# Release step: TSan slows it about tenfold.
# OPENBLAS_NUM_THREADS=1: OpenBLAS's own thread pool hands results back to
# the calling thread through spin-waits TSan cannot see (libopenblas is not
# built with it), so a gemm's output written by a pool thread and read by
# the next op reads as a race (unit.models' Linear layers). With one thread
# OpenBLAS computes in the calling thread: our ordering is what TSan checks.
# XYLEM_NATIVE_THREADS=1 (and OMP_NUM_THREADS=1 for oneDNN) for the same
# reason with oneTBB: its workers synchronise inside libtbb, which TSan
# cannot see, so every element a worker wrote was a race report to match
# against tsan.supp, and TSan keeps each racy address in a list it searches
# linearly: a test that wrote a million elements took minutes (unit.fusion_auto
# timed out in CI). Our queue, coherence and user threads run as before.
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 XYLEM_NATIVE_THREADS=1 XYLEM_SOAK_SECONDS=${XYLEM_SOAK_SECONDS:-10} \
TSAN_OPTIONS="halt_on_error=1 allocator_may_return_null=1 suppressions=$PWD/scripts/tsan.supp" \
  ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 1800 -L 'unit|soak'

