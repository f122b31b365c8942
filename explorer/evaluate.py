"""The solver-independent evaluator: scores any plan exactly from the rational model.

It uses ``explorer.comm`` (Fractions), not the integer cost tables the solvers read, so a
solver's claimed objective and this re-score are two computations of one model.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .array import ArraySpec
from .comm import ZERO_COUNTS, Counts, add_type, inter_amount, intra_amount
from .network import Network
from .objective import Objective
from .partition import Space
from .plan import Plan


class PlanError(ValueError):
    """The plan does not fit the problem (shape, or a type outside the space)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    intra: tuple[tuple[Fraction, ...], ...]  # [level][layer] elements
    inter: tuple[tuple[Fraction, ...], ...]  # [level][edge] elements
    level_cost: tuple[Fraction, ...]  # c_h elements, one way, per sibling group
    traffic_elements: Fraction  # sum_h 2^h c_h
    traffic_bytes: Fraction  # 2 * dtype_bytes * traffic_elements (both directions)
    comm_time_s: Fraction  # sum_h c_h * dtype_bytes / bw_h
    level_time_s: tuple[Fraction, ...]

    def objective_value(self, objective: Objective) -> Fraction:
        return self.traffic_elements if objective is Objective.TRAFFIC else self.comm_time_s


def evaluate(network: Network, array: ArraySpec, space: Space, plan: Plan) -> Evaluation:
    H, L = array.levels, len(network.layers)
    if plan.levels != H or any(len(row) != L for row in plan.types):
        raise PlanError(f"plan has shape {plan.levels}x{plan.layers}, problem needs {H} levels x {L} layers")
    for h, row in enumerate(plan.types):
        for l, t in enumerate(row):  # noqa: E741
            if t not in space.types:
                raise PlanError(f"level {h}, layer {network.layers[l].name}: type {t} is not in the {space} space")
    B = network.batch
    counts: list[Counts] = [ZERO_COUNTS] * L
    intra_rows, inter_rows, level_cost = [], [], []
    for h in range(H):
        row = plan.types[h]
        intra = tuple(intra_amount(network.layers[l], B, row[l], counts[l]) for l in range(L))  # noqa: E741
        inter = tuple(
            inter_amount(network.layers[v], B, row[u], row[v], counts[v]) for (u, v) in network.edges
        )
        intra_rows.append(intra)
        inter_rows.append(inter)
        level_cost.append(sum(intra, Fraction(0)) + sum(inter, Fraction(0)))
        counts = [add_type(counts[l], row[l]) for l in range(L)]  # noqa: E741
    traffic = sum((2**h * c for h, c in enumerate(level_cost)), Fraction(0))
    dtype = array.dtype_bytes
    level_time = tuple(c * dtype / array.bandwidth_Bps(h) for h, c in enumerate(level_cost))
    return Evaluation(
        intra=tuple(intra_rows),
        inter=tuple(inter_rows),
        level_cost=tuple(level_cost),
        traffic_elements=traffic,
        traffic_bytes=2 * dtype * traffic,
        comm_time_s=sum(level_time, Fraction(0)),
        level_time_s=level_time,
    )
