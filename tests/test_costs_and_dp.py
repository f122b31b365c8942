"""Integer cost tables vs the rational model; the DP vs per-level enumeration."""

import itertools
import random
from fractions import Fraction

import pytest

from explorer.core.comm import add_type, inter_amount, intra_amount, zero_counts
from explorer.core.costs import compositions
from explorer.core.evaluate import evaluate
from explorer.core.partition import Space
from explorer.core.randnet import random_chain
from explorer.solvers import dp
from explorer.core.solution import Status

from .conftest import make_array, problem_of


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("space", list(Space))
def test_tables_equal_rational_model_times_unit(seed, space):
    rng = random.Random(seed)
    H = rng.randint(1, 5)
    net = random_chain(seed, rng.randint(2, 5))
    tables = problem_of(net, H, space).tables
    u = tables.unit_per_element
    assert u == 4 * 2**H
    for h in range(H):
        for counts in compositions(h, space):
            for l, layer in enumerate(net.layers):  # noqa: E741
                for t in space.types:
                    assert tables.intra(l, t, counts) == intra_amount(layer, net.batch, t, counts) * u
            for e, (a, b) in enumerate(net.edges):
                for tp in space.types:
                    for tn in space.types:
                        exact = inter_amount(net.layers[b], net.batch, tp, tn, counts) * u
                        assert exact.denominator == 1
                        assert tables.inter(e, tp, tn, counts) == exact


def test_compositions_count():
    assert len(compositions(3, Space.HYPAR)) == 4
    assert len(compositions(3, Space.ACCPAR)) == 10
    assert all(sum(c) == 3 for c in compositions(3, Space.ACCPAR))


def level_optimum_by_enumeration(net, arr, space, plan_above):
    """min over all K^L choices of level h of c_h, with levels < h fixed (evaluator, Fractions)."""
    L = len(net.layers)
    counts = zero_counts(L)
    for row in plan_above:
        counts = [add_type(counts[l], row[l]) for l in range(L)]  # noqa: E741
    best = None
    for row in itertools.product(space.types, repeat=L):
        c = sum(intra_amount(net.layers[l], net.batch, row[l], counts[l]) for l in range(L))  # noqa: E741
        c += sum(inter_amount(net.layers[v], net.batch, row[u], row[v], counts[v]) for u, v in net.edges)
        best = c if best is None or c < best else best
    return best


@pytest.mark.parametrize("seed", range(60))
def test_dp_is_level_optimal_on_random_chains(seed):
    rng = random.Random(1000 + seed)
    space = rng.choice(list(Space))
    H = rng.randint(1, 4)
    L = rng.randint(1, 6 if space is Space.HYPAR else 5)
    net = random_chain(seed, L)
    arr = make_array(H)
    problem = problem_of(net, H, space)
    sol = dp.solve(problem)
    assert sol.status is Status.LEVEL_OPTIMAL
    ev = evaluate(net, arr, space, sol.plan)
    assert [Fraction(u, problem.tables.unit_per_element) for u in sol.level_units] == list(ev.level_cost)
    for h in range(H):
        assert ev.level_cost[h] == level_optimum_by_enumeration(net, arr, space, sol.plan.types[:h])


def test_dp_honours_pins_and_forbids(two_layer):
    from explorer.core.constraints import Constraints, Forbid, Pin
    from explorer.core.partition import PartitionType as T

    p = problem_of(two_layer, 2, Space.ACCPAR)
    free = dp.solve(p)
    assert free.plan.types[0] == (T.III, T.II)
    pinned = dp.solve(p.with_constraints(Constraints(pins=(Pin(0, 0, T.I),), forbids=(Forbid(1, T.II),))))
    assert pinned.plan.types[0][0] is T.I
    assert all(row[1] is not T.II for row in pinned.plan.types)
    none_left = dp.solve(p.with_constraints(Constraints(pins=(Pin(0, None, T.I),), forbids=(Forbid(0, T.I),))))
    assert none_left.status is Status.INFEASIBLE and none_left.plan is None


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("space", list(Space))
def test_vectorised_level_rows_equal_scalar_lookups(seed, space):
    rng = random.Random(seed)
    H = rng.randint(1, 6)
    net = random_chain(seed, rng.randint(1, 8))
    tables = problem_of(net, H, space).tables
    h = rng.randint(0, H - 1)
    states = compositions(h, space)
    counts = [rng.choice(states) for _ in net.layers]
    intra, inter = tables.level_rows(counts)
    assert intra == [tables.intra_row(l, c) for l, c in enumerate(counts)]  # noqa: E741
    assert inter == [tables.inter_matrix(e, counts[v]) for e, (_, v) in enumerate(net.edges)]
    assert inter == [[[tables.inter(e, a, b, counts[v]) for b in space.types] for a in space.types] for e, (_, v) in enumerate(net.edges)]
