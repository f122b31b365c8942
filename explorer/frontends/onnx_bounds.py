"""Limits that keep an ONNX import's time and memory bounded whatever the file says.

``MAX_PROPAGATED``: shape inference's data propagation (which the importer needs to follow
shape subgraphs) holds the values of every 1-D tensor an Add, Cast, Concat, Gather, Mul,
Shape, Size, Slice, Squeeze, Sub or Unsqueeze reads, one protobuf dimension per element: a
``Range(0, 2**40)`` cast and added to an activation grows without bound. ``check_propagation``
runs shape inference without propagation (cheap: shapes only) and refuses, in one line, a
1-D tensor longer than the limit that such a node reads.

The node count once model-local functions are inlined is bounded as well: ``MAX_NODES`` in
onnx_graph.py (each function counted once; refused before the inliner runs).

Described in the manual: docs/specs.md, "ONNX" ("Limits").
"""

from __future__ import annotations

from ..core.errors import SpecError
from .onnx_graph import node_label, printable

MAX_PROPAGATED = 1 << 20  # elements of a 1-D tensor read where shape inference propagates values
PROPAGATING_OPS = {"Add", "Cast", "Concat", "Gather", "Mul", "Shape", "Size", "Slice", "Squeeze", "Sub", "Unsqueeze"}


def _lengths(model) -> dict[str, int]:
    """Tensor -> its length, for every 1-D (or scalar) tensor whose shape is fully known."""
    out = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape") and len(t.shape.dim) <= 1 and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = t.shape.dim[0].dim_value if t.shape.dim else 1
    for t in g.initializer:
        if len(t.dims) <= 1:
            out[t.name] = int(t.dims[0]) if t.dims else 1
    return out


def check_propagation(model, src: str, infer_plain) -> None:
    """SpecError (one line) when a node whose values shape inference propagates reads a 1-D
    tensor of more than MAX_PROPAGATED elements; ``infer_plain(model)`` runs shape inference
    without data propagation."""
    lengths = _lengths(infer_plain(model))
    for k, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in PROPAGATING_OPS:
            continue
        for x in node.input:
            n = lengths.get(x, 0)
            if n > MAX_PROPAGATED:
                raise SpecError(src, f"{node_label(node, k)}: input {printable(x)!r} is a 1-D tensor of {n:,} elements, "
                                     f"more than the {MAX_PROPAGATED:,} shape inference follows the values of "
                                     "(a Range or position table this long is not supported)")
