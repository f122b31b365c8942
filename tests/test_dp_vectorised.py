"""The DP's vectorised chain scan gives the reference scan's plans and costs bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from explorer.core import thresholds
from explorer.core.comm import advance, zero_counts
from explorer.core.constraints import Constraints, Forbid, Pin
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.solvers import dp

from explorer.core.array import synthetic_array

from .conftest import make_array, numpy_from
from .test_reference_program import ALEXNET, REFERENCE, VGG11, network


@pytest.fixture(autouse=True)
def _numpy_from(monkeypatch):
    numpy_from(monkeypatch)  # this module's long chains take the numpy paths


def vectorised(problem, h, counts):
    """The vectorised scan on any chain (``dp_level`` gives short chains to the Python scan)."""
    return dp.chain_level_vectorised(problem, h, counts, min_layers=1)


def both_ways(problem: Problem) -> int:
    """Run the hierarchical loop with both chain scans, asserting equal rows and costs at every
    level; return how many levels had a tie (two types of the last layer at the same cost)."""
    counts = zero_counts(problem.num_layers)
    ties = 0
    for h in range(problem.levels):
        ref = dp.chain_level(problem, h, counts)
        fast = vectorised(problem, h, counts)
        assert fast is not None
        assert fast[1] == ref[1] and fast[0] == ref[0], f"level {h}"
        intra, inter = problem.tables.level_arrays(counts)
        cost = dp.min_plus_prefix(intra, inter)
        ties += int((cost == cost.min(axis=1, keepdims=True)).sum(axis=1).max() > 1)
        counts = advance(counts, ref[0])
    return ties


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_same_plans_on_random_chains(space):
    ties = 0
    for seed in range(40):
        rng = random.Random(seed)
        # tiny shapes make equal costs (ties) common; long chains exercise every recursion shape
        L = rng.choice([1, 2, 3, 5, 17, 33, 64, 100, 257])
        net = random_chain(seed, L, batch=rng.choice([1, 2, 4]), max_channels=rng.choice([2, 4, 64]), max_size=rng.choice([1, 2, 8]))
        ties += both_ways(Problem(net, make_array(rng.randint(1, 7)), space))
    assert ties > 10, "the instances should include ties, where tie-breaking matters"


@pytest.mark.parametrize("seed", range(12))
def test_same_plans_with_pins_and_forbids(seed):
    rng = random.Random(seed)
    space = rng.choice(list(Space))
    L, H = rng.randint(2, 40), rng.randint(1, 5)
    net = random_chain(seed, L, batch=2, max_channels=4, max_size=2)
    pins = tuple(Pin(rng.randrange(L), rng.choice([None] + list(range(H))), rng.choice(space.types)) for _ in range(rng.randint(1, 4)))
    forbids = tuple(Forbid(rng.randrange(L), rng.choice(space.types)) for _ in range(rng.randint(0, 4)))
    problem = Problem(net, make_array(H), space, constraints=Constraints(pins, forbids))
    try:
        both_ways(problem)
    except dp.NoPlan:  # a pin and a forbid on the same layer can leave it without a type
        with pytest.raises(dp.NoPlan):
            dp.hierarchical_dp(problem)


def test_overflow_risk_falls_back_to_python():
    # 2^26-wide fc layers: weights 2^52 elements = 2^58 units at H = 4, each below the tables'
    # int64 limit (2^60), but a chain of 40 could overflow a sum
    big = [Layer(f"fc{i}", LayerKind.FC, 2**26, 2**26) for i in range(40)]
    problem = Problem(Network.chain("big", 2**14, big), make_array(4), Space.ACCPAR)
    counts = zero_counts(len(big))
    assert problem.tables.level_arrays(counts) is not None
    assert vectorised(problem, 0, counts) is None
    assert dp.dp_level(problem, 0, counts) == dp.chain_level(problem, 0, counts)
    long = Problem(Network.chain("long", 2**14, big * 4), make_array(4), Space.ACCPAR)  # 160 layers
    assert long.num_layers >= thresholds.NUMPY_FROM_LAYERS and dp.chain_level_vectorised(long, 0, zero_counts(160)) is None
    # beyond int64 in the tables themselves: no arrays at all
    huge = Problem(Network.chain("huge", 2**40, big[:2]), make_array(4), Space.ACCPAR)
    assert huge.tables.level_arrays(zero_counts(2)) is None
    assert vectorised(huge, 0, zero_counts(2)) is None
    plan, units = dp.hierarchical_dp(huge)
    assert plan.levels == 4 and len(units) == 4


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 16, 17, 31, 32, 33, 100, 513])
def test_prefix_scan_equals_sequential_scan(n):
    rng = np.random.default_rng(n)
    K = 3
    intra = rng.integers(0, 50, size=(n, K), dtype=np.int64)
    inter = rng.integers(0, 50, size=(n - 1, K, K), dtype=np.int64) if n > 1 else np.zeros((0, K, K), dtype=np.int64)
    intra[rng.random((n, K)) < 0.2] = dp.SATURATED  # blocked choices
    expect = [np.minimum(intra[0], dp.SATURATED).tolist()]
    for l in range(1, n):  # noqa: E741
        prev = expect[-1]
        expect.append([min(min(prev[a] + int(inter[l - 1][a][k]) for a in range(K)) + int(intra[l][k]), dp.SATURATED) for k in range(K)])
    assert dp.min_plus_prefix(intra, inter).tolist() == expect


@pytest.mark.parametrize("key", list(REFERENCE), ids=lambda k: f"{k[0]}-{k[1].value}")
def test_vectorised_scan_reproduces_the_reference_program(key):
    # the published program's plans and costs (tests/test_reference_program.py), vectorised
    name, space = key
    problem = Problem(network(ALEXNET if name == "alexnet" else VGG11), synthetic_array(7), space)
    counts = zero_counts(problem.num_layers)
    for h, (cost, parts) in enumerate(REFERENCE[key]):
        row, units = vectorised(problem, h, counts)
        assert "".join(str(t.index) for t in row) == parts and units == cost * problem.tables.unit_per_element
        counts = advance(counts, row)


def test_long_chains_take_the_vectorised_scan():
    problem = Problem(random_chain(3, thresholds.NUMPY_FROM_LAYERS), make_array(3), Space.ACCPAR)
    counts = zero_counts(problem.num_layers)
    assert dp.chain_level_vectorised(problem, 0, counts) is not None
    assert dp.chain_level_vectorised(Problem(random_chain(3, thresholds.NUMPY_FROM_LAYERS - 1), make_array(3)), 0, counts[1:]) is None


@pytest.mark.parametrize("seed", range(8))
def test_plan_level_units_equals_table_lookups(seed):
    # plan_level_units sums a level from level_arrays (from thresholds.NUMPY_FROM_LAYERS layers; below, the
    # lookups); the per-entry lookups are the reference for both
    from explorer.core.costs import _row_units_vectorised, plan_level_units
    from explorer.core.randnet import random_dag_spec
    from explorer.frontends.network_yaml import parse_network

    rng = random.Random(seed)
    space = rng.choice(list(Space))
    net = parse_network(random_dag_spec(seed, rng.randint(2, 15)), "dag") if seed % 2 else random_chain(seed, rng.randint(1, 30))
    problem = Problem(net, make_array(rng.randint(1, 5)), space)
    tables = problem.tables
    rows = tuple(tuple(rng.choice(problem.node_types(n)) for n in range(len(net.layers))) for _ in range(problem.levels))
    counts, expect = zero_counts(len(net.layers)), []
    for row in rows:
        c = sum(tables.intra(n, row[n], counts[n]) for n in range(len(net.layers)))
        c += sum(tables.inter(e, row[u], row[v], counts[v]) for e, (u, v) in enumerate(tables.edges))
        expect.append(c)
        assert _row_units_vectorised(tables, row, counts) == c
        counts = advance(counts, row)
    assert plan_level_units(tables, rows) == expect
