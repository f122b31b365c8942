"""Every shipped YAML loads; bad specs give one line naming file, field and problem."""

import pytest

from explorer.frontends import zoo
from explorer.frontends.array_yaml import load_array_file
from explorer.core.errors import SpecError
from explorer.core.network import LayerKind
from explorer.frontends.network_yaml import load_network_file
from explorer.frontends import load_model

from .conftest import LLM_ZOO


@pytest.mark.parametrize("path", [pytest.param(p, id=n) for n, p in zoo.zoo_files().items()])
def test_zoo_loads(path):
    net = load_network_file(path)
    assert net.layers
    graphs = {"resnet18", "resnet34", "resnet50", "bert-base", "gpt2-small", "llama-7b", "vit-b16", "mobilenet-v2", "efficientnet-b0"}
    assert net.is_chain == (path.stem not in graphs and path.stem not in LLM_ZOO)
    text = path.read_text()
    assert text.startswith("#"), "each zoo file starts with a comment saying where its shapes come from"


@pytest.mark.parametrize("path", [pytest.param(p, id=n) for n, p in zoo.array_files().items()])
def test_arrays_load(path):
    arr = load_array_file(path)
    assert len(arr.bandwidth_GBps) == arr.levels
    assert path.read_text().startswith("#")


def test_zoo_has_hypar_ten_and_aliases():
    names = set(zoo.zoo_files())
    assert {"sfc", "sconv", "lenet-c", "cifar-c", "alexnet", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e"} <= names
    assert {"resnet18", "resnet34", "resnet50", "bert-base"} <= names
    assert load_model("vgg16").layers == load_model("VGG-D").layers
    assert load_model("VGG19").layers == load_model("vgg-e").layers


@pytest.mark.parametrize(
    "name,weighted,convs",
    [("vgg-a", 11, 8), ("vgg-b", 13, 10), ("vgg-c", 16, 13), ("vgg-d", 16, 13), ("vgg-e", 19, 16),
     ("alexnet", 8, 5), ("lenet-c", 4, 2), ("cifar-c", 5, 3), ("sfc", 4, 0), ("sconv", 4, 4)],
)
def test_zoo_shapes(name, weighted, convs):
    net = load_model(name)
    assert len(net.layers) == weighted
    assert sum(L.kind is LayerKind.CONV for L in net.layers) == convs


def test_vgg_parameter_counts():
    # Simonyan & Zisserman Table 2: A 133M, D 138M, E 144M parameters (weights only here, no biases)
    for name, millions in (("vgg-a", 133), ("vgg-d", 138), ("vgg-e", 144)):
        w = sum(L.weight_elements() for L in load_model(name).layers)
        assert round(w / 1e6) == millions, (name, w)
    # LeNet: 20*25 + 50*20*25 + 800*500 + 500*10 = 430,500 weights
    assert sum(L.weight_elements() for L in load_model("lenet-c").layers) == 430500


def write(tmp_path, text, name="net.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = """version: 1
name: t
batch: 8
layers:
  - {name: c1, kind: conv, in_channels: 3, out_channels: 8, kernel: [3, 3], in_size: [8, 8], out_size: 8}
  - {name: f1, kind: fc, in_features: 512, out_features: 10}
"""


def test_good_spec(tmp_path):
    net = load_network_file(write(tmp_path, GOOD))
    assert net.batch == 8 and net.layers[0].kernel == (3, 3) and net.layers[0].in_size == (8, 8)


@pytest.mark.parametrize(
    "text,message",
    [
        (GOOD.replace("batch: 8\n", "batch: 8\nbatch: 9\n"), "duplicate key 'batch'"),
        (GOOD.replace("batch: 8", "batch: 8\ncolour: red"), "colour: unknown key"),
        (GOOD.replace("out_channels: 8", "out_channels: 0"), "layers[0].out_channels: must be a positive integer, got 0"),
        (GOOD.replace("in_features: 512", "in_features: -5"), "layers[1].in_features: must be a positive integer, got -5"),
        (GOOD.replace("kind: fc", "kind: pool"), "layers[1].kind: must be one of conv, fc"),
        (GOOD.replace("version: 1", "version: 7"), "version: unsupported version 7"),
        (GOOD.replace(", out_size: 8}", ", out_size: 8, stride: 2}"), "layers[0].stride: unknown key"),
        (GOOD.replace("out_size: 8}", "}"), "layers[0].out_size: missing"),
        (GOOD.replace("kernel: [3, 3]", "kernel: [3, 3, 3]"), "layers[0].kernel: must be an integer or a list [h, w]"),
        (GOOD.replace("in_features: 512", "in_features: 2.5"), "layers[1].in_features: must be a positive integer"),
        (GOOD + "  - {name: f1, kind: fc, in_features: 10, out_features: 10}\n", "layers[2].name: duplicate layer name 'f1'"),
        ("name: [unclosed\n", "invalid YAML"),
        ("- just\n- a list\n", "top level must be a mapping"),
        (GOOD.replace("layers:\n", "layers: []\nx:\n"), "layers: must be a non-empty list"),
    ],
)
def test_bad_network_specs(tmp_path, text, message):
    p = write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_network_file(p)
    msg = str(err.value)
    assert msg.startswith(str(p) + ": ")
    assert message in msg
    assert "\n" not in msg


ARRAY = """version: 1
name: a
levels: 2
dtype_bytes: 4
link_bandwidth_GBps: [10, 20]
peak_TFLOPS: 1
memory_GiB: 8
"""


@pytest.mark.parametrize(
    "text,message",
    [
        (ARRAY.replace("levels: 2", "levels: 2.5"), "levels: must be an integer number of levels"),
        (ARRAY.replace("levels: 2", "levels: 0"), "levels: must be between 1 and 20"),
        (ARRAY.replace("levels: 2", "levels: 40"), "levels: must be between 1 and 20"),
        (ARRAY.replace("[10, 20]", "[10]"), "link_bandwidth_GBps: needs one entry per level (2), got 1"),
        (ARRAY.replace("[10, 20]", "[10, -1]"), "link_bandwidth_GBps[1]: must be > 0"),
        (ARRAY.replace("memory_GiB: 8", "memory_GiB: 8\nmemory_GB: 8"), "memory_GB: unknown key"),
        (ARRAY.replace("dtype_bytes: 4", "dtype_bytes: 0"), "dtype_bytes: must be a positive integer, got 0"),
        (ARRAY.replace("peak_TFLOPS: 1\n", ""), "peak_TFLOPS: missing"),
    ],
)
def test_bad_array_specs(tmp_path, text, message):
    p = write(tmp_path, text, "arr.yaml")
    with pytest.raises(SpecError) as err:
        load_array_file(p)
    assert str(err.value).startswith(str(p) + ": ")
    assert message in str(err.value)


def test_scalar_bandwidth_and_level_override(tmp_path):
    arr = load_array_file(write(tmp_path, ARRAY.replace("[10, 20]", "15"), "arr.yaml"))
    assert [float(b) for b in arr.bandwidth_GBps] == [15, 15]
    arr = load_array_file(write(tmp_path, ARRAY, "arr2.yaml"))
    assert [float(b) for b in arr.with_levels(4).bandwidth_GBps] == [10, 20, 20, 20]
    assert [float(b) for b in arr.with_levels(1).bandwidth_GBps] == [10]


def test_is_int_is_the_one_integer_check_of_user_values():
    """core.errors.is_int: YAML's true is no integer (every spec, the sweep file and the API)."""
    from explorer.core.errors import is_int

    assert is_int(3) and is_int(-1) and is_int(10**50)
    assert not is_int(True) and not is_int(3.0) and not is_int("3") and not is_int(None)
