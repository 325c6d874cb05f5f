"""xylem.data: IDX files as the C++ tests write them, Fashion-MNIST from a
folder of small IDX files, and the batch loader as a Python iterable."""
import struct

import numpy as np
import pytest

import xylem

data = xylem.data


def write_idx(path, array):
    """`array` (uint8 or int32) as an IDX file: magic, big-endian sizes, data."""
    code = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C}[array.dtype]
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.astype(array.dtype.newbyteorder(">")).tobytes())


def test_read_idx(tmp_path, rng):
    pixels = rng.integers(0, 256, size=(3, 4, 5)).astype(np.uint8)
    write_idx(tmp_path / "a", pixels)
    t = data.read_idx(tmp_path / "a")
    assert t.dtype == xylem.u8 and t.shape == (3, 4, 5)
    np.testing.assert_array_equal(np.asarray(t), pixels)
    ints = np.array([7, -2], np.int32)
    write_idx(tmp_path / "b", ints)
    np.testing.assert_array_equal(np.asarray(data.read_idx(str(tmp_path / "b"))), ints)


def test_bad_idx(tmp_path):
    with pytest.raises(xylem.IOError):
        data.read_idx(tmp_path / "absent")
    (tmp_path / "bad").write_bytes(b"\x00\x00\x07\x01\x00\x00\x00\x01x")
    with pytest.raises(xylem.InvalidArgument):
        data.read_idx(tmp_path / "bad")


def test_fashion_mnist_from_a_folder(tmp_path, rng, monkeypatch):
    images = {"train": rng.integers(0, 256, size=(6, 28, 28)).astype(np.uint8),
              "t10k": rng.integers(0, 256, size=(2, 28, 28)).astype(np.uint8)}
    labels = {k: rng.integers(0, 10, size=len(v)).astype(np.uint8) for k, v in images.items()}
    for k in images:
        write_idx(tmp_path / f"{k}-images-idx3-ubyte", images[k])
        write_idx(tmp_path / f"{k}-labels-idx1-ubyte", labels[k])
    fm = data.FashionMnist(tmp_path)
    assert fm.directory == tmp_path
    train, test = fm.train(), fm.test()
    assert train.images.shape == (6, 1, 28, 28) and train.images.dtype == xylem.f32
    np.testing.assert_allclose(np.asarray(train.images)[:, 0], images["train"] / 255.0, rtol=1e-6)
    assert train.labels.dtype == xylem.i64
    np.testing.assert_array_equal(np.asarray(test.labels), labels["t10k"])
    with pytest.raises(xylem.IOError):
        data.FashionMnist(tmp_path / "nowhere")
    monkeypatch.setenv("XYLEM_DATA_DIR", str(tmp_path))
    assert data.FashionMnist().directory == tmp_path


def numbered(n):
    """n samples whose two features and label are all the sample's index."""
    images = np.repeat(np.arange(n, dtype=np.float32), 2).reshape(n, 1, 2)
    return data.Split(xylem.asarray(images), xylem.asarray(np.arange(n, dtype=np.int64)))


def epoch(loader):
    seen = []
    for images, labels in loader:
        lab = np.asarray(labels)
        np.testing.assert_array_equal(np.asarray(images)[:, 0, 0], lab)
        seen.extend(lab.tolist())
    return seen


def test_loader_covers_each_sample_once_per_epoch():
    loader = data.BatchLoader(numbered(10), 4, shuffle=True, seed=7)
    assert len(loader) == 3 and loader.samples == 10
    first, second = epoch(loader), epoch(loader)
    assert sorted(first) == list(range(10)) and sorted(second) == list(range(10))
    assert first == data.shuffled_order(10, 7, 0) and second == data.shuffled_order(10, 7, 1)
    assert first != second
    assert epoch(data.BatchLoader(numbered(10), 4, shuffle=True, seed=7)) == first
    sizes = [len(b.labels.numpy()) for b in data.BatchLoader(numbered(10), 4, shuffle=False, drop_last=True)]
    assert sizes == [4, 4]
    assert epoch(data.BatchLoader(numbered(5), 2, shuffle=False)) == list(range(5))


def test_loader_bad_arguments():
    with pytest.raises(xylem.InvalidArgument):
        data.BatchLoader(numbered(4), 0)
    split = numbered(4)
    with pytest.raises(xylem.ShapeMismatch):
        data.BatchLoader(data.Split(split.images, xylem.asarray(np.arange(3, dtype=np.int64))), 2)
