"""The torus link by link (``core.torus_links``, docs/uneven.md "Uneven splits on a torus"): a
hand golden of an uneven split below the top (the busiest link carries 1.5x the pair formula's
load), the link model equal to the pair formula wherever every split below the top is 1/2 (the
even torus model's b_h) on seeded random torus instances of 1 to 4 levels, never below it and
often above where a split below the top is uneven, and the integer table's link windows (what
the exact DP and CP-SAT sum) equal to the busiest links on random plans."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.core.evaluate import evaluate_split, split_evaluation
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.core.split_amounts import split_amounts
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.timing import Topology
from explorer.core.torus_links import busiest_links, leaf_coords, link_loads, link_seconds, link_share
from explorer.core.comm import whole_sizes
from explorer.core.uneven import group_amounts, group_tensors, level_shares
from explorer.frontends import load_model

from .test_uneven_model import NET, mix

I, II = PartitionType.I, PartitionType.II
HALF = F(1, 2)


def torus(levels, peaks, bw=10, dtype=2):
    return replace(mix(levels, peaks, bw, dtype), topology=Topology.TORUS)


def torus_times(net, arr, plan, fast=True):
    """([level][group] exchange seconds link by link, per-leaf step seconds): the evaluator's
    steps on ``link_seconds`` (``fast``: a level whose splits below are 1/2 by the ring load)."""
    comm = link_seconds(net, arr, plan, fast=fast)
    return comm, split_evaluation(net, arr, *split_amounts(net, arr, plan), comm=comm).leaf_time_s


def pair_times(net, arr, plan):
    """``torus_times`` by the pair formula (a group's exchange takes max(side 0, side 1) * dtype /
    b_h), for any alphas: the evaluator's split path without the links, what it would under-count."""
    ev = split_evaluation(net, arr, *split_amounts(net, arr, plan))
    return ev.group_comm_s, ev.leaf_time_s


def test_golden_uneven_split_below_the_top_of_a_2x2_torus():
    """2 x 2 torus of [1, 3, 3, 3] TFLOPS, 10 GB/s links, 2-byte elements. NET (fc 4->2, fc 2->2,
    batch 8): level 0 type I at 1/2, level 1 type II, group 0 (leaves 0, 1) at 1/4, group 1 at 1/2.
    Level 0 (along x, a ring of 2 per y: a tie, half of each send on each of its two links) sends
    dW 8 + 4 = 12 each way. Level 1's II splits D_i, which dW spans: leaf 0 (x 0, y 0) holds and
    sends 12/4 = 3, leaf 1 (x 0, y 1) 9, leaves 2 and 3 6 each; the busiest link (y = 1, from leaf
    1) carries 9/2 elements: 9 B / 10 GB/s = 0.9 ns, where the pair formula gives 12 * 2 B / b_0
    (40 GB/s) = 0.6 ns: 1.5x. Level 1 (along y, a tie; no level below: one leaf a side), group 0:
    each side sends fc1's and fc2's F_out partial sums, 4 * 2 + 4 * 2 = 16, and side 0 the error
    of fc2's input col(1/4) -> duplicated, 1/4 of 8 = 2, side 1 3/4 of 8 = 6: (18, 22), busiest
    link 11: 2.2 ns; group 1: (20, 20), 10: 2.0 ns, both the pair formula's. Compute: leaf 0 1/2 *
    1/4 of 576 FLOP = 72 at 1 TFLOPS, leaf 1 216 at 3: 72 ps; leaves 2, 3 144 at 3: 48 ps. Steps
    0.072 + 0.9 + 2.2 = 3.172 ns (leaves 0, 1) and 0.048 + 0.9 + 2.0 = 2.948 ns; by the pair
    formula 2.872 ns and 2.648 ns."""
    arr = torus(2, [1, 3, 3, 3])
    plan = Plan(((I, I), (II, II)), (((HALF, HALF),), ((F(1, 4), F(1, 4)), (HALF, HALF))))
    assert [leaf_coords(2, leaf) for leaf in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert busiest_links(NET, arr, plan) == ((F(9, 2),), (F(11), F(10)))
    assert [group_amounts(NET, plan, 1, g) for g in range(2)] == [(F(18), F(22)), (F(20), F(20))]
    comm, steps = torus_times(NET, arr, plan)
    assert comm == ((F(9, 10**10),), (F(22, 10**10), F(20, 10**10)))
    assert steps == (F(3172, 10**12),) * 2 + (F(2948, 10**12),) * 2
    pair_comm, pair_steps = pair_times(NET, arr, plan)
    assert pair_comm == ((F(6, 10**10),), (F(22, 10**10), F(20, 10**10)))
    assert pair_steps == (F(2872, 10**12),) * 2 + (F(2648, 10**12),) * 2
    assert comm[0][0] / pair_comm[0][0] == F(3, 2)
    ev = evaluate_split(NET, arr, plan)  # the evaluator scores a torus link by link
    assert ev.group_comm_s == comm and ev.leaf_time_s == steps and ev.step_time_s == F(3172, 10**12)
    assert ev.group_amounts == (((F(12), F(12)),), ((F(18), F(22)), (F(20), F(20))))  # caps and traffic: sides
    # at level 1 type I instead, dW is whole on both leaves of a side (copies send half each): no excess
    even_below = Plan(((I, I), (I, I)), plan.alphas)
    assert torus_times(NET, arr, even_below)[0][0] == pair_times(NET, arr, even_below)[0][0]


def test_link_loads_of_a_ring_of_four():
    """4 x 4 torus, level 2 (x, the axis's second bit: a ring of 4 at distance 1, no tie): a leaf
    whose bit is 0 sends one hop up, 1 one hop down; each directed link carries one leaf's send."""
    sends = {leaf: F(leaf + 1) for leaf in range(16)}
    loads = link_loads(4, 2, sends)
    assert leaf_coords(4, 6) == (1, 2)  # 0110: x from bits 0 and 2 (01), y from bits 1 and 3 (10)
    assert loads[(2, 1, -1)] == 7 and (2, 1, 1) not in loads  # leaf 6: bit 2 set, sends down from x = 1
    assert len(loads) == 16 and sum(loads.values()) == sum(sends.values())
    tie = link_loads(4, 0, sends)  # level 0: x's top bit, distance 2 on a ring of 4, half each way
    assert sum(tie.values()) == 2 * sum(sends.values())  # each half travels 2 links


def _random_plan(rng, net, space, H, below):
    """Random types (offered) and alphas: the top split's from a small grid, the others 1/2 unless ``below``."""
    grid = [F(1, 4), F(1, 3), HALF, F(2, 3), F(3, 4)]
    types = tuple(tuple(rng.choice([t for t in space.types if layer.offers(t, h)]) for layer in net.layers)
                  for h in range(H))
    alphas = tuple(tuple(tuple(rng.choice(grid) if h == 0 or below else HALF for _ in net.layers)
                         for _ in range(2**h)) for h in range(H))
    return Plan(types, alphas)


def _instances(seed, count):
    rng = random.Random(seed)
    for _ in range(count):
        H = rng.choice([1, 2, 3, 4])
        arr = torus(H, [rng.choice([1, 2, 3, 5]) for _ in range(2**H)], bw=rng.choice([1, 10]), dtype=rng.choice([1, 2, 4]))
        net = random_chain(rng.randrange(10**6), rng.choice([2, 3, 4]), max_channels=16, max_size=4)
        yield rng, arr, net, rng.choice([Space.HYPAR, Space.ACCPAR])


def test_every_split_below_the_top_at_one_half_the_links_are_the_pair_formula():
    """What the uneven tables hold on a torus (the top split free, every split below 1/2): link by
    link, each group's exchange and each leaf's step equal the evaluator's, on 60 seeded random
    torus instances of 1 to 4 levels (rings with ties and without)."""
    for rng, arr, net, space in _instances(2020, 60):
        plan = _random_plan(rng, net, space, arr.levels, below=False)
        ev = evaluate_split(net, arr, plan)
        comm, steps = torus_times(net, arr, plan, fast=False)  # every level link by link
        assert comm == ev.group_comm_s and steps == ev.leaf_time_s


@pytest.mark.parametrize("model", ["resnet18", "lenet-c"])
def test_the_tensors_the_links_route_are_the_integer_pair_amounts(model):
    """Summed by side, the tensors ``torus_links`` routes (``uneven.group_tensors``: joins, concat
    shares and every edge kind included) are the integer fast path's amounts (``split_amounts``), on
    random plans with every alpha free."""
    net = load_model(model)
    rng, whole = random.Random(7), whole_sizes(net)
    for _ in range(3):
        plan = _random_plan(rng, net, Space.ACCPAR, 2, below=True)
        shares, amounts = level_shares(net, plan), split_amounts(net, mix(2, [1, 2, 3, 5]), plan)[0]
        for h in range(2):
            for g in range(2**h):
                sides = [F(0), F(0)]
                for side, x, _, _ in group_tensors(net, whole, plan.types[h], plan.alphas[h][g], shares[h][g]):
                    sides[side] += x
                assert tuple(sides) == amounts[h][g] == group_amounts(net, plan, h, g)


def test_an_uneven_split_below_the_top_is_never_cheaper_and_often_dearer_link_by_link():
    """With every alpha free the busiest link carries at least the pair formula's share (a side's
    parts sum to its amount over its links' windows), and more on many of 60 random instances:
    the pair formula would under-count, so the tables score such plans link by link."""
    above = 0
    for rng, arr, net, space in _instances(2021, 60):
        plan = _random_plan(rng, net, space, arr.levels, below=True)
        comm, steps = torus_times(net, arr, plan, fast=False)
        assert (comm, steps) == torus_times(net, arr, plan)  # the fast path where the splits below are 1/2
        pair_comm, pair_steps = pair_times(net, arr, plan)
        assert all(a >= b for row, prow in zip(comm, pair_comm) for a, b in zip(row, prow))
        assert comm[-1] == pair_comm[-1]  # the last level: one leaf a side, nothing below to split
        above += max(steps) > max(pair_steps)
    assert above >= 20


def _sum_vector(costs, net, plan):
    H = plan.levels
    cols = [tuple((plan.types[h][l], tuple(plan.alphas[h][g][l] for g in range(2**h))) for h in range(H))
            for l in range(len(net.layers))]  # noqa: E741
    v = list(costs.layer(0, cols[0]))
    for l in range(1, len(cols)):  # noqa: E741
        for vec in (costs.layer(l, cols[l]), costs.edge(l - 1, cols[l - 1], cols[l])):
            v = [a + b for a, b in zip(v, vec)]
    return v


def test_the_tables_link_windows_are_the_busiest_links():
    """The integer table's link windows (``VectorLayout(links=True)``, summed over a plan's columns
    and edges, times the level's link share, in elements) give each group's busiest link exactly, and
    the time positions' rates its exchange seconds, on 40 seeded random plans with every alpha free."""
    checked = 0
    for rng, arr, net, space in _instances(2022, 40):
        plan = _random_plan(rng, net, space, arr.levels, below=True)
        H = arr.levels
        costs = SplitCosts(net, H, tuple({a for lv in plan.alphas for row in lv for a in row} | {HALF}), VectorLayout(H, links=True))
        v, lay, rates = _sum_vector(costs, net, plan), costs.layout, costs.unit_rates(arr, traffic=False)
        busiest, (comm, _) = busiest_links(net, arr, plan, fast=False), torus_times(net, arr, plan, fast=False)
        for h in range(H):
            for g in range(2**h):
                pos = lay.time_pos[(h, g)]
                assert max(v[p] * rates[p] for p in pos) == comm[h][g]
                if (h, g) in lay.windows:
                    assert max(v[p] for p in pos) * link_share(H, h) / costs.unit == busiest[h][g]
                    checked += 1
    assert checked >= 40
