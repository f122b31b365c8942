"""Stored weights read by more than one layer of an ONNX graph (ALBERT's shared layers, a
siamese tower, an encoder and decoder sharing one embedding table).

The cost model (../shared/reference/model.md) gives every weighted layer its own weight: its
gradient exchange under type I (A(dW_l) at every level) and its memory. One weight shared by
k layers exchanges one summed gradient and is stored once, but only when the k layers split
it alike at every level; the per-layer tables cannot express that coupling, so each use stays
a layer with its own copy and the importer lists the overcount as an approximation (never
silently). Described in docs/specs.md, "ONNX".
"""

from __future__ import annotations

from math import prod

from .onnx_graph import printable


def record_use(uses: dict[str, list[str]], layer: str, view_dims, bases: set[str], consts: dict) -> None:
    """Layer ``layer`` reads a weight of ``view_dims`` computed from the stored tensors ``bases``:
    a use of each base it reads whole (a slice of a stacked tensor, one expert's, is no use of
    the whole tensor; a weight normalisation's gain and direction are both read whole)."""
    size = prod(int(d) for d in view_dims)
    for base in sorted(bases):
        if size >= prod(int(d) for d in consts[base].dims) and layer not in uses.setdefault(base, []):
            uses[base].append(layer)


def shared_notes(uses: dict[str, list[str]], consts: dict) -> list[str]:
    """One approximation note per stored weight read whole by two or more layers."""
    notes = []
    for base, layers in uses.items():
        k = len(layers)
        if k < 2:
            continue
        dims = [int(d) for d in consts[base].dims]
        n = prod(dims)
        notes.append(f"{printable(base)!r} {dims} ({n:,} elements) is the weight of {k} layers "
                     f"({', '.join(map(printable, layers))}), each costed with its own copy: its gradient exchange "
                     f"(type I) and its memory are counted {k} times, where one shared weight has them once "
                     f"(all-I's c_h overstated by {k - 1} x {n:,} = {(k - 1) * n:,} elements at every level)")
    return notes
