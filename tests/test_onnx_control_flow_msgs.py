"""The hostile trial's ONNX control-flow messages: a Loop's refusal says why, an unnamed node in a
body graph is named by its place, a scalar input is shown as one (round on dynamo/optimum exports)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.core.errors import SpecError
from explorer.core.network import InputShape
from explorer.frontends.onnx import load_onnx


def _save(tmp_path, graph, name="m.onnx"):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    f = tmp_path / name
    f.write_bytes(model.SerializeToString())
    return f


def _loop(tmp_path):
    """y = Loop(trip 3) over a body x -> Relu(x) carried [4, 64], then a MatMul reading y."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["x_in"], ["x_out"], name="body_relu"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, None)])
    w = numpy_helper.from_array(np.zeros((64, 10), np.float32), "w")
    trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond")
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "cond", "x"], ["y"], name="loop", body=body),
         helper.make_node("MatMul", ["y", "w"], ["z"], name="fc")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 10])], [w, trip, cond])
    return _save(tmp_path, graph)


def test_a_loop_is_refused_with_its_reason(tmp_path):
    with pytest.raises(SpecError) as err:
        load_onnx(_loop(tmp_path))
    text = str(err.value)
    assert "Loop" in text and ("trip count" in text or "body graph" in text), text
    assert "\n" not in text


def _if_of_two_shapes(tmp_path, name):
    """y = If(sum(x) > 0) of Relu(x) [64, 64] or Unsqueeze(x) [1, 64, 64] (no shape inferred for y),
    then a MatMul reading y."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then_branch", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Unsqueeze", ["x", "ax"], ["e"])], "else_branch", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    consts = [numpy_helper.from_array(np.zeros((64, 10), np.float32), "w"),
              numpy_helper.from_array(np.array(0, np.float32), "zero"),
              numpy_helper.from_array(np.array([0], np.int64), "ax")]
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
         helper.make_node("If", ["c"], ["y"], name=name, then_branch=then, else_branch=other),
         helper.make_node("MatMul", ["y", "w"], ["z"], name="fc")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], consts)
    return _save(tmp_path, graph)


@pytest.mark.parametrize("name, shown", [("branch", "node 'branch' (If)"), ("", "node 2 (If)")])
def test_an_if_output_without_a_shape_is_refused_as_a_branch_not_a_loop(tmp_path, name, shown):
    """An If has no trip count and nothing to unroll: its refusal names the branch (review finding: it
    said "trip count ... the loop unrolled", and an unnamed If as If '#2', a name it does not have)."""
    with pytest.raises(SpecError) as err:
        load_onnx(_if_of_two_shapes(tmp_path, name))
    text = str(err.value)
    assert f"no inferred shape for tensor 'y': it is an output of {shown}, whose shape depends on which of its " \
           "two branches runs" in text and text.endswith("export the model with the branch taken"), text
    assert "trip count" not in text and "loop" not in text and "'#" not in text


def test_an_unnamed_node_in_a_body_graph_is_named_by_its_place(tmp_path):
    w = numpy_helper.from_array(np.zeros((8, 8), np.float32), "w")
    then = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["t"])], "then_branch", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 8])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="keep")], "else_branch", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 8])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w])
    with pytest.raises(SpecError) as err:
        load_onnx(_save(tmp_path, graph))
    text = str(err.value)
    assert "MatMul ''" not in text and "MatMul (node #0 of body graph 'then_branch')" in text, text


def test_a_scalar_input_is_shown_as_one():
    assert InputShape("c", (), (), None).describe() == "input 'c': a scalar"
    assert InputShape("x", (2, 8), (), 0).describe() == "input 'x': 2 x 8"
