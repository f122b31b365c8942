"""ONNX operators holding a weight are read or refused, never dropped: an Einsum that is a plain
contraction with a stored weight is an fc layer; any other Einsum on a weight, a com.microsoft
Attention with its QKV weight, a custom operator with quantised weights and a control-flow body
holding a product are refused in one line (onnx.helper graphs, no torch)."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.app.cli import main
from explorer.frontends.onnx import load_onnx
from explorer.frontends.onnx_einsum import einsum_fc

from .onnx_nets import _G


def _x(shape=(4, 16, 64)):
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]


def _save(tmp_path, g, out, name="m.onnx", opset=17, extra_opsets=()):
    model = g.model("m", _x(), [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], opset=opset)
    model.opset_import.extend(helper.make_opsetid(d, 1) for d in extra_opsets)
    f = tmp_path / name
    onnx.save(model, str(f))
    return f


def _sig(net):
    return [(L.name, L.kind.value, L.in_channels, L.out_channels, L.in_size, L.out_size) for L in net.layers]


def _cli_error(capsys, f) -> str:
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--levels", "2"])
    err = capsys.readouterr().err.strip()
    assert ex.value.code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_einsum_with_a_weight_is_the_fc_layer_a_matmul_is(tmp_path):
    """Trial 10, finding 19: 'bsd,de->bse' then a MatMul imported as ['fc'] alone (the Einsum's
    64 x 64 weight dropped); it is the same network as two MatMuls."""
    nets = {}
    for style in ("Einsum", "MatMul"):
        g = _G()
        w = g.weight("W", 64, 32)
        h = g.op("Einsum", ["x", w], name="ein", equation="bsd,de->bse") if style == "Einsum" else \
            g.op("MatMul", ["x", w], name="ein")
        out = g.op("MatMul", [h, g.weight("W2", 32, 8)], name="fc")
        nets[style] = load_onnx(_save(tmp_path, g, out, f"{style}.onnx"))
    assert _sig(nets["Einsum"]) == _sig(nets["MatMul"])
    assert _sig(nets["Einsum"])[0] == ("ein", "fc", 64, 32, (16, 1), (16, 1))
    assert nets["Einsum"].approximations == ()


@pytest.mark.parametrize("equation, weight_first, dims, expect", [
    ("bsd,de->bse", False, [64, 32], (64, 32)),
    ("de,bsd->bse", True, [64, 32], (64, 32)),  # the weight first
    ("bsd,ed->bse", False, [32, 64], (64, 32)),  # a transposed weight
    ("bsd,de", False, [64, 32], (64, 32)),  # implicit output 'bes'
    ("...d,de->...e", False, [64, 32], (64, 32)),
    ("bshd,hde->bse", False, [4, 16, 32], (64, 32)),  # heads x head_dim -> e
    ("bsd,bde->bse", False, [4, 64, 32], str),  # a weight per sample: not a contraction
    ("bsd,dd->bsd", False, [64, 64], str),  # a diagonal
    ("bsd,de->be", False, [64, 32], str),  # sums the sequence too
    ("bsd,d->bs", False, [64], str),  # nothing new reaches the output
    ("bsd,de,ef->bsf", False, [64, 32], str),  # three operands
])
def test_einsum_fc_reads_plain_contractions_only(equation, weight_first, dims, expect):
    got = einsum_fc(equation, weight_first, dims)
    assert isinstance(got, str) if expect is str else got == expect


def test_einsum_contraction_with_the_weight_first_and_over_two_axes(tmp_path):
    g = _G()
    h = g.op("Einsum", [g.weight("W", 64, 32), "x"], name="ein", equation="de,bsd->bse")
    h = g.op("Reshape", [h, g.const([4, 16, 4, 8])])
    out = g.op("Einsum", [h, g.weight("Wo", 4, 8, 16)], name="proj", equation="bshd,hde->bse")
    assert _sig(load_onnx(_save(tmp_path, g, out)))[:2] == [("ein", "fc", 64, 32, (16, 1), (16, 1)),
                                                            ("proj", "fc", 32, 16, (16, 1), (16, 1))]


def test_other_einsums_on_a_weight_are_refused_naming_node_and_equation(tmp_path, capsys):
    g = _G()
    out = g.op("Einsum", ["x", g.weight("W", 64)], name="ein", equation="bsd,d->bs")
    # a rank-1 stored tensor is no weight (a scale, as a norm's): the net has no weighted layer
    assert "no weighted layer (Conv, Gemm, MatMul or Einsum" in _cli_error(capsys, _save(tmp_path, g, out))
    g = _G()
    out = g.op("Einsum", ["x", g.weight("W", 64, 32)], name="ein", equation="bsd,de->be")
    err = _cli_error(capsys, _save(tmp_path, g, out, "sum.onnx"))
    assert "node 'ein' (Einsum): Einsum 'bsd,de->be' with the stored weight 'W' is not a plain contraction" in err


def test_ms_attention_with_its_qkv_weight_is_refused(tmp_path, capsys):
    g = _G()
    att = g.op("Attention", ["x", g.weight("qkv", 64, 192), g.weight("qkv_b", 192)], name="att", domain="com.microsoft",
               num_heads=4)
    out = g.op("MatMul", [att, g.weight("Wo", 64, 64)], name="o")
    err = _cli_error(capsys, _save(tmp_path, g, out, extra_opsets=["com.microsoft"]))
    assert "node 'att' (Attention): custom operator com.microsoft.Attention holds a weight ('qkv')" in err


def test_custom_operator_with_quantised_weights_is_refused(tmp_path, capsys):
    g = _G()
    g.inits.append(numpy_helper.from_array(np.zeros((32, 2, 16), dtype=np.uint8), "B"))
    mm = g.op("MatMulNBits", ["x", "B", g.weight("scales", 64)], name="q", domain="com.microsoft", K=64, N=32, bits=4,
              block_size=32)
    out = g.op("MatMul", [mm, g.weight("W2", 32, 8)], name="fc")
    err = _cli_error(capsys, _save(tmp_path, g, out, extra_opsets=["com.microsoft"]))
    assert "node 'q' (MatMulNBits): custom operator com.microsoft.MatMulNBits holds a weight ('B')" in err


def test_control_flow_body_holding_a_product_is_refused(tmp_path, capsys):
    def branch(name):
        mm = helper.make_node("MatMul", ["x", "W"], [f"{name}_y"], name=f"{name}_fc")
        return helper.make_graph([mm], name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)])

    g = _G()
    g.weight("W", 64, 32)
    cond = g.const(True, dtype=np.bool_)
    y = g.op("If", [cond], name="branch", then_branch=branch("then"), else_branch=branch("else"))
    out = g.op("Add", [g.op("MatMul", ["x", g.weight("W0", 64, 32)], name="fc"), y])
    err = _cli_error(capsys, _save(tmp_path, g, out))
    assert "node 'branch' (If): its body graph holds MatMul 'else_fc', and control-flow bodies are not walked" in err


def test_einsum_network_plans_through_the_cli(tmp_path, capsys):
    g = _G()
    h = g.op("Einsum", ["x", g.weight("W", 64, 64)], name="ein", equation="bsd,de->bse")
    out = g.op("MatMul", [h, g.weight("W2", 64, 64)], name="fc")
    f = _save(tmp_path, g, out)
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--levels", "2", "--space", "accpar", "--format", "json"])
    assert ex.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["layers"] == ["ein", "fc"] and data["approximations"] == []
