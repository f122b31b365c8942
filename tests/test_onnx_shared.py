"""ONNX weights shared between layers and weights stored flat (trial 12, findings 3, 6, 8).

A stored weight read whole by several products (ALBERT's shared layers) stays one layer per
use, each with its own copy (the cost model's tables cannot couple the uses), and the import
lists the overcount as an approximation naming the weight, its layers and the elements it
overstates; before, the count was silent. All-I's traffic below is computed by hand from
../shared/reference/model.md: type I exchanges A(dW_l) per layer at every level, total
sum_h 2^h c_h elements one way, bytes = 2 x 4 x that."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.app.cli import main
from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx

from .onnx_nets import _G, _ext


def _save(tmp_path, g, x_shape, out, name="m.onnx"):
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    model = g.model("m", x, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    f = tmp_path / name
    onnx.save(model, str(f))
    return f


def _run(tmp_path, capsys, f, levels):
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--levels", str(levels), "--format", "json"])
    out = capsys.readouterr()
    assert ex.value.code == 0, out.err
    return json.loads(out.out), out.err


def _note(name, dims, layers, n):
    k = len(layers)
    return (f"{name!r} {dims} ({n:,} elements) is the weight of {k} layers ({', '.join(layers)}), each costed with its "
            f"own copy: its gradient exchange (type I) and its memory are counted {k} times, where one shared weight "
            f"has them once (all-I's c_h overstated by {k - 1} x {n:,} = {(k - 1) * n:,} elements at every level)")


def _three_matmuls(tmp_path, shared=True):
    """x [8, 64] -> fc1 -> Relu -> fc2 -> Relu -> fc3, all reading W [64, 64] (or three weights)."""
    g = _G()
    ws = [g.weight("W", 64, 64)] * 3 if shared else [g.weight(f"W{k}", 64, 64) for k in (1, 2, 3)]
    h = "x"
    for k, w in enumerate(ws, 1):
        h = g.op("MatMul", [h, w], name=f"fc{k}")
        if k < 3:
            h = g.op("Relu", [h])
    return _save(tmp_path, g, (8, 64), h, f"three-{shared}.onnx")


def test_a_weight_shared_by_three_matmuls_is_listed_with_its_overcount(tmp_path, capsys):
    r, err = _run(tmp_path, capsys, _three_matmuls(tmp_path), levels=2)
    assert r["layers"] == ["fc1", "fc2", "fc3"]
    # all-I: each of the 3 layers exchanges its 64 x 64 gradient at both levels: 3 x 4,096 x (1 + 2)
    assert r["baselines"]["all-I"]["traffic_elements"] == 36_864
    assert r["baselines"]["all-I"]["traffic_bytes"] == 294_912
    note = _note("W", [64, 64], ["fc1", "fc2", "fc3"], 4096)
    assert r["approximations"] == [note]
    assert f"approximation: {note}" in err
    # costed exactly as three separate weights, which get no note
    sep, _ = _run(tmp_path, capsys, _three_matmuls(tmp_path, shared=False), levels=2)
    assert sep["approximations"] == []
    for key in ("traffic_elements", "memory_bytes_per_accelerator"):
        assert sep["baselines"]["all-I"][key] == r["baselines"]["all-I"][key]


def test_a_weight_shared_by_two_convs(tmp_path, capsys):
    g = _G()
    w = g.weight("conv.weight", 8, 8, 3, 3)
    h = g.op("Relu", [g.op("Conv", ["x", w], name="c1", pads=[1, 1, 1, 1])])
    out = g.op("Conv", [h, w], name="c2", pads=[1, 1, 1, 1])
    r, _ = _run(tmp_path, capsys, _save(tmp_path, g, (2, 8, 6, 6), out), levels=1)
    assert r["baselines"]["all-I"]["traffic_elements"] == 2 * 576  # two 8 x 8 x 3 x 3 gradients, one level
    assert r["approximations"] == [_note("conv.weight", [8, 8, 3, 3], ["c1", "c2"], 576)]


def _reused_through(view):
    """fc1 reads W [64, 64]; fc2 reads the view of W that ``view(g)`` returns."""
    def build(tmp_path):
        g = _G()
        g.weight("W", 64, 64)
        h = g.op("Relu", [g.op("MatMul", ["x", "W"], name="fc1")])
        return _save(tmp_path, g, (4, 64), g.op("MatMul", [h, view(g)], name="fc2"))
    return build


VIEWS = {
    "Transpose": lambda g: g.op("Transpose", ["W"], perm=[1, 0]),
    "Cast": lambda g: g.op("Cast", ["W"], to=TensorProto.FLOAT16),
    "Identity-then-Transpose": lambda g: g.op("Transpose", [g.op("Identity", ["W"])], perm=[1, 0]),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_weight_shared_through_a_view(tmp_path, capsys, view):
    r, _ = _run(tmp_path, capsys, _reused_through(VIEWS[view])(tmp_path), levels=1)
    assert r["baselines"]["all-I"]["traffic_elements"] == 2 * 4096
    assert r["approximations"] == [_note("W", [64, 64], ["fc1", "fc2"], 4096)]


def test_a_quantised_weight_shared_through_dequantize_linear(tmp_path, capsys):
    g = _G()
    g.inits.append(_ext("Wq", 64, 32, dtype=TensorProto.INT8))
    g.inits.append(numpy_helper.from_array(np.array(0.02, dtype=np.float32), "s"))
    g.inits.append(numpy_helper.from_array(np.array(0, dtype=np.int8), "zp"))
    w1 = g.op("DequantizeLinear", ["Wq", "s", "zp"], name="dq1")
    w2 = g.op("DequantizeLinear", ["Wq", "s", "zp"], name="dq2")
    h = g.op("Relu", [g.op("MatMul", ["x", w1], name="fc1")])
    h = g.op("Relu", [g.op("MatMul", [h, g.weight("mid", 32, 64)], name="mid")])
    r, _ = _run(tmp_path, capsys, _save(tmp_path, g, (4, 64), g.op("MatMul", [h, w2], name="fc2")), levels=1)
    assert r["baselines"]["all-I"]["traffic_elements"] == 3 * 2048
    assert _note("Wq", [64, 32], ["fc1", "fc2"], 2048) in r["approximations"]


def test_slices_of_a_stacked_weight_are_not_shared(tmp_path):
    """Expert-style slices of one [2, 64, 64] tensor each read half of it: two weights, no note."""
    g = _G()
    g.weight("W2", 2, 64, 64)
    w0 = g.op("Squeeze", [g.op("Slice", ["W2", g.const([0]), g.const([1]), g.const([0])]), g.const([0])])
    w1 = g.op("Squeeze", [g.op("Slice", ["W2", g.const([1]), g.const([2]), g.const([0])]), g.const([0])])
    h = g.op("Relu", [g.op("MatMul", ["x", w0], name="e0")])
    net = load_onnx(_save(tmp_path, g, (4, 64), g.op("MatMul", [h, w1], name="e1")))
    assert [(L.name, L.in_channels, L.out_channels) for L in net.layers] == [("e0", 64, 64), ("e1", 64, 64)]
    assert net.approximations == ()


def test_a_tied_lm_head_is_still_left_out_not_listed_as_shared(tmp_path):
    g = _G()
    g.weight("wte", 100, 64)
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])
    e = g.op("Gather", ["wte", "ids"], name="emb")
    h = g.op("MatMul", [e, g.weight("fc.weight", 64, 64)], name="fc")
    out = g.op("MatMul", [h, g.op("Transpose", ["wte"], perm=[1, 0])], name="lm_head")
    model = g.model("m", [ids], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    onnx.save(model, str(tmp_path / "tied.onnx"))
    net = load_onnx(tmp_path / "tied.onnx")
    assert [L.name for L in net.layers] == ["emb", "fc"]
    assert len(net.approximations) == 1 and "LM head tied" in net.approximations[0]


@pytest.mark.parametrize("size", [2048, 256 * 512])  # folded by value, and too large to fold (data absent)
def test_a_weight_stored_flat_and_reshaped_is_a_stored_weight(tmp_path, size):
    """Trial 12, finding 3: Reshape(W flat, [64, k]) was refused as 'not a constant tensor'."""
    g = _G()
    k = size // 64
    g.inits.append(_ext("Wf", size) if size > 65536 else numpy_helper.from_array(np.ones(size, np.float32), "Wf"))
    w = g.op("Reshape", ["Wf", g.const([64, k])], name="rs")
    net = load_onnx(_save(tmp_path, g, (8, 64), g.op("MatMul", ["x", w], name="fc")))
    assert [(L.name, L.in_channels, L.out_channels, L.in_size) for L in net.layers] == [("fc", 64, k, (1, 1))]
    assert net.approximations == ()


def test_a_flat_weight_reshaped_twice_is_one_shared_weight(tmp_path, capsys):
    g = _G()
    g.inits.append(numpy_helper.from_array(np.ones(4096, np.float32), "Wf"))
    w1 = g.op("Reshape", ["Wf", g.const([64, 64])])
    w2 = g.op("Reshape", ["Wf", g.const([64, 64])])
    h = g.op("Relu", [g.op("MatMul", ["x", w1], name="fc1")])
    r, _ = _run(tmp_path, capsys, _save(tmp_path, g, (8, 64), g.op("MatMul", [h, w2], name="fc2")), levels=1)
    assert r["approximations"] == [_note("Wf", [4096], ["fc1", "fc2"], 4096)]


def test_a_flat_bias_broadcast_stays_a_bias(tmp_path):
    """A rank-1 float tensor Unsqueezed and added to an activation is no layer."""
    g = _G()
    g.inits.append(numpy_helper.from_array(np.ones(32, np.float32), "b"))
    y = g.op("MatMul", ["x", g.weight("W", 64, 32)], name="fc")
    out = g.op("Add", [y, g.op("Unsqueeze", ["b", g.const([0])])])
    net = load_onnx(_save(tmp_path, g, (8, 64), out))
    assert [(L.name, L.out_channels) for L in net.layers] == [("fc", 32)]
    assert net.approximations == ()


def test_a_feature_major_input_is_refused_with_the_right_arithmetic(tmp_path):
    """Trial 12, finding 8: '512 elements, not a multiple of batch 64 x 64' read as if 512 were
    no multiple of 64; the product compared is batch x features."""
    g = _G()
    xt = g.op("Transpose", ["x"], perm=[1, 0])
    f = _save(tmp_path, g, (64, 8), g.op("MatMul", [xt, g.weight("W", 64, 32)], name="fc"))
    with pytest.raises(SpecError, match=r"node 'fc' \(MatMul\): its input 'Transpose_1_0' has 512 elements, not a "
                                        r"multiple of batch x features = 64 x 64 = 4,096$"):
        load_onnx(f)
