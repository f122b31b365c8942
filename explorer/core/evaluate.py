"""The solver-independent evaluator: scores any plan exactly from the rational model.

It uses ``explorer.core.comm`` (Fractions), not the integer cost tables the solvers read, so a
solver's claimed objective and this re-score are two computations of one model.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .array import ArraySpec
from .comm import ZERO_COUNTS, Counts, advance, footprint_elements, inter_amount, intra_amount, training_flops
from .constraints import Constraints
from .network import Network
from .objective import Objective
from .partition import JOIN_TYPES, Space
from .plan import Plan
from .timing import energy_J, level_times, step_time


class PlanError(ValueError):
    """The plan does not fit the problem (shape, or a type outside the space)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    intra: tuple[tuple[Fraction, ...], ...]  # [level][layer] elements
    inter: tuple[tuple[Fraction, ...], ...]  # [level][edge] elements
    level_cost: tuple[Fraction, ...]  # c_h elements, one way, per sibling group
    traffic_elements: Fraction  # sum_h 2^h c_h
    traffic_bytes: Fraction  # 2 * dtype_bytes * traffic_elements (both directions)
    comm_time_s: Fraction  # sum_h c_h * dtype_bytes / b_h (effective level bandwidths, core.timing)
    level_time_s: tuple[Fraction, ...]
    final_counts: tuple[Counts, ...]  # per layer, after all levels
    footprint_bytes: tuple[Fraction, ...]  # per layer, per accelerator
    memory_bytes: Fraction  # per accelerator: sum of footprint_bytes
    compute_s: Fraction  # training FLOPs spread evenly over all accelerators at peak rate
    step_time_s: Fraction  # compute_s + comm_time_s, or their max when the array overlaps them
    energy_J: Fraction | None  # FLOPs * pJ/FLOP + traffic bytes * pJ/byte + static power * step (core.timing)

    def objective_value(self, objective: Objective) -> Fraction:
        return self.traffic_elements if objective is Objective.TRAFFIC else self.comm_time_s


def evaluate(network: Network, array: ArraySpec, space: Space, plan: Plan, weight_copies: int = 0) -> Evaluation:
    H, L = array.levels, len(network.layers)
    if plan.levels != H or any(len(row) != L for row in plan.types):
        raise PlanError(f"plan has shape {plan.levels}x{plan.layers}, problem needs {H} levels x {L} layers")
    for h, row in enumerate(plan.types):
        for l, t in enumerate(row):  # noqa: E741
            if t not in space.types:
                raise PlanError(f"level {h}, layer {network.layers[l].name}: type {t} is not in the {space} space")
            if network.layers[l].is_join and t not in JOIN_TYPES:
                raise PlanError(f"level {h}, join {network.layers[l].name}: type {t} is not offered to joins")
    B = network.batch
    counts: list[Counts] = [ZERO_COUNTS] * L
    intra_rows, inter_rows, level_cost = [], [], []
    for h in range(H):
        row = plan.types[h]
        intra = tuple(intra_amount(network.layers[l], B, row[l], counts[l]) for l in range(L))  # noqa: E741
        inter = tuple(
            inter_amount(network.layers[v], B, row[u], row[v], counts[v], share, network.layers[u].is_join)
            for (u, v), share in zip(network.edges, network.edge_shares)
        )
        intra_rows.append(intra)
        inter_rows.append(inter)
        level_cost.append(sum(intra, Fraction(0)) + sum(inter, Fraction(0)))
        counts = advance(counts, row)
    traffic = sum((2**h * c for h, c in enumerate(level_cost)), Fraction(0))
    dtype = array.dtype_bytes
    level_time = level_times(level_cost, array)
    footprint = tuple(footprint_elements(network.layers[l], B, counts[l], weight_copies) * dtype for l in range(L))  # noqa: E741
    flops = sum(training_flops(layer, B) for layer in network.layers)
    compute = Fraction(flops) / (array.accelerators * array.peak_TFLOPS * 10**12)
    comm = sum(level_time, Fraction(0))
    step = step_time(compute, comm, array.overlap)
    return Evaluation(
        intra=tuple(intra_rows),
        inter=tuple(inter_rows),
        level_cost=tuple(level_cost),
        traffic_elements=traffic,
        traffic_bytes=2 * dtype * traffic,
        comm_time_s=comm,
        level_time_s=level_time,
        final_counts=tuple(counts),
        footprint_bytes=footprint,
        memory_bytes=sum(footprint, Fraction(0)),
        compute_s=compute,
        step_time_s=step,
        energy_J=energy_J(flops, 2 * dtype * traffic, step, array),
    )


@dataclass(frozen=True, slots=True)
class Violation:
    constraint: str
    limit_bytes: Fraction
    actual_bytes: Fraction

    @property
    def excess_bytes(self) -> Fraction:
        return self.actual_bytes - self.limit_bytes


def violations(ev: Evaluation, constraints: Constraints, array: ArraySpec, plan: Plan) -> list[Violation]:
    """Every constraint the evaluated plan breaks, with by how much (pins/forbids as 0 vs 1)."""
    out = []
    for cap in constraints.caps:
        actual = ev.level_cost[cap.level] * array.dtype_bytes
        if actual > cap.bytes:
            out.append(Violation(cap.name, cap.bytes, actual))
    if constraints.memory_bytes is not None and ev.memory_bytes > constraints.memory_bytes:
        out.append(Violation(constraints.memory_name, constraints.memory_bytes, ev.memory_bytes))
    for h, row in enumerate(plan.types):
        for l, t in enumerate(row):  # noqa: E741
            for p in constraints.pins:
                if p.layer == l and p.level in (None, h) and t is not p.type:
                    out.append(Violation(f"{p.name} (level {h} has {t})", Fraction(0), Fraction(1)))
            for f in constraints.forbids:
                if f.layer == l and t is f.type:
                    out.append(Violation(f"{f.name} (level {h})", Fraction(0), Fraction(1)))
    return out
