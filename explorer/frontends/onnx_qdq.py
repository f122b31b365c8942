"""Quantised ONNX graphs in the QDQ format (onnxruntime's ``quantize_static``, torch's QAT
export): a stored weight reaches its Conv/Gemm/MatMul as ``DequantizeLinear(int8 tensor,
scale, zero point)``. The importer reads such a weight as stored (the layer's sizes from the
data's shape, as for a Cast of a float weight); this module checks the DequantizeLinear's
operands and words the note. Described in the manual: docs/specs.md, "ONNX".
"""

from __future__ import annotations

from .onnx_graph import printable


def dequantize_problem(attrs: dict, ins: list[str], consts: dict, side: set[str]) -> str | None:
    """Why a DequantizeLinear reading no activation is not a stored weight, or None. ``ins``:
    its non-empty inputs (data, scale, zero point), ``consts`` the stored tensors by name."""
    data = ins[0]
    if data not in consts:
        what = "an integer graph input or computed from one" if data in side else \
            "computed from something other than stored tensors"
        return (f"DequantizeLinear of {printable(data)!r}, which is not a stored tensor ({what}); only stored "
                "weights (a QDQ graph's quantised initializers) and activations are read through DequantizeLinear")
    for role, x in zip(("scale", "zero point"), ins[1:]):
        if x not in consts:
            return (f"DequantizeLinear of the stored {printable(data)!r}: its {role} {printable(x)!r} is not a "
                    "stored tensor; only a stored weight with a stored scale and zero point is read")
    dims = [int(d) for d in consts[data].dims]
    scale = [int(d) for d in consts[ins[1]].dims]
    problem = scale_problem(attrs, dims, scale)
    if problem is None and len(ins) > 2 and [int(d) for d in consts[ins[2]].dims] != scale:
        problem = f"its zero point has shape {[int(d) for d in consts[ins[2]].dims]}, its scale {scale}"
    return None if problem is None else f"DequantizeLinear of {printable(data)!r} {dims}: {problem}"


def scale_problem(attrs: dict, dims: list[int], scale: list[int]) -> str | None:
    """Per-tensor (a scalar or one-element scale), per-axis (a 1-D scale along ``axis``) or
    block-wise (opset 21's ``block_size``: the data's shape with ``axis`` divided into blocks,
    rounded up) scales fit the data; anything else is a malformed file (onnxruntime refuses it)."""
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    if block < 0:
        return f"block_size {block} is negative"
    if not block and scale in ([], [1]):
        return None  # per tensor
    a = axis + len(dims) if axis < 0 else axis
    if not 0 <= a < len(dims):
        return f"axis {axis} is not an axis of its {len(dims)}-D data"
    if not block:
        if scale != [dims[a]]:
            return f"its per-axis scale has shape {scale}, not [{dims[a]}] (axis {axis})"
        return None
    want = [-(-d // block) if k == a else d for k, d in enumerate(dims)]
    if scale != want:
        return f"its block-wise scale (block_size {block} along axis {axis}) has shape {scale}, not {want}"
    return None


def quantised_note(weights: dict[str, str]) -> str:
    """The approximation note of a graph whose weights are stored quantised (name -> type name)."""
    names = list(weights)
    types = "/".join(sorted(set(weights.values())))
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    return (f"weights stored quantised ({types}, read through DequantizeLinear: a QDQ graph), "
            f"{printable(names[0])!r}{more}: read as the float network they quantise (the same layers and sizes); "
            "every element, weights and activations alike, is costed at the array's dtype_bytes")
