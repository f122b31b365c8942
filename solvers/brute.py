"""Exhaustive enumeration: every plan (K^(L*H) of them), the oracle of last resort.

Plans are enumerated level by level (level 0 first, each level's row in I < II < III
lexicographic order) with costs read from the shared cost tables; the first plan with the
least objective wins. It enforces every constraint the problem carries by checking each
plan. Refuses above ``DEFAULT_MAX_PLANS`` plans (override with ``max_plans``).
"""

from __future__ import annotations

import itertools
import time

from explorer.core.comm import advance, zero_counts
from explorer.core.errors import InstanceTooLarge
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.units import format_count

from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

DEFAULT_MAX_PLANS = 300_000


def plan_count(problem: Problem) -> int:
    """Plans to enumerate: the product over cells of the allowed types (pins and forbids count)."""
    n = 1
    for h in range(problem.levels):
        for l in range(problem.num_layers):  # noqa: E741
            n *= len(problem.allowed(h, l))
    return n


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    options = options or SolveOptions()
    limit = options.max_plans or DEFAULT_MAX_PLANS
    n = plan_count(problem)
    if n > limit:
        K, L, H = len(problem.space.types), problem.num_layers, problem.levels
        count = format_count(n)
        raise InstanceTooLarge(
            f"brute: {count} plans ({L} layers x {H} levels, up to {K} types each) exceeds its limit of {limit:,}; "
            "use --solver exact or cpsat"
        )
    t0 = time.perf_counter()
    tables, weights = problem.tables, problem.weights.weights
    L, H = problem.num_layers, problem.levels
    edges = tables.edges
    rows_by_level = [
        list(itertools.product(*[problem.allowed(h, l) for l in range(L)])) for h in range(H)  # noqa: E741
    ]
    best: list = [None, None, None]  # objective, rows, level costs

    def walk(h: int, counts: list, rows: list, levels: list, acc: int) -> None:
        if h == H:
            if problem.plan_violations_units(levels, rows):
                return
            if best[0] is None or acc < best[0]:
                best[0], best[1], best[2] = acc, list(rows), list(levels)
            return
        for row in rows_by_level[h]:
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
        return Solution("brute", Status.INFEASIBLE, None, None, None, None, wall,
                        {"reason": "no plan satisfies the constraints", "plans": n})
    sol = plan_solution("brute", problem, Plan(tuple(tuple(r) for r in best[1])), Status.OPTIMAL, wall)
    assert sol.objective == best[0]
    return Solution(sol.solver, sol.status, sol.plan, sol.objective, sol.objective, sol.level_units, wall, {"plans": n})
