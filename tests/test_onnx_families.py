"""Issue 24, ONNX: exporter patterns of new families (ShuffleNetV2's chunk, legacy constant
shape subgraphs, T5's position bias, Conv1d/Conv3d, Mixtral's experts, shared and normalised
weights) and hostile graphs (cycles, dangling inputs, bad dimensions, symbolic feature axes,
names with newlines, custom operators). Graphs are built with onnx.helper; no torch."""

from fractions import Fraction

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, shape_inference

from explorer.app.cli import main
from explorer.app.run import rescore
from explorer.core.errors import SpecError
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends.onnx import load_onnx
from explorer.solvers import cpsat, exact

from .conftest import make_array
from .onnx_nets import (
    _G,
    clip_vision_legacy,
    mixtral_moe,
    r3d_block,
    residual_net,
    shuffle_block,
    t5_attention,
    whisper_encoder_stem,
)


def save(tmp_path, model, name="m.onnx"):
    f = tmp_path / name
    onnx.save(model, str(f))
    return f


def sig(net):
    return [(L.kind, L.in_channels, L.out_channels, L.kernel, L.in_size, L.out_size, L.groups, L.heads) for L in net.layers]


def cli_error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as ex:
        main(["--model", *map(str, args), "--levels", "2"])
    err = capsys.readouterr().err.strip()
    assert ex.value.code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def unknown_after_inference(model, tensor_op: str) -> bool:
    """Whether plain ONNX shape inference leaves the first ``tensor_op`` node's output open."""
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    shapes = {vi.name: vi.type.tensor_type.shape for vi in inferred.graph.value_info}
    out = next(n.output[0] for n in model.graph.node if n.op_type == tensor_op)
    return out not in shapes or any(not d.HasField("dim_value") for d in shapes[out].dim)


# ---- real exporter patterns ----------------------------------------------------------------------


def test_shufflenet_chunk_is_a_channel_slice_both_exporters(tmp_path):
    """chunk(2) of 16 channels: the Concat reads 8 + 8 = 16 channels (not 16 + 8 = 24), each edge
    a half of it; the branch conv reads 8 of the stem's 16. Legacy (Slices from Shape arithmetic
    ONNX inference leaves open) and dynamo (Split num_outputs=2) give the same network."""
    legacy = shuffle_block("legacy")
    assert unknown_after_inference(legacy, "Slice")  # the fold is what makes it import
    a = load_onnx(save(tmp_path, shuffle_block("dynamo"), "d.onnx"))
    b = load_onnx(save(tmp_path, legacy, "l.onnx"))
    assert sig(a) == sig(b) and a.edges == b.edges and a.edge_shares == b.edge_shares
    c = load_onnx(save(tmp_path, shuffle_block("split-sizes"), "s.onnx"))
    assert sig(c) == sig(a) and c.edges == a.edges and c.edge_shares == a.edge_shares
    names = [L.name for L in a.layers]
    cat, b1 = a.layers[names.index("cat")], a.layers[names.index("b1")]
    assert (cat.in_channels, cat.out_channels, b1.in_channels) == (16, 16, 8)
    shares = dict(zip(a.edges, a.edge_shares))
    stem, b3 = names.index("stem"), names.index("b3")
    assert shares[(stem, names.index("cat"))] == shares[(b3, names.index("cat"))] == Fraction(1, 2)
    assert shares[(stem, names.index("b1"))] == 1  # the conv's whole input (8 channels) is its share
    p = Problem(a, make_array(3), Space.ACCPAR)
    sol = cpsat.solve(p, SolveOptions(workers=1))
    assert sol.status is Status.OPTIMAL and sol.objective == exact.solve(p).objective
    rescore(p, sol)


def test_legacy_constant_shape_subgraphs_are_folded(tmp_path):
    """CLIP's class token Expand-ed through Reshape/Shape/ConstantOfShape/Mul/Equal/Where and a
    Swin-style Reshape whose target divides a Shape entry: shapes ONNX inference leaves open."""
    model = clip_vision_legacy()
    assert unknown_after_inference(model, "Expand")
    net = load_onnx(save(tmp_path, model), batch=2)
    assert [(L.name, L.kind.value, L.in_size) for L in net.layers] == [
        ("patch_embedding", "conv", (32, 32)), ("pos", "embedding", (17, 1)), ("Add_31", "add", (17, 1)),
        ("fc", "fc", (17, 1))]  # 16 patches + the class token
    assert net.layers[-1].in_channels == 16


def test_t5_position_bias_added_to_scores_keeps_the_attention(tmp_path):
    """scores + position_bias (a Gather on the [buckets, heads] table, computed once and added in
    every layer) before the softmax: once a KeyError 'channels'. Each attention reads q, k, v
    (1/3 each) with 4 heads; the bias table is an embedding of its own; the note says so."""
    net = load_onnx(save(tmp_path, t5_attention()))
    names = [L.name for L in net.layers]
    assert sum(not L.is_join for L in net.layers) == 2 * 4 + 1  # q k v o per layer + the bias table
    for i in (0, 1):
        att = net.layers[names.index(f"l{i}_att")]
        assert (att.in_channels, att.out_channels, att.heads, att.in_size) == (96, 32, 4, (8, 1))
        ins = sorted(u for u, v in net.edges if v == names.index(f"l{i}_att"))
        assert [names[u] for u in ins] == [f"l{i}_q", f"l{i}_k", f"l{i}_v"]
    rel = net.layers[names.index("rel_bias")]
    assert (rel.kind.value, rel.in_channels, rel.out_channels, rel.in_size) == ("embedding", 32, 4, (64, 1))
    assert any("l1_att: a bias from rel_bias" in a for a in net.approximations)
    p = Problem(net, make_array(2), Space.HYPAR)
    rescore(p, exact.solve(p))


def test_conv1d_whisper_stem(tmp_path):
    """Conv1d as (L, 1) planes: kernel (3, 1), 12 -> 12 -> 6 frames; the fc reads 6 tokens."""
    net = load_onnx(save(tmp_path, whisper_encoder_stem()))
    got = [(L.name, L.in_channels, L.out_channels, L.kernel, L.in_size, L.out_size) for L in net.layers]
    assert got == [("conv1", 8, 16, (3, 1), (12, 1), (12, 1)), ("conv2", 16, 16, (3, 1), (12, 1), (6, 1)),
                   ("fc", 16, 16, (1, 1), (6, 1), (6, 1))]
    # FLOPs (multiply-adds) per batch of 2: conv2 = 2 x 6 positions x 16 x 16 x 3
    assert net.layers[1].forward_macs(2) == 2 * 6 * 16 * 16 * 3


def test_conv3d_volume_folds_depth_into_height(tmp_path):
    """Conv3d (3, 7, 7) on 4 x 8 x 8 frames: the volume D x H x W is the plane (D*H, W), so
    positions, weights and multiply-adds are exact; the 5-D residual Add has the same plane."""
    net = load_onnx(save(tmp_path, r3d_block()))
    stem, c1, _, res = net.layers
    assert (stem.kernel, stem.in_size, stem.out_size) == ((21, 7), (32, 8), (16, 4))  # out 4 x 4 x 4
    assert stem.weight_elements() == 8 * 3 * 3 * 7 * 7
    assert stem.forward_macs(2) == 2 * (4 * 4 * 4) * 8 * 3 * (3 * 7 * 7)
    assert c1.weight_elements() == 8 * 8 * 27 and (res.kind.value, res.in_size) == ("add", (16, 4))
    p = Problem(net, make_array(2), Space.HYPAR)
    rescore(p, exact.solve(p))


@pytest.mark.parametrize("style", ["dynamo", "legacy"])
def test_mixtral_experts_are_refused_naming_the_operator(tmp_path, capsys, style):
    f = save(tmp_path, mixtral_moe(style))
    err = cli_error(capsys, f)
    assert "node 'experts_bmm' (MatMul): multiplies activations by expert weights a router selects" in err
    assert "'experts.gate_up_proj' [4, 16, 16]" in err and "mixture-of-experts" in err and "YAML network" in err
    assert "channels:" not in err and "attention" not in err  # no YAML field asked of an ONNX user


def test_shared_and_normalised_weights_are_weights(tmp_path):
    """ALBERT (dynamo) multiplies by Transpose(shared weight); wav2vec2's positional conv uses
    weight normalisation (g * v / ||v||): both are weighted layers with the weight's shape."""
    g = _G()
    x = g.op("MatMul", ["x", g.op("Transpose", [g.weight("shared.w", 6, 4)], perm=[1, 0])], name="albert_q")
    x = g.op("MatMul", [x, g.op("Transpose", [g.weight("shared2.w", 6, 6)], perm=[1, 0])], name="albert_k")
    t = g.op("Transpose", [x], perm=[0, 2, 1])
    v = g.weight("conv.v", 6, 3, 3)
    w = g.op("Mul", [g.weight("conv.g", 6, 1, 1), g.op("Div", [v, g.op("ReduceL2", [v, g.const([1, 2])], keepdims=1)])])
    out = g.op("Conv", [t, w], name="pos_conv", kernel_shape=[3], pads=[1, 1], group=2)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4])]
    net = load_onnx(save(tmp_path, g.model("w", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])))
    got = [(L.name, L.in_channels, L.out_channels, L.kernel, L.in_size, L.groups) for L in net.layers]
    assert got == [("albert_q", 4, 6, (1, 1), (5, 1), 1), ("albert_k", 6, 6, (1, 1), (5, 1), 1),
                   ("pos_conv", 6, 6, (3, 1), (5, 1), 2)]


def test_a_product_of_activations_that_is_no_attention_is_refused(tmp_path, capsys):
    """A Gram matrix a.a^T of one fc's 5 features (no softmax.V follows): no context width (not
    a fused QKV: 5 is no multiple of 3); refused in the importer's words, not with a YAML field."""
    g = _G()
    a = g.op("MatMul", ["x", g.weight("wa", 4, 5)], name="a")
    out = g.op("MatMul", [a, g.op("Transpose", [a], perm=[0, 2, 1])], name="outer")
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])]
    f = save(tmp_path, g.model("o", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]))
    err = cli_error(capsys, f)
    assert "node 'outer' (MatMul): a product of two activations (inputs from a)" in err and "[5]" in err
    assert ".channels" not in err


# ---- hostile graphs ---------------------------------------------------------------------------------


def test_cycle_and_dangling_input_are_named(tmp_path, capsys):
    model = residual_net()
    nodes = model.graph.node
    nodes[0].input[0] = "s"  # convA reads the residual sum: convA -> reluA -> convB -> res -> convA
    err = cli_error(capsys, save(tmp_path, model, "cycle.onnx"))
    assert err.endswith("the nodes form a cycle through node 'convA' (Conv), node 'reluA' (Relu), node 'convB' (Conv), "
                        "node 'res' (Add)")  # not the nodes downstream of it
    model = residual_net()
    model.graph.node[2].input[0] = "nowhere"
    err = cli_error(capsys, save(tmp_path, model, "dangling.onnx"))
    assert "node 'convB' (Conv): input 'nowhere' is no graph input, initializer or node output (a dangling input)" in err
    model = residual_net()
    model.graph.node[2].output[0] = "a"  # convB writes convA's output too
    assert "node 'convB' (Conv): output 'a' is also written by node 'convA' (Conv)" in cli_error(
        capsys, save(tmp_path, model, "twice.onnx"))
    model = residual_net()
    model.graph.node[1].input[0] = "ar"  # reads itself
    assert "node 'reluA' (Relu): reads its own output 'ar' (a cycle)" in cli_error(capsys, save(tmp_path, model, "self.onnx"))


def test_nodes_listed_out_of_order_are_sorted(tmp_path):
    ordered = load_onnx(save(tmp_path, residual_net(), "a.onnx"))
    model = residual_net()
    shuffled = list(model.graph.node)[::-1]
    del model.graph.node[:]
    model.graph.node.extend(shuffled)
    again = load_onnx(save(tmp_path, model, "b.onnx"))
    assert again.layers == ordered.layers and again.edges == ordered.edges


@pytest.mark.parametrize("value", [0, -3])
def test_zero_or_negative_dimension_is_not_called_symbolic(tmp_path, capsys, value):
    model = residual_net()
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_value = value
    err = cli_error(capsys, save(tmp_path, model))
    assert f"input 'x': dimension 2 is {value} (a dimension must be positive)" in err and "symbolic" not in err


@pytest.mark.parametrize("shape, axis, sym", [
    (["batch", 8, "height", 8], 2, "height"),  # an image's spatial axis
    (["batch", 8, 8, "unk__3"], 3, "unk__3"),  # unnamed, last axis of an image
    (["batch", 7, "unk__0"], 2, "unk__0"),  # the feature axis of [batch, seq, features]
    (["batch", "channels", 8, 8], 1, "channels"),
])
def test_symbolic_feature_axis_is_not_called_a_sequence(tmp_path, capsys, shape, axis, sym):
    model = residual_net()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    del dims[:]
    for d in shape:
        dims.add().CopyFrom(helper.make_tensor_type_proto(1, [d]).tensor_type.shape.dim[0])
    err = cli_error(capsys, save(tmp_path, model), "--batch", "4", "--seq", "16")
    assert f"input 'x': axis {axis} of {len(shape)} is symbolic ('{sym}') and is a feature or spatial axis" in err
    assert "sequence dimension" not in err and "pass --seq" not in err


def test_symbolic_sequence_axis_still_asks_for_seq(tmp_path):
    g = _G()
    out = g.op("MatMul", ["x", g.weight("w", 4, 4)], name="fc")
    for shape in (["batch", "unk__1", 4], ["batch", "seq_len", 4]):
        ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
        f = save(tmp_path, g.model("s", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]))
        with pytest.raises(SpecError, match="symbolic sequence dimension .* pass --seq"):
            load_onnx(f, batch=2)
        assert load_onnx(f, batch=2, sequence=6).layers[0].in_size == (6, 1)


def test_node_name_with_a_newline_keeps_the_table(tmp_path, capsys):
    model = residual_net()
    model.graph.node[0].name = "conv\nA\tx"
    net = load_onnx(save(tmp_path, model))
    assert net.layers[0].name == "conv\\nA\\tx" and all(c.isprintable() for L in net.layers for c in L.name)
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(tmp_path / "m.onnx"), "--levels", "2"])
    out = capsys.readouterr().out
    assert ex.value.code == 0 and "conv\\nA\\tx" in out
    assert not any(line.startswith(("A\t", "A ", "A\\t")) for line in out.splitlines())


def test_unknown_custom_operator_gets_a_note_or_an_error(tmp_path, capsys):
    model = residual_net()
    node = model.graph.node[1]  # reluA -> a custom activation
    node.op_type, node.domain = "FancyAct", "com.example"
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    net = load_onnx(save(tmp_path, model))
    assert len(net.layers) == 4
    assert any("unknown custom operator com.example.FancyAct" in a for a in net.approximations)
    # the same with a weight: refused, not dropped
    node.input.append("wb")
    err = cli_error(capsys, save(tmp_path, model, "w.onnx"))
    assert "node 'reluA' (FancyAct): custom operator com.example.FancyAct holds a weight ('wb')" in err


def test_weighted_operators_not_read_are_refused(tmp_path, capsys):
    g = _G()
    out = g.op("ConvTranspose", ["x", g.weight("w", 4, 2, 2, 2)], name="up", kernel_shape=[2, 2], strides=[2, 2])
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 3])]
    f = save(tmp_path, g.model("ct", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]))
    assert "node 'up' (ConvTranspose): ConvTranspose holds a weight and is not supported" in cli_error(capsys, f)


def test_fold_never_turns_a_stored_table_into_a_constant(tmp_path):
    """A small inline position table with constant ids stays an embedding (the fold skips
    stored float tensors of rank >= 2), and a fold that would be huge is skipped, not run."""
    g = _G()
    g.inits.append(numpy_helper.from_array(np.ones((4, 8), dtype=np.float32), "pos_table"))  # 128 B: kept inline
    g.inits.append(numpy_helper.from_array(np.arange(4, dtype=np.int64).reshape(1, 4), "pos_ids"))
    pos = g.op("Gather", ["pos_table", "pos_ids"], name="pos")
    big = g.op("ConstantOfShape", [g.const([1 << 20, 1 << 20])])  # 2^40 elements: never materialised
    x = g.op("Add", [g.op("MatMul", ["x", g.weight("w", 8, 8)], name="fc"), pos], name="add")
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8])]
    outs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, None), helper.make_tensor_value_info(big, TensorProto.FLOAT, None)]
    net = load_onnx(save(tmp_path, g.model("t", ins, outs)))
    assert [L.kind.value for L in net.layers] == ["embedding", "fc", "add"]


FOLD_CASES = [  # (op, inputs, attributes, opset): shape arithmetic as exporters write it
    ("Gather", [np.array([2, 16, 8, 8]), np.array(1)], {"axis": 0}, 17),
    ("Concat", [np.array([2]), np.array([-1]), np.array([4, 4])], {"axis": 0}, 17),
    ("Unsqueeze", [np.array(5), np.array([0])], {}, 17),
    ("Unsqueeze", [np.array([5, 6])], {"axes": [0]}, 11),
    ("Squeeze", [np.array([[7]]), np.array([0])], {}, 17),
    ("Slice", [np.array([2, 16, 8, 8]), np.array([0]), np.array([2]), np.array([0])], {}, 17),
    ("Slice", [np.arange(10).reshape(2, 5), np.array([1]), np.array([-1]), np.array([1]), np.array([2])], {}, 17),
    ("Div", [np.array([17, -17, 9]), np.array([2, 2, -4])], {}, 17),  # integer Div truncates
    ("Div", [np.array([7.0], np.float32), np.array([2.0], np.float32)], {}, 17),
    ("Where", [np.array([True, False]), np.array([1, 2]), np.array([3, 4])], {}, 17),
    ("Equal", [np.array([1, -1, 3]), np.array([-1, -1, -1])], {}, 17),
    ("Expand", [np.array([1.0, 2.0], np.float32), np.array([3, 2])], {}, 17),
    ("Range", [np.array(0), np.array(7), np.array(2)], {}, 17),
    ("ConstantOfShape", [np.array([2, 3])], {"value": numpy_helper.from_array(np.array([1], dtype=np.int64))}, 17),
    ("Reshape", [np.arange(6), np.array([0, -1])], {}, 17),
    ("Reshape", [np.arange(6).reshape(2, 3), np.array([0, -1])], {}, 17),
    ("Cast", [np.array([1.7, -2.2], np.float32)], {"to": TensorProto.INT64}, 17),
    ("ReduceProd", [np.array([2, 3, 4])], {"keepdims": 0}, 17),
    ("ReduceSum", [np.array([[1, 2], [3, 4]]), np.array([1])], {"keepdims": 1}, 17),
    ("Mod", [np.array([-7, 7]), np.array([3, -3])], {}, 17),
    ("Min", [np.array([4, 9]), np.array([5, 5]), np.array([6, 1])], {}, 17),
    ("Transpose", [np.arange(6).reshape(2, 3)], {"perm": [1, 0]}, 17),
    ("Tile", [np.array([1, 2]), np.array([3])], {}, 17),
]


@pytest.mark.parametrize("op, inputs, attrs, opset", FOLD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(FOLD_CASES)])
def test_fold_handlers_match_the_onnx_reference(op, inputs, attrs, opset):
    """Each folding handler against onnx.reference on the same node and opset."""
    from onnx.reference import ReferenceEvaluator

    from explorer.frontends.onnx_fold import HANDLERS

    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in zip(names, inputs)]
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    want = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])).run(
        None, dict(zip(names, inputs)))[0]
    attr_values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    (got,) = HANDLERS[op](node, inputs, attr_values, opset)
    assert np.asarray(got).dtype == want.dtype and np.array_equal(got, want)
