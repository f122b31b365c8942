"""Bound and prune (``solvers.pruned``, ``solvers.tree_dual``, ``solvers.survivor_elim``) against
the exact graph elimination and against enumeration."""

from __future__ import annotations

import itertools
from fractions import Fraction
import random

import numpy as np
import pytest

from explorer.core.array import synthetic_array
from explorer.core.errors import InstanceTooLarge, Refused
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_dag_spec
from explorer.core.solution import Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import exact, pruned
from explorer.solvers.survivor_elim import eliminate
from explorer.solvers.tree_dual import dual_bound, plan_cost, spanning_tree
from explorer.solvers.vectors import VectorCosts


def _random_problem(seed: int, levels: int, nodes: int) -> Problem:
    rng = random.Random(seed)
    space = Space.ACCPAR if seed % 3 else Space.HYPAR
    return Problem(parse_network(random_dag_spec(seed, nodes, batch=rng.choice([1, 2, 8])), "dag"), synthetic_array(levels), space)


@pytest.mark.parametrize("seed", range(24))
def test_equals_exact_on_random_graphs(seed):
    rng = random.Random(1000 + seed)
    levels, nodes = rng.randint(2, 6), rng.randint(3, 12)
    while True:  # the most levels (up to the draw) the exact elimination takes on this graph
        problem = _random_problem(seed, levels, nodes)
        try:
            want = exact.solve(problem)
            break
        except InstanceTooLarge:
            levels -= 1
    got = pruned.solve(problem)
    assert got.status is Status.OPTIMAL
    assert got.objective == got.bound == want.objective
    assert got.info.get("dual_bound", 0) <= want.objective  # (none when the chain of blocks settled it at once)


@pytest.mark.parametrize("name,levels", [("resnet18", 6), ("mobilenet-v2", 5), ("bert-base", 5), ("gpt2-small", 5), ("vit-b16", 5),
                                         ("efficientnet-b0", 5), ("llama-7b", 4), ("resnet50", 8)])
def test_equals_exact_on_zoo_graphs(name, levels):
    problem = Problem(load_model(name), synthetic_array(levels), Space.ACCPAR)
    want = exact.solve(problem)
    got = pruned.solve(problem)
    assert got.status is Status.OPTIMAL
    assert got.objective == got.bound == want.objective


@pytest.mark.parametrize("seed", range(6))
def test_marginals_bound_every_plan_by_enumeration(seed):
    """Every node vector's marginal is at most the least cost of the plans using it; the bound
    is at most the optimum; the incumbent's cost is its plan's."""
    problem = _random_problem(seed, 2, 4)
    vc = VectorCosts(problem)
    least = [np.full(vc.dom[n].V, np.iinfo(np.int64).max) for n in range(vc.N)]
    for vectors in itertools.product(*(range(vc.dom[n].V) for n in range(vc.N))):
        cost = plan_cost(vc, list(vectors))
        for n, v in enumerate(vectors):
            least[n][v] = min(least[n][v], cost)
    res = dual_bound(vc, rounds=5)
    assert res.bound <= min(int(x.min()) for x in least)
    assert res.incumbent == plan_cost(vc, res.vectors)
    for n in range(vc.N):
        assert (res.marginals[n] <= least[n]).all()


def test_graph_with_a_cycle_has_dropped_edges():
    problem = Problem(load_model("resnet18"), synthetic_array(3), Space.ACCPAR)
    vc = VectorCosts(problem)
    tree, dropped = spanning_tree(vc)
    assert len(tree) == vc.N - 1 and len(dropped) == len(vc.edges) - len(tree) > 0


@pytest.mark.parametrize("seed", range(6))
def test_survivor_elimination_over_every_vector_is_exact(seed):
    problem = _random_problem(seed, 3, 8)
    vc = VectorCosts(problem)
    value, vectors = eliminate(vc, [np.arange(vc.dom[n].V) for n in range(vc.N)])
    assert value == exact.solve(problem).objective == plan_cost(vc, vectors)


def test_survivor_elimination_refuses_past_its_limit():
    problem = _random_problem(1, 4, 6)
    vc = VectorCosts(problem)
    assert eliminate(vc, [np.arange(vc.dom[n].V) for n in range(vc.N)], max_entries=10) is None


def test_memory_limit_checked_on_the_plan_caps_refused():
    """A slack memory limit: the optimum (as exact's constrained method proves it); one the plan
    breaks: refused (the limit binds); a cap: refused before solving."""
    from explorer.core.constraints import Cap, Constraints

    problem = Problem(load_model("resnet18"), synthetic_array(3), Space.ACCPAR)
    slack = problem.with_constraints(Constraints(memory_bytes=10**9))
    got, want = pruned.solve(slack), exact.solve(slack)
    assert got.status is want.status is Status.OPTIMAL and got.objective == got.bound == want.objective
    with pytest.raises(Refused, match="pruned: its plan breaks memory"):
        pruned.solve(problem.with_constraints(Constraints(memory_bytes=10**4)))
    with pytest.raises(Refused, match="pruned: link caps"):
        pruned.solve(problem.with_constraints(Constraints(caps=(Cap(0, Fraction(10**12)),))))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("level_first", [False, True])
def test_survivor_elimination_over_subsets_equals_enumeration(seed, level_first):
    """Random survivor subsets: the elimination (level steps forced wherever one exists, or the
    cheapest steps) returns the least plan over the subsets, by enumeration, and that plan's cost."""
    from explorer.solvers.survivor_elim import plan

    rng = random.Random(500 + seed)
    problem = _random_problem(seed, rng.randint(2, 4), rng.randint(3, 6))
    vc = VectorCosts(problem)
    domains = []
    for n in range(vc.N):
        free = np.flatnonzero(~vc.blocked(n))
        domains.append(np.sort(rng.sample(list(free), min(len(free), rng.randint(1, 3)))))
    steps = plan(vc, [len(d) for d in domains], level_first=level_first)
    if level_first:
        assert any(s.how == "level" for s in steps.steps)
    value, vectors = eliminate(vc, domains, steps=steps)
    want = min(plan_cost(vc, list(v)) for v in itertools.product(*(d.tolist() for d in domains)))
    assert value == want == plan_cost(vc, vectors)
    assert all(v in d for v, d in zip(vectors, domains))


def test_survivor_elimination_stops_at_the_deadline():
    problem = _random_problem(2, 4, 8)
    vc = VectorCosts(problem)
    assert eliminate(vc, [np.arange(vc.dom[n].V) for n in range(vc.N)], deadline=0.0) is None


def test_time_limit_bounds_the_whole_solve(monkeypatch):
    """A tiny limit on a big graph (ResNet-50 on 1,024 accelerators, where a dual round takes
    about a second): every step the solve runs is given a deadline within the limit counted from
    its start (the dual its share, the whole-chain try, the DP's start and the eliminations
    ``solve_end``), and it ends feasible, its bound below its plan. No wall-clock bound beyond a
    generous one (a solve with no deadline at all): under load the last step overruns its deadline
    by a slice (trial 14: 3.53 s of a 3 s limit at load 7), which is timing, not the clock's logic."""
    import time

    from explorer.core.solution import SolveOptions
    from explorer.solvers import block_chain
    from explorer.solvers.deadline import solve_end

    seen: dict[str, list[float]] = {"dual": [], "chain": [], "dp": [], "elimination": []}

    def spy(name, real, at):
        def call(*args, **kwargs):
            seen[name].append(kwargs["deadline"] if "deadline" in kwargs else args[at])
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(pruned, "dual_bound", spy("dual", pruned.dual_bound, 2))
    monkeypatch.setattr(block_chain, "solve_whole", spy("chain", block_chain.solve_whole, 3))
    monkeypatch.setattr(pruned, "dp_plan", spy("dp", pruned.dp_plan, 1))
    monkeypatch.setattr(pruned, "eliminate", spy("elimination", pruned.eliminate, 3))
    problem = Problem(load_model("resnet50"), synthetic_array(10), Space.ACCPAR)
    t0 = time.perf_counter()
    got = pruned.solve(problem, SolveOptions(time_limit_s=3.0, started=t0))
    wall = time.perf_counter() - t0
    assert got.status is Status.FEASIBLE and got.bound <= got.objective
    assert seen["chain"] == [solve_end(t0, 3.0)] and seen["dp"] and set(seen["dp"]) == {solve_end(t0, 3.0)}
    assert all(t0 + pruned.DUAL_SHARE * 3.0 <= d <= solve_end(t0, 3.0) for d in seen["dual"])
    assert all(d == solve_end(t0, 3.0) for d in seen["elimination"])
    assert wall < 30.0  # ten times the limit: only a solve that ignores it fails this


@pytest.mark.parametrize("seed", range(4))
def test_level_steps_in_row_blocks_over_threads_equal_enumeration(seed, monkeypatch):
    """One row per block, two threads: the same least plan as enumeration."""
    from explorer.solvers import survivor_elim

    monkeypatch.setattr(survivor_elim, "ROW_BLOCK", 1)
    rng = random.Random(900 + seed)
    problem = _random_problem(seed, 3, rng.randint(4, 6))
    vc = VectorCosts(problem)
    domains = [np.sort(rng.sample(list(np.flatnonzero(~vc.blocked(n))), 1 + (n % 3))) for n in range(vc.N)]
    steps = survivor_elim.plan(vc, [len(d) for d in domains], level_first=True)
    assert any(s.how == "level" for s in steps.steps)
    value, vectors = eliminate(vc, domains, steps=steps, workers=2)
    want = min(plan_cost(vc, list(v)) for v in itertools.product(*(d.tolist() for d in domains)))
    assert value == want == plan_cost(vc, vectors)
