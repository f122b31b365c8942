"""The hostile trial's ONNX declarations: a value_info or graph output whose declared shape
disagrees with shape inference is refused naming it (it was trusted, and the node reading it
blamed; a wrong output passed), and an initializer of negative or too many dims is refused
naming the initializer and its dims (it surfaced as a layer's derived size) (findings 5, 6)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx

from .conftest import run_cli


def _two_matmuls(tmp_path, value_info=(), out_shape=(4, 10), w1=None):
    """x[4,64] @ w1[64,128] -> h1 @ w2[128,10] -> y."""
    w1 = w1 if w1 is not None else numpy_helper.from_array(np.zeros((64, 128), np.float32), "w1")
    w2 = numpy_helper.from_array(np.zeros((128, 10), np.float32), "w2")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
         helper.make_node("MatMul", ["h1", "w2"], ["y"], name="fc2")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], [w1, w2],
        value_info=[helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in value_info])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    f = tmp_path / "m.onnx"
    f.write_bytes(model.SerializeToString())
    return f


def _refusal(path) -> str:
    with pytest.raises(SpecError) as err:
        load_onnx(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(path)), text
    return text


def test_a_lying_value_info_is_named(tmp_path):
    text = _refusal(_two_matmuls(tmp_path, value_info=[("h1", [4, 999])]))
    assert text.endswith("value_info 'h1' declares the shape [4, 999], but shape inference gives [4, 128] from the "
                         "nodes: fix or remove the declaration"), text


def test_a_wrong_declared_output_is_named(tmp_path):
    text = _refusal(_two_matmuls(tmp_path, out_shape=(7, 3)))
    assert text.endswith("graph output 'y' declares the shape [7, 3], but shape inference gives [4, 10] from the "
                         "nodes: fix or remove the declaration"), text


def test_true_or_symbolic_declarations_still_import(tmp_path):
    net = load_onnx(_two_matmuls(tmp_path, value_info=[("h1", [4, 128])]))
    assert [layer.name for layer in net.layers] == ["fc1", "fc2"]
    net = load_onnx(_two_matmuls(tmp_path, value_info=[("h1", ["n", 128])], out_shape=("n", 10)))
    assert [layer.name for layer in net.layers] == ["fc1", "fc2"]


def _bad_w1(dims):
    t = TensorProto()
    t.name, t.data_type = "w1", TensorProto.FLOAT
    t.dims.extend(dims)
    t.raw_data = b""
    return t


@pytest.mark.parametrize("dims", [[64, -128], [-64, -128]])
def test_a_negative_initializer_dim_names_the_initializer(tmp_path, dims, capsys):
    path = _two_matmuls(tmp_path, w1=_bad_w1(dims))
    text = _refusal(path)
    assert text == f"{path}: initializer 'w1' has dims {dims}: a negative dimension"
    code, _, err = run_cli(["--model", str(path)], capsys)  # the CLI: one line, exit 2
    assert code == 2 and err == f"explore: error: {text}\n"


def test_a_huge_initializer_is_the_documented_size_refusal(tmp_path):
    path = _two_matmuls(tmp_path, w1=_bad_w1([2 ** 62, 2 ** 62]))
    text = _refusal(path)
    assert text == (f"{path}: initializer 'w1' has dims [{2 ** 62}, {2 ** 62}]: {2 ** 124:,} elements, beyond "
                    "2^40 = 1,099,511,627,776, the bound on a size")
