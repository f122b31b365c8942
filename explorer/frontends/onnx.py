"""Import an ONNX model as a network: ``--model path/to/net.onnx``.

Reads the model with the ``onnx`` package and runs its shape inference, then walks the nodes
(ONNX keeps them in topological order) tracking which network node each activation tensor
comes from:

- Conv, Gemm, and MatMul with a weight initializer become weighted layers (conv, fc) with
  the shapes shape inference gives. A MatMul input [N, S, D] is an fc layer over D features
  with S as its spatial extent (the same element counts as folding S into the batch).
  Grouped convolutions are refused.
- An operator reading one activation (activations, normalisation, pooling, reshapes,
  transposes, dropout, softmax, elementwise ops with constants, ...) passes its input's
  producer through: pooling shows up only as the next layer's input size, as in the YAML.
- An operator combining activations from two or more producers is a join: Add, Sum, Sub, Mul,
  Div, Max, Min -> add; Concat -> concat; MatMul/Einsum of two activations -> attention.
- Tensors computed only from constants or shapes (Shape, Constant, ...) are not activations.

The graph goes through the same builder as YAML networks (``explorer.network.build_graph``),
so the same checks apply. Errors name the node: an unsupported combining operator, a
missing inferred shape, a symbolic batch without ``--batch``.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import SpecError
from ..core.network import NETWORK_INPUT, LayerKind, Network
from .network_yaml import build_graph

JOIN_OPS = {
    "Add": LayerKind.ADD, "Sum": LayerKind.ADD, "Sub": LayerKind.ADD, "Mul": LayerKind.ADD, "Div": LayerKind.ADD,
    "Max": LayerKind.ADD, "Min": LayerKind.ADD, "Mean": LayerKind.ADD,
    "Concat": LayerKind.CONCAT, "MatMul": LayerKind.ATTENTION, "Einsum": LayerKind.ATTENTION,
}
SHAPE_OPS = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "NonZero"}


def load_onnx(path: str | Path, batch: int | None = None) -> Network:
    try:
        import onnx
        from onnx import numpy_helper, shape_inference
    except ImportError:  # pragma: no cover - onnx is a declared dependency
        raise SpecError(str(path), "reading ONNX needs the 'onnx' package") from None
    src_name = str(path)
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise SpecError(src_name, "no such file") from None
    except Exception as err:  # onnx raises protobuf DecodeError and others
        raise SpecError(src_name, f"cannot read as ONNX: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    # graph inputs that are not initializers are the network inputs
    data_inputs = [i for i in graph.input if i.name not in inits]
    for inp in data_inputs:
        dims = inp.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            if batch is None:
                sym = dims[0].dim_param or "?"
                raise SpecError(src_name, f"input {inp.name!r} has a symbolic batch dimension {sym!r}: pass --batch")
            dims[0].dim_value = batch
    try:
        model = shape_inference.infer_shapes(model)
    except Exception as err:
        raise SpecError(src_name, f"shape inference failed: {str(err).splitlines()[0]}") from None
    graph = model.graph
    shapes: dict[str, list[int | None]] = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]

    def shape_of(tensor: str, node_desc: str) -> list[int]:
        s = shapes.get(tensor)
        if not s or any(d is None or d <= 0 for d in s):
            raise SpecError(src_name, f"{node_desc}: no inferred shape for tensor {tensor!r}")
        return s

    source: dict[str, str] = {i.name: NETWORK_INPUT for i in data_inputs}  # tensor -> producing node name
    nodes: list[tuple[int, dict]] = []
    used_names: set[str] = {NETWORK_INPUT}
    batch_seen: dict[str, int] = {}

    def new_name(node, i: int) -> str:
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in used_names:
            k += 1
            name = f"{base}_{k}"
        used_names.add(name)
        return name

    for i, node in enumerate(graph.node):
        desc = f"node {node.name or i!r} ({node.op_type})"
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None:
                inits[node.output[0]] = value  # a weight may come from a Constant node
        acts = [x for x in node.input if x and x in source]
        producers = list(dict.fromkeys(source[x] for x in acts))
        if node.op_type in SHAPE_OPS or not producers:
            continue  # constants and shape arithmetic are not activations
        weight = None
        if node.op_type in ("Conv", "Gemm", "MatMul") and len(node.input) > 1 and node.input[1] in inits:
            weight = "conv" if node.op_type == "Conv" else "fc"
        elif node.op_type in ("Conv", "Gemm") or (node.op_type == "MatMul" and len(producers) == 1):
            raise SpecError(src_name, f"{desc}: its weight (second input) is not a constant tensor; only products of an "
                            "activation with a stored weight are weighted layers")
        if weight:
            name = new_name(node, i)
            x = node.input[0]
            if x not in source:
                raise SpecError(src_name, f"{desc}: its data input {x!r} is not an activation")
            w = numpy_helper.to_array(inits[node.input[1]])
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            xs, ys = shape_of(x, desc), shape_of(node.output[0], desc)
            spec: dict = {"name": name, "path": desc, "inputs": [source[x]], "size": None}
            if weight == "conv":
                if attrs.get("group", 1) != 1:
                    raise SpecError(src_name, f"{desc}: grouped convolution (group={attrs['group']}) is not supported")
                if len(xs) != 4 or w.ndim != 4:
                    raise SpecError(src_name, f"{desc}: only 2-D convolutions are supported (input rank {len(xs)})")
                spec.update(kind=LayerKind.CONV, din=int(w.shape[1]), dout=int(w.shape[0]), kernel=(int(w.shape[2]), int(w.shape[3])),
                            s_in=(xs[2], xs[3]), s_out=(ys[2], ys[3]))
                n_batch = xs[0]
            else:
                if w.ndim != 2:
                    raise SpecError(src_name, f"{desc}: the weight must be a matrix, got rank {w.ndim}")
                if node.op_type == "Gemm":
                    if attrs.get("transA", 0):
                        raise SpecError(src_name, f"{desc}: transA=1 is not supported")
                    din, dout = (w.shape[1], w.shape[0]) if attrs.get("transB", 0) else (w.shape[0], w.shape[1])
                else:
                    din, dout = w.shape
                extent = 1
                for d in xs[1:-1]:
                    extent *= d
                spec.update(kind=LayerKind.FC, din=int(din), dout=int(dout), kernel=(1, 1), s_in=(extent, 1), s_out=(extent, 1))
                n_batch = xs[0]
            batch_seen.setdefault("batch", n_batch)
            if n_batch != batch_seen["batch"]:
                raise SpecError(src_name, f"{desc}: batch {n_batch} differs from the first layer's {batch_seen['batch']}")
            nodes.append((len(nodes), spec))
            source[node.output[0]] = name
            continue
        if len(producers) == 1:
            for out in node.output:
                if out:
                    source[out] = producers[0]
            continue
        kind = JOIN_OPS.get(node.op_type)
        if kind is None:
            raise SpecError(src_name, f"{desc}: combines activations of {', '.join(producers)} and is not a supported join "
                            f"({', '.join(sorted(JOIN_OPS))})")
        name = new_name(node, i)
        first = next(x for x in node.input if x in source and source[x] != NETWORK_INPUT) if any(
            source[x] != NETWORK_INPUT for x in acts) else acts[0]
        ref = shape_of(node.output[0] if kind is LayerKind.CONCAT else first, desc)
        size = (ref[2], ref[3]) if len(ref) == 4 else ((_prod(ref[1:-1]), 1) if len(ref) >= 3 else (1, 1))
        nodes.append((len(nodes), {"name": name, "path": desc, "kind": kind, "inputs": producers, "size": size}))
        source[node.output[0]] = name
    if not any(n["kind"] in (LayerKind.CONV, LayerKind.FC) for _, n in nodes):
        raise SpecError(src_name, "no weighted layer (Conv, Gemm, or MatMul with a weight) found")
    net = build_graph(graph.name or Path(src_name).stem, batch_seen["batch"], nodes, src_name)
    return net


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
