"""Checks of an ONNX file's declarations that shape inference, run leniently, would let pass:
the default domain's opset version (beyond what the installed ``onnx`` defines, or below 1), a
Transpose's ``perm`` that is no permutation of its input's axes, and a stored weight with a zero
dimension. Each returns why (a clause for the importer's one-line refusal) or None.

Described in the manual: docs/specs.md, "ONNX" (the refusals).
"""

from __future__ import annotations

from .onnx_graph import printable

DEFAULT_DOMAINS = ("", "ai.onnx")


def opset_problem(model) -> str | None:
    """The default domain's opset: known to the installed onnx (its operators' definitions are
    what shape inference and the importer read), else why not."""
    import onnx
    from onnx import defs

    latest = defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain not in DEFAULT_DOMAINS:
            continue
        if o.version < 1:
            return f"opset_import: default-domain opset version {o.version} (ONNX opsets start at 1)"
        if o.version > latest:
            return (f"opset_import: default-domain opset version {o.version} is beyond {latest}, the newest the "
                    f"installed onnx {onnx.__version__} defines (its operators' definitions are unknown): export "
                    f"with opset {latest} or lower, or upgrade onnx")
    return None


def perm_problem(perm, rank: int | None) -> str | None:
    """A Transpose's ``perm``: a permutation of 0..rank-1 (of its own length when the input's
    rank is not known)."""
    n = len(perm) if rank is None else rank
    perm = [int(p) for p in perm]
    if sorted(perm) == list(range(n)):
        return None
    out = next((p for p in perm if not 0 <= p < n), None)
    why = f"it has {len(perm)} entries" if len(perm) != n else \
        f"axis {out} is out of range" if out is not None else "an axis is repeated"
    return (f"Transpose perm {perm[:8]}{'...' if len(perm) > 8 else ''} is not a permutation of the input's "
            f"{n} axes 0..{n - 1} ({why})")


def empty_weight_problem(node, consts: dict, stored) -> str | None:
    """A stored tensor of a product (Conv, Gemm, MatMul, Einsum, Gather on a table: its weight,
    a bias) with a zero dimension: no elements, no layer. ``stored(name)``: a stored weight
    (not shape arithmetic's constants)."""
    for role, x in zip(("first input", "weight (second input)", "bias (third input)"), node.input):
        t = consts.get(x) if x else None
        if t is not None and 0 in t.dims and (stored(x) or node.op_type != "Gather"):
            return (f"its {role} {printable(x)!r} has the shape {[int(d) for d in t.dims]}: a zero dimension, no "
                    "elements (an empty weight is no layer)")
    return None


def initializer_problem(graph) -> str | None:
    """A stored tensor whose dims no tensor can have: a negative one, or more elements than
    2^40, the bound on a size (hostile trial 6: they surfaced as a layer's derived sizes, named
    by the node and not by the initializer)."""
    from math import prod

    from .fields import MAX_INT

    for t in graph.initializer:
        dims = [int(d) for d in t.dims]
        if any(d < 0 for d in dims):
            return f"initializer {printable(t.name)!r} has dims {dims[:8]}: a negative dimension"
        if prod(dims) > MAX_INT:
            return (f"initializer {printable(t.name)!r} has dims {dims[:8]}: {prod(dims):,} elements, beyond "
                    f"2^40 = {MAX_INT:,}, the bound on a size")
    return None


def _dims(vi) -> list[int | None] | None:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]


def _clash(declared, inferred) -> bool:
    if declared is None or inferred is None:
        return False
    return len(declared) != len(inferred) or any(a is not None and b is not None and a != b
                                                 for a, b in zip(declared, inferred))


def declared_shape_problem(model) -> str | None:
    """A ``value_info`` or graph output whose declared shape disagrees with what shape inference
    gives without it (hostile trial 5: a lying value_info was trusted, and the node reading it
    blamed; a wrong declared output passed). Inference runs on a copy without the declarations
    (no data propagation: a dimension it leaves unknown is not compared); if it fails there,
    the importer's own inference reports it."""
    from onnx import shape_inference

    graph = model.graph
    declared = [("value_info", vi.name, _dims(vi)) for vi in graph.value_info]
    declared += [("graph output", vi.name, _dims(vi)) for vi in graph.output]
    declared = [d for d in declared if d[2] is not None and any(x is not None for x in d[2])]
    if not declared:
        return None
    bare = type(model)()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    for vi in bare.graph.output:
        vi.type.tensor_type.ClearField("shape")
    try:
        inferred = shape_inference.infer_shapes(bare).graph
    except Exception:  # noqa: BLE001 - onnx raises several types; the importer's inference names it
        return None
    found = {vi.name: _dims(vi) for vi in (*inferred.value_info, *inferred.output)}
    for where, name, dims in declared:
        if _clash(dims, found.get(name)):
            shown = [d if d is not None else "?" for d in dims]
            real = [d if d is not None else "?" for d in found[name]]
            return (f"{where} {printable(name)!r} declares the shape {shown[:8]}, but shape inference gives "
                    f"{real[:8]} from the nodes: fix or remove the declaration")
    return None
