#!/usr/bin/env bash
# scripts/bench_convnets_host.sh: the reference networks on the host CPU,
# xylem's native backend against PyTorch on the CPU, in one run, then the
# ratio table (scripts/convnets_compare.py).
#
# Environment: XYLEM_BUILD (a build with XYLEM_BUILD_BENCH=ON, default
# build/; the target xylem_bench_convnets is built there if needed),
# XYLEM_TORCH_PYTHON (a Python with torch; default /work/venv-torch's, else a
# venv made in .venv-torch with torch from PyPI), BATCH (8), REPS (3),
# WARMUP (1), NETS (all three), OUT (/tmp/xylem-convnets-host).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${XYLEM_BUILD:-$root/build}
out=${OUT:-/tmp/xylem-convnets-host}
batch=${BATCH:-8} reps=${REPS:-3} warmup=${WARMUP:-1} nets=${NETS:-alexnet,overfeat_fast,vgg_a}
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
echo "== xylem native, batch $batch"
"$build/bin/xylem_bench_convnets" --backend native "${common[@]}" "$out/xylem.json" | tee "$out/xylem.log"
echo "== PyTorch CPU, batch $batch"
"$python" "$root/bench/torch_convnets.py" --device cpu "${common[@]}" "$out/torch.json" | tee "$out/torch.log"
echo "== xylem / PyTorch"
"$python" "$root/scripts/convnets_compare.py" "$out/xylem.json" "$out/torch.json" | tee "$out/compare.txt"
