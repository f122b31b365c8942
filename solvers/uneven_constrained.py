"""The constrained path on uneven splits: what ``--solver exact`` runs under caps or a memory
limit, as the even split's exact solver hands such problems to ``solvers.constrained``
(docs/uneven.md, "Caps and memory: the constrained path").

1. The Lagrangian bound (``solvers.uneven_lagrangian``): column DPs over the one integer table
   (``core.split_costs``) at weights that put the objective's pieces and the limits'
   multipliers on each component; every relaxed plan within the limits is an incumbent.
2. Labels: the uneven exact DP's Pareto labels (``solvers.uneven.exact_run``: each partial plan's
   whole sum vector, since the objective is a maximum over sides of sums, not a sum), pruned
   by the completion bounds, the limits, the incumbent and the Lagrangian cut. Exhaustive up to
   dominance and exact pruning: OPTIMAL (the same value as ``exact_uneven``) or INFEASIBLE.
3. When the labels outgrow the state limit or the time limit, the incumbent with the Lagrangian
   bound and the gap (FEASIBLE; UNKNOWN with no incumbent), never OPTIMAL; under the time
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
from explorer.core.uneven import FreeAlphas

from .uneven import EXACT_MAX_BYTES, _chain_columns, _columns_plan, _Run, _short_of_time, _within, exact_run, table_sides, unit_limits
from .uneven_lagrangian import Dual, Tables
from .uneven_prune import _add, plan_vector, time_score, traffic_score
from .uneven_tables import ColumnTables

DUAL_SHARE = 0.3  # of the time limit the Lagrangian phase may take before the labels


class _Lagrangian:
    """The bound's state as ``exact_run`` reads it: the feasible plans' vectors and the cut."""

    def __init__(self, array: ArraySpec, costs, tables: ColumnTables, limits, objective: Objective):
        self.source, self.limits, self.objective = tables, limits, objective
        self.tables = Tables(tables)
        self.dual = Dual(array, costs, self.tables, limits, objective)
        self.score = time_score(array, costs) if objective is Objective.TIME else traffic_score(costs.layout)
        self.per = Fraction(1, self.score.scale) if objective is Objective.TIME else Fraction(1, costs.unit)
        self.feasible: list[tuple] = []
        self.best: tuple[Fraction, tuple] | None = None  # (objective, columns) of the best feasible plan

    def offer(self, cols) -> tuple:
        vec = plan_vector(self.source, cols)
        if _within(vec, self.limits):
            self.feasible.append(vec)
            value = self.score(vec) * self.per
            if self.best is None or value < self.best[0]:
                self.best = (value, cols)
        return vec

    @property
    def bound(self) -> Fraction:
        return max(self.dual.best[0], Fraction(0))

    def cut(self, most: Fraction):
        return self.dual.cut(most)


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
    if short := _short_of_time(columns, H, time_limit_s):
        return _tag(run.unknown(objective, reason=short), None, "pareto-dp")
    if not all(columns) or not limits:  # a layer without columns, or nothing that couples the layers
        return _tag(exact_run(array, costs, columns, limits, run, objective), None, "pareto-dp")
    deadline = t0 + DUAL_SHARE * time_limit_s if time_limit_s is not None else float("inf")
    try:
        run.tables = ColumnTables(costs, columns, run.expired)
    except TimeoutError:
        return run.unknown(objective)
    run.rest = run.tables.rest()
    if not any(_within(_add(run.tables.layer(0, c), run.rest[0][c]), limits) for c in columns[0]):
        return _tag(exact_run(array, costs, columns, limits, run, objective), None, "least-resource")  # infeasible
    lag = _Lagrangian(array, costs, run.tables, limits, objective)
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
    """The incumbent with the Lagrangian bound (``bound``: the proven value where it meets it)."""
    b = bound if bound is not None else lag.bound
    plan, value = (_columns_plan(lag.best[1], H), lag.best[0]) if lag.best else (None, None)
    return split_solution("exact", status, plan, value, b, time.perf_counter() - t0, len(lag.dual.cuts),
                          objective=lag.objective)


def _tag(sol: Solution, lag: _Lagrangian | None, method: str = "lagrangian+labels") -> Solution:
    sol.info["method"] = method
    if lag is not None:
        sol.info["lagrangian_bound"] = lag.bound
        sol.info["relaxed_solves"] = len(lag.dual.cuts)
    return sol
