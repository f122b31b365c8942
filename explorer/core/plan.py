"""A plan: one partition type per layer per level (top level first)."""

from __future__ import annotations

from dataclasses import dataclass

from .partition import PartitionType, parse_type


@dataclass(frozen=True, slots=True)
class Plan:
    types: tuple[tuple[PartitionType, ...], ...]  # [level][layer]

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
