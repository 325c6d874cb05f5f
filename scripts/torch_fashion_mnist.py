#!/usr/bin/env python3
"""PyTorch's side of the Fashion-MNIST check, run on the GPU machine by gpu.sh.

1. Trains the network `xylem train` trains (tools/fashion_mnist.cpp: conv
   1->32, batch norm, relu, max pool; conv 32->64, batch norm, relu, max
   pool; linear to 10) the same way (Adam, lr 1e-3, batch 64, shuffled,
   cross-entropy), timing each epoch: the peer for xylem's time per epoch.
2. With --weights, loads the safetensors file `xylem train --save` wrote into
   the same network (strictly: no key missing or unexpected) and reports its
   test accuracy, to compare with the one xylem printed; with --xylem-logits
   (the file of `xylem train --logits`), also the largest difference between
   xylem's logits of the first test images and PyTorch's with xylem's weights.
3. With --save-weights and --save-logits, writes PyTorch's trained weights
   (its state_dict, as safetensors) and its logits of the first
   --logit-images test images, for `xylem train --load FILE --epochs 0
   --logits ...` to evaluate the other way (gpu_fashion_mnist.sh).

Usage: torch_fashion_mnist.py DATA_DIR [--epochs N] [--weights FILE [--xylem-logits FILE]]
                              [--save-weights FILE] [--save-logits FILE] [--logit-images N]
"""
import argparse
import gzip
import pathlib
import time

import numpy as np
import torch
from torch import nn

from compare_logits import difference


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
def logits(model, images) -> torch.Tensor:
    model.eval()
    return model(images).float().cpu().contiguous()


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
    p.add_argument("--xylem-logits", type=pathlib.Path)
    p.add_argument("--save-weights", type=pathlib.Path)
    p.add_argument("--save-logits", type=pathlib.Path)
    p.add_argument("--logit-images", type=int, default=256)
    a = p.parse_args()
    from safetensors.torch import load_file, save_file
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_x, train_y = split(a.data, "train", device)
    test_x, test_y = split(a.data, "t10k", device)

    first = test_x[:a.logit_images]
    if a.weights:
        model = network().to(device)
        state = load_file(str(a.weights), device=str(device))
        missing, unexpected = model.load_state_dict(state, strict=False)
        print(f"torch: xylem's weights: {len(state)} tensors, missing {missing}, unexpected {unexpected}")
        print(f"torch: test accuracy with xylem's weights {accuracy(model, test_x, test_y):.2f}%")
        if a.xylem_logits:
            theirs = load_file(str(a.xylem_logits))["logits"]
            print(f"torch: xylem's weights, PyTorch's logits against xylem's: "
                  f"{difference(logits(model, first[:len(theirs)]).numpy(), theirs.numpy())}")

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
    if a.save_weights:
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(a.save_weights),
                  metadata={"format": "pt"})
        print(f"torch: weights saved to {a.save_weights}")
    if a.save_logits:
        save_file({"logits": logits(model, first)}, str(a.save_logits))
        print(f"torch: logits of the first {len(first)} test images saved to {a.save_logits}")


if __name__ == "__main__":
    main()
