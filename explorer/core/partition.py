"""Partition types, partition spaces, and the inter-layer table derived from tensor layouts.

model.md section 4: a tensor between two layers is row-split (by batch), column-split
(by channel) or duplicated across the two sibling groups of a level. Re-laying it out
costs, per group and one way, a quarter of the tensor for row<->column, a half for
split->duplicated, nothing from duplicated or to the same layout. Each partition type
says which layout it produces and needs for the forward activation F and the backward
error E; the inter-layer table is the sum of the forward and backward re-layouts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction


class PartitionType(enum.Enum):
    """How one level halves a layer's work between the two sibling groups."""

    I = "I"  # noqa: E741 - the paper's name. Data parallelism: split batch B.
    II = "II"  # model parallelism: split input channels D_i.
    III = "III"  # AccPar Type-III: split output channels D_o.

    def __str__(self) -> str:
        return self.value

    @property
    def index(self) -> int:
        return _ORDER.index(self)


_ORDER = (PartitionType.I, PartitionType.II, PartitionType.III)
ALL_TYPES: tuple[PartitionType, ...] = _ORDER


class Space(enum.Enum):
    """Which partition types a plan may use."""

    HYPAR = "hypar"
    ACCPAR = "accpar"

    @property
    def types(self) -> tuple[PartitionType, ...]:
        if self is Space.HYPAR:
            return (PartitionType.I, PartitionType.II)
        return ALL_TYPES

    def __str__(self) -> str:
        return self.value


class Layout(enum.Enum):
    """How a tensor is laid out across the two sibling groups of a level."""

    ROW = "row"  # split by batch
    COL = "col"  # split by channel
    DUP = "dup"  # duplicated in both groups


def relayout_cost(src: Layout, dst: Layout) -> Fraction:
    """Elements each group sends, as a fraction of the whole tensor, to go from src to dst."""
    if src is dst or src is Layout.DUP:
        return Fraction(0)
    if dst is Layout.DUP:
        return Fraction(1, 2)
    return Fraction(1, 4)  # row <-> col


@dataclass(frozen=True, slots=True)
class TypeLayouts:
    """Layouts one partition type produces and needs at its input and output."""

    f_in_needed: Layout  # layer input F_l as the layer needs it
    f_out_produced: Layout  # layer output F_{l+1} as the layer leaves it (after its own reduction)
    e_in_produced: Layout  # input error E_l as the layer leaves it (after its own reduction)
    e_out_needed: Layout  # output error E_{l+1} as the layer needs it


# Type I splits the batch: everything is row-split.
# Type II splits D_i: it needs F_l channel-split, reduces F_{l+1} to duplicated, needs E_{l+1}
#   whole (duplicated) and produces its own D_i slice of E_l (channel-split).
# Type III splits D_o: it needs F_l whole, leaves F_{l+1} channel-split, needs E_{l+1}
#   channel-split and reduces E_l to duplicated.
LAYOUTS: dict[PartitionType, TypeLayouts] = {
    PartitionType.I: TypeLayouts(Layout.ROW, Layout.ROW, Layout.ROW, Layout.ROW),
    PartitionType.II: TypeLayouts(Layout.COL, Layout.DUP, Layout.COL, Layout.DUP),
    PartitionType.III: TypeLayouts(Layout.DUP, Layout.COL, Layout.DUP, Layout.COL),
}


# A join node (add, concat, attention) is elementwise and keeps one layout throughout:
# type I = split by batch (row), type II = split by channel (column). No type III.
JOIN_LAYOUTS: dict[PartitionType, TypeLayouts] = {
    PartitionType.I: TypeLayouts(Layout.ROW, Layout.ROW, Layout.ROW, Layout.ROW),
    PartitionType.II: TypeLayouts(Layout.COL, Layout.COL, Layout.COL, Layout.COL),
}
JOIN_TYPES: tuple[PartitionType, ...] = (PartitionType.I, PartitionType.II)


def layouts(t: PartitionType, join: bool = False) -> TypeLayouts:
    return JOIN_LAYOUTS[t] if join else LAYOUTS[t]


@dataclass(frozen=True, slots=True)
class InterCoeff:
    """Inter-layer amount as fractions of the consumer's F and E: f * A(F) + e * A(E)."""

    f: Fraction
    e: Fraction

    @property
    def total(self) -> Fraction:
        """f + e: the amount in units of A(F) = A(E) (they have the same size)."""
        return self.f + self.e


def inter_coeff(prev: PartitionType, nxt: PartitionType, prev_join: bool = False, next_join: bool = False) -> InterCoeff:
    """Derived inter-layer re-layout between a producer of type prev and a consumer of type nxt.

    Forward: the producer's F_out layout must become the consumer's needed F_in layout.
    Backward: the consumer's produced E_in layout must become the producer's needed E_out layout.
    ``prev_join``/``next_join``: the node is a join (``JOIN_LAYOUTS``).
    """
    p, n = layouts(prev, prev_join), layouts(nxt, next_join)
    return InterCoeff(
        f=relayout_cost(p.f_out_produced, n.f_in_needed),
        e=relayout_cost(n.e_in_produced, p.e_out_needed),
    )


INTER: dict[tuple[PartitionType, PartitionType], InterCoeff] = {
    (a, b): inter_coeff(a, b) for a in ALL_TYPES for b in ALL_TYPES
}


def parse_type(text: str) -> PartitionType:
    """'I', 'II', 'III' (also 1/2/3, dp/mp) -> PartitionType; ValueError otherwise."""
    t = str(text).strip().upper()
    alias = {"1": "I", "2": "II", "3": "III", "DP": "I", "MP": "II"}
    t = alias.get(t, t)
    try:
        return PartitionType(t)
    except ValueError:
        raise ValueError(f"unknown partition type {text!r} (expected I, II or III)") from None
