#!/usr/bin/env bash
# The Fashion-MNIST check on the GPU machine, run as `scripts/gpu.sh fashion`
# (which puts the build back at its path and sets the library path): `xylem train` on CUDA (accuracy, time per
# epoch, weights and the first test images' logits saved as safetensors),
# then PyTorch training the same network the same way
# (scripts/torch_fashion_mnist.py), loading xylem's weights (accuracy, and
# its logits against xylem's) and saving its own; then xylem loading
# PyTorch's weights on CUDA (accuracy, and its logits against PyTorch's).
# The GPU image has no Fashion-MNIST: carry the Debian files in
# .fmnist/ (ignored through .git/info/exclude):
#   here:  mkdir -p .fmnist && cp /usr/share/datasets/fashion-mnist/* .fmnist/
#   there: run(command="scripts/gpu.sh fashion", carry=[".gpu.tar.xz", ".fmnist"])
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-/tmp/xylem-gpu-out}
python=${XYLEM_GPU_PYTHON:-/opt/torch/.venv/bin/python}
build=$(cat "$root/.gpu/build_path")
epochs=${XYLEM_FMNIST_EPOCHS:-8}
mkdir -p "$out"
echo "== xylem train on cuda:0, $epochs epochs"
"$build/bin/xylem" train --backend cuda:0 --epochs "$epochs" --data "$root/.fmnist" \
  --save "$out/fashion_mnist.safetensors" --logits "$out/xylem_logits.safetensors" \
  --curve "$out/fashion-mnist-cuda.svg" 2>&1 | tee "$out/train_cuda.log" | tail -n 13
echo "== PyTorch: the same network and training, xylem's weights, then its own weights saved"
"$python" "$root/scripts/torch_fashion_mnist.py" "$root/.fmnist" --epochs 2 \
  --weights "$out/fashion_mnist.safetensors" --xylem-logits "$out/xylem_logits.safetensors" \
  --save-weights "$out/torch_fashion_mnist.safetensors" --save-logits "$out/torch_logits.safetensors" \
  2>&1 | tee "$out/train_torch.log"
echo "== xylem on cuda:0 with PyTorch's weights"
"$build/bin/xylem" train --backend cuda:0 --epochs 0 --data "$root/.fmnist" \
  --load "$out/torch_fashion_mnist.safetensors" --logits "$out/xylem_torch_logits.safetensors" 2>&1 |
  tee "$out/load_torch.log"
echo "torch: test accuracy $(grep -o 'test accuracy [0-9.]*%' "$out/train_torch.log" | tail -n 1 | cut -d' ' -f3)," \
  "xylem with the same weights $(grep -o 'test accuracy [0-9.]*%' "$out/load_torch.log" | cut -d' ' -f3)"
"$python" "$root/scripts/compare_logits.py" "PyTorch's weights, xylem's logits against PyTorch's" \
  "$out/torch_logits.safetensors" "$out/xylem_torch_logits.safetensors"
