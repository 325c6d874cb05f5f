#!/usr/bin/env bash
# scripts/bench_convnets_host.sh: the reference networks on the host CPU,
# xylem's native backend against PyTorch on the CPU, in one run, then the
# ratio table (scripts/convnets_compare.py).
#
# Environment: XYLEM_BUILD (a build with XYLEM_BUILD_BENCH=ON, default
# build/; the target xylem_bench_convnets is built there if needed),
# XYLEM_TORCH_PYTHON (a Python with torch; default /work/venv-torch's, else a
# venv made in .venv-torch with torch from PyPI), BATCH (8), REPS (3),
# WARMUP (1), NETS (all three), OUT (/tmp/xylem-convnets-host), ROUNDS (1):
# rounds of xylem's run then PyTorch's, alternated, each with its own ratio
# table and the load average before each side (on a shared machine one
# round says little; read the spread of the rounds).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${XYLEM_BUILD:-$root/build}
out=${OUT:-/tmp/xylem-convnets-host}
batch=${BATCH:-8} reps=${REPS:-3} warmup=${WARMUP:-1} nets=${NETS:-alexnet,overfeat_fast,vgg_a} rounds=${ROUNDS:-1}
mkdir -p "$out"

python=${XYLEM_TORCH_PYTHON:-}
if [ -z "$python" ]; then
  if [ -x /work/venv-torch/bin/python ]; then
    python=/work/venv-torch/bin/python
  else
    venv=$root/.venv-torch
    [ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet torch; }
    python=$venv/bin/python
  fi
fi

cmake --build "$build" --target xylem_bench_convnets >/dev/null
common=(--batch "$batch" --reps "$reps" --warmup "$warmup" --nets "$nets" --json)
load() { cut -d' ' -f1-3 /proc/loadavg; }
for round in $(seq 1 "$rounds"); do
  echo "== round $round: xylem native, batch $batch (load $(load))"
  "$build/bin/xylem_bench_convnets" --backend native "${common[@]}" "$out/xylem-$round.json" | tee "$out/xylem-$round.log"
  echo "== round $round: PyTorch CPU, batch $batch (load $(load))"
  "$python" "$root/bench/torch_convnets.py" --device cpu "${common[@]}" "$out/torch-$round.json" | tee "$out/torch-$round.log"
done
for round in $(seq 1 "$rounds"); do
  echo "== round $round: xylem / PyTorch"
  "$python" "$root/scripts/convnets_compare.py" "$out/xylem-$round.json" "$out/torch-$round.json" | tee "$out/compare-$round.txt"
done
