#!/usr/bin/env bash
# The main job: install dependencies, build xylem (Release) and run
# `xylem info` then `xylem demo`. Usage: scripts/main.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"
"$build/bin/xylem" info
"$build/bin/xylem" demo
