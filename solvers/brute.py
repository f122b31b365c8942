"""Exhaustive enumeration, the oracle of last resort, for both splits: every plan, the first
best in enumeration order wins, refused above a plan limit (one ``InstanceTooLarge`` line).
``solve``: the even split's type plans, level by level, from the shared cost tables;
``solve_split``: an uneven split's types and declared alphas, each plan scored by
``evaluate_split`` (docs/solvers.md). Past a time limit both return the best plan so far as
``feasible`` (no bound, never ``optimal``), or ``unknown`` when none was kept yet.
"""

from __future__ import annotations

import itertools
import math
import time

from explorer.core.array import ArraySpec
from explorer.core.comm import advance, zero_counts
from explorer.core.errors import InstanceTooLarge
from explorer.core.evaluate import evaluate_split
from explorer.core.names import given_as
from explorer.core.uneven import FreeAlphas, check_array, check_network
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution, split_solution
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.units import format_count

from .deadline import MIN_LEFT_SHARE, origin

DEFAULT_MAX_PLANS = 300_000
# uneven plans, in explore --split and check --uneven alike: each is a full evaluation, 0.5-1 ms
# (lenet-c, tpu-mix-16, alpha grid 2 only: 65,536 plans in 35 s of CPU), so ~2-3 minutes at the limit
# unless the time limit (a split run's: 10 s by default) stops it first
SPLIT_MAX_PLANS = 200_000
RATE_PROBE = 256  # uneven plans scored before the rest is sized by their measured rate (``_Rate``)
CLOCK_EVERY = 256  # plans between two reads of the clock (a few ms of uneven plans, well under 0.1 s)


class _Clock:
    """The time limit of one enumeration: ``over()`` reads the clock every ``CLOCK_EVERY`` calls."""

    def __init__(self, t0: float, limit_s: float | None):
        self.deadline = None if limit_s is None else max(t0 + limit_s, time.perf_counter() + MIN_LEFT_SHARE * limit_s)
        self.calls = 0
        self.stopped = False

    def over(self) -> bool:
        if self.deadline is None:
            return False
        self.calls += 1
        if self.calls % CLOCK_EVERY == 0 and time.perf_counter() > self.deadline:
            self.stopped = True
        return self.stopped


def _stopped(solver: str, limit_s: float | None) -> str:
    return f"{solver}: stopped at the time limit ({limit_s:g} s) before every plan was seen: no proof"


class _Rate:
    """Sizes an uneven enumeration by what it finishes in its time limit: after ``RATE_PROBE``
    plans, refused (``InstanceTooLarge``, the count and the measured rate) when the plans left at
    that rate would end past the limit (trial 8: 104,976 plans at ~10k plans/s under the
    200,000-plan limit ran its 10 s and ended unknown in every check)."""

    def __init__(self, n: int, shape: str, limit_s: float | None):
        self.n, self.shape, self.limit_s, self.done = n, shape, limit_s, 0
        self.start = time.perf_counter()

    def scored(self, t0: float) -> None:
        self.done += 1
        if self.limit_s is None or self.done != RATE_PROBE or self.n <= RATE_PROBE:
            return
        now = time.perf_counter()
        rate = RATE_PROBE / max(now - self.start, 1e-9)
        if (now - t0) + (self.n - RATE_PROBE) / rate > self.limit_s:
            within = max(0, int(rate * self.limit_s))
            raise InstanceTooLarge(
                f"brute: {self.n:,} plans ({self.shape}) exceeds the {within:,} it scores in the "
                f"{self.limit_s:.3g} s its time limit leaves ({rate:,.0f} plans/s measured; "
                f"{given_as('--time-limit')} gives more); "
                f"use {given_as('--solver')} exact or cpsat")


def plan_count(problem: Problem) -> int:
    """Plans to enumerate: the product over cells of the allowed types (pins and forbids count)."""
    return math.prod(len(problem.allowed(h, n)) for h in range(problem.levels) for n in range(problem.num_layers))


def _check_size(n: int, limit: int, shape: str) -> None:
    if n > limit:
        raise InstanceTooLarge(f"brute: {format_count(n)} plans ({shape}) exceeds its limit of {limit:,}; "
                               f"use {given_as('--solver')} exact or cpsat")


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    options = options or SolveOptions()
    n = plan_count(problem)
    L, H = problem.num_layers, problem.levels
    _check_size(n, options.max_plans or DEFAULT_MAX_PLANS,
                f"{problem.network.node_words} x {H} levels, up to {len(problem.space.types)} types each")
    t0 = origin(options)
    clock = _Clock(t0, options.time_limit_s)
    tables, weights = problem.tables, problem.weights.weights
    edges = tables.edges
    rows_by_level = [
        list(itertools.product(*[problem.allowed(h, l) for l in range(L)])) for h in range(H)  # noqa: E741
    ]
    best: list = [None, None]  # objective, rows

    def walk(h: int, counts: list, rows: list, levels: list, acc: int) -> None:
        if h == H:
            if clock.over() or problem.plan_violations_units(levels, rows):
                return
            if best[0] is None or acc < best[0]:
                best[0], best[1] = acc, list(rows)
            return
        for row in rows_by_level[h]:
            if clock.stopped:
                return
            c = 0
            for l in range(L):  # noqa: E741
                c += tables.intra(l, row[l], counts[l])
            for e, (u, v) in enumerate(edges):
                c += tables.inter(e, row[u], row[v], counts[v])
            rows.append(row)
            levels.append(c)
            walk(h + 1, advance(counts, row), rows, levels, acc + weights[h] * c)
            rows.pop()
            levels.pop()

    walk(0, zero_counts(L), [], [], 0)
    wall = time.perf_counter() - t0
    if best[0] is None:
        if clock.stopped:
            return Solution("brute", Status.UNKNOWN, None, None, None, None, wall,
                            {"reason": _stopped("brute", options.time_limit_s), "plans": n})
        return Solution("brute", Status.INFEASIBLE, None, None, None, None, wall,
                        {"reason": "no plan satisfies the constraints", "plans": n})
    status = Status.FEASIBLE if clock.stopped else Status.OPTIMAL
    sol = plan_solution("brute", problem, Plan(tuple(tuple(r) for r in best[1])), status, wall)
    assert sol.objective == best[0]
    info = {"plans": n, "reason": _stopped("brute", options.time_limit_s)} if clock.stopped else {"plans": n}
    bound = None if clock.stopped else sol.objective
    return Solution(sol.solver, sol.status, sol.plan, sol.objective, bound, sol.level_units, wall, info)


def solve_split(network: Network, array: ArraySpec, space: Space, alphas, max_plans: int = SPLIT_MAX_PLANS,
                free: FreeAlphas = FreeAlphas.UNLIKE, rules: SplitRules = TIME_ONLY,
                time_limit_s: float | None = None) -> Solution:
    """The least objective over every plan of the declared space (``alphas``: an AlphaSpace, or a
    grid declared with ``free``) of the types ``rules`` allow, each scored by ``evaluate_split``
    and kept only if it keeps to every cap and memory limit (``SplitRules.violations``); under
    traffic, ties go to the least step time (lexicographic (traffic, step time)); OPTIMAL
    (it is exhaustive), or INFEASIBLE when no plan keeps to them; past ``time_limit_s`` FEASIBLE
    with the best plan so far and no bound, or UNKNOWN without one (module docstring). With a time
    limit, refused once the first ``RATE_PROBE`` plans' measured rate says the rest
    would not end within it (``_Rate``)."""
    from .uneven import _columns, _columns_plan, _space_of, least_column_counts

    t0 = time.perf_counter()
    check_array(array)
    check_network(network)
    H = array.levels
    aspace = _space_of(array, alphas, free)
    least = least_column_counts(network, space, aspace, H, rules)  # counted before the columns are built
    _check_size(math.prod(least), max_plans, f"{len(least)} layers, up to {format_count(max(least))} columns each")
    columns = _columns(network, space, aspace, H, rules)
    n = math.prod(map(len, columns))
    shape = f"{len(columns)} layers, up to {format_count(max(map(len, columns)))} columns each"
    _check_size(n, max_plans, shape)
    best = None
    clock = _Clock(t0, time_limit_s)
    rate = _Rate(n, shape, time_limit_s)
    for cols in itertools.product(*columns):
        if clock.over():
            break
        rate.scored(t0)
        plan = _columns_plan(cols, H)
        ev = evaluate_split(network, array, plan, rules.weight_copies)
        if rules.side_constrained and not rules.feasible(ev, array, plan):
            continue
        t = (rules.value(ev), ev.step_time_s)  # traffic: ties to the least step time
        if best is None or t < best[0]:
            best = (t, plan)
    wall = time.perf_counter() - t0
    if clock.stopped:
        return split_solution("brute", Status.UNKNOWN if best is None else Status.FEASIBLE, None if best is None else best[1],
                              None if best is None else best[0][0], None, wall, n, objective=rules.objective)
    if best is None:
        return split_solution("brute", Status.INFEASIBLE, None, None, None, wall, n, objective=rules.objective)
    return split_solution("brute", Status.OPTIMAL, best[1], best[0][0], best[0][0], wall, n, objective=rules.objective)
