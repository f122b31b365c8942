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


# ---- exporter-style transformer and mobile graphs ----------------------------------------------
# Weights are written as dims with external data in a file that does not exist (as a dynamo
# export whose .onnx.data was not copied): the importer must read shapes only.


def _ext(name, *shape, dtype=TensorProto.FLOAT):
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "absent.onnx.data"), ("offset", "0"), ("length", str(4 * int(np.prod(shape))))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


class _G:
    """A little graph writer: nodes, initializers and fresh tensor names."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def op(self, op, inputs, name=None, n_out=1, **attrs):
        self.n += 1
        outs = [f"{name or op}_{self.n}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name or f"{op}_{self.n}", **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, values, dtype=np.int64):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(_const(name, values, dtype))
        return name

    def weight(self, name, *shape):
        self.inits.append(_ext(name, *shape))
        return name

    def linear(self, name, x, din, dout):
        """HF/torch style: MatMul with a [din, dout] weight, then Add of the bias."""
        y = self.op("MatMul", [x, self.weight(f"{name}.weight", din, dout)], name=name)
        return self.op("Add", [y, self.weight(f"{name}.bias", dout)])

    def layer_norm(self, x, d):
        return self.op("LayerNormalization", [x, self.weight(f"ln{self.n}.w", d), self.weight(f"ln{self.n}.b", d)], axis=-1)

    def dyn_shape(self, x, tail):
        """A Reshape target built like the TorchScript exporter: Concat(Shape(x)[0], Shape(x)[1], tail)."""
        shp = self.op("Shape", [x])
        b = self.op("Unsqueeze", [self.op("Gather", [shp, self.const(0)], axis=0), self.const([0])])
        s = self.op("Unsqueeze", [self.op("Gather", [shp, self.const(1)], axis=0), self.const([0])])
        return self.op("Concat", [b, s, self.const(tail)], axis=0)

    def model(self, name, inputs, outputs, opset=17):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def hf_bert(layers=2, hidden=64, heads=4, ffn=128, vocab=100, max_pos=64, seq="sequence", batch="batch") -> onnx.ModelProto:
    """BertModel as the TorchScript exporter writes it: word/position/token-type embeddings
    (position ids a constant buffer sliced to the sequence), an additive attention mask from the
    integer attention_mask input, per layer Q/K/V MatMul+Add, Reshape (from Shape arithmetic) and
    Transpose to [N, heads, S, dh], MatMul(q, k^T), Div, Add(mask), Softmax, MatMul(., v),
    Transpose/Reshape back, output dense, residual + LayerNorm, FFN with erf-GELU, residual +
    LayerNorm; then the pooler (first token, dense, tanh). Node names follow models/bert-base.yaml."""
    g, dh = _G(), hidden // heads
    ids, tt, mask = "input_ids", "token_type_ids", "attention_mask"
    word = g.op("Gather", [g.weight("word_embeddings", vocab, hidden), ids], name="emb_word")
    typ = g.op("Gather", [g.weight("token_type_embeddings", 2, hidden), tt], name="emb_type")
    e = g.op("Add", [word, typ], name="emb_add1")
    g.inits.append(_const("position_ids", [list(range(max_pos))]))
    s_len = g.op("Gather", [g.op("Shape", [ids]), g.const(1)], axis=0)
    pos_ids = g.op("Slice", ["position_ids", g.const([0]), g.op("Unsqueeze", [s_len, g.const([0])]), g.const([1])])
    pos = g.op("Gather", [g.weight("position_embeddings", max_pos, hidden), pos_ids], name="emb_pos")
    x = g.layer_norm(g.op("Add", [e, pos], name="emb_add2"), hidden)
    m = g.op("Cast", [g.op("Unsqueeze", [mask, g.const([1, 2])])], to=TensorProto.FLOAT)
    ext = g.op("Mul", [g.op("Sub", [g.const(1.0, np.float32), m]), g.const(-10000.0, np.float32)])
    for i in range(layers):
        def heads_of(t, perm):
            return g.op("Transpose", [g.op("Reshape", [t, g.dyn_shape(t, [heads, dh])])], perm=perm)
        q = heads_of(g.linear(f"l{i}_q", x, hidden, hidden), [0, 2, 1, 3])
        kt = heads_of(g.linear(f"l{i}_k", x, hidden, hidden), [0, 2, 3, 1])
        v = heads_of(g.linear(f"l{i}_v", x, hidden, hidden), [0, 2, 1, 3])
        sc = g.op("Div", [g.op("MatMul", [q, kt], name=f"l{i}_att"), g.const(float(np.sqrt(dh)), np.float32)])
        p = g.op("Softmax", [g.op("Add", [sc, ext])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [p, v], name=f"l{i}_ctx")], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, g.dyn_shape(ctx, [hidden])])
        o = g.linear(f"l{i}_o", ctx, hidden, hidden)
        x = g.layer_norm(g.op("Add", [o, x], name=f"l{i}_add1"), hidden)
        h1 = g.linear(f"l{i}_ffn1", x, hidden, ffn)
        gelu = g.op("Mul", [g.op("Mul", [h1, g.const(0.5, np.float32)]),
                            g.op("Add", [g.op("Erf", [g.op("Div", [h1, g.const(1.4142135, np.float32)])]), g.const(1.0, np.float32)])])
        x2 = g.linear(f"l{i}_ffn2", gelu, ffn, hidden)
        x = g.layer_norm(g.op("Add", [x2, x], name=f"l{i}_add2"), hidden)
    first = g.op("Gather", [x, g.const(0)], axis=1)
    pooled = g.op("Tanh", [g.op("Gemm", [first, g.weight("pooler.weight", hidden, hidden), g.weight("pooler.bias", hidden)],
                                name="pooler", transB=1)])
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq]) for n in (ids, tt, mask)]
    outs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, None), helper.make_tensor_value_info(pooled, TensorProto.FLOAT, None)]
    return g.model("bert", ins, outs)


def gpt2_block(hidden=64, heads=4, vocab=100, n_pos=32, seq=8, batch=2, split="Split", head=None) -> onnx.ModelProto:
    """GPT2Model's first block as exported: wte/wpe embeddings (positions from Range over the
    input's shape), LayerNorm, fused c_attn (one MatMul to 3 x hidden) cut by Split (or three
    Slices), heads, causal Where mask, softmax, context, c_proj, residual, MLP (c_fc, gelu, c_proj).
    ``head``: an LM head after it: "tied" (MatMul with Transpose(wte), as torch exports a tied
    head), "tied_gemm" (Gemm on the flattened tokens with wte, transB=1) or "untied" (its own weight)."""
    g, dh = _G(), hidden // heads
    ids = "input_ids"
    s_len = g.op("Gather", [g.op("Shape", [ids]), g.const(1)], axis=0)
    pos_ids = g.op("Range", [g.const(0), s_len, g.const(1)])
    x = g.op("Add", [g.op("Gather", [g.weight("wte", vocab, hidden), ids], name="wte"),
                     g.op("Gather", [g.weight("wpe", n_pos, hidden), pos_ids], name="wpe")], name="emb")
    h = g.layer_norm(x, hidden)
    qkv = g.linear("c_attn", h, hidden, 3 * hidden)
    if split == "Split":
        q, k, v = g.op("Split", [qkv, g.const([hidden] * 3)], n_out=3, axis=2)
    else:
        q, k, v = (g.op("Slice", [qkv, g.const([j * hidden]), g.const([(j + 1) * hidden]), g.const([2])]) for j in range(3))

    def heads_of(t, perm):
        return g.op("Transpose", [g.op("Reshape", [t, g.const([batch, seq, heads, dh])])], perm=perm)

    sc = g.op("MatMul", [heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1])], name="attn")
    causal = g.const(np.tril(np.ones((1, 1, seq, seq), dtype=bool)), dtype=bool)
    sc = g.op("Where", [causal, g.op("Div", [sc, g.const(float(np.sqrt(dh)), np.float32)]), g.const(-1e9, np.float32)])
    ctx = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), heads_of(v, [0, 2, 1, 3])])
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const([batch, seq, hidden])])
    x = g.op("Add", [g.linear("attn_proj", ctx, hidden, hidden), x], name="res1")
    m = g.linear("mlp_fc", g.layer_norm(x, hidden), hidden, 4 * hidden)
    m = g.op("Mul", [m, g.op("Sigmoid", [g.op("Mul", [m, g.const(1.702, np.float32)])])])
    x = g.op("Add", [g.linear("mlp_proj", m, 4 * hidden, hidden), x], name="res2")
    if head == "tied":
        x = g.op("MatMul", [x, g.op("Transpose", ["wte"], perm=[1, 0])], name="lm_head")
    elif head == "tied_gemm":
        x = g.op("Gemm", [g.op("Reshape", [x, g.const([batch * seq, hidden])]), "wte"], name="lm_head", transB=1)
    elif head == "untied":
        x = g.op("MatMul", [x, g.weight("lm_head.weight", hidden, vocab)], name="lm_head")
    ins = [helper.make_tensor_value_info(ids, TensorProto.INT64, [batch, seq])]
    return g.model("gpt2", ins, [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], opset=18)


def mha_encoder(batch=2, seq=6, embed=32, heads=4, seq_first=True) -> onnx.ModelProto:
    """One nn.MultiheadAttention as torch exports it: with seq_first the [N, S, E] input is
    transposed to [S, N, E] (batch_first=True runs sequence-first inside), one fused in_proj
    Gemm on [S*N, E], heads folded into the batch ([N*heads, S, dh]), out_proj Gemm, back."""
    g, dh = _G(), embed // heads
    x = "x"
    t = g.op("Transpose", [x], perm=[1, 0, 2]) if seq_first else x
    lead = [seq, batch] if seq_first else [batch, seq]
    flat = g.op("Reshape", [t, g.const([-1, embed])])
    qkv = g.op("Gemm", [flat, g.weight("in_proj_weight", 3 * embed, embed), g.weight("in_proj_bias", 3 * embed)],
               name="in_proj", transB=1)
    q, k, v = g.op("Split", [qkv, g.const([embed] * 3)], n_out=3, axis=1)

    def heads_of(u):
        u = g.op("Reshape", [u, g.const(lead + [heads, dh])])
        perm = [1, 2, 0, 3] if seq_first else [0, 2, 1, 3]  # -> [N, heads, S, dh]
        return g.op("Reshape", [g.op("Transpose", [u], perm=perm), g.const([batch * heads, seq, dh])])

    kt = g.op("Transpose", [heads_of(k)], perm=[0, 2, 1])
    sc = g.op("MatMul", [g.op("Mul", [heads_of(q), g.const(float(1 / np.sqrt(dh)), np.float32)]), kt], name="attn")
    ctx = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), heads_of(v)])
    ctx = g.op("Reshape", [ctx, g.const([batch, heads, seq, dh])])
    perm = [2, 0, 1, 3] if seq_first else [0, 2, 1, 3]
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=perm), g.const([-1, embed])])
    out = g.op("Gemm", [ctx, g.weight("out_proj.weight", embed, embed), g.weight("out_proj.bias", embed)], name="out_proj", transB=1)
    ins = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, embed])]
    return g.model("mha", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def inverted_residual(batch=2, c=8, expand=4, size=6) -> onnx.ModelProto:
    """A MobileNetV2 block as exported: 1x1 expand Conv + BN + Clip (ReLU6), depthwise 3x3 Conv
    (group = channels) + BN + Clip, 1x1 project Conv + BN, residual Add."""
    g, e = _G(), c * expand
    x = "x"

    def conv(name, t, cin, cout, k, group=1, relu=True):
        y = g.op("Conv", [t, g.weight(f"{name}.w", cout, cin // group, k, k)], name=name, kernel_shape=[k, k],
                 pads=[k // 2] * 4, group=group)
        y = g.op("BatchNormalization", [y] + [g.weight(f"{name}.bn{j}", cout) for j in range(4)])
        return g.op("Clip", [y, g.const(0.0, np.float32), g.const(6.0, np.float32)]) if relu else y

    y = conv("expand", x, c, e, 1)
    y = conv("dw", y, e, e, 3, group=e)
    y = conv("project", y, e, c, 1, relu=False)
    out = g.op("Add", [y, x], name="res")
    ins = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, c, size, size])]
    return g.model("mbv2block", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


INVERTED_RESIDUAL_YAML = """version: 1
name: mbv2block
batch: 2
layers:
  - {name: expand, kind: conv, in_channels: 8, out_channels: 32, kernel: 1, in_size: 6, out_size: 6, inputs: [input]}
  - {name: dw, kind: conv, in_channels: 32, out_channels: 32, kernel: 3, in_size: 6, out_size: 6, groups: 32}
  - {name: project, kind: conv, in_channels: 32, out_channels: 8, kernel: 1, in_size: 6, out_size: 6}
  - {name: res, kind: add, inputs: [project, input]}
"""


def dense_net(batch=2, blocks=2, layers_per_block=4, growth=4, c0=8, size=8) -> onnx.ModelProto:
    """A small DenseNet: every conv of a dense block reads the concatenation of all earlier
    outputs of the block (BN-ReLU-Conv1x1-BN-ReLU-Conv3x3), transitions (Conv1x1 + AvgPool)."""
    g = _G()
    x, ch = g.op("Conv", ["x", g.weight("stem.w", c0, 3, 3, 3)], name="stem", kernel_shape=[3, 3], pads=[1] * 4), c0
    for b in range(blocks):
        feats = [x]
        for i in range(layers_per_block):
            cat = feats[0] if len(feats) == 1 else g.op("Concat", feats, name=f"b{b}cat{i}", axis=1)
            y = g.op("Conv", [g.op("Relu", [cat]), g.weight(f"b{b}l{i}a", 4 * growth, ch, 1, 1)], name=f"b{b}l{i}a", kernel_shape=[1, 1])
            y = g.op("Conv", [g.op("Relu", [y]), g.weight(f"b{b}l{i}b", growth, 4 * growth, 3, 3)], name=f"b{b}l{i}b",
                     kernel_shape=[3, 3], pads=[1] * 4)
            feats.append(y)
            ch += growth
        x = g.op("Concat", feats, name=f"b{b}out", axis=1)
        if b < blocks - 1:
            x = g.op("Conv", [x, g.weight(f"t{b}", ch // 2, ch, 1, 1)], name=f"t{b}", kernel_shape=[1, 1])
            x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            ch //= 2
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    out = g.op("Gemm", [x, g.weight("fc.w", 10, ch), g.weight("fc.b", 10)], name="fc", transB=1)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, size, size])]
    return g.model("densenet", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


# ---- issue 24: exporter patterns of new families ------------------------------------------------


def _scalar(g, value, dtype=np.int64):
    """A Constant node holding a scalar, as the TorchScript exporter writes one per literal."""
    g.n += 1
    out = f"k{g.n}"
    g.nodes.append(helper.make_node("Constant", [], [out], name=f"Constant_{g.n}",
                                    value=numpy_helper.from_array(np.array(value, dtype=dtype))))
    return out


def shuffle_block(style="dynamo", batch=2, c=16, size=8) -> onnx.ModelProto:
    """A ShuffleNetV2 unit (stride 1) after a stem conv: x1, x2 = x.chunk(2, dim=1);
    cat(x1, branch2(x2)) (1x1 conv, ReLU, depthwise 3x3, 1x1 conv, ReLU), channel shuffle
    (Reshape [B, 2, C/2, H, W], Transpose, Reshape back), then a 1x1 head conv.
    dynamo: ``Split(axis=1, num_outputs=2)`` (opset 18). legacy: the chunk as two Slices whose
    bounds come from Shape -> Gather(1) -> Add(1) -> Div(2) -> Mul(1 | 2), every literal a
    Constant node, and the shuffle's Reshape targets from Shape/Gather/Div/Concat arithmetic:
    ONNX shape inference leaves the Slices' shapes open."""
    g, h = _G(), c // 2
    x = g.op("Relu", [g.op("Conv", ["x", g.weight("stem.w", c, 3, 3, 3)], name="stem", kernel_shape=[3, 3], pads=[1] * 4)])
    if style == "dynamo":
        x1, x2 = g.op("Split", [x], name="chunk", n_out=2, axis=1, num_outputs=2)
    elif style == "split-sizes":  # opset 13-17 exporters: the sizes as a second input
        x1, x2 = g.op("Split", [x, g.const([h, h])], name="chunk", n_out=2, axis=1)
    else:
        dim = g.op("Gather", [g.op("Shape", [x]), _scalar(g, 1)], axis=0)
        half = g.op("Div", [g.op("Add", [dim, _scalar(g, 1)]), _scalar(g, 2)])
        lo = g.op("Mul", [half, _scalar(g, 1)])
        hi = g.op("Mul", [half, _scalar(g, 2)])
        axes = _scalar(g, [1])
        x1 = g.op("Slice", [x, _scalar(g, [0]), g.op("Unsqueeze", [lo, _scalar(g, [0])]), axes], name="chunk0")
        x2 = g.op("Slice", [x, g.op("Unsqueeze", [lo, _scalar(g, [0])]), g.op("Unsqueeze", [hi, _scalar(g, [0])]), axes],
                  name="chunk1")
    b = g.op("Relu", [g.op("Conv", [x2, g.weight("b1.w", h, h, 1, 1)], name="b1", kernel_shape=[1, 1])])
    b = g.op("Conv", [b, g.weight("b2.w", h, 1, 3, 3)], name="b2", kernel_shape=[3, 3], pads=[1] * 4, group=h)
    b = g.op("Relu", [g.op("Conv", [b, g.weight("b3.w", h, h, 1, 1)], name="b3", kernel_shape=[1, 1])])
    y = g.op("Concat", [x1, b], name="cat", axis=1)
    if style != "legacy":
        t = g.op("Transpose", [g.op("Reshape", [y, g.const([batch, 2, h, size, size])])], perm=[0, 2, 1, 3, 4])
        y = g.op("Reshape", [t, g.const([batch, c, size, size])])
    else:
        shp = g.op("Shape", [y])
        dims = [g.op("Unsqueeze", [g.op("Gather", [shp, _scalar(g, k)], axis=0), _scalar(g, [0])]) for k in range(4)]
        per = g.op("Unsqueeze", [g.op("Div", [g.op("Gather", [shp, _scalar(g, 1)], axis=0), _scalar(g, 2)]), _scalar(g, [0])])
        t = g.op("Reshape", [y, g.op("Concat", [dims[0], _scalar(g, [2]), per, dims[2], dims[3]], axis=0)])
        t = g.op("Transpose", [t], perm=[0, 2, 1, 3, 4])
        y = g.op("Reshape", [t, g.op("Concat", [dims[0], _scalar(g, [-1]), dims[2], dims[3]], axis=0)])
    out = g.op("Conv", [y, g.weight("head.w", 4, c, 1, 1)], name="head", kernel_shape=[1, 1])
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, size, size])]
    return g.model("shuffle", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                   opset=18 if style == "dynamo" else 17)


def clip_vision_legacy(batch="batch", width=16, patch=8, image=32, heads=2) -> onnx.ModelProto:
    """CLIP's vision embeddings as the TorchScript exporter writes them: patch Conv, Reshape to
    [B, C, -1] from Shape -> Slice(0:2) -> Concat, Transpose, the class embedding Expand-ed to
    [B, 1, C] through a Reshape -> Shape -> ConstantOfShape -> Mul(-1) -> Equal -> Where chain,
    Concat with the patches, position embedding Gather with constant ids, then a Swin-style
    Reshape whose target divides a Shape entry (Div), and an fc."""
    g = _G()
    tokens = (image // patch) ** 2 + 1
    conv = g.op("Conv", [g.op("Cast", ["pixel_values"], to=TensorProto.FLOAT), g.weight("patch.w", width, 3, patch, patch)],
                name="patch_embedding", kernel_shape=[patch, patch], strides=[patch, patch])
    bsz = g.op("Gather", [g.op("Shape", ["pixel_values"]), _scalar(g, 0)], axis=0)
    lead = g.op("Slice", [g.op("Shape", [conv]), _scalar(g, [0]), _scalar(g, [2]), _scalar(g, [0])])
    flat = g.op("Reshape", [conv, g.op("Concat", [lead, _scalar(g, [-1])], axis=0)], allowzero=0)
    patches = g.op("Transpose", [flat], perm=[0, 2, 1])
    target = g.op("Reshape", [g.op("Concat", [g.op("Unsqueeze", [bsz, _scalar(g, [0])]), _scalar(g, [1]), _scalar(g, [-1])],
                                   axis=0), _scalar(g, [-1])])
    ones = g.op("ConstantOfShape", [g.op("Shape", [target])], value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
    shape = g.op("Where", [g.op("Equal", [target, g.op("Mul", [ones, _scalar(g, -1)])]), ones, target])
    g.inits.append(numpy_helper.from_array(np.zeros(width, dtype=np.float32), "class_embedding"))
    cls = g.op("Expand", ["class_embedding", shape])
    x = g.op("Concat", [cls, patches], axis=1)
    g.inits.append(_const("position_ids", [list(range(tokens))]))
    x = g.op("Add", [x, g.op("Gather", [g.weight("position_embedding", tokens, width), "position_ids"], name="pos")])
    # Swin-style: a Reshape target computed with Div on a Shape entry ([B, S, C] -> [B, S, heads, C / heads])
    shp = g.op("Shape", [x])
    per_head = g.op("Div", [g.op("Gather", [shp, _scalar(g, 2)], axis=0), _scalar(g, heads)])
    dims = [g.op("Unsqueeze", [g.op("Gather", [shp, _scalar(g, k)], axis=0), _scalar(g, [0])]) for k in (0, 1)]
    x = g.op("Reshape", [x, g.op("Concat", dims + [_scalar(g, [heads]), g.op("Unsqueeze", [per_head, _scalar(g, [0])])],
                                 axis=0)])
    x = g.op("Reshape", [g.op("Relu", [x]), g.op("Concat", dims + [_scalar(g, [-1])], axis=0)])
    out = g.linear("fc", x, width, width)
    ins = [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [batch, 3, image, image])]
    return g.model("clipvision", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def t5_attention(layers=2, batch=2, seq=8, d=32, heads=4, buckets=32) -> onnx.ModelProto:
    """T5 self-attention as the TorchScript exporter writes it: q/k/v MatMul, Reshape to heads
    (targets from Shape/Gather/Unsqueeze/Concat), a relative position bias computed once (Range
    over the query and key lengths, Sub, bucketing with Greater/Abs/Less/Log/Min/Where, Gather
    on the [buckets, heads] table, Transpose, Unsqueeze) and ADDED to every layer's scores
    before the softmax; no scaling (Mul 1.0); context, Transpose, Reshape, o MatMul, residual."""
    g, dh = _G(), d // heads
    x = "x"
    bias = None
    for i in range(layers):
        shp = g.op("Shape", [x])
        b_, s_ = (g.op("Unsqueeze", [g.op("Gather", [shp, _scalar(g, k)], axis=0), _scalar(g, [0])]) for k in (0, 1))

        def heads_of(t, perm):
            target = g.op("Concat", [b_, _scalar(g, [-1]), _scalar(g, [heads]), _scalar(g, [dh])], axis=0)
            return g.op("Transpose", [g.op("Reshape", [t, target])], perm=perm)

        q = heads_of(g.op("MatMul", [x, g.weight(f"l{i}q", d, d)], name=f"l{i}_q"), [0, 2, 1, 3])
        k = heads_of(g.op("MatMul", [x, g.weight(f"l{i}k", d, d)], name=f"l{i}_k"), [0, 2, 3, 1])
        v = heads_of(g.op("MatMul", [x, g.weight(f"l{i}v", d, d)], name=f"l{i}_v"), [0, 2, 1, 3])
        if bias is None:
            n = g.op("Cast", [g.op("Gather", [shp, _scalar(g, 1)], axis=0)], to=TensorProto.INT64)
            ctx = g.op("Unsqueeze", [g.op("Range", [_scalar(g, 0), n, _scalar(g, 1)]), _scalar(g, [1])])
            mem = g.op("Unsqueeze", [g.op("Range", [_scalar(g, 0), n, _scalar(g, 1)]), _scalar(g, [0])])
            rel = g.op("Sub", [mem, ctx])
            side = g.op("Add", [g.op("Mul", [g.op("Cast", [g.op("Greater", [rel, _scalar(g, 0)])], to=TensorProto.INT64),
                                             _scalar(g, buckets // 2)]), _scalar(g, 0)])
            a = g.op("Abs", [rel])
            big = g.op("Cast", [g.op("Div", [g.op("Log", [g.op("Div", [g.op("Cast", [a], to=TensorProto.FLOAT),
                                                                       _scalar(g, 8.0, np.float32)])]),
                                             _scalar(g, 2.7725887, np.float32)])], to=TensorProto.INT64)
            big = g.op("Add", [big, _scalar(g, 8)])
            big = g.op("Min", [big, g.op("ConstantOfShape", [g.op("Shape", [big])],
                                         value=numpy_helper.from_array(np.array([15], dtype=np.int64)))])
            bucket = g.op("Add", [side, g.op("Where", [g.op("Less", [a, _scalar(g, 8)]), a, big])])
            table = g.op("Gather", [g.weight("relative_attention_bias.weight", buckets, heads), bucket], name="rel_bias")
            bias = g.op("Unsqueeze", [g.op("Transpose", [table], perm=[2, 0, 1]), _scalar(g, [0])])
        scores = g.op("Mul", [g.op("MatMul", [q, k], name=f"l{i}_att"), _scalar(g, 1.0, np.float32)])
        p = g.op("Softmax", [g.op("Add", [scores, bias])], axis=-1)
        c = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        c = g.op("Reshape", [c, g.op("Concat", [b_, _scalar(g, [-1]), _scalar(g, [d])], axis=0)])
        x = g.op("Add", [x, g.op("MatMul", [c, g.weight(f"l{i}o", d, d)], name=f"l{i}_o")], name=f"l{i}_res")
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, d])]
    return g.model("t5", ins, [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)])


def whisper_encoder_stem(batch=2, mels=8, frames=12, d=16) -> onnx.ModelProto:
    """Whisper's encoder stem: Conv1d(mels -> d, 3, pad 1), GELU (Erf form), Conv1d(d -> d, 3,
    stride 2, pad 1), GELU, Transpose to [B, T, d], + embed_positions (a stored [T, d]), fc."""
    g = _G()

    def gelu(t):
        return g.op("Mul", [g.op("Mul", [t, g.const(0.5, np.float32)]),
                            g.op("Add", [g.op("Erf", [g.op("Div", [t, g.const(1.4142135, np.float32)])]), g.const(1.0, np.float32)])])

    x = gelu(g.op("Conv", ["input_features", g.weight("conv1.w", d, mels, 3)], name="conv1", kernel_shape=[3], pads=[1, 1]))
    x = gelu(g.op("Conv", [x, g.weight("conv2.w", d, d, 3)], name="conv2", kernel_shape=[3], pads=[1, 1], strides=[2]))
    x = g.op("Add", [g.op("Transpose", [x], perm=[0, 2, 1]), g.weight("embed_positions.weight", frames // 2, d)])
    out = g.op("MatMul", [x, g.weight("fc.w", d, d)], name="fc")
    ins = [helper.make_tensor_value_info("input_features", TensorProto.FLOAT, [batch, mels, frames])]
    return g.model("whisper", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def r3d_block(batch=2, frames=4, size=8, c=8) -> onnx.ModelProto:
    """A video ResNet (r3d) stem and basic block: Conv3d(3 -> c, (3, 7, 7), stride (1, 2, 2)),
    Conv3d 3x3x3 twice, residual Add on 5-D tensors."""
    g = _G()
    x = g.op("Relu", [g.op("Conv", ["x", g.weight("stem.w", c, 3, 3, 7, 7)], name="stem", kernel_shape=[3, 7, 7],
                           strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3])])
    y = g.op("Relu", [g.op("Conv", [x, g.weight("c1.w", c, c, 3, 3, 3)], name="c1", kernel_shape=[3, 3, 3], pads=[1] * 6)])
    y = g.op("Conv", [y, g.weight("c2.w", c, c, 3, 3, 3)], name="c2", kernel_shape=[3, 3, 3], pads=[1] * 6)
    out = g.op("Relu", [g.op("Add", [y, x], name="res")])
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, frames, size, size])]
    return g.model("r3d", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def mixtral_moe(style="dynamo", batch=2, seq=4, d=16, inter=8, experts=4, top=2) -> onnx.ModelProto:
    """Mixtral's sparse MoE block with transformers' batched_mm experts: router Gemm
    (gate.weight [E, d], transB), Softmax, TopK, tokens repeated top-k times, the experts'
    stored [E, 2I, d] gate_up_proj picked by the router's indices (dynamo: GatherND on
    Unsqueeze(-1) of the flat indices; legacy: Gather), and a MatMul of the picked weights with
    the tokens (the product the importer once took for attention)."""
    g = _G()
    flat = g.op("Reshape", ["x", g.const([-1, d])])
    logits = g.op("Gemm", [flat, g.weight("gate.weight", experts, d)], name="gate", transB=1)
    _, idx = g.op("TopK", [g.op("Softmax", [logits], axis=-1), g.const([top])], n_out=2, axis=-1)
    rep = g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [flat, g.const([1])]), g.const([batch * seq, top, d])]),
                           g.const([-1, d])])
    ids = g.op("Reshape", [idx, g.const([-1])])
    w = g.weight("experts.gate_up_proj", experts, 2 * inter, d)
    if style == "dynamo":
        picked = g.op("GatherND", [w, g.op("Unsqueeze", [ids, g.const([-1])])], batch_dims=0)
    else:
        picked = g.op("Gather", [w, ids], axis=0)
    out = g.op("MatMul", [picked, g.op("Unsqueeze", [rep, g.const([-1])])], name="experts_bmm")
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, d])]
    return g.model("moe", ins, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
