"""Optima that sit exactly on a limit (issue 24's mutation audit): a cap or memory limit equal to
the use of the optimum under it. Random limits almost never land there, so a solver that prunes
with ``<`` instead of ``<=`` (the graph labels of ``solvers/labels.py``, the chain label pass of
the constrained exact solver) passed the random cross-checks while returning a worse plan as
OPTIMAL. Here every instance's optimum uses its limits exactly; the exact solver must still
match brute force (the oracle) and the independent evaluator must put the plan on the limit."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from explorer.core.constraints import Cap, Constraints
from explorer.core.costs import plan_level_units
from explorer.core.evaluate import evaluate
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import SolveOptions, Status
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import get_solver

from .conftest import make_array

ONE = SolveOptions(workers=1, seed=0)
MAX_PLANS = 2500


def base_problem(seed: int, graph: bool) -> Problem:
    rng = random.Random(seed)
    space = Space.ACCPAR if seed % 3 else Space.HYPAR
    objective = Objective.TIME if seed % 4 == 1 else Objective.TRAFFIC
    K = len(space.types)
    while True:
        H, L = rng.randint(1, 3), rng.randint(3, 6)
        if K ** (H * L) <= MAX_PLANS:
            break
    net = parse_network(random_dag_spec(seed, L), "dag") if graph else random_chain(seed, L)
    bw = [rng.choice([5, 12.5, 25, 60, 100]) for _ in range(H)]
    return Problem(net, make_array(H, bw), space, objective,
                   Constraints(weight_copies=rng.randint(0, 2)))


def every_plan(p: Problem):
    """(objective, level units, footprint units, plan) of every plan, from the shared tables."""
    rows = [list(itertools.product(*[p.allowed(h, n) for n in range(p.num_layers)])) for h in range(p.levels)]
    for levels in itertools.product(*rows):
        plan = Plan(tuple(tuple(r) for r in levels))
        units = plan_level_units(p.tables, plan.types)
        yield p.weights.value(units), tuple(units), p.footprint_units(plan.types), plan


def to_bytes(p: Problem, units: int) -> Fraction:
    return Fraction(units * p.array.dtype_bytes, p.tables.unit_per_element)


def limits_on_the_optimum(p: Problem, rng: random.Random):
    """Constraints with every cap and the memory limit at exactly the use of the optimum under
    them, binding (the free optimum breaks them), and that optimum; None when the draw gives none.

    A random plan's uses as limits; the least plan within them (it uses no more); its own uses as
    the limits: it stays the least feasible plan, now exactly on every limit."""
    plans = list(every_plan(p))
    free = min(f for f, *_ in plans)
    for _ in range(6):
        _, units0, foot0, _ = rng.choice(plans)
        inside = [x for x in plans if all(a <= b for a, b in zip(x[1], units0)) and x[2] <= foot0]
        f, units, foot, plan = min(inside, key=lambda x: x[0])
        if f > free:  # binding: every free optimum breaks a limit
            caps = tuple(Cap(h, to_bytes(p, u), "test") for h, u in enumerate(units))
            return Constraints(caps=caps, memory_bytes=to_bytes(p, foot),
                               weight_copies=p.constraints.weight_copies), f, plan
    return None


def single_limit_on_the_optimum(p: Problem, rng: random.Random):
    """One limit (a cap or the memory) at a value every optimum under it uses exactly: the plans
    strictly below it are all worse, so pruning at the limit with ``<`` loses the optimum."""
    plans = list(every_plan(p))
    resources = [("cap", h) for h in range(p.levels)] + [("memory", None)]
    rng.shuffle(resources)
    for kind, h in resources:
        use = [(x[1][h] if kind == "cap" else x[2], x[0]) for x in plans]
        free_use = min(u for u, f in use if f == min(g for _, g in use))
        best_at: dict[int, int] = {}
        for u, f in use:
            best_at[u] = min(best_at.get(u, f), f)
        levels = sorted(best_at)
        run, on_cap = None, []
        for u in levels:  # run: the least objective strictly below u
            if u < free_use and (run is None or best_at[u] < run):
                on_cap.append((u, best_at[u]))
            run = best_at[u] if run is None else min(run, best_at[u])
        if on_cap:
            u, f = rng.choice(on_cap)
            limit = to_bytes(p, u)
            cons = (Constraints(caps=(Cap(h, limit, "test"),), weight_copies=p.constraints.weight_copies)
                    if kind == "cap" else Constraints(memory_bytes=limit, weight_copies=p.constraints.weight_copies))
            return cons, f, kind, h
    return None


def check_on_the_limit(q: Problem, f: int, methods: list[str], seed) -> None:
    b = get_solver("brute")(q, ONE)
    e = get_solver("exact")(q, ONE)
    assert b.status is Status.OPTIMAL and b.objective == f, seed  # the oracle agrees with the enumeration
    assert e.status is Status.OPTIMAL and e.objective == e.bound == f, (seed, e.objective, f, e.info)
    ev = evaluate(q.network, q.array, q.space, e.plan, q.constraints.weight_copies)
    cons = q.constraints
    for cap in cons.caps:
        assert ev.level_cost[cap.level] * q.array.dtype_bytes <= cap.bytes, seed
    if cons.memory_bytes is not None:
        assert ev.memory_bytes <= cons.memory_bytes, seed
    methods.append(e.info.get("method", "") + ("+chain-labels" if e.info.get("label_passes") else ""))


@pytest.mark.parametrize("graph", [False, True], ids=["chains", "graphs"])
def test_every_limit_at_the_optimums_use(graph):
    methods: list[str] = []
    on_every_limit = 0
    for seed in range(40):
        p = base_problem(seed, graph)
        drawn = limits_on_the_optimum(p, random.Random(seed))
        if drawn is None:
            continue
        cons, f, plan = drawn
        q = p.with_constraints(cons)
        ev = evaluate(q.network, q.array, q.space, plan, cons.weight_copies)  # the evaluator: exactly on each limit
        assert ev.memory_bytes == cons.memory_bytes
        assert all(ev.level_cost[c.level] * q.array.dtype_bytes == c.bytes for c in cons.caps)
        on_every_limit += 1
        check_on_the_limit(q, f, methods, seed)
    assert on_every_limit >= 12, on_every_limit
    labels = "labels" if graph else "chain-labels"
    assert sum(labels in m for m in methods) >= 3, methods  # the label passes ran on several


@pytest.mark.parametrize("graph, seeds", [(False, range(100, 130)), (True, range(160))], ids=["chains", "graphs"])
def test_one_limit_that_only_plans_on_it_can_meet(graph, seeds):
    # graphs: the labels of solvers/labels.py matter only where the Lagrangian's incumbent is not
    # already the optimum; 7 of these 160 instances are such (each fails with '<' in _prune)
    methods: list[str] = []
    kinds = set()
    for seed in seeds:
        p = base_problem(seed, graph)
        drawn = single_limit_on_the_optimum(p, random.Random(seed))
        if drawn is None:
            continue
        cons, f, kind, h = drawn
        kinds.add(kind)
        check_on_the_limit(p.with_constraints(cons), f, methods, seed)
    assert len(methods) >= 20 and kinds == {"cap", "memory"}, (len(methods), kinds)
    labels = "labels" if graph else "chain-labels"
    assert sum(labels in m for m in methods) >= 3, methods
