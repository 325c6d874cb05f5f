#!/usr/bin/env bash
# Data-parallel training throughput: `xylem train` (native backend) on the
# same global batches with 1, 2, ... processes under mpirun, the runs
# alternating so that a machine's changing load falls on every count alike.
# Each rank is bound to its own cores and told to use that many threads
# (OpenBLAS by OPENBLAS_NUM_THREADS and OMP_NUM_THREADS, oneTBB by the
# binding, whose mask it follows), so no rank runs threads for cores that
# other ranks compute on. Prints the host's cores and load (the ratio means
# little when the cores are busy), then each run's samples/s and the
# median per process count.
# Usage: scripts/ddp_bench.sh [build dir]
#        RANKS="1 2 4" ROUNDS=5 LIMIT=16384 BATCH=128 scripts/ddp_bench.sh build
#        CORES_PER_RANK=1 (default): every rank gets one core, so N ranks
#        use N cores (the scaling of data parallelism itself);
#        CORES_PER_RANK=spread: each run splits the host's cores among its
#        ranks (cores / ranks each: the same machine for every count).
#        DATA=dir (Fashion-MNIST's files elsewhere than xylem train's default),
#        MPIRUN_FLAGS (more mpirun options).
set -euo pipefail
build=${1:-build}
ranks=${RANKS:-1 2}
rounds=${ROUNDS:-3}
limit=${LIMIT:-8192}
batch=${BATCH:-64}
per_rank=${CORES_PER_RANK:-1}
cores=$(nproc)
data=()
[[ -n "${DATA:-}" ]] && data=(--data "$DATA")
read -r -a mpirun_flags <<<"${MPIRUN_FLAGS:-}"
echo "host: $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "xylem train --backend native --epochs 1 --limit $limit --batch $batch (global batch); cores per rank: $per_rank"
declare -A runs
for round in $(seq "$rounds"); do
  for n in $ranks; do
    k=$per_rank
    [[ $k == spread ]] && k=$((cores / n))
    if ((k < 1 || n * k > cores)); then
      echo "$n ranks of $k core(s) each need more than the host's $cores cores" >&2
      exit 1
    fi
    line=$(OPENBLAS_NUM_THREADS=$k OMP_NUM_THREADS=$k \
           mpirun --allow-run-as-root -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS --map-by "slot:PE=$k" \
             --bind-to core "${mpirun_flags[@]}" -np "$n" "$build/bin/xylem" train \
             --backend native "${data[@]}" --epochs 1 --limit "$limit" --batch "$batch" | grep '^epoch 1/1:')
    rate=$(sed -E 's/.* ([0-9.]+) samples\/s$/\1/' <<<"$line")
    echo "round $round, $n process(es) of $k core(s): $rate samples/s  ($line)"
    runs[$n]+="$rate "
  done
done
for n in $ranks; do
  median=$(tr ' ' '\n' <<<"${runs[$n]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  echo "median, $n process(es): $median samples/s"
done
