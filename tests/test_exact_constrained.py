"""The exact solver under side constraints: Lagrangian bound + label setting on chains, the
one-level-at-a-time elimination on graphs, cross-checked against brute force (the oracle) on
seeded random chains and graphs with caps, memory, pins and forbids (both spaces, both
objectives), and against CP-SAT on a share of them."""

import random
from fractions import Fraction

import pytest

from explorer.app.run import rescore
from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.errors import CannotEnforce
from explorer.core.evaluate import evaluate
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import brute, constrained, cpsat, exact

from .conftest import make_array

ONE = SolveOptions(workers=1, seed=0)


def random_instance(seed: int) -> Problem:
    """A tiny chain (3 in 4) or graph, random limits around its free optimum (some bind, some are infeasible)."""
    rng = random.Random(seed)
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    objective = Objective.TRAFFIC if (seed // 2) % 2 else Objective.TIME
    K = len(space.types)
    graph = seed % 4 == 3
    while True:
        H, L = rng.randint(1, 3), rng.randint(2, 5)
        if K ** (H * L) <= 3000:
            break
    net = parse_network(random_dag_spec(seed, L), "dag") if graph else random_chain(seed, L)
    bw = [rng.choice([5, 12.5, 25, 60, 100]) for _ in range(H)]
    base = Problem(net, make_array(H, bw), space, objective)
    free = exact.solve(base)
    wc = rng.randint(0, 2)
    caps = []
    for h in range(H):
        if rng.random() < 0.5:  # between the level's least cost and the free optimum's (sometimes outside)
            least = exact.solve(base.with_weights(tuple(int(k == h) for k in range(H)))).level_units[h]
            units = least + (free.level_units[h] - least) * Fraction(rng.choice([-1, 0, 3, 6, 9, 10, 12]), 10)
            caps.append(Cap(h, max(0, units) * 4 / Fraction(base.tables.unit_per_element), "test"))
    memory = None
    if rng.random() < 0.25:
        ev = evaluate(net, base.array, space, free.plan, wc)
        memory = ev.memory_bytes * Fraction(rng.choice([9, 10, 10, 15]), 10)
    n = base.num_layers
    pins = tuple(Pin(rng.randrange(n), rng.choice([None] + list(range(H))), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    forbids = tuple(Forbid(rng.randrange(n), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    return base.with_constraints(Constraints(pins, forbids, tuple(caps), memory, wc))


@pytest.mark.parametrize("block", range(10))
def test_exact_agrees_with_brute_under_constraints(block):
    # 10 blocks x 52 instances = 520 seeded instances; CP-SAT joins on every 8th one
    for seed in range(52 * block, 52 * (block + 1)):
        p = random_instance(seed)
        b = brute.solve(p)
        try:
            e = exact.solve(p)
        except CannotEnforce:
            # only on graphs, and only when the free optimum really breaks a cap or the memory limit
            assert not p.network.is_chain
            free = exact.solve(p.with_constraints(Constraints(p.constraints.pins, p.constraints.forbids)))
            assert p.plan_violations_units(free.level_units, free.plan.types)
            continue
        assert e.status is b.status, seed
        if b.status is Status.OPTIMAL:
            assert e.objective == b.objective == e.bound, seed
            rescore(p, e)
        else:
            assert e.plan is None
        if seed % 8 == 0:
            c = cpsat.solve(p, ONE)
            assert c.status is b.status and c.objective == b.objective, seed


def test_graphs_at_scale_agree_with_cpsat():
    # ResNet-18 at 32 accelerators, accpar: a graph the (K^H)^3 tables refused; joins are 2^H
    p = Problem(load_model("resnet18"), make_array(5), Space.ACCPAR)
    e, c = exact.solve(p), cpsat.solve(p, SolveOptions(workers=2))
    assert e.status is c.status is Status.OPTIMAL and e.objective == c.objective
    assert e.info["method"] == "graph-elimination"
    rescore(p, e)


def test_label_limit_gives_an_honest_feasible_answer(monkeypatch):
    # with no room for labels, the solver still returns its incumbent with a proven (lower) bound
    net = random_chain(7, 6)
    base = Problem(net, make_array(3), Space.ACCPAR)
    free = exact.solve(base)
    cap = Cap(2, Fraction(free.level_units[2] * 4, base.tables.unit_per_element) * Fraction(6, 10), "test")
    p = base.with_constraints(Constraints(caps=(cap,)))
    full = exact.solve(p)
    c = cpsat.solve(p, ONE)
    assert full.status is c.status is Status.OPTIMAL and full.objective == c.objective
    monkeypatch.setattr(constrained, "MAX_LABELS", 0)
    monkeypatch.setattr(constrained, "BEAM", 1)
    s = exact.solve(p)
    assert s.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert s.bound <= full.objective <= s.objective
    if s.status is Status.FEASIBLE:
        assert s.bound < s.objective and "label limit" in s.info["reason"]
    rescore(p, s)
