"""Exact joint optimum by bound and prune (issue 23, item 3): the tree dual bound
(``solvers.tree_dual``) and its incumbent (the DP's plan, improved), then, unless they already
meet, exact eliminations over the type vectors whose marginal does not exceed a threshold U
(``solvers.survivor_elim``), U rising from the bound towards the incumbent (``_Search``).
``optimal`` only when a threshold's elimination finds a plan within it; else ``feasible`` with
the highest bound proven.
Pins and forbids are kept (when they leave a layer no type vector the run is ``infeasible``,
as exact's); caps and the memory limit are refused (``solvers.constrained``).
"""

from __future__ import annotations

import time

import numpy as np

from explorer.core.errors import Refused
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

from .elimination import vectors_plan
from .survivor_elim import MAX_ENTRIES, eliminate
from .tree_dual import DualResult, dual_bound
from .vectors import VectorCosts

DEFAULT_TIME_S = 60.0


def solve(problem: Problem, options: SolveOptions | None = None, rounds: int = 40,
          max_entries: int = MAX_ENTRIES) -> Solution:
    options = options or SolveOptions()
    t0 = time.perf_counter()
    if problem.constraints.caps:
        raise Refused("pruned: link caps couple the layers (it takes pins and forbids only); use --solver cpsat (or exact, on graphs it can eliminate)")
    vc = VectorCosts(problem)
    if not vc.use_int64:
        raise Refused("pruned: costs beyond int64 at these levels and batch; use --solver cpsat (or exact, on graphs it can eliminate)")
    if any(vc.blocked(n).all() for n in range(vc.N)):
        return _infeasible(t0)
    sol = _solve_relaxed(problem, vc, options, t0, rounds, max_entries)
    return _within_memory(problem, sol)


def _infeasible(t0: float) -> Solution:
    """Proven: a layer whose every type vector a pin or forbid excludes leaves no plan (any other
    choice of allowed vectors is one, of finite cost); the report names the conflict as exact's."""
    return Solution("pruned", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0,
                    {"reason": "pins and forbids leave no plan", "method": "proof"})


def _within_memory(problem: Problem, sol: Solution) -> Solution:
    """The memory limit (every array has one) is checked on the plan, not searched: the solve
    ignores it, so its bound holds with it too, and a plan within it keeps its status (an
    optimum of the relaxation that satisfies the limit is the optimum under it). A plan
    beyond it is refused: the limit binds and couples the layers."""
    broken = problem.plan_violations_units(sol.level_units, sol.plan.types)
    if broken:
        raise Refused(f"pruned: its plan breaks {'; '.join(broken)} (a binding memory limit couples the layers); "
                      "use --solver cpsat (or exact, on graphs it can eliminate)")
    return sol


def _solve_relaxed(problem: Problem, vc: VectorCosts, options: SolveOptions, t0: float, rounds: int,
                   max_entries: int) -> Solution:
    """The bound-and-prune solve itself (caps and memory not seen)."""
    limit = options.time_limit_s or DEFAULT_TIME_S
    start = _dp_start(problem, vc)
    if start[0] >= vc.big:
        raise Refused("pruned: pins and forbids leave the DP no plan; use --solver cpsat (or exact, on graphs it can eliminate)")
    res = dual_bound(vc, rounds, deadline=t0 + DUAL_SHARE * limit, incumbent=start)
    info = {"method": "tree-dual+thresholds", "dual_rounds": res.rounds, "dual_bound": res.bound}
    search = _Search(vc, res, max_entries, t0 + limit)
    proven = search.run()
    info.update(thresholds=search.steps, survivors_max=search.survivors_max)
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    bound = search.incumbent if proven else search.lo
    sol = plan_solution("pruned", problem, vectors_plan(vc, search.vectors), status, time.perf_counter() - t0, bound, info)
    if sol.objective != search.incumbent:
        raise AssertionError(f"pruned: incumbent {search.incumbent} != table re-score {sol.objective}")
    return sol


DUAL_SHARE = 0.6  # of the time limit, for the dual rounds
FIRST_STEP = 1 / 256  # the first threshold: lo + FIRST_STEP * (incumbent - lo); each next one doubles the step


class _Search:
    """Thresholds U between the proven bound ``lo`` and the incumbent: the elimination over the
    vectors whose marginal is at most U either finds a plan of cost <= U (then optimal: every plan
    of cost <= U uses only those vectors) or shows that none exists (then lo = U + 1); a plan it
    finds above U may still be a better incumbent."""

    def __init__(self, vc: VectorCosts, res: DualResult, max_entries: int, deadline: float):
        self.vc, self.res, self.max_entries, self.deadline = vc, res, max_entries, deadline
        self.lo, self.incumbent, self.vectors = res.bound, res.incumbent, res.vectors
        self.steps, self.survivors_max = 0, 0

    def run(self) -> bool:
        """Whether the incumbent was proven optimal."""
        step = max(1, int((self.incumbent - self.lo) * FIRST_STEP))
        smallest = step // 64  # after a threshold too large to eliminate, the step halves down to this
        while self.lo < self.incumbent:
            if self._try(min(self.incumbent, self.lo + step)) is not None:
                step *= 2
            elif step // 2 >= max(1, smallest) and time.perf_counter() < self.deadline:
                step //= 2
            else:
                return False
        return True

    def _try(self, U: int) -> bool | None:
        """One threshold: True when settled (a proof or a raised bound), None when too large."""
        vc = self.vc
        domains = [np.flatnonzero((m <= U) & ~vc.blocked(n)) for n, m in enumerate(self.res.marginals)]
        self.steps += 1
        if any(len(d) == 0 for d in domains):
            self.lo = U + 1
            return True
        self.survivors_max = max(self.survivors_max, max(len(d) for d in domains))
        found = eliminate(vc, domains, self.max_entries, self.deadline)
        if found is None:
            return None
        value, vectors = found
        if value < self.incumbent:
            self.incumbent, self.vectors = value, vectors
        if value <= U:
            self.lo = value  # the restricted optimum is the optimum
        else:
            self.lo = U + 1
        return True


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
