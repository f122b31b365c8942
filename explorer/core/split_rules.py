"""What a plan with split fractions must satisfy and what it minimises: the even split's side
constraints and objectives, read on the uneven model (pins and forbids per cell, a cap on a
level's busiest side, memory per kind, the time and traffic objectives): docs/uneven.md,
"Constraints and objectives".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from .array import ArraySpec
from .constraints import Constraints
from .evaluate import Evaluation, Violation, violations
from .network import Network
from .objective import Objective
from .partition import PartitionType, Space
from .plan import Plan
from .units import memory_text


def traffic_elements(level_cost) -> Fraction:
    """sum_h 2^h c_h of a split plan's busiest sides (``Evaluation.level_cost``)."""
    return sum((2**h * c for h, c in enumerate(level_cost)), Fraction(0))


def leaf_memory_limits(array: ArraySpec, memory_bytes: Fraction | None = None) -> tuple[Fraction, ...]:
    """Per accelerator (tree order): its kind's memory in bytes, or ``memory_bytes`` for every kind."""
    if memory_bytes is not None:
        return (Fraction(memory_bytes),) * array.accelerators
    if not array.leaves:
        return (Fraction(array.memory_GiB) * 2**30,) * array.accelerators
    per_kind = {id(k): Fraction(k.memory_GiB) * 2**30 for k in array.leaves}  # leaves of a kind share one object
    return tuple(per_kind[id(k)] for k in array.leaves)


@dataclass(frozen=True)
class SplitRules:
    """The objective and the side constraints of a split run. ``constraints`` gives pins, forbids,
    caps (bytes per link per direction per step, the tightest per level) and weight_copies (its
    ``memory_bytes`` is not read: memory is ``leaf_memory_bytes``, per accelerator, None where a
    solver need not keep to it)."""

    objective: Objective = Objective.TIME
    constraints: Constraints = field(default_factory=Constraints)
    leaf_memory_bytes: tuple[Fraction, ...] | None = None

    @property
    def weight_copies(self) -> int:
        return self.constraints.weight_copies

    @property
    def restricts_types(self) -> bool:
        return bool(self.constraints.pins or self.constraints.forbids)

    @property
    def side_constrained(self) -> bool:
        """Whether a plan can break one of these rules (pins, forbids, caps or memory)."""
        return self.restricts_types or bool(self.constraints.caps) or self.leaf_memory_bytes is not None

    @property
    def couples_layers(self) -> bool:
        """Whether a cap or a memory limit is given: a sum over layers that the exact solver keeps to
        by the constrained path (``solvers.uneven_constrained``), as the even split's."""
        return bool(self.constraints.caps) or self.leaf_memory_bytes is not None

    def types(self, network: Network, space: Space, level: int, layer: int) -> tuple[PartitionType, ...]:
        """The types a solver may give ``layer`` at ``level``: offered by the node, allowed by pins and forbids."""
        node = network.layers[layer]
        return tuple(t for t in self.constraints.allowed(level, layer, space.types) if node.offers(t, level))

    def cap_elements(self, array: ArraySpec, level: int) -> Fraction | None:
        """The most elements one side of a pair of ``level`` may send (its cap / dtype_bytes), None uncapped."""
        cap = self.constraints.cap_at(level)
        return None if cap is None else cap.bytes / array.dtype_bytes

    def value(self, ev: Evaluation) -> Fraction:
        """The objective's value of an evaluated split plan: seconds (time) or elements (traffic)."""
        return ev.step_time_s if self.objective is Objective.TIME else traffic_elements(ev.level_cost)

    def violations(self, ev: Evaluation, array: ArraySpec, plan: Plan) -> list[Violation]:
        """Every cap, pin, forbid and per-accelerator memory limit the evaluated plan breaks."""
        out = violations(ev, replace(self.constraints, memory_bytes=None), array, plan)
        if self.leaf_memory_bytes is not None:
            kinds = [k.name for k in array.leaves] if array.leaves else ["acc"] * len(ev.leaf_memory_bytes)
            worst: dict[str, tuple[Fraction, Fraction]] = {}  # kind -> (its largest footprint, its limit)
            leaves = {(kind, id(a), id(m)): (kind, a, m) for kind, a, m in zip(kinds, ev.leaf_memory_bytes,
                                                                             self.leaf_memory_bytes)}  # alike: once
            for kind, actual, limit in leaves.values():
                worst[kind] = max(worst.get(kind, (actual, limit)), (actual, limit), key=lambda m: m[0] - m[1])
            out += [kind_memory_violation(k, limit, actual) for k, (actual, limit) in worst.items() if actual > limit]
        return out

    def feasible(self, ev: Evaluation, array: ArraySpec, plan: Plan) -> bool:
        return not self.violations(ev, array, plan)

    def rank(self, ev: Evaluation, array: ArraySpec, plan: Plan) -> tuple[int, Fraction]:
        """What the heuristics minimise: (rules broken, the objective's value), so that a plan that
        keeps to every rule beats any that does not."""
        broken = len(self.violations(ev, array, plan)) if self.side_constrained else 0
        return broken, self.value(ev)


def kind_memory_violation(kind: str, limit_bytes: Fraction, actual_bytes: Fraction) -> Violation:
    """A kind over its memory, as every split path writes it: its most loaded accelerator's
    footprint against the kind's limit ("memory of v3 <= 276.5 MiB per accelerator")."""
    return Violation(f"memory of {kind} <= {memory_text(limit_bytes)} per accelerator", limit_bytes, actual_bytes, memory=True)


def joint_refusal(objective: Objective) -> str | None:
    """Why the joint solver does not take ``objective``, or None: it minimises the step time. One
    rule for the joint solver itself, ``check --uneven``'s joint row and ``--split optimal``
    without ``--solver`` (explore, the API, sweeps), which routes past it as past its scope
    (``app.split_solve.routed_optimal``: exact, cpsat, then brute, under the traffic objective too)."""
    if objective is Objective.TIME:
        return None
    return "joint (uneven splits): the step time only, not the traffic objective"


TIME_ONLY = SplitRules()  # the step time, no side constraints (what the split solvers did before)
