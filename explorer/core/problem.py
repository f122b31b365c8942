"""A problem: network x array x space x objective (+ constraints), and its shared cost tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from .array import ArraySpec
from .cached import cached_property
from .comm import network_flops
from .constraints import Constraints
from .costs import CostTables, plan_final_counts, plan_level_units
from .network import Network
from .objective import LevelWeights, Objective, level_weights
from .partition import PartitionType, Space


# The constraints of a problem given none: one shared instance (they are frozen), not one built per problem.
NO_CONSTRAINTS = Constraints()


@dataclass(frozen=True)
class Problem:
    network: Network
    array: ArraySpec
    space: Space = Space.HYPAR
    objective: Objective = Objective.TRAFFIC
    constraints: Constraints = NO_CONSTRAINTS
    # Replaces the objective's level weights (e.g. (0, 1, 0) scores level 1 alone); value in units.
    custom_weights: tuple[int, ...] | None = None

    @property
    def levels(self) -> int:
        return self.array.levels

    @property
    def num_layers(self) -> int:
        return len(self.network.layers)

    @cached_property
    def tables(self) -> CostTables:
        return CostTables(self.network, self.array.levels, self.space)

    @cached_property
    def weights(self) -> LevelWeights:
        if self.custom_weights is not None:
            if len(self.custom_weights) != self.levels:
                raise ValueError("one custom weight per level")
            return LevelWeights(tuple(self.custom_weights), Fraction(1, self.tables.unit_per_element))
        return level_weights(self.objective, self.array, self.tables.unit_per_element, self.flops)

    @cached_property
    def flops(self) -> int:
        """Training FLOPs of one step of the whole network (the time objective's compute term)."""
        return network_flops(self.network)

    def real(self, units: int | None) -> Fraction | None:
        """A solver's objective or bound (weighted units) as elements (traffic) or step-time seconds (time)."""
        return None if units is None else self.weights.real(units)

    def gap(self, objective: int | None, bound: int | None) -> float | None:
        """The gap between a solver's objective and bound, on the real values (``LevelWeights.gap``)."""
        return self.weights.gap(objective, bound)

    def node_types(self, layer: int) -> tuple[PartitionType, ...]:
        """Types the node can take at all: the space's that its kind offers (``Layer.node_types``:
        I and II for a join or a grouped conv, all three for conv, fc and embedding)."""
        offered = self.network.layers[layer].node_types.offered
        return tuple(t for t in self.space.types if t in offered)

    def level_types(self, level: int, layer: int) -> tuple[PartitionType, ...]:
        """``node_types`` at one level: type II splits whole groups or heads, so a grouped conv or
        an attention node with heads offers it only at its first ``Layer.split_levels`` levels.
        A lookup in ``types_by_layer`` (computed once per problem)."""
        return self.types_by_layer[layer][level]

    @cached_property
    def _level_type_rows(self) -> tuple[tuple[tuple[tuple[PartitionType, ...], ...], ...], dict]:
        """(per layer the row of ``level_types`` over the levels, the distinct rows): each row is
        computed once per distinct node behaviour (``NodeTypes``, ``split_levels``), not per layer."""
        space, levels = self.space, self.levels
        rows: dict[tuple, tuple[tuple[PartitionType, ...], ...]] = {}
        out = []
        for node in self.network.layers:
            key = (node.node_types, node.split_levels)
            row = rows.get(key)
            if row is None:
                row = rows[key] = _type_rows(node, space, levels)
            out.append(row)
        return tuple(out), rows

    @property
    def types_by_layer(self) -> tuple[tuple[tuple[PartitionType, ...], ...], ...]:
        """``level_types`` as a table: ``types_by_layer[layer][level]``."""
        return self._level_type_rows[0]

    @cached_property
    def every_type_everywhere(self) -> bool:
        """Whether every node takes every type of the space at every level (no joins, grouped
        convs, attention heads or embeddings limiting them): solvers may then skip ``allowed``
        when there are no constraints."""
        full = self.space.types
        return all(types == full for row in self._level_type_rows[1].values() for types in row)

    def allowed(self, level: int, layer: int) -> tuple[PartitionType, ...]:
        """Types layer may take at level: ``level_types`` narrowed by pins and forbids."""
        return self.constraints.allowed(level, layer, self.level_types(level, layer))

    def cap_units(self, level: int) -> int | None:
        """The cap of a level as a bound on c_h in units: c_h * dtype <= cap  <=>  c_h <= floor(cap*unit/dtype)."""
        cap = self.constraints.cap_at(level)
        if cap is None:
            return None
        return math.floor(cap.bytes * self.tables.unit_per_element / self.array.dtype_bytes)

    @property
    def memory_units(self) -> int | None:
        """The memory limit as a bound on the summed footprint in units."""
        m = self.constraints.memory_bytes
        if m is None:
            return None
        return math.floor(m * self.tables.unit_per_element / self.array.dtype_bytes)

    def plan_violations_units(self, level_units, rows) -> list[str]:
        """Names of the caps and memory limit a plan breaks, from the cost tables."""
        out = []
        for cap in self.constraints.caps:
            if level_units[cap.level] > self.cap_units(cap.level):
                out.append(cap.name)
        if self.memory_units is not None:
            used = self.footprint_units(rows)
            if used > self.memory_units:
                out.append(self.constraints.memory_name)
        return out

    def plan_breaks(self, plan) -> list[str]:
        """What a plan breaks of the problem's rules: a type a level does not offer or a pin or
        forbid excludes, and the caps and memory limit (``plan_violations_units``); empty when it
        keeps them all (a fallback plan is offered only then)."""
        rows = plan.types
        if len(rows) != self.levels or any(len(row) != self.num_layers for row in rows):
            return ["the plan's shape"]
        if any(t not in self.allowed(h, n) for h, row in enumerate(rows) for n, t in enumerate(row)):
            return ["pins, forbids or the types a level offers"]
        return self.plan_violations_units(plan_level_units(self.tables, rows), rows)

    def footprint_units(self, rows) -> int:
        counts = plan_final_counts(tuple(tuple(r) for r in rows), self.num_layers)
        wc = self.constraints.weight_copies
        return sum(self.tables.footprint_units(l, c, wc) for l, c in enumerate(counts))  # noqa: E741

    def with_constraints(self, constraints: Constraints) -> "Problem":
        return replace(self, constraints=constraints)

    def with_weights(self, weights: tuple[int, ...] | None) -> "Problem":
        return replace(self, custom_weights=weights)


_TYPE_ROWS: dict[tuple, tuple[tuple[PartitionType, ...], ...]] = {}


def _type_rows(node, space: Space, levels: int) -> tuple[tuple[PartitionType, ...], ...]:
    """``level_types`` over the levels for a node, memoised per (node behaviour, space, levels):
    it depends on the node only through its ``NodeTypes`` and ``split_levels``."""
    key = (node.node_types, node.split_levels, space, levels)
    row = _TYPE_ROWS.get(key)
    if row is None:
        offered = tuple(t for t in space.types if t in key[0].offered)
        row = _TYPE_ROWS[key] = tuple(tuple(t for t in offered if node.offers(t, h)) for h in range(levels))
    return row
