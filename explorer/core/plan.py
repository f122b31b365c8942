"""A plan: one partition type per layer per level (top level first) and the split fractions.

At level h every group of the array splits each layer's dimension that its type splits
(I -> B, II -> D_i, III -> D_o) between its two subgroups in the ratio alpha : (1 - alpha)
(subgroup 0: the first half of the group's leaves in tree order). ``alphas[level][group][layer]``
holds them; ``alphas`` empty is the even split (alpha = 1/2 everywhere), which is what every
even-split solver returns. ``Plan.even(plan)`` spells the halves out for code that reads alphas.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .partition import HALF, PartitionType, parse_type


@dataclass(frozen=True, slots=True)
class Plan:
    types: tuple[tuple[PartitionType, ...], ...]  # [level][layer]
    # [level][group][layer], 0 < alpha < 1; () = every split 1/2. May also be given one row per
    # level ([level][layer]): that row is then every group's of the level.
    alphas: tuple[tuple[tuple[Fraction, ...], ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.alphas:
            return
        rows = []
        for h, row in enumerate(self.alphas):
            if len(row) and not isinstance(row[0], (tuple, list)):
                rows.append((tuple(row),) * 2**h)  # one row shared by the 2^h groups
            else:
                rows.append(tuple(tuple(r) for r in row))
        object.__setattr__(self, "alphas", tuple(rows))

    @property
    def plan(self) -> "Plan":
        """The types alone (every split 1/2): the even-split plan of the same types."""
        return Plan(self.types) if self.alphas else self

    @property
    def is_even(self) -> bool:
        """Whether every split is 1/2."""
        return all(a == HALF for level in self.alphas for row in level for a in row)

    def alpha(self, level: int, group: int, layer: int) -> Fraction:
        return self.alphas[level][group][layer] if self.alphas else HALF

    @staticmethod
    def even(plan: "Plan") -> "Plan":
        """``plan``'s types with every alpha 1/2 written out."""
        return Plan(plan.types, tuple(((HALF,) * len(row),) * 2**h for h, row in enumerate(plan.types)))

    @property
    def levels(self) -> int:
        return len(self.types)

    @property
    def layers(self) -> int:
        return len(self.types[0]) if self.types else 0

    def at(self, level: int, layer: int) -> PartitionType:
        return self.types[level][layer]

    def to_lists(self) -> list[list[str]]:
        return [[t.value for t in row] for row in self.types]

    @staticmethod
    def from_lists(rows: list[list[str]]) -> "Plan":
        return Plan(tuple(tuple(parse_type(x) for x in row) for row in rows))

    @staticmethod
    def uniform(levels: int, per_layer: list[PartitionType] | tuple[PartitionType, ...]) -> "Plan":
        return Plan(tuple(tuple(per_layer) for _ in range(levels)))

    @staticmethod
    def from_layer_vectors(vectors: list[tuple[PartitionType, ...]]) -> "Plan":
        levels = len(vectors[0])
        return Plan(tuple(tuple(v[h] for v in vectors) for h in range(levels)))

    def diff(self, other: "Plan") -> list[tuple[int, int]]:
        """(level, layer) cells where the two plans differ."""
        return [
            (h, l)
            for h in range(self.levels)
            for l in range(self.layers)  # noqa: E741
            if self.types[h][l] is not other.types[h][l]
        ]
