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
# Runs on backend $2 and prints its accuracy; exits 77 (skip) when a failed
# run's output holds $3, saying $4, and 1 on another failure.
run_or_skip() {
  out=$(run "$1" "$2")
  code=$?
  echo "$out" >&2
  if [ $code -ne 0 ] && printf '%s\n' "$out" | grep -q "$3"; then
    echo "[  SKIPPED ] $4" >&2
    exit 77
  fi
  [ $code -eq 0 ] || { echo "the $2 run failed" >&2; exit 1; }
  accuracy "$out"
}
a=$(run_or_skip "$1" native dataset-fashion-mnist "fashion-mnist: the data set is not installed")
case $? in 0) ;; 77) exit 0 ;; *) exit 1 ;; esac
b=$(run_or_skip "$1" opencl plugin_unavailable "opencl: unavailable")
case $? in 0) ;; 77) exit 0 ;; *) exit 1 ;; esac
[ -n "$a" ] && [ -n "$b" ] || { echo "no test accuracy printed"; exit 1; }
awk -v a="$a" -v b="$b" 'BEGIN {
  d = a - b; if (d < 0) d = -d
  printf "native %.2f%%, opencl %.2f%%, difference %.2f points\n", a, b, d
  exit !(d <= 0.5)
}'
