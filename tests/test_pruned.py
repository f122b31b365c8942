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
    assert got.info["dual_bound"] <= want.objective


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
