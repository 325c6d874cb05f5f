#!/bin/sh
# The Fashion-MNIST example, short (2048 images, one epoch), on native and on
# OpenCL from the same seed: both must end within half a point of test
# accuracy of each other. Skipped without the data set or without OpenCL.
# Usage: example_fashion_mnist_test.sh <path to xylem_example_fashion_mnist>
set -u
run() {
  "$1" --backend "$2" --limit 2048 --epochs 1 --batch 64 --seed 3 2>&1
}
# The test accuracy of the last epoch line.
accuracy() {
  printf '%s\n' "$1" | sed -n 's/^epoch .*test accuracy \([0-9.]*\)%.*/\1/p' | tail -n 1
}
native=$(run "$1" native)
code=$?
echo "$native"
if [ $code -ne 0 ] && printf '%s\n' "$native" | grep -q 'dataset-fashion-mnist'; then
  echo "[  SKIPPED ] fashion-mnist: the data set is not installed"
  exit 0
fi
[ $code -eq 0 ] || { echo "the native run failed"; exit 1; }
opencl=$(run "$1" opencl)
code=$?
echo "$opencl"
if [ $code -ne 0 ] && printf '%s\n' "$opencl" | grep -q 'plugin_unavailable'; then
  echo "[  SKIPPED ] opencl: unavailable"
  exit 0
fi
[ $code -eq 0 ] || { echo "the OpenCL run failed"; exit 1; }
a=$(accuracy "$native")
b=$(accuracy "$opencl")
[ -n "$a" ] && [ -n "$b" ] || { echo "no test accuracy printed"; exit 1; }
awk -v a="$a" -v b="$b" 'BEGIN {
  d = a - b; if (d < 0) d = -d
  printf "native %.2f%%, opencl %.2f%%, difference %.2f points\n", a, b, d
  exit !(d <= 0.5)
}'
