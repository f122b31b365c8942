"""Exact joint optimum without CP-SAT: DPs and eliminations over type vectors (a node's type at
every level; K^H of them, 2^H for a join, which takes only I and II).

The derivation: docs/derivations.md, "The exact joint DP".
"""

from __future__ import annotations

import time
from dataclasses import replace


from explorer.core.errors import InstanceTooLarge
from explorer.core.names import given_as
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

from .elimination import chain_backtrack, chain_forward, graph_optimum, graph_peak_entries, instead, vectors_plan
from .vectors import VectorCosts

DEFAULT_MAX_STATES = 200_000  # type vectors per layer: 3^11 = 177,147 (accpar), 2^17 (hypar)
MAX_STORED = 40_000_000  # layers * K^H forward values kept for backtracking (int64: 320 MB)


MAX_MEMORY = 2**30  # bytes the estimate (``memory_estimate``, ``constrained_estimate``) may reach
# bytes a constrained solve's label passes and restricted CP-SAT model may bring it to (``_Chain.fits``):
# ResNet-18 at H = 6 under a binding memory limit proves its optimum by labels in 1.5 GB (8 s; CP-SAT: 15-50 s)
MAX_LABEL_MEMORY = 2 * 2**30


def check_size(problem: Problem, max_states: int | None = None) -> int:
    """Refuse an instance beyond the limits; else the bytes its solve is estimated to hold
    (``constrained_estimate`` under caps or memory, else ``memory_estimate``)."""
    K, H, L = len(problem.space.types), problem.levels, problem.num_layers
    limit = max_states or DEFAULT_MAX_STATES
    n = K**H
    if n > limit:
        raise InstanceTooLarge(
            f"exact: {K}^{H} = {n:,} type vectors per layer ({problem.space} space, {H} levels) exceeds its limit "
            f"of {limit:,}; use {given_as('--solver')} cpsat"
        )
    if L * n > MAX_STORED:
        raise InstanceTooLarge(
            f"exact: {problem.network.node_words} x {n:,} type vectors = {L * n:,} stored values exceeds its limit "
            f"of {MAX_STORED:,}; {instead(problem)}"
        )
    need = constrained_estimate(problem) if coupled(problem) else memory_estimate(problem)
    if need > MAX_MEMORY:
        raise InstanceTooLarge(f"exact: about {need / 2**20:,.0f} MiB of arrays needed, beyond its limit of "
                               f"{MAX_MEMORY / 2**20:,.0f} MiB; {instead(problem)}")
    return need


def memory_estimate(problem: Problem) -> int:
    """Bytes an unconstrained solve holds at its peak (``bench/bench_memory_guard.py`` measures
    it within 1.5x), from the node sizes alone (nothing is allocated): per node its vectors'
    objective costs and pins-and-forbids mask (no per-level intra arrays: ``intra_vec`` builds the
    sum prefix by prefix); each domain's digit, type and prefix tables; on chains the forward values and one
    step's temporaries; on graphs every message the elimination makes (kept for the backtrack)
    plus the largest step's tables (``elimination.graph_peak_entries``), and ``BASE_BYTES``."""
    shape = _Shape(problem)
    sizes = [d.V for d in shape.dom]
    total = sum(sizes)
    per_node = total + total // 8
    domains = sum((3 * shape.H + 2) * V for V in set(sizes))
    if problem.network.is_chain:
        step = total + 5 * max(sizes)  # the forward values; a step's running minimum and its terms
    else:
        step = graph_peak_entries(shape)
    return 8 * (per_node + domains + step) + BASE_BYTES


def constrained_estimate(problem: Problem) -> int:
    """Bytes a solve under caps or a memory limit holds before its label passes (which then check
    their own bytes against ``MAX_LABEL_MEMORY`` as they grow: ``_Chain.fits``): ``memory_estimate``,
    and per vector of every node its footprint and each resource's intra part; on chains the
    forward values at the best multipliers, the backward values kept per multiplier (the best,
    the objective alone and ``SCALES``'s) and each resource's completion bounds; on graphs a
    second elimination record (the best multipliers' and the trial's) and the min-marginals."""
    from .chain_labels import SCALES

    shape = _Shape(problem)
    total = sum(d.V for d in shape.dom)
    cons = problem.constraints
    res = len(cons.caps) + (cons.memory_bytes is not None)
    per_vector = res + (cons.memory_bytes is not None)
    if problem.network.is_chain:
        per_vector += 1 + (2 + len(SCALES)) + res
        return memory_estimate(problem) + 8 * total * per_vector
    return memory_estimate(problem) + 8 * (total * (per_vector + 1) + graph_peak_entries(shape))


BASE_BYTES = 4 * 2**20  # what a solve allocates beyond its arrays (records, cost rows, allocator slack)


class _Dom:
    __slots__ = ("K", "V")

    def __init__(self, K: int, H: int):
        self.K, self.V = K, K**H


class _Shape:
    """What ``graph_peak_entries`` reads of a ``VectorCosts`` (domain sizes, edges), without its arrays."""

    def __init__(self, problem: Problem):
        self.problem, self.H, self.N = problem, problem.levels, problem.num_layers
        self.edges = problem.network.edges
        self.dom = [_Dom(len(problem.node_types(n)), self.H) for n in range(self.N)]


def coupled(problem: Problem) -> bool:
    """Whether the problem carries constraints that couple layers (caps, memory)."""
    return bool(problem.constraints.caps) or problem.constraints.memory_bytes is not None


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    options = options or SolveOptions()
    if options.started is None:  # a time limit counts the checks and cost tables before the constrained solve
        options = replace(options, started=time.perf_counter())
    need = check_size(problem, options.max_states)
    if problem.network.is_chain:
        if coupled(problem):
            from .constrained import solve_constrained

            return solve_constrained(problem, options, None, need, MAX_LABEL_MEMORY)
        return solve_chain(problem, options)
    return solve_graph(problem, options, need)


# chains ------------------------------------------------------------------------------------------
def solve_chain(problem: Problem, options: SolveOptions) -> Solution:
    t0 = time.perf_counter()
    vc = VectorCosts(problem)
    alphas = chain_forward(vc)
    value = alphas[-1].min()
    if value >= vc.big:
        return _infeasible(t0, "pins and forbids leave no plan")
    plan = vectors_plan(vc, chain_backtrack(vc, alphas))
    return _finish(problem, plan, int(value), time.perf_counter() - t0,
                   {"type_vectors_per_layer": vc.dom[0].V, "method": "chain-dp"})


# graphs ------------------------------------------------------------------------------------------
def solve_graph(problem: Problem, options: SolveOptions, held: int | None = None) -> Solution:
    """Exact joint optimum on a graph: variable elimination over type vectors (see module doc).
    ``held``: ``constrained_estimate`` when ``check_size`` made it (under caps or memory)."""
    t0 = time.perf_counter()
    vc = VectorCosts(problem)
    if coupled(problem):
        from .constrained import solve_constrained

        held = constrained_estimate(problem) if held is None else held
        return solve_constrained(problem, options, vc, held, MAX_LABEL_MEMORY)
    value, vectors, widest = graph_optimum(vc)
    if vectors is None:
        return _infeasible(t0, "pins and forbids leave no plan")
    return _finish(problem, vectors_plan(vc, vectors), value, time.perf_counter() - t0,
                   {"type_vectors_per_layer": max(d.V for d in vc.dom), "width": widest, "method": "graph-elimination"})


# shared ------------------------------------------------------------------------------------------
def _infeasible(t0: float, reason: str) -> Solution:
    return Solution("exact", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0,
                    {"reason": reason, "method": "proof"})


def _finish(problem: Problem, plan: Plan, value: int, wall: float, info: dict) -> Solution:
    """Score the plan from the tables, check it against the DP value and the coupling constraints."""
    sol = plan_solution("exact", problem, plan, Status.OPTIMAL, wall)
    broken = problem.plan_violations_units(sol.level_units, plan.types)
    if broken:  # caps and memory go through solvers.constrained: a plan here has none to break
        raise AssertionError("exact: an unconstrained solve's plan breaks " + "; ".join(broken))
    if sol.objective != value:
        raise AssertionError(f"exact: DP value {value} != table re-score {sol.objective}")
    return Solution(sol.solver, sol.status, sol.plan, sol.objective, sol.objective, sol.level_units, wall, info)
