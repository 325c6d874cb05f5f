#!/bin/sh
# `xylem warm` fills an empty cache with every OpenCL program, showing its
# progress and where the cache is; an op in a later process then loads its
# program from that cache and compiles nothing. Skipped without OpenCL.
# Usage: tool_warm_test.sh <path to the xylem command> <path to xylem_conformance_test>
set -u
cache=$(mktemp -d) || exit 1
trap 'rm -rf "$cache"' EXIT
export XYLEM_CACHE_DIR="$cache"
out=$("$1" warm) || { echo "$out"; echo "xylem warm failed"; exit 1; }
echo "$out"
if ! printf '%s\n' "$out" | grep -q '^warm: opencl cache: '; then
  echo "[  SKIPPED ] opencl: no OpenCL plugin to warm"
  exit 0
fi
status=0
expect() {
  if ! printf '%s\n' "$out" | grep -Eq "$1"; then
    echo "MISSING: a line matching: $1"
    status=1
  fi
}
expect "^warm: opencl cache: $cache\$"
expect '^warm: [0-9]+/[0-9]+ opencl:0 softmax forward f32 \([0-9.]+ s\)$'
expect '^warm: [0-9]+ built, 0 already cached'
[ -n "$(ls "$cache")" ] || { echo "the cache is empty after xylem warm"; status=1; }

# A conformance op in a new process: its programs come from the cache.
out=$(XYLEM_OPENCL_VERBOSE=1 "$2" "--gtest_filter=Frameworks/Softmax.*/opencl_0" 2>&1)
code=$?
echo "$out"
[ $code -eq 0 ] || { echo "the softmax tests failed"; status=1; }
expect 'xylem opencl: softmax forward f32 kernels for .* loaded from cache'
if printf '%s\n' "$out" | grep -q 'kernels for .* compiled in'; then
  echo "a program was compiled although xylem warm had stored it"
  status=1
fi
exit $status
