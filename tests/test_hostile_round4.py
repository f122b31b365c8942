"""Hostile input, round 4: ONNX files that would take memory or time without bound (a huge
Range whose values shape inference propagates, model-local functions nesting to 2^39 nodes),
refused in one line, fast, with exit status 2."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx
from explorer.frontends.onnx_bounds import MAX_PROPAGATED
from explorer.frontends.onnx_graph import MAX_NODES

from .conftest import run_cli
from .onnx_nets import _const, _w
from .test_hostile_round3 import deadline

OPSETS = [helper.make_opsetid("", 17)]


def _save(tmp_path, graph, name, **kw) -> str:
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=kw.pop("opsets", OPSETS), **kw), path)
    return str(path)


def range_net(tmp_path, limit: int) -> str:
    """x [4,16] + Cast(Range(0, limit, 1)), then a 16x8 weight."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]), helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["y"])]
    inits = [_const("s", 0), _const("l", limit), _const("d", 1), _w("w", 16, 8)]
    graph = helper.make_graph(nodes, "range", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return _save(tmp_path, graph, f"range_{limit}.onnx")


def concat_net(tmp_path, k: int, op: str = "Concat") -> str:
    """Range(0, 2^20) -> Concat of it k times (or k Casts to int32, concatenated) -> cast and
    added to x [4,16] -> 16x8 weight."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"])]
    if op == "Concat":
        nodes.append(helper.make_node("Concat", ["r"] * k, ["c"], axis=0))
    else:
        nodes += [helper.make_node("Cast", ["r"], [f"r{i}"], to=TensorProto.INT32) for i in range(k)]
        nodes.append(helper.make_node("Sum", [f"r{i}" for i in range(k)], ["c"]))
    nodes += [helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT), helper.make_node("Add", ["x", "cf"], ["a"]),
              helper.make_node("MatMul", ["a", "w"], ["y"])]
    inits = [_const("s", 0), _const("l", MAX_PROPAGATED), _const("d", 1), _w("w", 16, 8)]
    graph = helper.make_graph(nodes, "concat", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return _save(tmp_path, graph, f"{op}{k}.onnx")


def test_a_long_concat_output_and_many_long_tensors_together_are_refused(tmp_path):
    with pytest.raises(SpecError, match=f"node 1 \\(Concat\\): output 'c' is a 1-D tensor of {5 * MAX_PROPAGATED:,}"):
        load_onnx(concat_net(tmp_path, 5))
    total = 7 * MAX_PROPAGATED  # r, its five int32 casts and their Sum (read by the float Cast)
    with pytest.raises(SpecError, match=f"hold {total:,} elements together, more than the {4 * MAX_PROPAGATED:,}"):
        load_onnx(concat_net(tmp_path, 5, op="Cast"))


def rope_net(tmp_path) -> str:
    """positions = arange(seq) from the input's shape (Shape -> Gather -> Range), cast, unsqueezed
    and multiplied into x [batch, seq, 16]; then a 16x8 weight."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])
    nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["n"]),
             helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["posf", "last"], ["pos2"]), helper.make_node("Mul", ["x", "pos2"], ["xp"]),
             helper.make_node("MatMul", ["xp", "w"], ["y"])]
    inits = [_const("zero", 0), _const("one", 1), _const("last", [-1]), _w("w", 16, 8)]
    graph = helper.make_graph(nodes, "rope", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return _save(tmp_path, graph, "rope.onnx")


def test_a_huge_range_is_refused_in_one_line_fast(tmp_path, capsys):
    path = range_net(tmp_path, 2 ** 40)
    with deadline(30):
        code, out, err = run_cli(["--model", path, "--levels", "2", "--batch", "4"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "node 1 (Cast): input 'r' is a 1-D tensor of 1,099,511,627,776 elements, more than the 1,048,576" in err


def test_a_range_past_the_limit_by_one_is_refused_and_on_it_is_read(tmp_path):
    with pytest.raises(SpecError, match=f"1-D tensor of {MAX_PROPAGATED + 1:,} elements"):
        load_onnx(range_net(tmp_path, MAX_PROPAGATED + 1))
    # on the limit, shape inference runs (and says the Add does not broadcast [4,16] with [2^20])
    with pytest.raises(SpecError) as err:
        load_onnx(range_net(tmp_path, MAX_PROPAGATED))
    assert "1-D tensor" not in str(err.value)
    net = load_onnx(range_net(tmp_path, 16))  # a Range that broadcasts: imported
    assert [layer.name for layer in net.layers] == ["MatMul_3"]


def test_a_position_range_follows_seq_and_a_huge_seq_is_refused(tmp_path):
    path = rope_net(tmp_path)
    net = load_onnx(path, batch=2, sequence=64)
    assert net.sequence == 64 and [layer.name for layer in net.layers] == ["MatMul_6"]
    with deadline(30), pytest.raises(SpecError, match="input 'pos' is a 1-D tensor of 10,000,000 elements"):
        load_onnx(path, batch=2, sequence=10_000_000)


def nested_net(tmp_path, depth: int) -> str:
    """Model-local functions F0 (one Relu) and Fi calling F(i-1) twice; the graph: MatMul, F(depth-1)."""
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    fs = [helper.make_function("local", "F0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], ops)]
    for i in range(1, depth):
        calls = [helper.make_node(f"F{i - 1}", ["a"], ["t"], domain="local"),
                 helper.make_node(f"F{i - 1}", ["t"], ["b"], domain="local")]
        fs.append(helper.make_function("local", f"F{i}", ["a"], ["b"], calls, ops))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="fc"),
             helper.make_node(f"F{depth - 1}", ["m"], ["y"], domain="local", name="act")]
    graph = helper.make_graph(nodes, "nested", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_w("w", 16, 8)])
    return _save(tmp_path, graph, f"nested{depth}.onnx", opsets=ops, functions=fs)


def test_nested_functions_are_counted_once_each_and_refused_past_the_limit(tmp_path, capsys):
    with deadline(30):
        code, out, err = run_cli(["--model", nested_net(tmp_path, 40), "--levels", "2", "--batch", "4"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"inline to {2 ** 39 + 1:,} nodes, more than the {MAX_NODES:,} supported" in err


def test_nested_functions_on_the_limit_inline_and_are_named_after_their_call(tmp_path):
    from explorer.frontends.onnx_graph import inline_local_functions

    model = onnx.load(nested_net(tmp_path, 4))  # 1 MatMul + 2^3 Relus
    flat = inline_local_functions(model, "nested4.onnx")
    assert [n.op_type for n in flat.graph.node] == ["MatMul"] + ["Relu"] * 8
    assert [n.name for n in flat.graph.node] == ["fc"] + ["act"] * 8
    assert [layer.name for layer in load_onnx(nested_net(tmp_path, 4)).layers] == ["fc"]


def test_functions_called_inside_if_branches_are_counted_and_refused_at_once(tmp_path, capsys):
    """F21 (2^21 Relus once inlined) called from both branches of an If: the inliner expands
    calls inside subgraphs too, so they count (2^22 + 1 nodes), refused before it runs."""
    model = onnx.load(nested_net(tmp_path, 22))
    ops = list(model.opset_import)
    branch = [helper.make_graph([helper.make_node("F21", ["x"], [f"y{b}"], domain="local")], f"b{b}", [],
                                [helper.make_tensor_value_info(f"y{b}", TensorProto.FLOAT, None)]) for b in range(2)]
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=branch[0], else_branch=branch[1])], "if",
                              [x, cond], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = _save(tmp_path, graph, "if_calls.onnx", opsets=ops, functions=list(model.functions))
    with deadline(10):
        code, out, err = run_cli(["--model", path, "--levels", "2", "--batch", "4"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"inline to {2 ** 22 + 1:,} nodes, more than the {MAX_NODES:,} supported" in err


# --- a config.json whose model_type is a list or an object; a bad sliding_window ----------------

LLAMA = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
         "vocab_size": 100, "max_position_embeddings": 64}


def _config(tmp_path, **fields) -> str:
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LLAMA, **fields)))
    return str(path)


@pytest.mark.parametrize("mtype", [["llama"], {"llama": 1}])
@pytest.mark.parametrize("command", [[], ["check"], ["split"]])
def test_a_model_type_list_or_object_is_one_line(tmp_path, capsys, mtype, command):
    code, out, err = run_cli([*command, "--model", _config(tmp_path, model_type=mtype), "--levels", "2"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"config.json: model_type: must be one of llama, mistral, qwen2, mixtral, gpt2, got {mtype!r}" in err


@pytest.mark.parametrize("mtype", [["llama"], {"llama": 1}])
def test_a_model_type_list_or_object_is_a_spec_error_in_the_api(tmp_path, mtype):
    from explorer import api

    path = _config(tmp_path, model_type=mtype)
    for call in (lambda: api.solve(path, levels=2), lambda: api.plan_llm(path, gpus=8)):
        with pytest.raises(SpecError, match=r"model_type: must be one of .*, got " + __import__("re").escape(repr(mtype))):
            call()


@pytest.mark.parametrize("window, problem", [(-5, "must be a positive integer, got -5"), ("x", "must be a positive integer, got 'x'"),
                                             (True, "must be a positive integer, got True")])
def test_a_bad_sliding_window_is_refused(tmp_path, window, problem):
    from explorer.frontends.hf_config import load_hf_config

    with pytest.raises(SpecError, match=f"sliding_window: {problem}"):
        load_hf_config(_config(tmp_path, model_type="mistral", sliding_window=window))
    assert load_hf_config(_config(tmp_path, model_type="mistral", sliding_window=None)).layers  # null: no window
    net = load_hf_config(_config(tmp_path, model_type="mistral", sliding_window=16), sequence=32)
    assert net.approximations == ("sliding_window 16 < sequence 32: attention is counted over all 32 tokens",)


# --- --output naming the model's external data file ----------------------------------------------

def test_the_models_external_data_file_is_never_written_over(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "m"
    folder.mkdir()
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_w("w", 16, 8)])
    onnx.save(helper.make_model(graph, opset_imports=OPSETS), folder / "ext.onnx", save_as_external_data=True,
              location="ext.onnx.data", size_threshold=0)
    data = (folder / "ext.onnx.data").read_bytes()
    monkeypatch.chdir(tmp_path)  # the location is resolved against the model's folder, not the working one
    code, out, err = run_cli(["--model", "m/ext.onnx", "--output", "m/ext.onnx.data", "--levels", "2"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "m/ext.onnx.data is the --model file's external data file; writing there would replace it" in err
    assert (folder / "ext.onnx.data").read_bytes() == data
    code, out, err = run_cli(["--model", "m/ext.onnx", "--output", "report.txt", "--levels", "2"], capsys)
    assert code == 0 and (tmp_path / "report.txt").read_text()


# --- a built ArraySpec gets the YAML loader's checks -------------------------------------------

@pytest.mark.parametrize("change, problem", [
    ({"dtype_bytes": 0}, "dtype_bytes: must be a positive integer, got 0"),
    ({"peak_TFLOPS": 0}, "peak_TFLOPS: must be > 0, got 0"),
    ({"bandwidth_GBps": (0,) * 4}, "bandwidth_GBps[0]: must be > 0, got 0"),
    ({"bandwidth_GBps": (1, 1, 1, -1)}, "bandwidth_GBps[3]: must be > 0, got -1"),
    ({"peak_TFLOPS": float("nan")}, "peak_TFLOPS: must be a finite number, got nan"),
    ({"memory_GiB": "4"}, "memory_GiB: must be a positive number, got '4'"),
    ({"energy_pJ_per_FLOP": 1}, "link_energy_pJ_per_byte: missing (energy is reported with both energy_pJ_per_FLOP"),
    ({"overlap": "no"}, "overlap: must be true or false, got 'no'"),
])
def test_a_built_array_is_checked_as_a_loaded_one(change, problem):
    import dataclasses

    from explorer import api
    from explorer.frontends import load_array

    array = load_array("hypar-16")
    with pytest.raises(SpecError) as err:
        api.solve("lenet-c", dataclasses.replace(array, **change))
    assert f"hypar-16.yaml: {problem}" in str(err.value)
    assert api.solve("lenet-c", array).plan is not None  # the array as loaded passes


@pytest.mark.parametrize("lines, problem", [
    ("energy_pJ_per_FLOP: 1.0\n", "link_energy_pJ_per_byte: missing (energy is reported with both"),
    ("link_energy_pJ_per_byte: 10\n", "energy_pJ_per_FLOP: missing (energy is reported with both"),
    ("static_power_W: 0.5\n", "static_power_W: energy is reported with energy_pJ_per_FLOP and link_energy_pJ_per_byte"),
])
def test_one_energy_field_alone_is_refused_naming_the_missing_one(tmp_path, lines, problem):
    from explorer.frontends import load_array

    path = tmp_path / "a.yaml"
    path.write_text("version: 1\nname: a\nlevels: 2\nlink_bandwidth_GBps: 10\npeak_TFLOPS: 1\nmemory_GiB: 4\n" + lines)
    with pytest.raises(SpecError, match=problem.replace("(", r"\(")):
        load_array(str(path))
    path.write_text(path.read_text() + "energy_pJ_per_FLOP: 1\nlink_energy_pJ_per_byte: 10\n"
                    if "static" in lines else path.read_text().replace(lines, ""))
    assert load_array(str(path)).levels == 2


# --- grid_only and constraints of the wrong type ------------------------------------------------

@pytest.mark.parametrize("call", ["solve", "check"])
@pytest.mark.parametrize("value", ["no", 0, "False"])
def test_grid_only_must_be_a_bool(call, value):
    from explorer import api

    with pytest.raises(SpecError, match=f"grid_only: must be true or false, got {value!r}"):
        getattr(api, call)("lenet-c", split="optimal" if call == "check" else "search", grid_only=value)


@pytest.mark.parametrize("value", [5, {"version": 1}, ["c.yaml"]])
def test_constraints_must_be_a_path(value):
    from explorer import api

    for call in (api.solve, api.build_problem):
        with pytest.raises(SpecError, match=r"^constraints: must be the path of a constraints YAML file \(a str or "
                                            r"os.PathLike\), got "):
            call("lenet-c", constraints=value)


# --- a derived width past 2^40 names the field that made it ---------------------------------------

def test_a_derived_width_names_the_field_the_user_wrote(tmp_path):
    from explorer.frontends import load_model
    from explorer.frontends.hf_config import load_hf_config

    spec = tmp_path / "t.yaml"
    body = "version: 1\nname: t\nsequence: 16\ntransformer: {{family: {}, layers: 2, hidden: {}, heads: 4, ffn: 128, vocab: 100{}}}\n"
    spec.write_text(body.format("llama", 64, ", head_dim: 549755813888"))
    with pytest.raises(SpecError) as err:
        load_model(str(spec))
    assert str(err.value).endswith("t.yaml: transformer.head_dim: the attention's input, (heads 4 + 2 x KV heads 4) x "
                                   "head width 549,755,813,888 = 6,597,069,766,656, is more than 2^40 = 1,099,511,627,776")
    spec.write_text(body.format("gpt", 2 ** 39, ", positions: 16"))
    with pytest.raises(SpecError, match=r"transformer.hidden: the attention's input, the fused QKV, 3 x hidden "
                                        r"549,755,813,888 = 1,649,267,441,664, is more than 2\^40"):
        load_model(str(spec))
    spec.write_text(body.format("llama", 2 ** 38, ""))  # (4 + 8) x 2^36: on the bound's right side
    assert load_model(str(spec)).layers
    with pytest.raises(SpecError, match=r"^[^;]*config.json: hidden_size: the attention's input, \(heads 1 \+ 2 x KV "
                                        r"heads 1\) x head width 549,755,813,888 = 1,649,267,441,664, is more than"):
        load_hf_config(_config(tmp_path, model_type="llama", hidden_size=2 ** 39, num_attention_heads=1))
    with pytest.raises(SpecError, match="num_experts_per_tok: the routed experts' width, top_k 2 x ffn 549,755,813,889 = 1,099,511,627,778"):
        load_hf_config(_config(tmp_path, model_type="mixtral", intermediate_size=2 ** 39 + 1, num_local_experts=4,
                               num_experts_per_tok=2))


# --- inconsistent ONNX shapes say why --------------------------------------------------------------

def _one_node_net(tmp_path, nodes, x_shape, inits, name) -> str:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return _save(tmp_path, graph, name + ".onnx")


@pytest.mark.parametrize("case, message", [
    ("matmul", "node 0 (MatMul): no inferred shape for tensor 'y': shape inference says MatMul: Incompatible dimensions "
               "for matrix multiplication"),
    ("stride0", "node 0 (Conv): no inferred shape for tensor 'y': shape inference says Conv: Attribute strides must "
                "only contain positive values"),
    ("reshape", "node 1 (MatMul): no inferred shape for tensor 'r': shape inference says Reshape: Dimension could not "
                "be inferred: incompatible shapes"),
    ("conv9", "node 0 (Conv): tensor 'y' has the inferred shape [1, 4, 0, 0]: dimension 2 is 0 (no elements: a kernel "
              "larger than its padded input, or a zero dimension upstream)"),
    ("zero", "node 0 (MatMul): its weight (second input) 'w' has the shape [16, 0]: a zero dimension, no elements (an "
             "empty weight is no layer)"),
])
def test_an_inconsistent_shape_says_why(tmp_path, capsys, case, message):
    mm = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    nets = {
        "matmul": (mm, [4, 12], [_w("w", 16, 8)]),
        "stride0": ([helper.make_node("Conv", ["x", "w"], ["y"], strides=[0, 0])], [1, 3, 8, 8], [_w("w", 4, 3, 3, 3)]),
        "reshape": ([helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])],
                    [4, 16], [_const("s", [5, -1]), _w("w", 16, 8)]),
        "conv9": ([helper.make_node("Conv", ["x", "w"], ["y"])], [1, 3, 8, 8], [_w("w", 4, 3, 9, 9)]),
        "zero": (mm, [4, 16], [_w("w", 16, 0)]),
    }
    path = _one_node_net(tmp_path, *nets[case], case)
    code, out, err = run_cli(["--model", path, "--levels", "2"], capsys)
    assert code == 2 and err == f"explore: error: {path}: {message}\n"


# --- a duplicated initializer; a dead node ----------------------------------------------------------

def test_an_initializer_given_twice_is_named(tmp_path, capsys):
    path = _one_node_net(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"])], [4, 16],
                         [_w("w", 16, 8), _w("w", 16, 4)], "dup")
    code, out, err = run_cli(["--model", path, "--levels", "2"], capsys)
    assert code == 2 and err == f"explore: error: {path}: initializer 'w' is given twice (each tensor has one definition)\n"


def test_a_dead_node_is_no_layer_and_the_run_says_so(tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "w2"], ["dead"]), helper.make_node("Relu", ["dead"], ["dead2"]),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    net = load_onnx(_one_node_net(tmp_path, nodes, [4, 16], [_w("w", 16, 8), _w("w2", 16, 4)], "dead"))
    assert [(layer.name, layer.in_channels, layer.out_channels) for layer in net.layers] == [("MatMul_2", 16, 8)]
    assert net.approximations == ("2 nodes whose outputs reach no graph output (dead code) left out, not layers: "
                                  "node 0 (MatMul), node 1 (Relu)",)
    # a tensor read only inside an If's branch is live (an outer-scope read)
    branch = helper.make_graph([helper.make_node("Identity", ["dead"], ["b"])], "then", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("MatMul", ["x", "w2"], ["dead"]), helper.make_node("MatMul", ["x", "w"], ["y"]),
             helper.make_node("If", ["c"], ["z"], then_branch=branch, else_branch=branch)]
    graph = helper.make_graph(nodes, "iff", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                              [_w("w", 16, 8), _w("w2", 16, 4), _const("c", True, bool)])
    from explorer.frontends.onnx_graph import live_nodes

    live, dead = live_nodes(graph, list(graph.node))
    assert [n.output[0] for n in live] == ["dead", "y", "z"] and dead == []
    del graph.output[:]  # no output declared: nothing says what is dead, every node kept
    assert live_nodes(graph, list(graph.node)) == (list(graph.node), [])


# --- version: true / 1.0 ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["true", "1.0"])
def test_a_version_must_be_the_integer_1(tmp_path, capsys, version):
    from explorer.frontends import zoo

    def with_version(text: str) -> str:
        assert "version: 1\n" in text
        return text.replace("version: 1\n", f"version: {version}\n", 1)

    shown = {"true": "True", "1.0": "1.0"}[version]
    array = tmp_path / "a.yaml"
    array.write_text(with_version(zoo.array_files()["hypar-16"].read_text()))
    network = tmp_path / "n.yaml"
    network.write_text(with_version(zoo.resolve_model("lenet-c").read_text()))
    constraints = tmp_path / "c.yaml"
    constraints.write_text(f"version: {version}\ncaps: {{}}\n")
    for args, message in (
            (["--model", "lenet-c", "--array", str(array)], f"{array}: version: unsupported version {shown} "),
            (["--model", str(network)], f"{network}: version: unsupported version {shown} "),
            (["--model", "lenet-c", "--constraints", str(constraints)], f"{constraints}: version: must be 1, got {shown}")):
        code, out, err = run_cli([*args, "--levels", "2"], capsys)
        assert code == 2 and err.count("\n") == 1 and message in err


def test_a_long_tensor_known_only_through_propagation_is_refused_before_it(tmp_path):
    """ones(seq) from the input's shape (Shape -> Slice -> ConstantOfShape) cast into x: its
    length is a propagated value, so the shapes-only rounds fold the shape arithmetic first and
    the length is refused before propagation would hold 10 million entries (it took 2.1 GB)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])
    ones = numpy_helper.from_array(np.array([1], np.int64))
    nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Slice", ["sh", "one", "two"], ["n"]),
             helper.make_node("ConstantOfShape", ["n"], ["ones"], value=ones),
             helper.make_node("Cast", ["ones"], ["of"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["of", "last"], ["o2"]), helper.make_node("Mul", ["x", "o2"], ["xp"]),
             helper.make_node("MatMul", ["xp", "w"], ["y"])]
    graph = helper.make_graph(nodes, "cos", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [_const("one", [1]), _const("two", [2]), _const("last", [-1]), _w("w", 16, 8)])
    path = _save(tmp_path, graph, "cos.onnx")
    assert [layer.name for layer in load_onnx(path, batch=2, sequence=100).layers] == ["MatMul_6"]
    with deadline(30), pytest.raises(SpecError, match=r"node 3 \(Cast\): input 'ones' is a 1-D tensor of 10,000,000 "):
        load_onnx(path, batch=2, sequence=10_000_000)


def test_a_long_float_activation_reshaped_to_1d_is_imported(tmp_path):
    """x [4,512,1024] -> Reshape [-1] (2^21 floats) -> Mul 0.5 -> Reshape back -> MatMul: shape
    inference carries no values of a float tensor, so its length is no limit."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512, 1024])
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["f"]), helper.make_node("Mul", ["f", "half"], ["h"]),
             helper.make_node("Reshape", ["h", "back"], ["b"]), helper.make_node("MatMul", ["b", "w"], ["y"])]
    inits = [_const("flat", [-1]), _const("back", [4, 512, 1024]), _const("half", 0.5, np.float32),
             _w("w", 1024, 8)]
    graph = helper.make_graph(nodes, "flat", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    net = load_onnx(_save(tmp_path, graph, "flat.onnx"))
    assert [layer.name for layer in net.layers] == ["MatMul_3"]
