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
