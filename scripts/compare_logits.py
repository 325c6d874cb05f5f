#!/usr/bin/env python3
"""Compares the "logits" tensors of two safetensors files (`xylem train
--logits`, torch_fashion_mnist.py --save-logits): the largest absolute
difference and how many rows pick the same class. Needs only NumPy and
safetensors.

Usage: compare_logits.py WHAT A.safetensors B.safetensors
"""
import sys

from safetensors.numpy import load_file


def difference(a, b) -> str:
    """The largest |a - b| of two [N, classes] arrays and how many rows agree on the class."""
    if a.shape != b.shape:
        return f"logits of shapes {a.shape} and {b.shape}"
    agree = int((a.argmax(1) == b.argmax(1)).sum())
    return f"max |logit difference| {abs(a.astype('f8') - b).max():.3g} over {len(a)} images, same class for {agree}"


def main() -> None:
    what, a, b = sys.argv[1], load_file(sys.argv[2])["logits"], load_file(sys.argv[3])["logits"]
    print(f"{what}: {difference(a, b)}")


if __name__ == "__main__":
    main()
