"""Objectives: linear in the level costs, sum_h w_h * c_h (model.md section 5)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

from .array import ArraySpec


class Objective(enum.Enum):
    TRAFFIC = "traffic"  # HyPar's total communication: sum_h 2^h c_h elements
    TIME = "time"  # communication time: sum_h c_h * dtype_bytes / b_h seconds (b_h: core.timing)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class LevelWeights:
    """Integer weights w_h with value = scale * sum_h w_h * c_h[units]; gcd(w) == 1."""

    weights: tuple[int, ...]
    scale: Fraction  # real quantity (elements or seconds) per weighted unit

    def value(self, level_units: list[int] | tuple[int, ...]) -> int:
        return sum(w * c for w, c in zip(self.weights, level_units))


def level_weights(objective: Objective, array: ArraySpec, unit_per_element: int) -> LevelWeights:
    H = array.levels
    if objective is Objective.TRAFFIC:
        rates = [Fraction(2**h) for h in range(H)]  # elements per element of c_h
    else:
        rates = [Fraction(array.dtype_bytes) / array.bandwidth_Bps(h) for h in range(H)]  # seconds per element
    den = lcm(*(r.denominator for r in rates))
    ints = [int(r * den) for r in rates]
    g = gcd(*ints)
    weights = tuple(i // g for i in ints)
    return LevelWeights(weights, Fraction(g, den * unit_per_element))
