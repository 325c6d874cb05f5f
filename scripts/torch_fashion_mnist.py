#!/usr/bin/env python3
"""PyTorch's side of the Fashion-MNIST check, run on the GPU machine by gpu.sh.

1. Trains the network `xylem train` trains (tools/fashion_mnist.cpp: conv
   1->32, batch norm, relu, max pool; conv 32->64, batch norm, relu, max
   pool; linear to 10) the same way (Adam, lr 1e-3, batch 64, shuffled,
   cross-entropy), timing each epoch: the peer for xylem's time per epoch.
2. With --weights, loads the safetensors file `xylem train --save` wrote into
   the same network and reports its test accuracy, to compare with the one
   xylem printed: the file's names, shapes and values must be PyTorch's.

Usage: torch_fashion_mnist.py DATA_DIR [--epochs N] [--weights FILE]
"""
import argparse
import gzip
import pathlib
import time

import numpy as np
import torch
from torch import nn


def idx(path: pathlib.Path) -> np.ndarray:
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def split(data: pathlib.Path, prefix: str, device):
    name = lambda kind: next(data.glob(f"{prefix}-{kind}-idx*"))
    images = torch.from_numpy(idx(name("images")).astype(np.float32) / 255.0).unsqueeze(1).to(device)
    labels = torch.from_numpy(idx(name("labels")).astype(np.int64)).to(device)
    return images, labels


def network() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


@torch.no_grad()
def accuracy(model, images, labels, batch=64) -> float:
    model.eval()
    right = sum((model(images[i:i + batch]).argmax(1) == labels[i:i + batch]).sum().item()
                for i in range(0, len(images), batch))
    return 100.0 * right / len(images)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data", type=pathlib.Path)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--weights", type=pathlib.Path)
    a = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_x, train_y = split(a.data, "train", device)
    test_x, test_y = split(a.data, "t10k", device)

    if a.weights:
        from safetensors.torch import load_file
        model = network().to(device)
        state = load_file(str(a.weights), device=str(device))
        missing, unexpected = model.load_state_dict(state, strict=False)
        # num_batches_tracked counts steps for BatchNorm's momentum=None mode only.
        missing = [k for k in missing if not k.endswith("num_batches_tracked")]
        print(f"torch: xylem's weights: {len(state)} tensors, missing {missing}, unexpected {unexpected}")
        print(f"torch: test accuracy with xylem's weights {accuracy(model, test_x, test_y):.2f}%")

    torch.manual_seed(0)
    model = network().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, a.epochs + 1):
        model.train()
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.randperm(len(train_x), device=device)
        for i in range(0, len(order), a.batch):
            pick = order[i:i + a.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(train_x[pick]), train_y[pick])
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        print(f"torch: epoch {epoch} {seconds:.2f} s ({len(train_x) / seconds:.0f} samples/s), "
              f"test accuracy {accuracy(model, test_x, test_y):.2f}%")


if __name__ == "__main__":
    main()
