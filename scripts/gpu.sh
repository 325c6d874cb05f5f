#!/usr/bin/env bash
# scripts/gpu.sh: the whole CUDA check on the lent GPU machine, in one call.
#
# The GPU machine (Ubuntu 24.04, CMake 4, nvcc 13, cuBLAS 13.1) has no
# OpenBLAS, oneTBB or Highway and can install nothing, so we build here and
# carry the build together with the shared libraries it needs:
#
#   scripts/gpu.sh pack    here: configure and build in /tmp/xylem-gpu (with
#                          CUDA, tests, benchmarks), then copy the build tree
#                          without objects, and every shared library its
#                          binaries load that the GPU image lacks, into .gpu/
#                          (ignored through .git/info/exclude)
#   scripts/gpu.sh run     there: the device call, with .gpu carried:
#                            run(command="scripts/gpu.sh run", carry=[".gpu.tar.xz"])
#                          puts the build back at its path, runs ctest (every
#                          test; CUDA ones now on the GPU), compute-sanitizer
#                          memcheck on the CUDA conformance tests,
#                          scripts/torch_peer.py (PyTorch's figures) and
#                          xylem_bench_cuda, then four alternating rounds of
#                          the gemm and conv2d rows alone (scripts/gemm_rounds.py says
#                          why), and prints a short table last. ctest's
#                          dist.cuda (xylem::dist on CUDA tensors: NCCL) runs
#                          apart, verbose, into dist_cuda.log.
#                          Logs and JSON go to $OUT (or /tmp/xylem-gpu-out).
#   scripts/gpu.sh fashion there, scripts/gpu_fashion_mnist.sh on the build
#                          (xylem train on CUDA against PyTorch; carry .fmnist too)
#   scripts/gpu.sh train_modes there, the Fashion-MNIST step on cuda:0
#                          eager with fusion on, with XYLEM_FUSE=0, and
#                          captured (carry .fmnist too)
#   scripts/gpu.sh convnets there, AlexNet, Overfeat fast and VGG-A at the
#                          benchmark batches: xylem_bench_convnets --backend
#                          cuda and bench/torch_convnets.py in f32, tf32 and
#                          bf16, then the ratio table (scripts/convnets_compare.py)
#   scripts/gpu.sh dist    there, ctest's dist.cuda alone (xylem::dist on CUDA
#                          tensors: NCCL), verbose, into dist_cuda.log
#   scripts/gpu.sh python  there, the Python package on CUDA: builds the module
#                          alone (python/standalone) for the GPU machine's
#                          Python against the carried libxylem, then
#                          scripts/gpu_python.py (DLPack with PyTorch, CuPy,
#                          JAX) and bench/python_small_op.py beside
#                          xylem_bench_same_ops (the same ops at the same
#                          sizes from C++, in the same run; a pack of
#                          XYLEM_GPU_TARGETS needs that target).
#   scripts/gpu.sh multi   there, on a machine of two GPUs: scripts/gpu_multi.sh
#                          (ctest with both visible, peer copy, NCCL
#                          collectives and data-parallel training, xylem
#                          against PyTorch, then a table of ratios); with
#                          one GPU a dry run that lists what it skipped.
#                            run(command="scripts/gpu.sh multi",
#                                carry=[".gpu.tar.xz"], kind="nvidia-h100-x2")
#   scripts/gpu.sh ops     there, the newer ops' CUDA side in one short call:
#                          ctest's CUDA entries (conformance.cuda, capture.cuda,
#                          cuda.*), then xylem_bench_cuda's copy, bias,
#                          embedding, attention and fft rows beside
#                          scripts/torch_peer.py, then xylem_bench_capture
#                          beside bench/torch_capture.py
#   scripts/gpu.sh attention  there, attention's CUDA conformance and its
#                          rows beside PyTorch's SDPA with each cuDNN
#   scripts/gpu.sh conv    there, the short check of the convolution engines:
#                          the CUDA conv tests through each cuDNN API alone,
#                          then one round of the gemm and conv2d rows.
#   scripts/gpu.sh host_ops2  there, issue 18's op set 2 on the host's CPU:
#                          xylem_bench_host_ops2 on native beside
#                          bench/torch_host_ops2.py (PyTorch CPU, NumPy) with 16
#                          threads, then 1, and scripts/host_ops2_compare.py's
#                          table (within 2x of the best peer; attention at
#                          S = 4096 without an SxS buffer). A pack of
#                          XYLEM_GPU_TARGETS needs xylem_bench_host_ops2.
#
# cuDNN: the CUDA plugin dlopens libcudnn.so.9 at first use (it is not
# linked, so ldd does not list it and nothing is packed: cuDNN 9 is ~500 MB).
# The GPU machine's own cuDNN (the system's 9.14, found through the loader's
# search or the plugin's fallback paths) serves it; the
# plugin uses the graph API's backend functions and the legacy convolution
# API, both stable across cuDNN 9. The build here has 9.19 headers. 'run'
# also repeats the CUDA conformance tests with XYLEM_CUDA_CUDNN=0, so the
# im2col convolution engine is checked too, and with each cuDNN API alone.
#
# Environment: XYLEM_GPU_BUILD (build path, default /tmp/xylem-gpu),
# XYLEM_GPU_TARGETS (pack: the targets to build, default all),
# XYLEM_GPU_PYTHON (default /opt/torch/.venv/bin/python).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pack=$root/.gpu
build=${XYLEM_GPU_BUILD:-/tmp/xylem-gpu}

pack() {
  set -e
  # The repository's exclude file (a worktree's .git is a file that points to it).
  local exclude
  exclude=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir)/info/exclude
  mkdir -p "$(dirname "$exclude")"
  grep -qxF '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXYLEM_CUDA=ON \
    -DXYLEM_BUILD_TESTS=ON -DXYLEM_BUILD_BENCH=ON
  # XYLEM_GPU_TARGETS: build only these (say "xylem_cuda xylem_bench_convnets"
  # for the convnets subcommand alone); default everything.
  # shellcheck disable=SC2086
  cmake --build "$build" -j"$(nproc)" ${XYLEM_GPU_TARGETS:+--target $XYLEM_GPU_TARGETS}
  rm -rf "$pack"
  mkdir -p "$pack/build" "$pack/deps"
  # The build tree without objects: binaries, libraries, plugins, CTest files.
  tar -C "$build" --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles' --exclude='.ninja*' -cf - . |
    tar -C "$pack/build" -xf -
  echo "$build" >"$pack/build_path"
  echo "$root" >"$pack/source_path"
  # Shared libraries the binaries load, except the C/C++ runtime and CUDA's
  # own (the GPU machine has newer ones of each).
  local elves
  elves=$(find "$pack/build" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'file -b "$1" | grep -q ^ELF && echo "$1"' _ {} \;)
  for f in $elves; do strip --strip-unneeded "$f" 2>/dev/null || true; done
  for f in $elves; do ldd "$f"; done | awk '/=> \//{print $3}' | sort -u |
    grep -hvE "^$build/|/libxylem[^/]*\.so|/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so|/libcu(blas|blasLt|dart|da)\.so" |
    while read -r lib; do cp -L "$lib" "$pack/deps/"; done
  # The device tool carries at most 64 MiB: the pack goes compressed.
  grep -qxF '/.gpu.tar.xz' "$exclude" || echo '/.gpu.tar.xz' >>"$exclude"
  tar -C "$root" -cf - .gpu | xz -T0 -6 >"$root/.gpu.tar.xz"
  echo "packed into $pack: $(du -sh "$pack" | cut -f1) ($(ls "$pack/deps" | tr '\n' ' ')); carry .gpu.tar.xz ($(du -sh "$root/.gpu.tar.xz" | cut -f1))"
}

setup() {
  out=${OUT:-/tmp/xylem-gpu-out}
  python=${XYLEM_GPU_PYTHON:-/opt/torch/.venv/bin/python}
  mkdir -p "$out"
  [ -d "$pack/build" ] || [ ! -f "$root/.gpu.tar.xz" ] || tar -C "$root" -xJf "$root/.gpu.tar.xz"
  [ -d "$pack/build" ] || { echo "no .gpu/build: run 'scripts/gpu.sh pack' here first and carry .gpu"; exit 2; }
  # Put the build where its CTest files and run paths point.
  build=$(cat "$pack/build_path")
  if [ "$(readlink -f "$build")" != "$(readlink -f "$pack/build")" ]; then
    rm -rf "$build"
    mkdir -p "$(dirname "$build")"
    ln -s "$pack/build" "$build"
  fi
  local source
  source=$(cat "$pack/source_path")
  if [ ! -e "$source" ]; then mkdir -p "$(dirname "$source")"; ln -s "$root" "$source"; fi
  export LD_LIBRARY_PATH="$pack/deps:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  export PATH="/usr/local/cuda/bin:$PATH"
}

# The CUDA convolution tests through each cuDNN API alone (graph: no
# fallback to the legacy API), and the cuDNN that PyTorch loads; sets api_rc.
cudnn_apis() {
  echo "== CUDA convolutions through each cuDNN API alone (graph: no fallback to legacy)"
  local api
  api_rc=0
  for api in graph legacy; do
    XYLEM_CUDA_CUDNN_API=$api XYLEM_CUDA_CONV_TF32=0 timeout 120 "$build/bin/xylem_conformance_test" \
      '--gtest_filter=*Conv*/cuda_*' >"$out/cudnn_$api.log" 2>&1 || api_rc=1
    echo "$api: $(grep -E '^\[  (PASSED|FAILED) ' "$out/cudnn_$api.log" | tr '\n' ' ')"
  done
  # PyTorch brings its own cuDNN (the pip wheel's), which may be newer
  # than the CUDA install's that xylem finds first.
  "$python" -c 'import torch, torch.nn.functional as F
x = torch.ones(1, 8, 8, 8, device="cuda"); F.conv2d(x, torch.ones(8, 8, 3, 3, device="cuda"))
print("PyTorch", torch.__version__, "cuDNN", torch.backends.cudnn.version(),
      *[l.split()[-1] for l in open("/proc/self/maps") if "libcudnn.so" in l][:1])' 2>&1 | tee -a "$out/cudnn.txt"
  torch_cudnn_dir=$(dirname "$(grep -o '/[^ ]*libcudnn\.so[.0-9]*' "$out/cudnn.txt" | head -1)" 2>/dev/null)
  "$build/bin/xylem" info 2>&1 | grep -o 'convolutions: [^,]*' | head -1 | sed 's/^/xylem /' | tee -a "$out/cudnn.txt"
}

# The gemm and conv2d rows once more, with xylem loading PyTorch's cuDNN.
with_torch_cudnn() {
  [ -d "${torch_cudnn_dir:-}" ] || return 0
  LD_LIBRARY_PATH="$torch_cudnn_dir:$LD_LIBRARY_PATH" "$build/bin/xylem_bench_cuda" --only tensor-cores \
    --json "$out/xylem_torch_cudnn.json" >"$out/torch_cudnn.log" 2>&1
  echo "xylem with PyTorch's cuDNN ($torch_cudnn_dir):"
  grep -E '^conv2d' "$out/torch_cudnn.log"
}

# ctest's dist.cuda (xylem::dist on CUDA tensors through NCCL), verbose,
# into dist_cuda.log; sets nccl_rc.
dist_cuda() {
  echo "== xylem::dist on CUDA tensors (NCCL)"
  "$build/bin/xylem" info 2>&1 | grep -E '^ *nccl '
  (cd "$build" && ctest -V -R '^dist\.cuda$') >"$out/dist_cuda.log" 2>&1
  nccl_rc=$?
  grep -E 'NCCL|host transport here|\[  (PASSED|FAILED|SKIPPED) +\]|tests passed' "$out/dist_cuda.log" | head -30
}

# A short check of the convolution engines: cudnn_apis, then one round of
# the gemm and conv2d rows of PyTorch and xylem.
conv() {
  setup
  cudnn_apis
  "$python" "$root/scripts/torch_peer.py" --only tensor-cores --json "$out/torch_gemm_1.json" >"$out/gemm_rounds.log" 2>&1
  "$build/bin/xylem_bench_cuda" --only tensor-cores --json "$out/xylem_gemm_1.json" >>"$out/gemm_rounds.log" 2>&1
  tail -25 "$out/gemm_rounds.log"
  "$python" "$root/scripts/gemm_rounds.py" "$out"
  with_torch_cudnn
  [ $api_rc -eq 0 ]
}

# The newer ops on CUDA: their tests, then their rows beside PyTorch's.
ops() {
  setup
  local rc=0
  # OPS_CTEST: the ctest entries (a regex), OPS_BENCH: xylem_bench_cuda's
  # groups, OPS_BENCH_TIMEOUT: its limit in seconds, OPS_CAPTURE=0: no
  # capture benchmarks.
  local groups=${OPS_BENCH:-copy,bias,embedding,attention,fft}
  echo "== ctest: the CUDA entries"
  (cd "$build" && timeout 300 ctest --output-on-failure -R "${OPS_CTEST:-(cuda|capture)}" -E '^dist\.') \
    >"$out/ops_ctest.log" 2>&1 || rc=1
  grep -E 'Test +#|tests passed|\[  FAILED  \]' "$out/ops_ctest.log" | tail -20
  echo "== xylem_bench_cuda ($groups) beside PyTorch"
  "$python" "$root/scripts/torch_peer.py" --json "$out/torch_peer.json" >"$out/torch_peer.log" 2>&1 || rc=1
  timeout "${OPS_BENCH_TIMEOUT:-240}" "$build/bin/xylem_bench_cuda" --only "$groups" --peer "$out/torch_peer.json" \
    --json "$out/xylem_ops.json" >"$out/xylem_ops.log" 2>&1 || rc=1
  cat "$out/xylem_ops.log"
  [ "${OPS_CAPTURE:-1}" = 0 ] && return $rc
  echo "== capture and replay: xylem_bench_capture beside torch.cuda.graphs"
  timeout 120 "$build/bin/xylem_bench_capture" --json "$out/capture_xylem.json" 2>&1 | tail -8 || rc=1
  timeout 60 "$python" "$root/bench/torch_capture.py" --json "$out/capture_torch.json" 2>&1 | tail -4 || rc=1
  return $rc
}

# Attention on the H100: the CUDA conformance cases of attention (and the
# convolutions, which share cuDNN's graph helper), then the attention rows
# beside PyTorch's SDPA: xylem with the system's cuDNN, with its own
# tensor-core kernels (XYLEM_CUDA_CUDNN_ATTENTION=0), and with the cuDNN
# PyTorch loads (its wheel's, often newer), as PyTorch runs.
attention() {
  setup
  local rc=0
  echo "== conformance: attention and convolutions on CUDA"
  XYLEM_CUDA_CONV_TF32=0 timeout 300 "$build/bin/xylem_conformance_test" '--gtest_filter=*Attention*cuda*:*Conv*/cuda_*' \
    >"$out/attention_conformance.log" 2>&1 || rc=1
  grep -E '^\[  (PASSED|FAILED) |FAILED  \]|Failure|error' "$out/attention_conformance.log" | head -20
  torch_cudnn_dir=$("$python" -c 'import nvidia.cudnn as c; print(list(c.__path__)[0] + "/lib")' 2>/dev/null)
  if [ -d "${torch_cudnn_dir:-}" ]; then
    echo "== conformance: attention on CUDA with PyTorch's cuDNN"
    LD_LIBRARY_PATH="$torch_cudnn_dir:$LD_LIBRARY_PATH" timeout 300 "$build/bin/xylem_conformance_test" \
      '--gtest_filter=*Attention*cuda*' >"$out/attention_conformance_torch_cudnn.log" 2>&1 || rc=1
    grep -E '^\[  (PASSED|FAILED) |FAILED  \]|Failure|error' "$out/attention_conformance_torch_cudnn.log" | head -20
  fi
  echo "== attention beside PyTorch (its cuDNN: ${torch_cudnn_dir:-not found})"
  "$python" "$root/scripts/torch_peer.py" --json "$out/torch_peer.json" >"$out/torch_peer.log" 2>&1 || rc=1
  local label env
  for label in cudnn own torch_cudnn; do
    env=()
    [ $label = own ] && env=(XYLEM_CUDA_CUDNN_ATTENTION=0)
    [ $label = torch_cudnn ] && { [ -d "${torch_cudnn_dir:-}" ] || continue; env=(LD_LIBRARY_PATH="$torch_cudnn_dir:$LD_LIBRARY_PATH"); }
    echo "-- xylem, $label:"
    env "${env[@]}" timeout 200 "$build/bin/xylem_bench_cuda" --only attention --peer "$out/torch_peer.json" \
      --json "$out/attention_$label.json" >"$out/attention_$label.log" 2>&1 || rc=1
    grep -E 'sdpa|xylem cuda' "$out/attention_$label.log" || tail -5 "$out/attention_$label.log"
  done
  return $rc
}

# The Fashion-MNIST step on cuda:0 three ways, in one call: eager with
# fusion on, eager with XYLEM_FUSE=0, and captured (--capture). Carry
# .fmnist; TRAIN_EPOCHS (default 3) epochs each, samples/s per epoch.
train_modes() {
  setup
  local mode rc=0
  for mode in fused unfused captured; do
    local fuse=1 extra=()
    [ $mode = unfused ] && fuse=0
    [ $mode = captured ] && extra=(--capture)
    echo "== xylem train on cuda:0, $mode"
    XYLEM_FUSE=$fuse timeout 200 "$build/bin/xylem" train --backend cuda:0 --epochs "${TRAIN_EPOCHS:-3}" \
      --data "$root/.fmnist" "${extra[@]}" >"$out/train_$mode.log" 2>&1 || rc=1
    grep -E '^epoch [0-9]+/[0-9]+:' "$out/train_$mode.log" || tail -3 "$out/train_$mode.log"
  done
  return $rc
}

# Issue 18's op set 2 on the host: xylem_bench_host_ops2 and
# bench/torch_host_ops2.py with the same thread count, for each of
# HOST_OPS2_THREADS (default "16 1"), then scripts/host_ops2_compare.py.
# HOST_OPS2_BACKENDS (default native; "native opencl" adds OpenCL's CPU
# device, where there is one) picks xylem's frameworks; HOST_OPS2_ARGS
# (say --quick) goes to both programs.
host_ops2() {
  setup
  local n backend rc=0 extra
  read -ra extra <<<"${HOST_OPS2_ARGS:-}"
  echo "$(nproc) cores: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-)"
  for n in ${HOST_OPS2_THREADS:-16 1}; do
    for backend in ${HOST_OPS2_BACKENDS:-native}; do
      echo "== xylem $backend, $n threads"
      # PoCL ignores XYLEM_NATIVE_THREADS: its own variable caps its threads.
      XYLEM_NATIVE_THREADS=$n POCL_MAX_PTHREAD_COUNT=$n timeout 150 "$build/bin/xylem_bench_host_ops2" \
        --backend "$backend" "${extra[@]}" \
        --json "$out/host_ops2_${backend}_$n.json" >"$out/host_ops2_${backend}_$n.log" 2>&1 || rc=1
      grep -E 'skipped|SxS|^xylem' "$out/host_ops2_${backend}_$n.log"
    done
    echo "== PyTorch and NumPy, $n threads"
    PYTHONUNBUFFERED=1 timeout 150 "$python" "$root/bench/torch_host_ops2.py" --threads "$n" "${extra[@]}" \
      --json "$out/host_ops2_torch_$n.json" >"$out/host_ops2_torch_$n.log" 2>&1 || rc=1
    grep -E 'skipped|SxS|^host ops' "$out/host_ops2_torch_$n.log"
    for backend in ${HOST_OPS2_BACKENDS:-native}; do
      echo "== xylem $backend / best of PyTorch and NumPy, $n threads"
      "$python" "$root/scripts/host_ops2_compare.py" "$out/host_ops2_${backend}_$n.json" "$out/host_ops2_torch_$n.json" |
        tee "$out/host_ops2_compare_${backend}_$n.txt"
    done
  done
  return $rc
}

# The reference networks, xylem and PyTorch alternately per dtype, then
# the ratio table. CONVNETS_REPS (default 10) sets the timed runs,
# CONVNETS_DTYPES (default "f32 tf32 bf16") the dtypes.
convnets() {
  setup
  local dtype rc=0 reps=${CONVNETS_REPS:-10}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  for dtype in ${CONVNETS_DTYPES:-f32 tf32 bf16}; do
    echo "== $dtype"
    "$build/bin/xylem_bench_convnets" --backend cuda --dtype $dtype --reps "$reps" \
      --json "$out/convnets_xylem_$dtype.json" >"$out/convnets_xylem_$dtype.log" 2>&1 || rc=1
    PYTHONUNBUFFERED=1 "$python" "$root/bench/torch_convnets.py" --device cuda --dtype $dtype --reps "$reps" \
      --json "$out/convnets_torch_$dtype.json" >"$out/convnets_torch_$dtype.log" 2>&1 || rc=1
    grep -hvE '^(\{|[a-z_]+(, batch [0-9]+)?: )' "$out/convnets_xylem_$dtype.log" "$out/convnets_torch_$dtype.log" | tail -12
  done
  echo "== xylem / PyTorch"
  "$python" "$root/scripts/convnets_compare.py" "$out"/convnets_xylem_*.json "$out"/convnets_torch_*.json
  return $rc
}

# The module for this machine's Python (nanobind from its venv), the
# DLPack checks, and the Python benchmark against the C++ one.
python_checks() {
  setup
  local module=$build-python rc=0
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root/python/standalone" -B "$module" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DXYLEM_BUILD="$build" -DPython_EXECUTABLE="$python" >"$out/python_build.log" 2>&1 &&
    cmake --build "$module" -j"$(nproc)" >>"$out/python_build.log" 2>&1 || { tail -20 "$out/python_build.log"; return 1; }
  export PYTHONPATH=$module
  echo "== DLPack with PyTorch, CuPy, JAX"
  "$python" "$root/scripts/gpu_python.py" 2>&1 | tee "$out/gpu_python.log" || rc=1
  echo "== Python small ops and large ops against C++"
  # The C++ side runs in the same run, the same ops at the same sizes: 1 GiB
  # of sigmoid and an 8192 gemm, so each call is long against its launch
  # (at 4M elements and n=1024 both sides measured launch noise, 1.14x apart).
  "$python" "$root/bench/python_small_op.py" --backends cuda --gemm 8192 --elements $((1 << 28)) \
    --cxx-bin "$build/bin/xylem_bench_same_ops" --json "$out/python_small_op.json" 2>&1 |
    tee "$out/python_small_op.log" || rc=1
  return $rc
}

run() {
  setup
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
  "$build/bin/xylem" info 2>&1 | tee "$out/info.txt"

  local t0=$SECONDS
  echo "== ctest"
  # consumer.install configures a new CMake project against an installed
  # xylem with the build machine's CMake and compiler paths, which the GPU
  # image does not have; CI runs it where the build was made. docs.api
  # needs doxygen, which the image lacks (the headers are the same here).
  (cd "$build" && ctest --output-on-failure -j4 --timeout 300 -E '^(consumer\.install|docs\.api|dist\.cuda)$') >"$out/ctest.log" 2>&1
  local ctest_rc=$?
  grep -E "tests passed|Failed|\*\*\*|Not Run|Skipped" "$out/ctest.log" | tail -25
  dist_cuda

  local t_ctest=$((SECONDS - t0))
  echo "== compute-sanitizer memcheck, CUDA conformance tests"
  # Time-boxed (device time is short): on a timeout the tests run so far
  # count, and the summary says how many passed under memcheck.
  XYLEM_CUDA_CONV_TF32=0 timeout -s INT 240 compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$build/bin/xylem_conformance_test" '--gtest_filter=*/cuda_*:*/cuda' >"$out/memcheck.log" 2>&1
  local memcheck_rc=$?
  tail -5 "$out/memcheck.log"

  local t_memcheck=$((SECONDS - t0 - t_ctest))
  echo "== CUDA conformance without cuDNN (im2col convolutions)"
  ls /usr/local/cuda/lib*/libcudnn.so.* 2>/dev/null | head -3 | tee "$out/cudnn.txt"
  XYLEM_CUDA_CUDNN=0 XYLEM_CUDA_CONV_TF32=0 timeout 120 "$build/bin/xylem_conformance_test" '--gtest_filter=*Conv*/cuda_*' \
    >"$out/im2col.log" 2>&1
  local im2col_rc=$?
  tail -3 "$out/im2col.log"
  cudnn_apis
  echo "== PyTorch"
  PYTHONUNBUFFERED=1 "$python" "$root/scripts/torch_peer.py" --json "$out/torch.json" >"$out/torch.log" 2>&1 ||
    tail -5 "$out/torch.log"
  echo "== xylem_bench_cuda"
  local peer=()
  [ -s "$out/torch.json" ] && peer=(--peer "$out/torch.json")
  "$build/bin/xylem_bench_cuda" --json "$out/xylem.json" "${peer[@]}" >"$out/bench.txt" 2>&1
  local bench_rc=$?
  echo "== gemm and conv2d, alternating rounds (PyTorch and xylem in ABBA order)"
  local round
  for round in 1 2 3 4; do
    local first=torch second=xylem
    ((round % 2 == 0)) && first=xylem second=torch
    for who in $first $second; do
      if [ $who = torch ]; then
        "$python" "$root/scripts/torch_peer.py" --only tensor-cores --json "$out/torch_gemm_$round.json" >>"$out/gemm_rounds.log" 2>&1
      else
        "$build/bin/xylem_bench_cuda" --only tensor-cores --json "$out/xylem_gemm_$round.json" >>"$out/gemm_rounds.log" 2>&1 ||
          bench_rc=1
      fi
    done
  done
  local t_bench=$((SECONDS - t0 - t_ctest - t_memcheck))

  echo
  echo "================ summary ================"
  head -1 "$out/gpu.txt"
  echo "ctest:   $(grep -E 'tests passed' "$out/ctest.log" | tail -1) (rc $ctest_rc)"
  echo "dist.cuda (NCCL): $(grep -E '\[  (PASSED|FAILED) +\]' "$out/dist_cuda.log" | tail -2 | tr '\n' ' ')(rc $nccl_rc)"
  echo "memcheck: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' "$out/memcheck.log" | tr '\n' ' ') $(grep -c '^\[       OK \]' "$out/memcheck.log") tests ok (rc $memcheck_rc)"
  echo "im2col:  $(grep -E '^\[  (PASSED|FAILED) ' "$out/im2col.log" | tr '\n' ' ') (rc $im2col_rc)"
  echo "cuDNN graph / legacy alone: $(grep -hE '^\[  (PASSED|FAILED) ' "$out/cudnn_graph.log" "$out/cudnn_legacy.log" | tr '\n' ' ') (rc $api_rc)"
  cat "$out/cudnn.txt"
  echo "seconds: ctest $t_ctest, memcheck $t_memcheck, torch + bench $t_bench"
  echo "bench (rc $bench_rc):"
  sed -n '/^xylem cuda/,$p' "$out/bench.txt"
  [ $bench_rc -eq 0 ] || tail -5 "$out/bench.txt"
  "$python" "$root/scripts/gemm_rounds.py" "$out"
  with_torch_cudnn
  [ $ctest_rc -eq 0 ] && [ $nccl_rc -eq 0 ] && [ $memcheck_rc -eq 0 ] && [ $im2col_rc -eq 0 ] && [ $api_rc -eq 0 ] && [ $bench_rc -eq 0 ]
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  conv) conv ;;
  ops) ops ;;
  attention) attention ;;
  python) python_checks ;;
  convnets) convnets ;;
  host_ops2) host_ops2 ;;
  fashion) setup; "$root/scripts/gpu_fashion_mnist.sh" ;;
  train_modes) train_modes ;;
  dist) setup; dist_cuda; [ $nccl_rc -eq 0 ] ;;
  multi) setup; build=$build out=$out python=$python root=$root "$root/scripts/gpu_multi.sh" ;;
  *)
    # The comment block at the top of this file is the usage.
    awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 2
    ;;
esac
