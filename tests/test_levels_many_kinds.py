"""The level DP on arrays of many kinds (issue 23, item 2: on 1,024 kinds its table's D, the lcm of
1,023 ratios' denominators, has thousands of digits). Past ``split_amounts.ONE_D_BITS`` each group's
terms come from its own Fraction shares and its re-layout coefficients are counted in its class's
own D: the floats the DP reads are the one-D table's, bit for bit, so its plans are the same."""

from __future__ import annotations

import random
import time
from fractions import Fraction

import numpy as np
import pytest

import explorer.solvers.uneven_levels as lv
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import PartitionType, Space
from explorer.core.solution import Status
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_model
from explorer.solvers.uneven_levels import level_dp_plan, levels_uneven

from .test_split_many_kinds import _kinds, _network

ONE, PER_GROUP = 10**9, 0  # ONE_D_BITS: every group in the table's one D; each in its own


def _instance(seed: int):
    rng = random.Random(seed)
    H = rng.randint(1, 3)  # 2-8 kinds
    array, net = _kinds(rng, H), _network(rng)
    return rng, array, net, alpha_space(array, alpha_grid(rng.choice([2, 4, 8])))


def _above(rng, net, aspace, h: int):
    """Random types and alphas (from the declared choices) for the levels above h."""
    types, alphas = [], []
    for k in range(h):
        types.append(tuple(rng.choice([t for t in Space.ACCPAR.types if x.offers(t, k)]) for x in net.layers))
        rows = [tuple(rng.choice(aspace.choices(k, c)) for _ in net.layers) for c in range(len(aspace.class_free[k]))]
        alphas.append(tuple(rows[c] for c in aspace.group_class[k]))
    return types, alphas


def _inputs(monkeypatch, bits: int, net, array, costs, aspace, types, alphas, h: int, cands):
    monkeypatch.setattr(lv, "ONE_D_BITS", bits)
    level = lv._level_inputs(net, array, costs, types, alphas, h, aspace)
    coef = lv._Coefficients(costs, aspace)
    arrays = [lv._node_arrays(level, n, cands[n], coef) for n in range(len(net.layers))]
    dens = coef.level(h, level.group_class)[2]
    pairs = [coef.pairs(net.layers[u], net.layers[v], arrays[u][0], arrays[u][1], arrays[v][0], arrays[v][1],
                        dens=dens) for u, v in net.edges]
    return level, [(a[2], a[3]) for a in arrays], pairs


@pytest.mark.parametrize("seed", range(40))
def test_a_levels_floats_per_group_are_the_one_d_tables(monkeypatch, seed):
    """Seeded arrays of 2-8 kinds, random levels above: every term (FLOPs, intra, re-layout, unit
    counts), every candidate's compute and intra seconds and every re-layout coefficient is the
    same float with each group's own D as with the table's one D."""
    rng, array, net, aspace = _instance(seed)
    costs = SplitCosts(net, array.levels, aspace.values(), VectorLayout(array.levels))
    h = rng.randrange(array.levels)
    types, alphas = _above(rng, net, aspace, h)
    cands = [[(t, tuple(rng.choice(aspace.choices(h, c)) for c in range(len(aspace.class_free[h]))))
              for t in sorted({rng.choice([t for t in PartitionType if x.offers(t, h)]) for _ in range(3)},
                              key=lambda t: t.index)] for x in net.layers]
    one = _inputs(monkeypatch, ONE, net, array, costs, aspace, types, alphas, h, cands)
    own = _inputs(monkeypatch, PER_GROUP, net, array, costs, aspace, types, alphas, h, cands)
    for field in ("flops", "relayout"):
        assert all(np.array_equal(a, b) for a, b in zip(getattr(one[0], field), getattr(own[0], field)))
    assert [{t: x.tolist() for t, x in d.items()} for d in one[0].intra] == [{t: x.tolist() for t, x in d.items()}
                                                                            for d in own[0].intra]
    assert one[0].units == own[0].units
    assert all(np.array_equal(a, b) for x, y in zip(one[1], own[1]) for a, b in zip(x, y))
    assert all(np.array_equal(a, b) for a, b in zip(one[2], own[2]))


@pytest.mark.parametrize("seed", range(12))
def test_the_level_dps_plan_per_group_is_the_one_d_tables(monkeypatch, seed):
    """Seeded arrays of 2-8 kinds: the level DP's plan, its cells and the plan's exact step time are
    the same with each group's own D as with the table's one D, and with its blocks scoring their
    class's groups (``BY_CLASS``) as every group."""
    _, array, net, aspace = _instance(seed)
    out = []
    for bits, by_class in ((ONE, False), (ONE, True), (PER_GROUP, False), (PER_GROUP, True)):
        monkeypatch.setattr(lv, "ONE_D_BITS", bits)
        monkeypatch.setattr(lv, "BY_CLASS", by_class)
        plan, exact, cells = level_dp_plan(net, array, Space.ACCPAR, aspace)
        out.append((plan, exact, cells, TIME_ONLY.value(evaluate_split(net, array, plan))))
    assert out[1:] == out[:1] * 3


def _blocks_both_ways(monkeypatch, net, array, aspace, cells: int):
    """The level DP's (plan, exact levels, cells) with every block scoring every group (the reference)
    and its class's groups alone (``BY_CLASS``; its scores kept, and none kept: ``KEPT_BYTES`` 0),
    blocks forced by ``MAX_CELLS`` = ``cells``; also which block kinds ran (``_blocks``: one per
    class, or types alone then alphas alone)."""
    monkeypatch.setattr(lv, "MAX_CELLS", cells)
    kinds, make = [], lv._blocks
    monkeypatch.setattr(lv, "_blocks", lambda *a: kinds.append(len(b := make(*a)) > len(a[3])) or b)
    out = []
    for by_class, kept in ((False, lv.KEPT_BYTES), (True, lv.KEPT_BYTES), (True, 0)):
        monkeypatch.setattr(lv, "BY_CLASS", by_class)
        monkeypatch.setattr(lv, "KEPT_BYTES", kept)
        out.append(level_dp_plan(net, array, Space.ACCPAR, aspace))
    return out, kinds


@pytest.mark.parametrize("seed", range(40))
def test_blocks_scoring_their_class_are_every_groups(monkeypatch, seed):
    """Seeded arrays of 2-8 kinds (grids 1/2-1/8, free classes unlike), blocks forced at 8,000 and 400
    cells: blocks of (type, one class's alpha) and of types alone then alphas alone give the same
    plans, the same exact-level counts and the same cells scoring their class's groups as every group."""
    _, array, net, aspace = _instance(seed)
    for cells in (8_000, 400):
        out, _ = _blocks_both_ways(monkeypatch, net, array, aspace, cells)
        assert out[1:] == out[:1] * 2


@pytest.mark.parametrize("cells", [1_000_000, 5_000])
def test_64_kinds_blocks_scoring_their_class_are_every_groups(monkeypatch, cells):
    """64 kinds (every group of a level its own class, up to 32 a level), alexnet at grid 1/4: the
    same plan by class as every group, with blocks of (type, one class's alpha) and (5 k cells) of
    types alone then alphas alone, the other classes' costs then read at the current types."""
    array, net = _many(64), load_model("alexnet")
    out, kinds = _blocks_both_ways(monkeypatch, net, array, alpha_space(array, alpha_grid(4)), cells)
    assert out[1:] == out[:1] * 2 and any(a != F2 for level in out[1][0].alphas for row in level for a in row)
    assert any(kinds) is (cells == 5_000)


def _many(n: int) -> ArraySpec:
    """n accelerators, each its own kind (bench_time_limit's KINDS at n = 1,024)."""
    leaves = tuple(AcceleratorKind(f"k{i}", 40 + Fraction(i, 8), Fraction(32)) for i in range(n))
    H = n.bit_length() - 1
    return ArraySpec("kinds", H, 2, (Fraction(70),) * H, min(k.peak_TFLOPS for k in leaves), Fraction(32), leaves=leaves)


def test_64_kinds_the_level_dp_returns_its_own_plan():
    """64 kinds at grid 1/4 (+ the proportional ratios: a table D of dozens of digits, per group
    here): the level DP ends with its own plan (no cut: not the equal stand-in), in the space."""
    array, net = _many(64), load_model("alexnet")
    aspace = alpha_space(array, alpha_grid(4))
    assert SplitCosts(net, array.levels, aspace.values(), VectorLayout(array.levels)).D.bit_length() > lv.ONE_D_BITS
    sol = levels_uneven(net, array, Space.ACCPAR, aspace, moves=False, deadline=time.perf_counter() + 60)
    assert "cut" not in sol.info and sol.plan is not None and aspace.contains(sol.plan)
    assert any(a != F2 for level in sol.plan.alphas for row in level for a in row)
    assert sol.step_time_s == TIME_ONLY.value(evaluate_split(net, array, sol.plan))


F2 = alpha_grid(2)[0]


def test_1024_kinds_proportional_dp_gives_a_plan():
    """1,024 kinds, the proportional alphas alone (``--split proportional --solver dp``): the DP over
    the types ends with a plan (was: cut at 5 s, no plan), status feasible, the evaluator's step time."""
    array, net = _many(1024), load_model("alexnet")
    aspace = alpha_space(array, ())
    sol = levels_uneven(net, array, Space.ACCPAR, aspace, moves=False, deadline=time.perf_counter() + 60)
    assert sol.status is Status.FEASIBLE and "cut" not in sol.info and aspace.contains(sol.plan)
    assert sol.step_time_s == TIME_ONLY.value(evaluate_split(net, array, sol.plan))
