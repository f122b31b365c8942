"""Shape inference's data propagation runs only where it can add a shape: after the shapes-only
folding rounds left every node output a known shape it is skipped (the network is the one the
propagating pass gives), and where a shape stays unknown it runs, its bound checked first
(docs/specs.md, "ONNX"; docs/benchmarks.md, "Bounded shape inference")."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, shape_inference

import explorer.frontends.onnx_fold as fold
from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx
from explorer.frontends.onnx_bounds import MAX_PROPAGATED
from explorer.frontends.onnx_fold import every_shape_known

from .onnx_nets import hf_bert, resnet18
from .test_hostile_round4 import range_net


@pytest.fixture
def passes(monkeypatch) -> list[bool]:
    """Every shape inference pass of the import, as its data_prop flag."""
    real, seen = shape_inference.infer_shapes, []

    def counting(model, *args, **kw):
        seen.append(bool(kw.get("data_prop", False)))
        return real(model, *args, **kw)

    monkeypatch.setattr(shape_inference, "infer_shapes", counting)
    return seen


def _relu_graph(r_type):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return helper.make_graph(nodes, "g", [x], [y], value_info=[r_type] if r_type is not None else [])


@pytest.mark.parametrize("r_type, known", [
    (helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3]), True),
    (helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, "n"]), False),  # a symbolic dimension
    (helper.make_tensor_value_info("r", TensorProto.FLOAT, None), False),  # no shape
    (helper.make_tensor_value_info("r", TensorProto.UNDEFINED, [2, 3]), False),  # no element type
    (helper.make_tensor_sequence_value_info("r", TensorProto.FLOAT, [2, 3]), False),  # not a tensor
    (None, False),  # no value_info at all
], ids=["known", "symbolic", "no-shape", "no-type", "sequence", "no-value-info"])
def test_every_shape_known_on_hand_built_graphs(r_type, known):
    assert every_shape_known(_relu_graph(r_type)) is known


def test_a_graph_output_and_an_initializer_count_as_known():
    g = _relu_graph(helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3]))
    g.node.append(helper.make_node("Identity", ["w"], ["wi"]))
    g.initializer.append(numpy_helper.from_array(np.ones(3, np.float32), "wi"))
    assert every_shape_known(g)
    g.output[0].type.tensor_type.shape.dim[1].dim_param = "m"
    assert not every_shape_known(g)


@pytest.mark.parametrize("make, kw", [(lambda: hf_bert(layers=2), {"batch": 2, "sequence": 8}), (resnet18, {})])
def test_an_export_whose_shapes_fold_imports_without_propagation_as_with_it(tmp_path, monkeypatch, passes, make, kw):
    path = tmp_path / "m.onnx"
    onnx.save(make(), path)
    net = load_onnx(path, **kw)
    assert passes and True not in passes  # shapes-only passes alone
    monkeypatch.setattr(fold, "every_shape_known", lambda graph: False)
    passes.clear()
    assert load_onnx(path, **kw) == net
    assert passes[-1] is True  # the propagating pass, as the importer ran it before


def test_propagation_runs_where_a_shape_stays_unknown(tmp_path, passes):
    """NonZero's output length is data-dependent: no pass knows it, so propagation runs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("NonZero", ["x"], ["nz"])]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in (("y", TensorProto.FLOAT), ("nz", TensorProto.INT64))]
    graph = helper.make_graph(nodes, "nz", [x], outs, [numpy_helper.from_array(np.ones((16, 8), np.float32), "w")])
    path = tmp_path / "nz.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    net = load_onnx(path)
    assert [(layer.name, layer.in_channels, layer.out_channels) for layer in net.layers] == [("MatMul_0", 16, 8)]
    assert passes == [False, True]  # shapes-only (its check reads the same pass), then propagating


def test_the_bound_is_still_checked_where_propagation_is_skipped(tmp_path, passes):
    """Every shape of the Range net is known without propagation, yet its 1-D tensor past the
    limit is refused as before (the check runs on the shapes-only pass)."""
    with pytest.raises(SpecError, match=f"1-D tensor of {MAX_PROPAGATED + 1:,} elements"):
        load_onnx(range_net(tmp_path, MAX_PROPAGATED + 1))
    assert True not in passes
