#!/usr/bin/env bash
# scripts/gpu_multi.sh: the two-GPU run in one call, xylem against PyTorch
# (run through `scripts/gpu.sh multi`, which unpacks the build and sets
# build, out, python, root and LD_LIBRARY_PATH; see its usage):
#   1. ctest with every GPU visible (all tests), then verbose: dist.cuda,
#      dist.local_cuda, unit.movement (PeerMovement: cuda:0 <-> cuda:1) and
#      unit.movement_staged (the same with peer access off: through the host)
#   2. peer copy of 1 GiB cuda:0 -> cuda:1: xylem's coherence against
#      x.to('cuda:1'), with the route xylem's copy took
#   3. all_reduce, all_gather, reduce_scatter, 1 KiB to 4 GiB, one process
#      per GPU: xylem (NCCL) and torch.distributed (NCCL), twice each in
#      ABBA order
#   4. data-parallel training, the Fashion-MNIST CNN and AlexNet at batch
#      128 per GPU: 1 and 2 processes, xylem and PyTorch DDP, then xylem
#      with each step one replay of a captured graph (MULTI_VARIANTS)
#   5. the table (scripts/multi_gpu_table.py), printed last
# With one GPU (or none) it is a dry run: every piece at one rank, and a
# list of what needed a second GPU. Everything lands in $out; the whole
# call stays inside MULTI_BUDGET seconds (570; each step is cut to what is
# left); MULTI_CTEST_TIMEOUT, MULTI_STEPS and MULTI_MAX_BYTES shrink it, and
# MULTI_CTEST=0 leaves out step 1's whole suite, MULTI_GPU_TESTS=0 its
# two-GPU tests too; MULTI_PARTS picks steps 2-4 (peer collectives train),
# MULTI_NETS step 4's networks (fashion alexnet), MULTI_VARIANTS adds xylem
# runs with other flags (see there).
set -uo pipefail
if [ "${1:-}" = ranks ]; then  # ranks PORT N COMMAND...: N processes of COMMAND, XYLEM_* set
  port=$2 n=$3 pids=() rc=0
  shift 3
  for ((i = 0; i < n; i++)); do
    XYLEM_RANK=$i XYLEM_WORLD_SIZE=$n XYLEM_MASTER_ADDR=127.0.0.1 XYLEM_MASTER_PORT=$port "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  exit $rc
fi
: "${build:?run through scripts/gpu.sh multi}" "${out:?}" "${python:?}" "${root:?}"
# NVLink multicast stays off in every program started here (the device
# machines' rule: it can take the host's GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# f32 without TF32 on both sides, as PyTorch's default for convolutions is
# switched off in bench/torch_multi_gpu.py too.
export XYLEM_CUDA_TF32=0 XYLEM_CUDA_CONV_TF32=0 XYLEM_CUDA_CUDNN_FIND=1
export XYLEM_DIST_TIMEOUT=120 PYTHONUNBUFFERED=1
bench=$build/bin/xylem_bench_multi_gpu
torch_bench=$root/bench/torch_multi_gpu.py
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
framework=cuda
((gpus > 0)) || framework=native  # no GPU: the xylem side's plumbing on the host
# One GPU: one rank. None: two ranks on the host, to check the launcher.
ranks=$((gpus >= 2 || gpus == 0 ? 2 : 1))
skipped=()
((gpus >= 2)) || skipped+=("the peer copy and every 2-GPU row: $gpus GPU(s) here (with none, xylem ran 2 ranks on the host: plumbing, not speed)")
have_torch=1
"$python" -c 'import torch, torch.distributed' 2>/dev/null || { have_torch=0; skipped+=("every PyTorch row: no torch in $python"); }
mkdir -p "$out"
rows=$out/multi.jsonl
: >"$rows"
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0)) s] $*"; }

# One NCCL on both sides: xylem loads PyTorch's (the wheel's) where there is
# one, so the collectives compare the callers, not two NCCL versions.
if ((have_torch)) && [ -z "${XYLEM_NCCL_LIBRARY:-}" ]; then
  XYLEM_NCCL_LIBRARY=$("$python" -c 'import glob, sys; print(next(iter(sorted(p for d in sys.path for p in glob.glob(d + "/nvidia/nccl*/lib/libnccl.so.2"))), ""))' 2>/dev/null)
  [ -n "$XYLEM_NCCL_LIBRARY" ] && export XYLEM_NCCL_LIBRARY
fi
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null | tee "$out/gpus.txt"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
"$build/bin/xylem" info 2>&1 | grep -E '^ *(cuda|nccl|mpi|tcp)' | tee "$out/multi_info.txt"
((have_torch)) && "$python" -c 'import torch; print("PyTorch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' \
  2>&1 | tee -a "$out/multi_info.txt"

stamp "== ctest, every GPU visible"
# Not tool.warm: it builds every kernel for every device (150 s there) and
# has nothing of two GPUs; `gpu.sh run` runs it.
ctest_rc=0
if [ "${MULTI_CTEST:-1}" != 0 ]; then
  (cd "$build" && timeout "${MULTI_CTEST_TIMEOUT:-240}" ctest --output-on-failure -j"${MULTI_CTEST_JOBS:-8}" --timeout 280 \
    -E '^(consumer\.install|docs\.api|tool\.warm|dist\.cuda|dist\.local_cuda|unit\.movement|unit\.movement_staged)$') >"$out/multi_ctest.log" 2>&1
  ctest_rc=$?
else
  echo "left out (MULTI_CTEST=0)" >"$out/multi_ctest.log"
fi
grep -E 'tests passed|Failed|\*\*\*|Not Run' "$out/multi_ctest.log" | tail -15
gpu_tests_rc=0
if [ "${MULTI_GPU_TESTS:-1}" != 0 ]; then
  (cd "$build" && timeout 120 ctest -V --timeout 110 -R '^(dist\.cuda|dist\.local_cuda|unit\.movement|unit\.movement_staged)$') >"$out/multi_ctest_gpu.log" 2>&1
  gpu_tests_rc=$?
else
  echo "left out (MULTI_GPU_TESTS=0)" >"$out/multi_ctest_gpu.log"
fi
grep -E 'PeerMovement|peer access|LocalCuda|CudaCollectives|\[  (PASSED|FAILED|SKIPPED) +\]|tests passed|Test +#' "$out/multi_ctest_gpu.log" | tail -30

# Ranks started as torchrun starts them; xylem reads the same rendezvous
# from XYLEM_*. Both are commands (this script again, for xylem), so that
# timeout can end them with all their ranks.
port=29600
# Each sets `launcher` to start $1 ranks on a fresh port.
xylem_ranks() { port=$((port + 1)) && launcher=("$0" ranks "$port" "$1"); }
torch_ranks() {
  port=$((port + 1))
  launcher=("$python" -m torch.distributed.run --nproc-per-node "$1" --master-addr 127.0.0.1 --master-port "$port")
}
failed=()
# The call's budget (the device tool stops a command at 600 s): each step
# gets at most what is left of it, less the table's few seconds.
budget=${MULTI_BUDGET:-570}
step() {  # step NAME SECONDS COMMAND...: time-boxed, output appended to multi_NAME.log
  local name=$1 limit=$2 left=$((budget - (SECONDS - t0) - 10))
  shift 2
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    failed+=("$name (no time left)")
    return
  fi
  timeout "$limit" "$@" >>"$out/multi_$name.log" 2>&1 || { failed+=("$name (rc $?)"); tail -5 "$out/multi_$name.log"; }
}

# MULTI_PARTS: which of the steps below run (default all three).
parts=" ${MULTI_PARTS:-peer collectives train} "
stamp "== peer copy cuda:0 -> cuda:1"
if ((gpus >= 2)) && [[ $parts == *" peer "* ]]; then
  step peer 60 "$bench" peer --framework cuda --json "$out/peer_xylem.jsonl"
  # The fallback route, for comparison: peer access off, staged through the host.
  XYLEM_CUDA_PEER_ACCESS=0 step peer 60 "$bench" peer --framework cuda --json "$out/peer_staged.jsonl"
  sed -i 's/"impl": "xylem"/"impl": "xylem staged"/' "$out/peer_staged.jsonl" 2>/dev/null
  ((have_torch)) && step peer 60 "$python" "$torch_bench" peer --json "$out/peer_torch.jsonl"
fi

stamp "== collectives, $ranks rank(s), xylem and torch.distributed alternated (ABBA)"
sweep=(--max-bytes "${MULTI_MAX_BYTES:-4294967296}" --reps "${MULTI_REPS:-9}")
[[ $parts == *" collectives "* ]] || sweep=()
for who in xylem torch torch xylem; do
  ((${#sweep[@]})) || break
  if [ $who = xylem ]; then
    xylem_ranks "$ranks"
    step collectives 150 "${launcher[@]}" "$bench" collectives --framework $framework "${sweep[@]}" \
      --json "$out/collectives_xylem.jsonl"
  elif ((have_torch && gpus > 0)); then
    torch_ranks "$ranks"
    step collectives 150 "${launcher[@]}" "$torch_bench" collectives "${sweep[@]}" --json "$out/collectives_torch.jsonl"
  fi
  [ $framework = native ] && [ $who = xylem ] && break  # the host run only checks the plumbing
done
# MULTI_NONBLOCKING=1: xylem's calls once more on NCCL's non-blocking
# communicators (XYLEM_NCCL_BLOCKING=0), which start a thread per call: what
# the blocking ones save, in the same run.
if [ "${MULTI_NONBLOCKING:-0}" != 0 ] && [ $framework = cuda ]; then
  xylem_ranks "$ranks"
  XYLEM_NCCL_BLOCKING=0 step collectives 150 "${launcher[@]}" "$bench" collectives --framework $framework "${sweep[@]}" \
    --json "$out/collectives_nonblocking.jsonl"
  sed -i 's/"impl": "xylem"/"impl": "xylem non-blocking"/' "$out/collectives_nonblocking.jsonl" 2>/dev/null
fi

stamp "== data-parallel training, batch 128 per GPU: 1 rank and $ranks"
counts=$( ((ranks > 1)) && echo "1 2" || echo 1)
nets=${MULTI_NETS:-fashion alexnet}
[[ $parts == *" train "* ]] || nets=
for net in $nets; do
  # The Fashion CNN's step is ~0.5 ms: 30 steps would time ~15 ms, and 300
  # still moved its captured two-rank step by 20 us between runs.
  steps=${MULTI_STEPS:-30} batch=128
  [ $net = fashion ] && steps=${MULTI_FASHION_STEPS:-2000}
  # The host run checks the plumbing, not the speed.
  [ $framework = native ] && steps=2 batch=8
  for n in $counts; do
    xylem_ranks "$n"
    step train 120 "${launcher[@]}" "$bench" train --framework $framework --net $net --batch $batch --steps "$steps" \
      --json "$out/train_xylem.jsonl"
    torch_ranks "$n"
    ((have_torch && gpus > 0)) &&
      step train 120 "${launcher[@]}" "$torch_bench" train --net $net --batch $batch --steps "$steps" --json "$out/train_torch.jsonl"
  done
  # MULTI_VARIANTS="RANKS:FLAGS;...": xylem again with those ranks and
  # xylem_bench_multi_gpu train flags, e.g. "2:--bucket-kib 64" (DataParallel's
  # default buckets are 25 MiB: one for these networks), "1:--wrap-one"
  # (DataParallel over one rank), "2:--no-buffer-broadcast", "1:--capture;2:--capture"
  # (each step one replay of a captured graph, collectives included).
  if [ $framework = cuda ]; then
    # By default each step captured and replayed as one graph, collectives
    # included, twice each way (the table takes medians).
    IFS=';' read -r -a variants <<<"${MULTI_VARIANTS-1:--capture;2:--capture;1:--capture;2:--capture}"
    for v in "${variants[@]}"; do
      n=${v%%:*} flags=${v#*:}
      ((n <= gpus)) || continue
      xylem_ranks "$n"
      : >"$out/train_variant.jsonl"
      # shellcheck disable=SC2086 # the flags are words
      step train 120 "${launcher[@]}" "$bench" train --framework cuda --net $net --batch $batch --steps "$steps" \
        $flags --json "$out/train_variant.jsonl"
      sed "s/\"impl\": \"xylem\"/\"impl\": \"xylem, $flags\"/" "$out/train_variant.jsonl" >>"$out/train_variants.jsonl"
      rm -f "$out/train_variant.jsonl"
    done
  fi
done

cat "$out"/peer_*.jsonl "$out"/collectives_*.jsonl "$out"/train_*.jsonl >"$rows" 2>/dev/null
echo
echo "================ two GPUs: xylem against PyTorch ($((SECONDS - t0)) s) ================"
head -2 "$out/gpus.txt"
# A ctest cut short by its time box prints no summary: count its lines.
echo "ctest: $(grep -cE 'Test +#.* Passed' "$out/multi_ctest.log") passed, $(grep -cE 'Test +#.*\*\*\*(Failed|Timeout|Exception)' \
  "$out/multi_ctest.log") failed, $(grep -cE 'Test +#.*Skipped' "$out/multi_ctest.log") skipped, of $(grep -cE '^ +Start ' \
  "$out/multi_ctest.log") started (rc $ctest_rc; 124: cut at MULTI_CTEST_TIMEOUT)"
echo "dist.cuda, dist.local_cuda, unit.movement(_staged): $(grep -E 'tests passed' "$out/multi_ctest_gpu.log" | tail -1) (rc $gpu_tests_rc)"
for s in "${skipped[@]}"; do echo "skipped: $s"; done
for f in "${failed[@]}"; do echo "failed: $f (see $out/multi_${f%% *}.log)"; done
"$python" "$root/scripts/multi_gpu_table.py" "$rows"
table_rc=$?
# The device tool brings back a few files only: the logs go as one.
for f in "$out"/*.log "$out"/topology.txt; do
  [ -f "$f" ] && { echo "==== ${f##*/}"; cat "$f"; rm -f "$f"; }
done >"$out/multi_logs.txt"
[ $ctest_rc -eq 0 ] && [ $gpu_tests_rc -eq 0 ] && [ ${#failed[@]} -eq 0 ] && { [ $table_rc -eq 0 ] || ((gpus < 2)); }
