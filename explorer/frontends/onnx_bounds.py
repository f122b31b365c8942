"""Limits that keep an ONNX import's time and memory bounded whatever the file says.

``MAX_PROPAGATED``: shape inference's data propagation (which the importer needs to follow
shape subgraphs) holds the values of every 1-D integer (INT32/INT64) tensor an Add, Cast, Concat, Gather, Mul,
Shape, Size, Slice, Squeeze, Sub or Unsqueeze reads, one protobuf dimension per element: a
``Range(0, 2**40)`` cast and added to an activation grows without bound. ``check_propagation``
runs shape inference without propagation (cheap: shapes only) and refuses, in one line, a
1-D integer tensor longer than the limit that such a node reads or makes (a Concat's output),
and such tensors holding more than ``MAX_PROPAGATED_TOTAL`` elements together. A length only propagation would know
(a ConstantOfShape of the input's length) is known to that pass because shape folding
(onnx_fold.py) runs its shapes-only rounds first, folding the shape arithmetic to constants.

The node count once model-local functions are inlined is bounded as well: ``MAX_NODES`` in
onnx_graph.py (each function counted once; refused before the inliner runs).
``shape_problem``: why a tensor has no usable shape, for the importer's refusal.

Described in the manual: docs/specs.md, "ONNX" ("Shape subgraphs folded", "Model-local
functions inlined", the refusals).
"""

from __future__ import annotations

from ..core.errors import SpecError
from .onnx_graph import node_label, printable

MAX_PROPAGATED = 1 << 20  # elements of a 1-D tensor read where shape inference propagates values
MAX_PROPAGATED_TOTAL = 4 * MAX_PROPAGATED  # elements of all such tensors together
PROPAGATING_OPS = {"Add", "Cast", "Concat", "Gather", "Mul", "Shape", "Size", "Slice", "Squeeze", "Sub", "Unsqueeze"}


def _lengths(model) -> dict[str, int]:
    """Tensor -> its length, for every 1-D (or scalar) INT32/INT64 tensor whose shape is fully
    known: shape inference carries the values of integer tensors only (a float activation
    reshaped to 1-D costs nothing; a float Cast of an int Range is caught at the Cast's input)."""
    from onnx import TensorProto

    ints = (TensorProto.INT32, TensorProto.INT64)
    out = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.elem_type in ints and t.HasField("shape") and len(t.shape.dim) <= 1 \
                and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = t.shape.dim[0].dim_value if t.shape.dim else 1
    for t in g.initializer:
        if t.data_type in ints and len(t.dims) <= 1:
            out[t.name] = int(t.dims[0]) if t.dims else 1
    return out


def check_propagation(model, src: str, infer_plain, label=node_label) -> None:
    """SpecError (one line) when a node whose values shape inference propagates reads or makes a
    1-D integer tensor of more than MAX_PROPAGATED elements, or when all such tensors together
    hold more than MAX_PROPAGATED_TOTAL (a Concat of one Range many times); ``infer_plain(model)``
    runs shape inference without data propagation; ``label(node, k)`` names the node."""
    lengths = _lengths(infer_plain(model))
    carried: dict[str, int] = {}
    for k, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in PROPAGATING_OPS:
            continue
        for x, role in [(x, "input") for x in node.input] + [(y, "output") for y in node.output]:
            n = lengths.get(x, 0)
            if n > MAX_PROPAGATED:
                raise SpecError(src, f"{label(node, k)}: {role} {printable(x)!r} is a 1-D tensor of {n:,} elements, "
                                     f"more than the {MAX_PROPAGATED:,} shape inference follows the values of "
                                     "(a Range or position table this long is not supported)")
            carried[x] = n
    total = sum(carried.values())
    if total > MAX_PROPAGATED_TOTAL:
        raise SpecError(src, f"the 1-D integer tensors whose values shape inference follows hold {total:,} elements "
                             f"together, more than the {MAX_PROPAGATED_TOTAL:,} supported (long Ranges concatenated "
                             "or repeated): not imported")


def shape_problem(model, tensor: str, shape: list | None) -> str:
    """Why ``tensor`` has no usable shape, for the importer's refusal: a shape with an unknown or
    a zero dimension is shown as it is; no shape at all, or an unknown dimension (a declared
    output's symbolic axis the lenient pass left as it was), gets the first error of a strict shape
    inference pass on ``model`` (which the importer's lenient passes leave unsaid: MatMul of
    [4,12] and [16,8], a Conv's strides 0, a Reshape of 64 elements to [5,-1])."""
    name = printable(tensor)
    if shape:
        shown = ", ".join("?" if d is None else str(d) for d in shape)
        bad = next(k for k, d in enumerate(shape) if d is None or d <= 0)
        what = f"unknown{_strict_reason(model)}" if shape[bad] is None else \
            f"{shape[bad]} (no elements{_empty_input(model, tensor)})"
        return f"tensor {name!r} has the inferred shape [{shown}]: dimension {bad} is {what}"
    return f"no inferred shape for tensor {name!r}{_strict_reason(model) or _control_flow_reason(model, tensor)}"


# per control-flow operator: what an output's shape depends on, and the export that fixes it
_CONTROL_FLOW = {"Loop": ("its body graph and trip count", "the loop unrolled"),
                 "Scan": ("its body graph and the length of the sequence it scans", "the scan unrolled"),
                 "If": ("which of its two branches runs (their shapes differ)", "the branch taken")}


def _control_flow_reason(model, tensor: str) -> str:
    """``: it is an output of node 'l' (Loop) ...`` when a control-flow node makes ``tensor`` (its shape
    is its body's or branch's, which shape inference does not carry out of it), else ''."""
    found = next(((k, n) for k, n in enumerate(model.graph.node) if tensor in n.output), None)
    if found is None or found[1].op_type not in _CONTROL_FLOW:
        return ""
    k, node = found
    depends, export = _CONTROL_FLOW[node.op_type]
    return (f": it is an output of {node_label(node, k)}, whose shape depends on {depends}, which shape inference "
            f"does not follow: export the model with {export}")


def _empty_input(model, tensor: str) -> str:
    """``: its input 'w' has the shape [16, 0]`` when the node making ``tensor`` reads a stored
    tensor with a zero dimension; else what a zero output dimension usually means."""
    g = model.graph
    stored = {t.name: list(t.dims) for t in g.initializer}
    node = next((n for n in g.node if tensor in n.output), None)
    for x in node.input if node is not None else ():
        if x in stored and 0 in stored[x]:
            return f": its input {printable(x)!r} has the shape {stored[x]}"
    return ": a kernel larger than its padded input, or a zero dimension upstream"


def _strict_reason(model) -> str:
    """``: <why>`` from strict shape inference's first error on a standard operator ('' if none)."""
    import re

    from onnx import shape_inference

    custom = {n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx")}
    try:
        shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as err:  # noqa: BLE001 - onnx raises several types
        for line in str(err).splitlines():
            m = re.search(r"\(op_type:([^,)]*)[^)]*\):\s*(.*)", line)
            if m and m.group(1) not in custom:
                why = re.sub(r"\[\w+\]\s*", "", m.group(2)).strip()
                return f": shape inference says {printable(m.group(1))}: {printable(why)}"
    return ""
