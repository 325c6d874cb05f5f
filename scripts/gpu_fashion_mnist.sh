#!/usr/bin/env bash
# The Fashion-MNIST check on the GPU machine, run as `scripts/gpu.sh fashion`
# (which puts the build back at its path and sets the library path): `xylem train` on CUDA (accuracy, time per
# epoch, weights saved as safetensors), then PyTorch training the same
# network the same way (scripts/torch_fashion_mnist.py) and loading xylem's
# weights. The GPU image has no Fashion-MNIST: carry the Debian files in
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
  --save "$out/fashion_mnist.safetensors" --curve "$out/fashion-mnist-cuda.svg" 2>&1 | tee "$out/train_cuda.log" | tail -n 12
echo "== PyTorch: the same network and training, then xylem's weights"
"$python" "$root/scripts/torch_fashion_mnist.py" "$root/.fmnist" --epochs 2 \
  --weights "$out/fashion_mnist.safetensors" 2>&1 | tee "$out/train_torch.log"
