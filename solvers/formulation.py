"""The joint partition problem as a 0-1 linear program, built from the shared cost tables.

The full derivation is in the manual: docs/derivations.md, "The 0-1 formulation".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd

from explorer.core.comm import ZERO_COUNTS, add_type, advance, zero_counts
from explorer.core.plan import Plan
from explorer.core.problem import Problem

from .deadline import check_deadline


@dataclass
class SideConstraint:
    name: str
    zero_vars: list[int] = field(default_factory=list)
    le_rows: list[tuple[list[int], list[int], int]] = field(default_factory=list)  # vars, coefs, rhs


@dataclass
class Formulation:
    names: list[str] = field(default_factory=list)
    objective: list[int] = field(default_factory=list)
    eq_rows: list[tuple[list[int], list[int], int]] = field(default_factory=list)  # vars, coefs, rhs
    exactly_one: list[list[int]] = field(default_factory=list)  # redundant one-hot groups
    fixed_zero: list[int] = field(default_factory=list)  # structural: type III of join nodes
    side: list[SideConstraint] = field(default_factory=list)
    x: dict[tuple[int, int, tuple, int], int] = field(default_factory=dict)  # (l, h, s, k) -> var
    z: dict[tuple[int, int, int, int], int] = field(default_factory=dict)  # (e, h, k', g) -> var
    groups: dict[tuple[int, int], list[list[tuple[tuple, int]]]] = field(default_factory=dict)  # (e,h) -> [(s,k)]
    objective_gcd: int = 1

    def new_var(self, name: str, cost: int) -> int:
        self.names.append(name)
        self.objective.append(cost)
        return len(self.names) - 1

    @property
    def num_vars(self) -> int:
        return len(self.names)


class BuildTimeout(TimeoutError):
    """The deadline passed while the formulation was being built."""


def build(problem: Problem, deadline: float | None = None) -> Formulation:
    """The formulation; ``deadline`` (a ``time.perf_counter()`` value): ``BuildTimeout`` once it
    has passed (checked after every layer and edge)."""
    f = Formulation()
    for l in range(problem.num_layers):  # noqa: E741 -- the choice flow per layer
        _layer_choices(problem, f, l)
        check_deadline(deadline, BuildTimeout)
    for e, (u, v) in enumerate(problem.tables.edges):  # pair variables on every edge at every level
        for h in range(problem.levels):
            _edge_pairs(problem, f, e, u, v, h)
        check_deadline(deadline, BuildTimeout)
    nonzero = [c for c in f.objective if c]
    f.objective_gcd = gcd(*nonzero) if nonzero else 1
    add_side_constraints(problem, f)
    return f


def _layer_choices(problem: Problem, f: Formulation, l: int) -> None:  # noqa: E741
    """Layer l's x variables (one per level, count state and type; exactly one per level; types
    the level does not offer fixed to 0) and the flow rows tying each level's count state to
    the level above's."""
    tables, types = problem.tables, problem.tables.types
    K, w = len(types), problem.weights.weights
    names = [f"{t}" for t in types]  # formatted once (an enum's format is slow)
    for h in range(problem.levels):
        level_vars = []
        for s in tables.states(h):
            for k, t in enumerate(types):
                v = f.new_var(f"x[{l},{h},{s},{names[k]}]", w[h] * tables.intra(l, t, s))
                f.x[(l, h, s, k)] = v
                level_vars.append(v)
                if t not in problem.level_types(h, l):
                    f.fixed_zero.append(v)
        f.exactly_one.append(level_vars)
        if h == 0:
            continue
        for s in tables.states(h):
            vars_, coefs = [f.x[(l, h, s, k)] for k in range(K)], [1] * K
            for k, t in enumerate(types):
                if s[t.index] == 0:
                    continue
                prev = list(s)
                prev[t.index] -= 1
                vars_.append(f.x[(l, h - 1, tuple(prev), k)])
                coefs.append(-1)
            f.eq_rows.append((vars_, coefs, 0))
    f.eq_rows.append(([f.x[(l, 0, ZERO_COUNTS, k)] for k in range(K)], [1] * K, 1))


def _edge_pairs(problem: Problem, f: Formulation, e: int, u: int, v: int, h: int) -> None:
    """Edge e (u -> v) at level h: one z variable per producer type and group of consumer cells
    with the same cost column (exactly one), tied to the producer's and the consumer's x."""
    tables, types = problem.tables, problem.tables.types
    K, w = len(types), problem.weights.weights
    by_column: dict[tuple[int, ...], list[tuple[tuple, int]]] = {}
    for s in tables.states(h):
        for k, t in enumerate(types):
            col = tuple(tables.inter(e, tp, t, s) for tp in types)
            by_column.setdefault(col, []).append((s, k))
    groups = list(by_column.items())
    f.groups[(e, h)] = [members for _, members in groups]
    edge_vars, names = [], [f"{t}" for t in types]
    for kp in range(K):
        for g, (col, _) in enumerate(groups):
            z = f.new_var(f"z[{e},{h},{names[kp]},{g}]", w[h] * col[kp])
            f.z[(e, h, kp, g)] = z
            edge_vars.append(z)
    f.exactly_one.append(edge_vars)
    producers = [[f.x[(u, h, s, kp)] for s in tables.states(h)] for kp in range(K)]
    consumers = [[f.x[(v, h, s, k)] for s, k in members] for _, members in groups]
    f.eq_rows += pair_rows([edge_vars[kp * len(groups):(kp + 1) * len(groups)] for kp in range(K)], producers, consumers)


def pair_rows(pairs: list[list], producers: list[list], consumers: list[list]) -> list[tuple[list, list[int], int]]:
    """The rows tying an edge's pair variables to its two ends' choices, as (vars, coefs, rhs) of
    ``sum coefs * vars == rhs``: ``pairs[i][j]`` stands for producer class i and consumer class j,
    each class a list of choice variables (at most one of them 1); the pair of the chosen classes is
    1: for every i, sum_j pairs[i][j] == sum producers[i], and for every j, sum_i pairs[i][j] ==
    sum consumers[j]. The even split's classes are a producer type and a group of consumer cells
    with the same cost column; the uneven split's (``uneven_cpsat``) a column each."""
    rows = [(list(row) + ends, [1] * len(row) + [-1] * len(ends), 0) for row, ends in zip(pairs, producers)]
    for j, ends in enumerate(consumers):
        col = [row[j] for row in pairs]
        rows.append((col + ends, [1] * len(col) + [-1] * len(ends), 0))
    return rows


def _le_rows(vars_: list[int], coefs: list[int], rhs: int) -> list[tuple[list[int], list[int], int]]:
    """The row ``sum coefs * x <= rhs`` scaled, or no row at all when no 0-1 assignment can exceed
    rhs: a limit beyond anything the plan can reach (``--memory 1e12``, ``--cap 3=1e40B``) is no
    limit, and CP-SAT never sees a constant beyond int64."""
    if sum(c for c in coefs if c > 0) <= rhs:
        return []
    return [_scaled_row(vars_, coefs, rhs)]


def _scaled_row(vars_: list[int], coefs: list[int], rhs: int) -> tuple[list[int], list[int], int]:
    """Drop zero coefficients and divide by their gcd (rounding the bound down: exact for 0-1 variables)."""
    pairs = [(v, c) for v, c in zip(vars_, coefs) if c]
    if not pairs:
        return [], [], rhs
    g = gcd(*(c for _, c in pairs))
    return [v for v, _ in pairs], [c // g for _, c in pairs], rhs // g


def add_side_constraints(problem: Problem, f: Formulation) -> None:
    tables = problem.tables
    types = tables.types
    H, L = problem.levels, problem.num_layers
    cons = problem.constraints
    for pin in cons.pins:
        sc = SideConstraint(pin.name)
        for h in range(H):
            if pin.level not in (None, h):
                continue
            for s in tables.states(h):
                sc.zero_vars += [f.x[(pin.layer, h, s, k)] for k, t in enumerate(types) if t is not pin.type]
        f.side.append(sc)
    for fb in cons.forbids:
        sc = SideConstraint(fb.name)
        if fb.type in types:
            k = types.index(fb.type)
            sc.zero_vars = [f.x[(fb.layer, h, s, k)] for h in range(H) for s in tables.states(h)]
        f.side.append(sc)
    for cap in cons.caps:
        h = cap.level
        vars_, coefs = [], []
        for l in range(L):  # noqa: E741
            for s in tables.states(h):
                for k, t in enumerate(types):
                    vars_.append(f.x[(l, h, s, k)])
                    coefs.append(tables.intra(l, t, s))
        for e in range(len(tables.edges)):
            groups = f.groups[(e, h)]
            for g, members in enumerate(groups):
                s0, k0 = members[0]
                for kp, tp in enumerate(types):
                    vars_.append(f.z[(e, h, kp, g)])
                    coefs.append(tables.inter(e, tp, types[k0], s0))
        f.side.append(SideConstraint(cap.name, le_rows=_le_rows(vars_, coefs, problem.cap_units(h))))
    if cons.memory_bytes is not None:
        keys, coefs = memory_coefs(problem)
        f.side.append(SideConstraint(cons.memory_name, le_rows=_le_rows([f.x[x] for x in keys], coefs, problem.memory_units)))


def memory_coefs(problem: Problem) -> tuple[list[tuple], list[int]]:
    """The memory row's x keys (layer, last level, count state, type) and footprints."""
    tables, H, w = problem.tables, problem.levels, problem.constraints.weight_copies
    keys, coefs = [], []
    for l in range(problem.num_layers):  # noqa: E741
        for s in tables.states(H - 1):
            for k, t in enumerate(tables.types):
                keys.append((l, H - 1, s, k))
                coefs.append(tables.footprint_units(l, add_type(s, t), w))
    return keys, coefs


def memory_row_reach(problem: Problem) -> int:
    """The most the memory row (as ``build`` writes it: scaled by its gcd) can reach, from the
    tables alone (before the build; 0 when there is no limit or no row)."""
    if problem.constraints.memory_bytes is None:
        return 0
    keys, coefs = memory_coefs(problem)
    rows = _le_rows(list(range(len(keys))), coefs, problem.memory_units)
    return sum(abs(c) for _, row, _ in rows for c in row)


def assignment(problem: Problem, f: Formulation, plan: Plan) -> list[int]:
    """The 0-1 values of every variable for a plan (a complete hint)."""
    types = problem.tables.types
    L = problem.num_layers
    values = [0] * f.num_vars
    counts = zero_counts(L)
    for h, row in enumerate(plan.types):
        ks = [types.index(t) for t in row]
        for l in range(L):  # noqa: E741
            values[f.x[(l, h, counts[l], ks[l])]] = 1
        for e, (u, v) in enumerate(problem.tables.edges):
            for g, members in enumerate(f.groups[(e, h)]):
                if (counts[v], ks[v]) in members:
                    values[f.z[(e, h, ks[u], g)]] = 1
                    break
        counts = advance(counts, row)
    return values


def extract_plan(problem: Problem, f: Formulation, value) -> Plan:
    """The plan from a 0-1 solution (``value(var) -> 0/1``)."""
    types = problem.tables.types
    chosen: dict[tuple[int, int], list[int]] = {}
    for (l, h, _s, k), var in f.x.items():  # noqa: E741
        if value(var) > 0.5:
            chosen.setdefault((l, h), []).append(k)
    rows = []
    for h in range(problem.levels):
        row = []
        for l in range(problem.num_layers):  # noqa: E741
            ks = chosen.get((l, h), [])
            if len(ks) != 1:
                raise AssertionError(f"layer {l} level {h}: {len(ks)} types chosen")
            row.append(types[ks[0]])
        rows.append(tuple(row))
    return Plan(tuple(rows))

