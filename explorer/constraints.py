"""Side constraints on plans: pinned and forbidden choices (more come with caps and memory)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .partition import PartitionType


@dataclass(frozen=True, slots=True)
class Pin:
    layer: int
    level: int | None  # None: every level
    type: PartitionType


@dataclass(frozen=True, slots=True)
class Forbid:
    layer: int
    type: PartitionType


@dataclass(frozen=True)
class Constraints:
    pins: tuple[Pin, ...] = field(default=())
    forbids: tuple[Forbid, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.pins and not self.forbids

    def couples(self) -> bool:
        """Whether any constraint spans layers or levels (none yet: caps and memory will)."""
        return False

    def allowed(self, level: int, layer: int, space_types: tuple[PartitionType, ...]) -> tuple[PartitionType, ...]:
        out = list(space_types)
        for f in self.forbids:
            if f.layer == layer and f.type in out:
                out.remove(f.type)
        for p in self.pins:
            if p.layer == layer and (p.level is None or p.level == level):
                out = [t for t in out if t is p.type]
        return tuple(out)
