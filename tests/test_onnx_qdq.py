"""Quantised ONNX graphs in the QDQ format (onnxruntime's quantize_static output: a weight is
DequantizeLinear(int8 initializer, scale, zero point) before its MatMul/Conv/Gemm, activations
pass QuantizeLinear -> DequantizeLinear) are read as the float network they quantise; what is
not read is refused naming the node and the reason (onnx.helper graphs, no torch)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from explorer.app.cli import main
from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx

from . import onnx_nets
from .onnx_nets import _G, _ext

INT8, INT4 = TensorProto.INT8, TensorProto.INT4


class _Q(_G):
    """_G with QDQ helpers written as onnxruntime's quantize_static writes them."""

    def __init__(self, qdq: bool):
        super().__init__()
        self.qdq = qdq

    def small(self, name, values, dtype):
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def qweight(self, name, shape, axis=None, block=0, dtype=INT8):
        """The weight ``name``: a float initializer, or (QDQ) its int8 copy dequantised per tensor,
        per axis (``axis``) or block-wise (``block`` along ``axis``)."""
        if not self.qdq:
            return self.weight(name, *shape)
        self.inits.append(_ext(f"{name}_quantized", *shape, dtype=dtype))
        if block:
            sshape = [-(-d // block) if k == axis else d for k, d in enumerate(shape)]
        else:
            sshape = [] if axis is None else [shape[axis]]
        s = self.small(f"{name}_scale", np.full(sshape, 0.02), np.float32)
        zp = self.small(f"{name}_zero_point", np.zeros(sshape), np.int8)
        attrs = {} if axis is None else {"axis": axis}
        if block:
            attrs["block_size"] = block
        return self.op("DequantizeLinear", [f"{name}_quantized", s, zp], name=f"{name}_DequantizeLinear", **attrs)

    def qdq_act(self, x):
        """QuantizeLinear -> DequantizeLinear on an activation (QDQ only)."""
        if not self.qdq:
            return x
        s, zp = self.small(f"s{self.n}", 0.05, np.float32), self.small(f"zp{self.n}", 0, np.uint8)
        return self.op("DequantizeLinear", [self.op("QuantizeLinear", [x, s, zp]), s, zp])


def _save(tmp_path, g, x_shape, out, name, opset=17):
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    model = g.model("m", x, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], opset=opset)
    f = tmp_path / name
    onnx.save(model, str(f))
    return f


def _sig(net):
    return [(L.name, L.kind.value, L.in_channels, L.out_channels, L.in_size, L.out_size, L.kernel) for L in net.layers]


def mlp(tmp_path, qdq: bool, opset=17, **w1):
    """x [4, 16, 64] -> fc1 (64 -> 32, its weight per-axis along axis 1 unless ``w1`` says) -> Relu -> fc2 (32 -> 8)."""
    g = _Q(qdq)
    h = g.op("MatMul", [g.qdq_act("x"), g.qweight("fc1.weight", [64, 32], **(w1 or {"axis": 1}))], name="fc1")
    h = g.qdq_act(g.op("Relu", [h]))
    out = g.op("MatMul", [h, g.qweight("fc2.weight", [32, 8])], name="fc2")
    return _save(tmp_path, g, (4, 16, 64), out, f"mlp-{qdq}-{opset}.onnx", opset)


def cnn(tmp_path, qdq: bool):
    """x [2, 3, 8, 8] -> conv (3 -> 16, 3x3, per-channel axis 0, int32 bias dequantised) -> Relu
    -> Flatten -> Gemm transB=1 (1024 -> 10, its [10, 1024] weight per-channel along axis 0)."""
    g = _Q(qdq)
    if qdq:
        g.inits.append(_ext("conv.bias_quantized", 16, dtype=TensorProto.INT32))
        bias = g.op("DequantizeLinear", ["conv.bias_quantized", g.small("conv.bias_scale", np.full(16, 1e-3), np.float32),
                                         g.small("conv.bias_zp", np.zeros(16), np.int32)], axis=0)
    else:
        bias = g.weight("conv.bias", 16)
    c = g.op("Conv", [g.qdq_act("x"), g.qweight("conv.weight", [16, 3, 3, 3], axis=0), bias], name="conv", pads=[1, 1, 1, 1])
    flat = g.op("Flatten", [g.qdq_act(g.op("Relu", [c]))], axis=1)
    out = g.op("Gemm", [flat, g.qweight("fc.weight", [10, 1024], axis=0), g.weight("fc.bias", 10)], name="fc", transB=1)
    return _save(tmp_path, g, (2, 3, 8, 8), out, f"cnn-{qdq}.onnx")


def test_qdq_matmul_is_the_float_network(tmp_path):
    """Trial 11, finding 4: the int8 weight behind DequantizeLinear was refused as 'not a
    constant tensor'; it is fc1 64 -> 32 as in the float export, and the note says how it is costed."""
    q, f = load_onnx(mlp(tmp_path, True)), load_onnx(mlp(tmp_path, False))
    assert _sig(q) == _sig(f)
    assert _sig(q)[:2] == [("fc1", "fc", 64, 32, (16, 1), (16, 1), (1, 1)), ("fc2", "fc", 32, 8, (16, 1), (16, 1), (1, 1))]
    assert f.approximations == ()
    assert q.approximations == (
        "weights stored quantised (INT8, read through DequantizeLinear: a QDQ graph), 'fc1.weight_quantized' and 1 "
        "more: read as the float network they quantise (the same layers and sizes); every element, weights and "
        "activations alike, is costed at the array's dtype_bytes",)


def test_qdq_conv_per_channel_and_gemm_trans_b(tmp_path):
    q, f = load_onnx(cnn(tmp_path, True)), load_onnx(cnn(tmp_path, False))
    assert _sig(q) == _sig(f)
    assert _sig(q)[0] == ("conv", "conv", 3, 16, (8, 8), (8, 8), (3, 3))
    assert _sig(q)[-1] == ("fc", "fc", 1024, 10, (1, 1), (1, 1), (1, 1))


def test_block_wise_scales_and_negative_axis(tmp_path):
    """Opset 21's block_size (an int4 weight, a scale block per 16 rows) and axis -1 read as
    the same network; the DequantizeLinear's outputs through a Transpose too."""
    f = _sig(load_onnx(mlp(tmp_path, False)))
    assert _sig(load_onnx(mlp(tmp_path, True, 21, axis=0, block=16, dtype=INT4))) == f
    assert _sig(load_onnx(mlp(tmp_path, True, 21, axis=-1))) == f
    assert _sig(load_onnx(mlp(tmp_path, True, 21, axis=1, block=5))) == f  # 32 columns in blocks of 5: 7 per row


def test_a_transposed_int8_weight_is_read(tmp_path):
    """A view of the int8 tensor before its DequantizeLinear (a [32, 64] weight transposed) is
    still the stored weight, and the note names the stored tensor."""
    g = _Q(True)
    g.inits.append(_ext("Wt", 32, 64, dtype=INT8))
    wq = g.op("Transpose", ["Wt"], perm=[1, 0])
    w = g.op("DequantizeLinear", [wq, g.small("s", np.full(32, 0.1), np.float32)], name="dq", axis=1)
    h = g.op("MatMul", [g.qdq_act("x"), w], name="fc1")
    out = g.op("MatMul", [h, g.weight("fc2.weight", 32, 8)], name="fc2")
    net = load_onnx(_save(tmp_path, g, (4, 16, 64), out, "t.onnx"))
    assert _sig(net) == _sig(load_onnx(mlp(tmp_path, False)))
    assert "'Wt': read as the float network" in net.approximations[0]


@pytest.mark.parametrize("dq_first", [True, False])
@pytest.mark.parametrize("inline", [True, False])
def test_a_flat_int8_weight_reshaped_gets_the_note(tmp_path, dq_first, inline):
    """Trial 13, finding 3: an int8 weight stored flat ([2048]) and Reshaped to [64, 32], after or
    before its DequantizeLinear, was read with the right sizes but without the QDQ note (after),
    or refused (before, when too large to fold), or named after the folded Reshape (before, small).
    Every order gives the float network and a note naming the stored tensor; ``inline``: the data
    is in the file (foldable), else external (never folded)."""
    g = _Q(True)
    data = np.arange(64 * 32, dtype=np.int8)
    g.inits.append(numpy_helper.from_array(data, "Wflat") if inline else _ext("Wflat", 64 * 32, dtype=INT8))
    shape, scale = g.small("shape", [64, 32], np.int64), g.small("s", 0.02, np.float32)
    if dq_first:
        w = g.op("Reshape", [g.op("DequantizeLinear", ["Wflat", scale], name="dq"), shape], name="rs")
    else:
        w = g.op("DequantizeLinear", [g.op("Reshape", ["Wflat", shape], name="rs"), scale], name="dq")
    h = g.op("MatMul", [g.qdq_act("x"), w], name="fc1")
    out = g.op("MatMul", [h, g.weight("fc2.weight", 32, 8)], name="fc2")
    net = load_onnx(_save(tmp_path, g, (4, 16, 64), out, "flat.onnx", opset=19))
    assert _sig(net) == _sig(load_onnx(mlp(tmp_path, False)))
    assert net.approximations == (
        "weights stored quantised (INT8, read through DequantizeLinear: a QDQ graph), 'Wflat': read as the float "
        "network they quantise (the same layers and sizes); every element, weights and activations alike, is costed "
        "at the array's dtype_bytes",)


def test_a_dequantised_bias_gets_no_note(tmp_path):
    """An int32 bias read through DequantizeLinear (rank 1, added after the product) is no
    quantised weight: the float weights' graph has no note."""
    g = _Q(False)
    g.inits.append(numpy_helper.from_array(np.zeros(32, np.int32), "bq"))
    bias = g.op("DequantizeLinear", ["bq", g.small("bs", 1e-3, np.float32)])
    h = g.op("Add", [g.op("MatMul", ["x", g.weight("fc1.weight", 64, 32)], name="fc1"), bias])
    out = g.op("MatMul", [h, g.weight("fc2.weight", 32, 8)], name="fc2")
    net = load_onnx(_save(tmp_path, g, (4, 16, 64), out, "bias.onnx"))
    assert _sig(net) == _sig(load_onnx(mlp(tmp_path, False)))
    assert net.approximations == ()


def test_float_weight_quantised_in_the_graph_is_read(tmp_path):
    """A QAT export: the float weight itself passes QuantizeLinear -> DequantizeLinear; then a
    Transpose of the dequantised weight (a Gemm-like MatMul) is still the stored weight."""
    g = _Q(True)
    s, zp = g.small("s", 0.02, np.float32), g.small("zp", 0, np.int8)
    w = g.op("DequantizeLinear", [g.op("QuantizeLinear", [g.weight("W", 32, 64), s, zp]), s, zp], name="dq")
    h = g.op("MatMul", [g.qdq_act("x"), g.op("Transpose", [w], perm=[1, 0])], name="fc1")
    out = g.op("MatMul", [h, g.weight("fc2.weight", 32, 8)], name="fc2")
    net = load_onnx(_save(tmp_path, g, (4, 16, 64), out, "qat.onnx"))
    assert _sig(net) == _sig(load_onnx(mlp(tmp_path, False)))
    assert net.approximations == ()  # no weight is stored quantised


def _refused(tmp_path, capsys, g, out, opset=17) -> str:
    f = _save(tmp_path, g, (4, 16, 64), out, "bad.onnx", opset)
    with pytest.raises(SpecError):
        load_onnx(f)
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--levels", "2"])
    err = capsys.readouterr().err.strip()
    assert ex.value.code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def _one_matmul(g, w):
    return g.op("MatMul", [g.op("MatMul", ["x", w], name="fc1"), g.weight("fc2.weight", 32, 8)], name="fc2")


@pytest.mark.parametrize("attrs, scale, expect", [
    ({"axis": 1}, [7], "DequantizeLinear of 'Wq' [64, 32]: its per-axis scale has shape [7], not [32] (axis 1)"),
    ({"axis": 2}, [32], "DequantizeLinear of 'Wq' [64, 32]: axis 2 is not an axis of its 2-D data"),
    ({"axis": 0, "block_size": 16}, [3, 32], "DequantizeLinear of 'Wq' [64, 32]: its block-wise scale (block_size 16 "
                                            "along axis 0) has shape [3, 32], not [4, 32]"),
    ({"axis": 1, "zp": [31]}, [32], "DequantizeLinear of 'Wq' [64, 32]: its zero point has shape [31], its scale [32]"),
])
def test_a_scale_that_does_not_fit_the_weight_is_refused(tmp_path, capsys, attrs, scale, expect):
    g = _Q(True)
    g.inits.append(_ext("Wq", 64, 32, dtype=INT8))
    attrs = dict(attrs)
    zp = [g.small("zp", np.zeros(attrs.pop("zp")), np.int8)] if "zp" in attrs else []
    w = g.op("DequantizeLinear", ["Wq", g.small("s", np.ones(scale), np.float32), *zp], name="dq", **attrs)
    err = _refused(tmp_path, capsys, g, _one_matmul(g, w), opset=21)
    assert err.endswith(f": node 'dq' (DequantizeLinear): {expect}"), err


def test_what_is_not_read_is_refused_naming_node_and_reason(tmp_path, capsys):
    g = _Q(True)  # a weight quantised at run time
    q = g.op("DynamicQuantizeLinear", [g.weight("W", 64, 32)], name="dyn", n_out=3)
    err = _refused(tmp_path, capsys, g, _one_matmul(g, g.op("DequantizeLinear", q, name="dq")))
    assert "node 'dyn' (DynamicQuantizeLinear): DynamicQuantizeLinear of the stored weight 'W' (quantised at run time) " \
           "is not read; quantised weights are read stored in the QDQ format" in err, err

    g = _Q(True)  # a scale computed from the activation
    g.inits.append(_ext("Wq", 64, 32, dtype=INT8))
    scale = g.op("ReduceMax", ["x"], keepdims=0)
    err = _refused(tmp_path, capsys, g, _one_matmul(g, g.op("DequantizeLinear", ["Wq", scale], name="dq")))
    assert f"node 'dq' (DequantizeLinear): DequantizeLinear of the stored 'Wq': its scale '{scale}' is not a stored " \
           "tensor; only a stored weight with a stored scale and zero point is read" in err, err

    g = _Q(True)  # QOperator format
    g.inits.append(_ext("Wq", 64, 32, dtype=INT8))
    sc = [g.small("xs", 0.1, np.float32), g.small("xz", 0, np.uint8), g.small("ws", 0.1, np.float32),
          g.small("wz", 0, np.int8), g.small("ys", 0.1, np.float32), g.small("yz", 0, np.uint8)]
    xq = g.op("QuantizeLinear", ["x", sc[0], sc[1]])
    y = g.op("QLinearMatMul", [xq, sc[0], sc[1], "Wq", sc[2], sc[3], sc[4], sc[5]], name="qfc")
    err = _refused(tmp_path, capsys, g, g.op("DequantizeLinear", [y, sc[4], sc[5]]))
    assert "node 'qfc' (QLinearMatMul): QLinearMatMul holds a weight and is not supported" in err
    assert err.endswith("quantised graphs are read in the QDQ format (DequantizeLinear of a stored weight before Conv, "
                        "Gemm or MatMul: onnxruntime's quantize_static with QuantFormat.QDQ)"), err


def test_dequantizing_an_integer_graph_input_is_refused(tmp_path, capsys):
    g = _Q(True)
    w = g.op("DequantizeLinear", ["wq", g.small("s", 0.1, np.float32)], name="dq")
    out = _one_matmul(g, w)
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16, 64]), helper.make_tensor_value_info("wq", INT8, [64, 32])]
    f = tmp_path / "in.onnx"
    onnx.save(helper.make_model(helper.make_graph(g.nodes, "m", x, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                                                  g.inits), opset_imports=[helper.make_opsetid("", 17)]), str(f))
    with pytest.raises(SpecError, match=r"node 'dq' \(DequantizeLinear\): DequantizeLinear of 'wq', which is not a stored "
                                        r"tensor \(an integer graph input or computed from one\); only stored weights"):
        load_onnx(f)


def _to_qdq(model, axis=None) -> onnx.ModelProto:
    """``model`` as quantize_static writes it: every float initializer of rank >= 2 stored as
    int8 and dequantised (per tensor, or per ``axis``) by a DequantizeLinear of its old name."""
    graph = model.graph
    inits = list(graph.initializer)
    del graph.initializer[:]
    dq = []
    for t in inits:
        if t.data_type != TensorProto.FLOAT or len(t.dims) < 2:
            graph.initializer.append(t)
            continue
        shape = [int(d) for d in t.dims]
        sshape = [] if axis is None else [shape[axis]]
        graph.initializer.extend([_ext(f"{t.name}_quantized", *shape, dtype=INT8),
                                  numpy_helper.from_array(np.full(sshape, 0.01, np.float32), f"{t.name}_scale"),
                                  numpy_helper.from_array(np.zeros(sshape, np.int8), f"{t.name}_zero_point")])
        dq.append(helper.make_node("DequantizeLinear", [f"{t.name}_quantized", f"{t.name}_scale", f"{t.name}_zero_point"],
                                   [t.name], name=f"{t.name}_DequantizeLinear", **({} if axis is None else {"axis": axis})))
    nodes = dq + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return model


@pytest.mark.parametrize("make, axes", [
    (lambda: onnx_nets.gpt2_block(head="tied"), {}), (lambda: onnx_nets.gpt2_block(head="untied"), {}),
    (onnx_nets.hf_bert, {"batch": 2, "sequence": 8}), (onnx_nets.mha_encoder, {}), (onnx_nets.inverted_residual, {}),
    (onnx_nets.dense_net, {}), (onnx_nets.r3d_block, {}), (onnx_nets.residual_net, {}), (onnx_nets.grouped_conv_net, {})])
@pytest.mark.parametrize("axis", [None, 0])
def test_exporter_style_nets_with_qdq_weights_are_the_float_nets(tmp_path, make, axes, axis):
    """Every float weight of the test nets stored int8 behind a DequantizeLinear (per tensor or
    per output channel): the same layers, sizes and edges; a tied LM head stays tied (left out)."""
    f = tmp_path / "f.onnx"
    onnx.save(make(), str(f))
    q = tmp_path / "q.onnx"
    onnx.save(_to_qdq(make(), axis), str(q))
    fnet, qnet = load_onnx(f, **axes), load_onnx(q, **axes)
    assert _sig(qnet) == _sig(fnet) and qnet.edges == fnet.edges
    notes = [a for a in qnet.approximations if "weights stored quantised" in a]
    assert len(notes) == 1 and [a for a in qnet.approximations if a not in notes] == \
        [a.replace("'wte'", "'wte_quantized'") for a in fnet.approximations]
