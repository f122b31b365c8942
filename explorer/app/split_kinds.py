"""Per kind of accelerator, what a split report shows: each kind's memory against its limit
(``kind_memory``) and each class of groups' label by its subgroups' kinds (``class_labels``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.uneven import AlphaSpace
from .results import exact_number


@dataclass(frozen=True)
class KindMemory:
    """One kind's memory under a plan: the largest footprint of its accelerators (bytes) and its limit."""

    kind: str
    accelerators: int
    memory_bytes: Fraction
    limit_bytes: Fraction

    @property
    def ok(self) -> bool:
        return self.memory_bytes <= self.limit_bytes

    def to_json(self) -> dict[str, Any]:
        return {"accelerators": self.accelerators, "memory_bytes": exact_number(self.memory_bytes),
                "limit_bytes": exact_number(self.limit_bytes), "ok": self.ok,
                "excess_bytes": exact_number(max(self.memory_bytes - self.limit_bytes, Fraction(0)))}


def kind_memory(array: ArraySpec, leaf_memory_bytes, memory_GiB: Fraction | None = None) -> tuple[KindMemory, ...]:
    """Per kind (order of first appearance; "acc" on an array of one kind written the old way):
    its accelerators' largest footprint and its memory limit (``memory_GiB`` overrides every kind's)."""
    kinds = array.leaves or (None,) * array.accelerators
    out: dict = {}
    for k, m in zip(kinds, leaf_memory_bytes):
        name = k.name if k is not None else "acc"
        gib = memory_GiB if memory_GiB is not None else (k.memory_GiB if k is not None else array.memory_GiB)
        n, worst, limit = out.get(name, (0, Fraction(0), Fraction(gib) * 2**30))
        out[name] = (n + 1, max(worst, m), limit)
    return tuple(KindMemory(name, n, worst, limit) for name, (n, worst, limit) in out.items())


def _runs(names) -> str:
    out: list[list] = []
    for n in names:
        if out and out[-1][0] == n:
            out[-1][1] += 1
        else:
            out.append([n, 1])
    return " ".join(f"{n}x{k}" for n, k in out)


def class_labels(array: ArraySpec, aspace: AlphaSpace) -> tuple[tuple[str, ...], ...]:
    """Per level per class: its subgroups' kinds, run-length coded ("v2x4|v3x4")."""
    names = [k.name for k in array.leaves] if array.leaves else ["acc"] * array.accelerators
    out = []
    for h, classes in enumerate(aspace.group_class):
        n = 2 ** (array.levels - h)
        row = []
        for c in range(max(classes) + 1):
            g = classes.index(c)
            leaves = names[g * n : (g + 1) * n]
            row.append(_runs(leaves[: n // 2]) + "|" + _runs(leaves[n // 2 :]))
        out.append(tuple(row))
    return tuple(out)
