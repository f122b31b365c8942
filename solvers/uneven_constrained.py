"""The constrained path on uneven splits: what ``--solver exact`` runs under caps or a memory
limit, as the even split's exact solver hands such problems to ``solvers.constrained``
(docs/uneven.md, "Caps and memory: the constrained path").

0. Cheap plans: the level DP's and the alpha search's (``_cheap_columns``), incumbents where they
   keep the limits (the answer when the column tables or the labels do not finish).
1. The Lagrangian bound (``solvers.uneven_lagrangian``): column DPs over the one integer table
   (``core.split_costs``) at weights that put the objective's pieces and the limits'
   multipliers on each component; every relaxed plan within the limits is an incumbent.
2. Labels: the uneven exact DP's Pareto labels (``solvers.uneven.exact_run``: each partial plan's
   whole sum vector, since the objective is a maximum over sides of sums, not a sum), pruned
   by the completion bounds, the limits, the incumbent and the Lagrangian cut. Exhaustive up to
   dominance and exact pruning: OPTIMAL (the same value as ``exact_uneven``) or INFEASIBLE.
3. When the labels outgrow the state limit or the time limit, the incumbent with the Lagrangian
   bound and the gap (FEASIBLE; UNKNOWN with the bound and no plan without one), never OPTIMAL; under the time
   objective an incumbent that meets the bound is OPTIMAL without labels.
"""

from __future__ import annotations

import time
from fractions import Fraction

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Solution, Status, split_solution
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.uneven import AlphaSpace, FreeAlphas

from .uneven import (EXACT_MAX_BYTES, _chain_columns, _columns_plan, _Run, _short_of_time, _space_of, _within, exact_run,
                     search_level_alphas, table_sides, unit_limits)
from .uneven_lagrangian import Dual, Tables
from .uneven_levels import levels_uneven
from .uneven_prune import _add, plan_vector, time_score, traffic_score
from .uneven_tables import ColumnTables

DUAL_SHARE = 0.3  # of the time limit the Lagrangian phase may take before the labels


class _Lagrangian:
    """The bound's state as ``exact_run`` reads it: the feasible plans' vectors (the cheap plans'
    before the column tables, ``attach``) and, once attached, the dual and its cut."""

    def __init__(self, array: ArraySpec, costs, limits, objective: Objective):
        self.array, self.costs, self.source, self.limits, self.objective = array, costs, costs, limits, objective
        self.dual: Dual | None = None
        self.score = time_score(array, costs) if objective is Objective.TIME else traffic_score(costs.layout)
        self.per = Fraction(1, self.score.scale) if objective is Objective.TIME else Fraction(1, costs.unit)
        self.feasible: list[tuple] = []
        self.best: tuple[Fraction, tuple] | None = None  # (objective, columns) of the best feasible plan

    def attach(self, tables: ColumnTables) -> None:
        self.source = tables
        self.dual = Dual(self.array, self.costs, Tables(tables), self.limits, self.objective)

    def offer(self, cols) -> tuple:
        vec = plan_vector(self.source, cols)
        if _within(vec, self.limits):
            self.feasible.append(vec)
            value = self.score(vec) * self.per
            if self.best is None or value < self.best[0]:
                self.best = (value, cols)
        return vec

    @property
    def bound(self) -> Fraction | None:
        return None if self.dual is None else max(self.dual.best[0], Fraction(0))

    @property
    def solves(self) -> int:
        return 0 if self.dual is None else len(self.dual.cuts)

    def cut(self, most: Fraction):
        return self.dual.cut(most)


def _cheap_columns(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                   columns) -> list[tuple]:
    """The level DP's plan (``solvers.uneven_levels``) and the alpha search's from it
    (``search_level_alphas``, minimising rules broken first) as columns, where every layer's lies
    in the declared columns (a plan outside the space must not prune it)."""
    plans = []
    try:
        plans.append(levels_uneven(network, array, space, aspace, rules=rules).plan)
        plans.append(search_level_alphas(network, array, plans[0], aspace, rules=rules).plan)
    except Refused:  # e.g. more free classes than the search moves
        pass
    have = [set(c) for c in columns]
    out = []
    for p in plans:
        cols = tuple(tuple((p.types[h][l], tuple(g[l] for g in p.alphas[h])) for h in range(p.levels))
                     for l in range(len(columns)))  # noqa: E741
        if all(c in ok for c, ok in zip(cols, have)):
            out.append(cols)
    return out


def constrained_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                       max_bytes: int = EXACT_MAX_BYTES, free: FreeAlphas = FreeAlphas.UNLIKE,
                       time_limit_s: float | None = None, rules: SplitRules = TIME_ONLY) -> Solution:
    """The proven optimum of a chain under ``rules`` by the constrained path (module docstring);
    the instances ``exact_uneven`` takes (chains, its column pairs), with the same answer."""
    t0 = time.perf_counter()
    H, _, costs, columns = _chain_columns(network, array, space, alphas, "exact", free, rules)
    limits = unit_limits(array, costs, rules)
    objective = rules.objective
    run = _Run(t0, time_limit_s, max_bytes, columns, costs.layout.size, objective, table_sides(costs.layout))
    short = _short_of_time(columns, H, time_limit_s)
    if not all(columns) or not limits:  # a layer without columns, or nothing that couples the layers
        sol = run.unknown(objective, reason=short) if short else exact_run(array, costs, columns, limits, run, objective)
        return _tag(sol, None, "pareto-dp")
    lag = _Lagrangian(array, costs, limits, objective)
    for cols in _cheap_columns(network, array, space, _space_of(array, alphas, free), rules, columns):
        lag.offer(cols)
    if short:
        sol = _answer(lag, H, Status.FEASIBLE if lag.best else Status.UNKNOWN, t0)
        sol.info["reason"] = short
        return _tag(sol, lag, "cheap plans")
    deadline = t0 + DUAL_SHARE * time_limit_s if time_limit_s is not None else float("inf")
    try:
        run.tables = ColumnTables(costs, columns, run.expired)
    except TimeoutError:
        return _tag(_answer(lag, H, Status.FEASIBLE if lag.best else Status.UNKNOWN, t0), lag,
                    "cheap plans (the column tables did not finish)")
    run.rest = run.tables.rest()
    if not any(_within(_add(run.tables.layer(0, c), run.rest[0][c]), limits) for c in columns[0]):
        return _tag(exact_run(array, costs, columns, limits, run, objective), None, "least-resource")  # infeasible
    lag.attach(run.tables)
    lag.dual.search(lag.offer, deadline)
    if objective is Objective.TIME and lag.best is not None and lag.best[0] <= lag.bound:
        return _tag(_answer(lag, H, Status.OPTIMAL, t0, lag.best[0]), lag, "lagrangian")
    run.lagrangian = lag
    try:
        sol = exact_run(array, costs, columns, limits, run, objective)
    except Refused:  # the labels outgrew the state limit
        sol = None
    if sol is not None and sol.status is not Status.UNKNOWN:
        return _tag(sol, lag)
    return _tag(_answer(lag, H, Status.FEASIBLE if lag.best else Status.UNKNOWN, t0), lag,
                "lagrangian (the labels did not finish: " + ("time limit" if sol is not None else "state limit") + ")")


def _answer(lag: _Lagrangian, H: int, status: Status, t0: float, bound: Fraction | None = None) -> Solution:
    """The incumbent with the Lagrangian bound (``bound``: the proven value where it meets it; the
    Lagrangian bound also without a plan, status UNKNOWN)."""
    b = bound if bound is not None else lag.bound
    plan, value = (_columns_plan(lag.best[1], H), lag.best[0]) if lag.best else (None, None)
    return split_solution("exact", status, plan, value, b, time.perf_counter() - t0, lag.solves, objective=lag.objective)


def _tag(sol: Solution, lag: _Lagrangian | None, method: str = "lagrangian+labels") -> Solution:
    sol.info["method"] = method
    if lag is not None and lag.dual is not None:
        sol.info["lagrangian_bound"] = lag.bound
        sol.info["relaxed_solves"] = lag.solves
    return sol
