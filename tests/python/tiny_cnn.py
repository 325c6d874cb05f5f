"""A small CNN and a task it learns in a few steps: the check that training
through xylem.layers, losses and optim works, shared by test_layers.py and
scripts/gpu_python.py (which runs it on CUDA, where pytest may be absent)."""
import numpy as np

import xylem


def task(rng):
    """24 images of 8x8, three classes told apart by where a bright square is."""
    t = np.arange(24, dtype=np.int64) % 3
    x = rng.normal(0, 0.1, size=(24, 1, 8, 8)).astype(np.float32)
    for k, c in enumerate(t):
        x[k, 0, 2 * c:2 * c + 3, 2 * c:2 * c + 3] += 1
    return x, t


def train(backend, x, t, steps, make_optimizer, seed=11):
    """The loss of each of `steps` training steps on `backend`, the weights drawn from `seed`."""
    from xylem import layers, losses
    with backend:
        gen = xylem.Generator(seed)
        model = layers.Sequential(layers.Conv2d(1, 4, 3, padding=1, generator=gen), layers.BatchNorm2d(4),
                                  layers.ReLU(), layers.MaxPool2d(2), layers.Flatten(),
                                  layers.Linear(4 * 4 * 4, 3, generator=gen))
        opt = make_optimizer(model)
        xt, tt = xylem.contiguous(xylem.asarray(x)), xylem.contiguous(xylem.asarray(t))
        values = []
        for _ in range(steps):
            opt.zero_grad()
            loss, dy = losses.cross_entropy(model(xt), tt)
            model.backward(dy)
            opt.step()
            values.append(loss.item())
        return values
