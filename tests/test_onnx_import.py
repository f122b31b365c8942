"""ONNX import of exporter-style graphs (built with onnx.helper; no torch): shapes without
weights, attention, embeddings, grouped convolutions, dynamic axes, DenseNet-like graphs."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.app.cli import main
from explorer.app.run import rescore
from explorer.core.errors import SpecError
from explorer.core.evaluate import evaluate
from explorer.core.network import LayerKind
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import load_network_text
from explorer.frontends.onnx import load_onnx
from explorer.frontends.onnx_read import KEEP_BYTES, read_model_shapes
from explorer.solvers import cpsat, dp, exact

from .conftest import make_array
from .onnx_nets import (
    INVERTED_RESIDUAL_YAML,
    constant_weight_net,
    dense_net,
    gpt2_block,
    hf_bert,
    inverted_residual,
    mha_encoder,
)


def save(tmp_path, model, name="m.onnx"):
    f = tmp_path / name
    onnx.save(model, str(f))
    return f


def kinds(net):
    return [L.kind.value for L in net.layers]


def test_shapes_without_weights(tmp_path):
    # an inline 2 MB weight, a small Reshape target, and external data that does not exist
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8, 512])
    w = numpy_helper.from_array(np.ones((512, 1024), dtype=np.float32), "w")
    shape = numpy_helper.from_array(np.array([4, 8, 32, 32], dtype=np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc"),
             helper.make_node("Reshape", ["y", "shape"], ["z"], name="r"),
             helper.make_node("Relu", ["z"], ["out"], name="relu")]
    graph = helper.make_graph(nodes, "inline", [x], [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [w, shape])
    f = save(tmp_path, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    m = read_model_shapes(f)
    big, small = m.graph.initializer
    assert list(big.dims) == [512, 1024] and not big.raw_data and not big.float_data  # data left out
    assert numpy_helper.to_array(small).tolist() == [4, 8, 32, 32] and len(small.raw_data) <= KEEP_BYTES
    (fc,) = load_onnx(f).layers
    assert (fc.in_channels, fc.out_channels, fc.in_size) == (512, 1024, (8, 1))
    # Constant-node weights still work
    (c,) = load_onnx(save(tmp_path, constant_weight_net(), "c.onnx")).layers
    assert (c.in_channels, c.out_channels) == (4, 5)


def test_dynamo_export_without_its_data_file_imports(tmp_path):
    f = save(tmp_path, hf_bert(layers=1), "bert.onnx")  # weights point at absent.onnx.data
    assert not (tmp_path / "absent.onnx.data").exists()
    net = load_onnx(f, batch=2, sequence=8)
    assert net.batch == 2 and net.sequence == 8


def test_hf_bert_export_equals_the_zoo_bert(tmp_path):
    """An HF-style BertModel export at sequence 512 and the zoo's BERT (32 x 512 tokens): the same
    nodes, edges, plan and traffic."""
    f = save(tmp_path, hf_bert(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512), "bert.onnx")
    net = load_onnx(f, batch=32, sequence=512)
    zoo = load_model("bert-base")
    assert net.layers == zoo.layers
    assert net.edges == zoo.edges and net.edge_shares == zoo.edge_shares
    assert (net.batch, net.sequence) == (zoo.batch, zoo.sequence) == (32, 512)
    # weighted layers = the graph's MatMul/Gemm with a weight + Gather on a table
    graph = onnx.load(str(f), load_external_data=False).graph
    tables = {t.name for t in graph.initializer if len(t.dims) == 2}
    n_weighted = sum(1 for n in graph.node if n.op_type in ("MatMul", "Gemm", "Gather") and len(n.input) > 1
                     and (n.input[1] in tables or n.input[0] in tables))
    assert sum(not L.is_join for L in net.layers) == n_weighted == 3 + 12 * 6 + 1
    att = net.layers[8]
    assert (att.kind, att.in_channels, att.out_channels, att.heads, att.in_size) == (LayerKind.ATTENTION, 2304, 768, 12, (512, 1))
    # the join is B*S*768, not B*768*S*64 (the old reading of [N, heads, S, dh] as an image)
    assert net.edge_shares[[e for e, (u, v) in enumerate(net.edges) if v == 8][0]] * att.input_elements(32) == 32 * 512 * 768
    assert any("emb_pos" in a for a in net.approximations)
    arr = make_array(4)
    a, b = Problem(net, arr, Space.HYPAR), Problem(zoo, arr, Space.HYPAR)
    pa, pb = dp.solve(a), dp.solve(b)
    assert pa.plan == pb.plan and pa.objective == pb.objective
    assert evaluate(net, arr, Space.HYPAR, pa.plan).traffic_bytes == evaluate(zoo, arr, Space.HYPAR, pb.plan).traffic_bytes
    # attention splits whole heads only: 12 heads -> type II at levels 0 and 1
    assert all(pa.plan.types[h][8].value == "I" for h in (2, 3))


@pytest.mark.parametrize("split", ["Split", "Slice"])
def test_gpt2_fused_qkv(tmp_path, split):
    net = load_onnx(save(tmp_path, gpt2_block(split=split)))
    assert kinds(net) == ["embedding", "embedding", "add", "fc", "attention", "fc", "add", "fc", "fc", "add"]
    att = net.layers[4]
    assert net.edges[[v for _, v in net.edges].index(4)] == (3, 4)  # one input: c_attn
    assert (att.in_channels, att.out_channels, att.heads, att.in_size) == (192, 64, 4, (8, 1))
    assert (net.layers[0].in_channels, net.layers[0].out_channels, net.layers[0].weight_elements()) == (100, 64, 6400)
    p = Problem(net, make_array(3), Space.ACCPAR)
    sol = cpsat.solve(p, SolveOptions(workers=1))
    assert sol.status is Status.OPTIMAL and sol.objective == exact.solve(p).objective
    rescore(p, sol)


def _shape_of(net):
    return [(L.kind, L.in_channels, L.out_channels, L.in_size) for L in net.layers], net.edges


@pytest.mark.parametrize("head", ["tied", "tied_gemm"])
def test_tied_lm_head_is_left_out_as_config_json_leaves_it(tmp_path, head):
    # the same GPT as a config.json (tie_word_embeddings: true by default): one network, one answer
    onnx_net = load_onnx(save(tmp_path, gpt2_block(head=head)))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 4, "vocab_size": 100,
                               "n_positions": 32}))
    hf_net = load_model(str(cfg), batch=2, sequence=8)
    assert _shape_of(onnx_net) == _shape_of(hf_net) == _shape_of(load_onnx(save(tmp_path, gpt2_block(), "b.onnx")))
    note = next(a for a in onnx_net.approximations if "LM head" in a)
    assert note == (f"node 'lm_head' ({'MatMul' if head == 'tied' else 'Gemm'}): LM head tied to the token embedding "
                    "'wte': its 64 x 100 product (B*S*64*100 forward MACs) is not modelled")
    assert any(a.startswith("LM head tied to the token embedding: its 64 x 100 product") for a in hf_net.approximations)


def test_untied_lm_head_is_an_fc_layer(tmp_path):
    net = load_onnx(save(tmp_path, gpt2_block(head="untied")))
    assert kinds(net)[-1] == "fc" and (net.layers[-1].in_channels, net.layers[-1].out_channels) == (64, 100)
    assert not any("LM head" in a for a in net.approximations)


def _local_function_net():
    """Two ``pkg.torch.Linear`` calls (MatMul + Add in model.functions) around a local
    ``pkg.torch.QuickGelu`` (x * Sigmoid(1.702 x), no weight) that calls a nested ``Scale``."""
    f, d = "pkg.torch", helper.make_opsetid("", 17)
    linear = helper.make_function(f, "Linear", ["x", "w", "b"], ["y"], [
        helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])], [d])
    scale = helper.make_function(f, "Scale", ["x"], ["y"], [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(1.702, np.float32))),
        helper.make_node("Mul", ["x", "k"], ["y"])], [d])
    gelu = helper.make_function(f, "QuickGelu", ["x"], ["y"], [
        helper.make_node("Scale", ["x"], ["s"], domain=f), helper.make_node("Sigmoid", ["s"], ["g"]),
        helper.make_node("Mul", ["x", "g"], ["y"])], [d, helper.make_opsetid(f, 1)])
    inits = [numpy_helper.from_array(np.zeros(shape, np.float32), n)
             for n, shape in (("w1", (16, 32)), ("b1", (32,)), ("w2", (32, 8)), ("b2", (8,)))]
    nodes = [helper.make_node("Linear", ["x", "w1", "b1"], ["h"], name="fc1", domain=f),
             helper.make_node("QuickGelu", ["h"], ["r"], name="act", domain=f),
             helper.make_node("Linear", ["r", "w2", "b2"], ["y"], name="fc2", domain=f)]
    graph = helper.make_graph(nodes, "funcs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], inits)
    return helper.make_model(graph, opset_imports=[d, helper.make_opsetid(f, 1)], functions=[linear, scale, gelu])


def test_model_local_functions_are_inlined(tmp_path):
    model = _local_function_net()
    onnx.checker.check_model(model, full_check=True)
    net = load_onnx(save(tmp_path, model), batch=8)
    assert [(L.name, L.kind.value, L.in_channels, L.out_channels) for L in net.layers] == \
        [("fc1", "fc", 16, 32), ("fc2", "fc", 32, 8)]
    assert net.edges == ((0, 1),) and net.approximations == ()  # the activation is walked, not a custom operator
    plain = load_network_text("version: 1\nname: funcs\nbatch: 8\nlayers:\n"
                              "  - {name: fc1, kind: fc, in_features: 16, out_features: 32}\n"
                              "  - {name: fc2, kind: fc, in_features: 32, out_features: 8}\n", "plain.yaml")
    assert net.layers == plain.layers and net.edges == plain.edges


def _learned_positions_net(rows=4):
    """Token and learned position embeddings (positions Range(0, S) over the ids' shape), then an fc."""
    from .onnx_nets import _G

    g = _G()
    s_len = g.op("Gather", [g.op("Shape", ["ids"]), g.const(1)], axis=0)
    pos = g.op("Gather", [g.weight("wpe", rows, 8), g.op("Range", [g.const(0), s_len, g.const(1)])], name="wpe")
    x = g.op("Add", [g.op("Gather", [g.weight("wte", 10, 8), "ids"], name="wte"), pos], name="emb")
    y = g.linear("fc", x, 8, 8)
    ins = [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])]
    return g.model("pos", ins, [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)])


def test_a_sequence_beyond_the_learned_positions_is_refused(tmp_path):
    f = save(tmp_path, _learned_positions_net(rows=4))
    assert load_onnx(f, batch=2, sequence=4).sequence == 4
    with pytest.raises(SpecError) as err:
        load_onnx(f, batch=2, sequence=5)
    assert str(err.value) == (f"{f}: node 'wpe' (Gather): looks up row 4 of table 'wpe', which has 4 rows "
                              "(--seq 5: more than its 4 learned positions)")


def test_sequence_first_attention_equals_batch_first(tmp_path):
    a = load_onnx(save(tmp_path, mha_encoder(seq_first=True), "sf.onnx"))
    b = load_onnx(save(tmp_path, mha_encoder(seq_first=False), "bf.onnx"))
    assert kinds(a) == ["fc", "attention", "fc"] and a.layers == b.layers and a.edges == b.edges
    assert (a.batch, a.layers[0].in_size, a.layers[1].heads) == (2, (6, 1), 4)


def test_depthwise_block_equals_yaml(tmp_path):
    net = load_onnx(save(tmp_path, inverted_residual()))
    yml = load_network_text(INVERTED_RESIDUAL_YAML, "mbv2block.yaml")
    assert net.layers == yml.layers and net.edges == yml.edges
    assert net.layers[1].groups == 32 and net.layers[1].weight_elements() == 32 * 9
    p = Problem(net, make_array(3), Space.ACCPAR)
    sol = exact.solve(p)
    assert sol.objective == cpsat.solve(p, SolveOptions(workers=1)).objective
    rescore(p, sol)


def test_densenet_like_graph_gets_a_plan(tmp_path, monkeypatch):
    net = load_onnx(save(tmp_path, dense_net()))
    assert kinds(net).count("concat") == 8 and sum(not L.is_join for L in net.layers) == 1 + 2 * 8 + 1 + 1
    p = Problem(net, make_array(4), Space.HYPAR)

    def too_wide(problem):  # as on DenseNet-121: the level DP's frontier is too wide
        raise NotImplementedError("level 0: frontier of 21 nodes is too wide for the DP")

    monkeypatch.setattr(dp, "solve", too_wide)  # CP-SAT then runs without the DP's hint
    sol = cpsat.solve(p, SolveOptions(workers=1, time_limit_s=20))
    assert sol.status in (Status.OPTIMAL, Status.FEASIBLE) and sol.plan is not None and sol.bound is not None
    rescore(p, sol)
    if sol.status is Status.OPTIMAL:
        assert sol.bound == sol.objective


def test_dynamic_axes_ask_for_batch_and_seq(tmp_path, capsys):
    f = save(tmp_path, hf_bert(layers=1), "bert.onnx")
    with pytest.raises(SpecError, match="symbolic batch dimension 'batch' and .* 'sequence' \\(axis 1\\): pass --batch and pass --seq"):
        load_onnx(f)
    with pytest.raises(SpecError, match="symbolic batch dimension 'batch': pass --batch$"):
        load_onnx(f, sequence=16)
    with pytest.raises(SpecError, match=r"symbolic sequence dimension 'sequence' \(axis 1\): pass --seq"):
        load_onnx(f, batch=2)
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--batch", "4", "--format", "json"])
    assert ex.value.code == 2 and "pass --seq" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--batch", "4", "--seq", "16", "--levels", "2", "--format", "json"])
    out = capsys.readouterr()
    r = json.loads(out.out)
    assert ex.value.code == 0 and (r["batch"], r["sequence"]) == (4, 16)
    assert r["approximations"] and "approximation: emb_pos" in out.err
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--batch", "4", "--seq", "0"])
    assert ex.value.code == 2 and "--seq" in capsys.readouterr().err


def test_yaml_seq_override(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["--model", "gpt2-small", "--seq", "128", "--levels", "2", "--format", "json"])
    r = json.loads(capsys.readouterr().out)
    assert ex.value.code == 0 and r["sequence"] == 128 and r["approximations"] == []


def test_junk_and_truncated_files(tmp_path):
    for data in (b"not a protobuf at all", b"", b"\x3a\xff\xff\xff\x0f"):
        f = tmp_path / "junk.onnx"
        f.write_bytes(data)
        with pytest.raises(SpecError, match="cannot read as ONNX"):
            load_onnx(f)
    with pytest.raises(SpecError, match="no such file"):
        load_onnx(tmp_path / "missing.onnx")


def test_fused_attention_op_and_einsum(tmp_path):
    """An opset-23 Attention node (Q, K, V in, context out) and Q.K^T / softmax.V as Einsums."""
    from .onnx_nets import _G

    for style in ("Attention", "Einsum"):
        g = _G()
        q, k, v = (g.op("MatMul", ["x", g.weight(f"w{m}", 32, 32)], name=m) for m in "qkv")
        if style == "Attention":
            ctx = g.op("Attention", [q, k, v], name="att", q_num_heads=4, kv_num_heads=4)
        else:
            split = [2, 6, 4, 8]
            qh, kh, vh = (g.op("Transpose", [g.op("Reshape", [t, g.const(split)])], perm=[0, 2, 1, 3]) for t in (q, k, v))
            p = g.op("Softmax", [g.op("Einsum", [qh, kh], name="att", equation="bhqd,bhkd->bhqk")], axis=-1)
            ctx = g.op("Reshape", [g.op("Transpose", [g.op("Einsum", [p, vh], equation="bhqk,bhkd->bhqd")], perm=[0, 2, 1, 3]),
                                   g.const([2, 6, 32])])
        out = g.op("MatMul", [ctx, g.weight("wo", 32, 32)], name="o")
        ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 32])]
        model = g.model("att", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], opset=23)
        net = load_onnx(save(tmp_path, model, f"{style}.onnx"))
        assert kinds(net) == ["fc", "fc", "fc", "attention", "fc"], style
        att = net.layers[3]
        assert (att.in_channels, att.out_channels, att.heads, att.in_size) == (96, 32, 4, (6, 1)), style


def test_sizes_beyond_2_40_are_refused_as_in_yaml(tmp_path):
    from .onnx_nets import _ext

    big = 2**41
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, big])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "huge", [x], [y],
                              [_ext("w", big, 4)])
    f = save(tmp_path, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(SpecError) as err:
        load_onnx(f)
    # the weight itself holds 2^43 elements: refused naming it, before the node (hostile trial 6)
    assert str(err.value) == (f"{f}: initializer 'w' has dims [2199023255552, 4]: 8,796,093,022,208 elements, beyond "
                              "2^40 = 1,099,511,627,776, the bound on a size")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, big, 4])  # positions beyond: the node's sizes
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, big, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "huge", [x], [y],
                              [_ext("w", 4, 4)])
    f = save(tmp_path, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(SpecError) as err:
        load_onnx(f)
    assert str(err.value).startswith(f"{f}: node 'mm' (MatMul): ") and "beyond 2^40 = 1,099,511,627,776, the bound" \
        in str(err.value), str(err.value)
