"""Safetensors files, state dicts by PyTorch's names, and the reference
models."""
import numpy as np
import pytest

import xylem
from conftest import put
from test_layers import host

layers = xylem.layers


def test_safetensors_round_trip(tmp_path, rng):
    tensors = {"a": xylem.asarray(rng.normal(size=(3, 4)).astype(np.float32)),
               "b": xylem.asarray(np.arange(5, dtype=np.int64)),
               "c": xylem.asarray(rng.normal(size=2))}
    xylem.save_safetensors(tmp_path / "t.safetensors", tensors, {"format": "pt", "note": "x"})
    back = xylem.load_safetensors(tmp_path / "t.safetensors")
    assert sorted(back) == ["a", "b", "c"]
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype
        np.testing.assert_array_equal(np.asarray(back[name]), np.asarray(t))
    assert xylem.load_safetensors_metadata(tmp_path / "t.safetensors") == {"format": "pt", "note": "x"}
    with pytest.raises(xylem.IOError):
        xylem.load_safetensors(tmp_path / "absent")


def model(seed):
    gen = xylem.Generator(seed)
    return layers.Sequential(layers.Conv2d(1, 2, 3, generator=gen), layers.BatchNorm2d(2), layers.Flatten(),
                             layers.Linear(8, 3, generator=gen))


def test_weights_round_trip(backend, tmp_path, rng):
    a, b = model(1), model(2)
    x = put(rng.normal(size=(2, 1, 4, 4)), xylem.f32, backend)
    a(x)  # moves the running statistics and counts a batch
    assert sorted(a.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.num_batches_tracked", "1.running_mean",
                                      "1.running_var", "1.weight", "3.bias", "3.weight"]
    a.save_weights(tmp_path / "m.safetensors")
    b.load_weights(tmp_path / "m.safetensors")
    a.eval(), b.eval()
    np.testing.assert_array_equal(host(a(x)), host(b(x)))
    assert b[1].num_batches_tracked.value.item() == 1


def test_bad_state_dict_changes_nothing(backend):
    m = model(3)
    state = m.state_dict()
    before = {k: host(v) for k, v in state.items()}
    bad = dict(state)
    bad["3.weight"] = xylem.zeros([2, 8])
    with pytest.raises(xylem.ShapeMismatch):
        m.load_state_dict(bad)
    del bad["3.weight"]
    with pytest.raises(xylem.InvalidArgument):
        m.load_state_dict(bad)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


def test_references():
    refs = xylem.models.references()
    assert [r.name for r in refs] == ["alexnet", "overfeat_fast", "vgg_a"]
    assert refs[0].input_shape(2) == (2, 3, 224, 224) and refs[0].batch == 128
    assert refs[1].input_shape(1) == (1, 3, 231, 231)


def test_alexnet_parameters():
    net = xylem.models.alexnet(seed=1, backend=xylem.Backend.native())
    assert sum(p.value.size for p in net.parameters()) == 61_100_840
    assert net.output_shape((1, 3, 224, 224)) == (1, 1000)
    assert isinstance(net[0], layers.Conv2d) and net[0].weight.name == "0.weight"
    net.eval()
    assert not net[0].training
