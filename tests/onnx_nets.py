"""Small ONNX graphs built with onnx.helper for the importer tests (no downloads)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _w(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def residual_net(batch: int | str = 4) -> onnx.ModelProto:
    """x[N,8,8,8] -> convA 3x3 -> relu -> convB 3x3 -> add(., relu) -> relu -> gap -> flatten -> gemm 8->10."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], name="convA", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="reluA"),
        helper.make_node("Conv", ["ar", "wb"], ["b"], name="convB", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["b", "ar"], ["s"], name="res"),
        helper.make_node("Relu", ["s"], ["sr"], name="reluS"),
        helper.make_node("GlobalAveragePool", ["sr"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "residual", [x], [y], [_w("wa", 8, 8, 3, 3), _w("wb", 8, 8, 3, 3), _w("wf", 10, 8), _w("bf", 10)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


RESIDUAL_YAML = """version: 1
name: residual
batch: 4
layers:
  - {name: convA, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: 8, out_size: 8}
  - {name: convB, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: 8, out_size: 8}
  - {name: res, kind: add, inputs: [convB, convA]}
  - {name: fc, kind: fc, in_features: 8, out_features: 10}
"""


def attention_net() -> onnx.ModelProto:
    """x[2,16,32] -> q,k,v MatMul(32x32) -> softmax(q k^T) v -> o MatMul -> add(x-path)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 32])
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
        helper.make_node("Transpose", ["k"], ["kt"], name="kT", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["c"], name="context"),
        helper.make_node("MatMul", ["c", "wo"], ["o"], name="o"),
        helper.make_node("Add", ["o", "x"], ["y"], name="res"),
    ]
    inits = [_w(n, 32, 32) for n in ("wq", "wk", "wv", "wo")]
    graph = helper.make_graph(nodes, "attention", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def unsupported_net() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [
        helper.make_node("Gemm", ["x", "w1"], ["a"], name="fc1"),
        helper.make_node("Gemm", ["x", "w2"], ["b"], name="fc2"),
        helper.make_node("Greater", ["a", "b"], ["m"], name="cmp"),
        helper.make_node("Where", ["m", "a", "b"], ["y"], name="pick"),
    ]
    graph = helper.make_graph(nodes, "bad", [x], [y], [_w("w1", 4, 4), _w("w2", 4, 4)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def grouped_conv_net() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 4, 4])
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8)]
    graph = helper.make_graph(nodes, "grouped", [x], [y], [_w("w", 8, 1, 3, 3)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def weight_first_matmul_net() -> onnx.ModelProto:
    """y = W @ x^T style: the weight is MatMul's first input (refused, not silently dropped)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])
    nodes = [helper.make_node("MatMul", ["w", "x"], ["y"], name="wx")]
    graph = helper.make_graph(nodes, "wfirst", [x], [y], [_w("w", 4, 4)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def constant_weight_net() -> onnx.ModelProto:
    """A Gemm whose weight comes from a Constant node."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])
    nodes = [
        helper.make_node("Constant", [], ["w"], name="wconst", value=numpy_helper.from_array(np.zeros((4, 5), dtype=np.float32))),
        helper.make_node("Gemm", ["x", "w"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(nodes, "cw", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def resnet18(batch: int = 512) -> onnx.ModelProto:
    """ResNet-18 as an exporter would write it (Conv + BatchNormalization + Relu, MaxPool, basic
    blocks with projection shortcuts, GlobalAveragePool, Flatten, Gemm), node names as in
    models/resnet18.yaml so the two can be compared layer for layer."""
    nodes, inits = [], []

    def conv(name, x, cin, cout, k, stride, relu=True):
        inits.append(_w(f"{name}.w", cout, cin, k, k))
        nodes.append(helper.make_node("Conv", [x, f"{name}.w"], [f"{name}.y"], name=name, kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        for p in ("scale", "bias", "mean", "var"):
            inits.append(_w(f"{name}.bn.{p}", cout))
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.y"] + [f"{name}.bn.{p}" for p in ("scale", "bias", "mean", "var")],
                                      [f"{name}.bn"], name=f"{name}_bn"))
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.r"], name=f"{name}_relu"))
        return f"{name}.r"

    x = conv("conv1", "x", 3, 64, 7, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, ch = "pool", 64
    for stage, width in enumerate([64, 128, 256, 512], start=1):
        for b in (1, 2):
            stride = 2 if stage > 1 and b == 1 else 1
            p = f"s{stage}b{b}"
            a = conv(f"{p}_a", x, ch, width, 3, stride)
            bb = conv(f"{p}_b", a, width, width, 3, 1, relu=False)
            short = x
            if ch != width or stride != 1:
                short = conv(f"{p}_proj", x, ch, width, 1, stride, relu=False)
            nodes.append(helper.make_node("Add", [bb, short], [f"{p}.sum"], name=f"{p}_add"))
            nodes.append(helper.make_node("Relu", [f"{p}.sum"], [f"{p}.out"], name=f"{p}_out"))
            x, ch = f"{p}.out", width
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    inits += [_w("fc.w", 1000, 512), _w("fc.b", 1000)]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], name="fc", transB=1))
    xin = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 224, 224])
    yout = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1000])
    graph = helper.make_graph(nodes, "resnet18", [xin], [yout], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
