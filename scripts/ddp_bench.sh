#!/usr/bin/env bash
# Data-parallel training throughput: `xylem train` (native backend) on the
# same global batches with 1, 2, ... processes under mpirun, the runs
# alternating so that a machine's changing load falls on every count alike.
# Prints the host's cores and load (the ratio means little when the cores
# are busy or fewer than the processes' threads), then each run's samples/s
# and the median per process count.
# Usage: scripts/ddp_bench.sh [build dir]
#        RANKS="1 2 4" ROUNDS=5 LIMIT=16384 BATCH=128 scripts/ddp_bench.sh build
#        DATA=dir (Fashion-MNIST's files elsewhere than xylem train's default),
#        MPIRUN_FLAGS="--bind-to none" (Open MPI binds each rank to one core
#        when there are at most two ranks: the default run compares ranks of
#        one core each)
set -euo pipefail
build=${1:-build}
ranks=${RANKS:-1 2}
rounds=${ROUNDS:-3}
limit=${LIMIT:-8192}
batch=${BATCH:-64}
data=()
[[ -n "${DATA:-}" ]] && data=(--data "$DATA")
read -r -a mpirun_flags <<<"${MPIRUN_FLAGS:-}"
echo "host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "xylem train --backend native --epochs 1 --limit $limit --batch $batch (global batch); mpirun ${MPIRUN_FLAGS:-}"
declare -A runs
for round in $(seq "$rounds"); do
  for n in $ranks; do
    line=$(mpirun --allow-run-as-root --oversubscribe "${mpirun_flags[@]}" -np "$n" "$build/bin/xylem" train \
             --backend native "${data[@]}" --epochs 1 --limit "$limit" --batch "$batch" | grep '^epoch 1/1:')
    rate=$(sed -E 's/.* ([0-9.]+) samples\/s$/\1/' <<<"$line")
    echo "round $round, $n process(es): $rate samples/s  ($line)"
    runs[$n]+="$rate "
  done
done
for n in $ranks; do
  median=$(tr ' ' '\n' <<<"${runs[$n]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  echo "median, $n process(es): $median samples/s"
done
