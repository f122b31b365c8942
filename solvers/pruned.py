"""Exact joint optimum by bound and prune (issue 23, item 3): the tree dual bound
(``solvers.tree_dual``) and its incumbent, then, unless they already meet, an exact elimination
over the type vectors whose marginal does not exceed the incumbent (``solvers.survivor_elim``):
every plan at least as good as the incumbent uses only such vectors, so that elimination's
optimum is the joint optimum. ``optimal`` only then; else ``feasible`` with the dual bound.
Pins and forbids are kept; caps and the memory limit are refused (``solvers.constrained``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from explorer.core.errors import Refused
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

from .elimination import vectors_plan
from .exact import coupled
from .survivor_elim import MAX_ENTRIES, eliminate
from .tree_dual import DualResult, dual_bound, improve
from .vectors import VectorCosts

DEFAULT_TIME_S = 60.0


def solve(problem: Problem, options: SolveOptions | None = None, rounds: int = 40,
          max_entries: int = MAX_ENTRIES) -> Solution:
    options = options or SolveOptions()
    t0 = time.perf_counter()
    vc = VectorCosts(problem)
    if coupled(problem) or not vc.use_int64:
        raise Refused("pruned: caps, the memory limit or int64 overflow; use --solver exact or cpsat")
    limit = options.time_limit_s or DEFAULT_TIME_S
    res = dual_bound(vc, rounds, deadline=t0 + 0.6 * limit, incumbent=_dp_start(problem, vc))
    info = {"method": "tree-dual+survivors", "dual_rounds": res.rounds, "dual_bound": res.bound}
    res = _tighten(vc, res, max_entries, t0 + 0.8 * limit)
    info["incumbent_before_survivors"] = res.incumbent
    vectors, bound = res.vectors, res.bound
    if res.bound < res.incumbent:
        domains = [np.flatnonzero((m <= res.incumbent) & ~vc.blocked(n)) for n, m in enumerate(res.marginals)]
        info["survivors_max"] = max(len(d) for d in domains)
        info["survivors_total"] = sum(len(d) for d in domains)
        found = eliminate(vc, domains, max_entries, t0 + limit)
        if found is not None:
            if found[0] > res.incumbent:
                raise AssertionError("pruned: the survivors' optimum is worse than the incumbent they contain")
            bound, vectors = found
    wall = time.perf_counter() - t0
    status = Status.OPTIMAL if bound >= res.incumbent or bound == _cost(vc, vectors) else Status.FEASIBLE
    sol = plan_solution("pruned", problem, vectors_plan(vc, vectors), status, wall, bound, info)
    if status is Status.OPTIMAL and sol.objective != bound:
        raise AssertionError(f"pruned: proven value {bound} != table re-score {sol.objective}")
    return sol


def _tighten(vc: VectorCosts, res: DualResult, max_entries: int, deadline: float) -> DualResult:
    """A better incumbent (no proof): the elimination over each node's vectors within a small
    share of its least marginal, improved by ICM."""
    for share in (1e-4, 1e-3):
        if res.bound >= res.incumbent:
            break
        domains = [_near_least(m, ~vc.blocked(n), share * res.bound) for n, m in enumerate(res.marginals)]
        found = eliminate(vc, domains, max_entries, deadline)
        if found is not None:
            plan = improve(vc, found[1])
            cost = _cost(vc, plan)
            if cost < res.incumbent:
                res = replace(res, incumbent=cost, vectors=plan)
    return res


def _near_least(marginal: np.ndarray, allowed: np.ndarray, slack: float) -> np.ndarray:
    least = marginal[allowed].min()
    return np.flatnonzero(allowed & (marginal <= least + slack))


def _dp_start(problem: Problem, vc: VectorCosts) -> tuple[int, list[int]]:
    """The DP's plan as type vectors, and its cost."""
    from .dp import hierarchical_dp

    plan, _ = hierarchical_dp(problem)
    vectors = []
    for n in range(vc.N):
        d = vc.dom[n]
        v = 0
        for h in range(vc.H):
            v = v * d.K + d.types.index(plan.types[h][n])
        vectors.append(v)
    return _cost(vc, vectors), vectors


def _cost(vc: VectorCosts, vectors: list[int]) -> int:
    from .tree_dual import plan_cost

    return plan_cost(vc, vectors)
