#!/usr/bin/env python3
"""Writes the fixture tests/unit/torch_weights_test.cpp loads: a tiny network
(conv 1->4 3x3 pad 1, batch norm, relu, max pool 2, flatten, linear 64->3)
trained for a few steps in PyTorch, so the batch norm's running statistics and
num_batches_tracked are not their initial values, then saved with PyTorch's
safetensors (weights.safetensors) together with an input batch and the
network's logits for it in evaluation mode (io.safetensors).

Usage: make_fixture.py [OUT_DIR]   (default: this script's directory)
"""
import pathlib
import sys

import torch
from safetensors.torch import save_file
from torch import nn


def network() -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


def main() -> None:
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent
    torch.manual_seed(7)
    model = network()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(4, 1, 8, 8)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    x = torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        logits = model(x)
    save_file(model.state_dict(), str(out / "weights.safetensors"), metadata={"format": "pt"})
    save_file({"input": x.contiguous(), "logits": logits.contiguous()}, str(out / "io.safetensors"))


if __name__ == "__main__":
    main()
