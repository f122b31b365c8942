"""Objectives (model.md section 5): what the solvers minimise, and what it is worth in real terms.

The derivation: docs/derivations.md, "Objectives".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

from .array import ArraySpec
from .kinds import Objective  # noqa: F401 - defined there (the CLI's choices read it without this module)
from .timing import compute_time_s, step_time


@dataclass(frozen=True, slots=True)
class LevelWeights:
    """Integer weights w_h with sum_h w_h * c_h[units] the solvers' objective; gcd(w) == 1.

    ``scale`` is the real quantity (elements, or seconds of communication) per weighted unit;
    ``compute_s`` (time objective only, else None) the plan-independent compute time of the
    slowest accelerator, which ``real`` adds (or overlaps, ``overlap``) exactly.
    """

    weights: tuple[int, ...]
    scale: Fraction
    compute_s: Fraction | None = None
    overlap: bool = False

    def value(self, level_units: list[int] | tuple[int, ...]) -> int:
        return sum(w * c for w, c in zip(self.weights, level_units))

    def real(self, units: int) -> Fraction:
        """A weighted-unit objective or bound as the objective's quantity: elements (traffic),
        or the step time in seconds (time): step_time(compute_s, scale * units)."""
        comm = self.scale * units
        return comm if self.compute_s is None else step_time(self.compute_s, comm, self.overlap)

    def gap(self, objective: int | None, bound: int | None) -> float | None:
        """(objective - bound) / objective on the real values (``Solution.gap`` when nothing is added)."""
        if objective is None or bound is None:
            return None
        if self.compute_s is None:
            return (objective - bound) / max(1, abs(objective))
        o, b = self.real(objective), self.real(bound)
        return float((o - b) / o) if o else 0.0


def level_weights(objective: Objective, array: ArraySpec, unit_per_element: int, flops: int) -> LevelWeights:
    """The objective's weights; ``flops`` (one training step's, whole network) sets the time
    objective's compute term."""
    H = array.levels
    if objective is Objective.TRAFFIC:
        rates = [Fraction(2**h) for h in range(H)]  # elements per element of c_h
    else:
        rates = [Fraction(array.dtype_bytes) / array.bandwidth_Bps(h) for h in range(H)]  # seconds per element
    den = lcm(*(r.denominator for r in rates))
    ints = [int(r * den) for r in rates]
    g = gcd(*ints)
    weights = tuple(i // g for i in ints)
    scale = Fraction(g, den * unit_per_element)
    if objective is Objective.TRAFFIC:
        return LevelWeights(weights, scale)
    return LevelWeights(weights, scale, compute_time_s(flops, array), array.overlap)
