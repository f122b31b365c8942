"""The level DP and the uneven routes keep --time-limit at --alpha-grid 1024 and on arrays of many
kinds (hostile trial, HIGH: alexnet / tpu-mix-16 at grid 1024 ran > 90 s at a 5 s limit, 848 MB).
The re-layout coefficients are computed per block from integers (no table over every alpha pair),
the clock is looked at per chunk of them, the block moves end at their first late move, a level's
rows and columns are counted without being enumerated, and a block's memory is estimated first."""

import random
import time
import tracemalloc
from fractions import Fraction as F
from itertools import product

import numpy as np
import pytest

import explorer.solvers.uneven_levels as lv
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.errors import Refused
from explorer.core.partition import (EMBEDDING_TYPES, GROUPED_TYPES, JOIN_NODE_TYPES, LAYER_TYPES, PartitionType,
                                     Space, node_relayouts)
from explorer.core.solution import Status
from explorer.core.split_costs import ARRAY_MAX_D, SplitCosts, VectorLayout, edge_units_array, edge_units_fe
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.deadline import LATE, Cut
from explorer.solvers.uneven import exact_uneven, least_column_counts
from explorer.solvers.uneven_blocks import refine_blocks
from explorer.solvers.uneven_levels import levels_uneven

ALEXNET, MIX = load_model("alexnet"), load_array("tpu-mix-16")
KINDS = (LAYER_TYPES, JOIN_NODE_TYPES, GROUPED_TYPES, EMBEDDING_TYPES)


def _kinds():
    for pt, ct in product(KINDS, KINDS):
        for tu, tv in product(PartitionType, PartitionType):
            if pt.specs[tu.index] is not None and ct.specs[tv.index] is not None:
                yield pt, tu, ct, tv


@pytest.mark.parametrize("D", [2, 12, ARRAY_MAX_D * 3])
def test_integer_coefficients_over_arrays_equal_the_fraction_formula(D):
    """Every edge kind, alphas k/D (int64 arrays, and Python ints past ARRAY_MAX_D): the array form,
    the scalar form and the Fraction formula agree exactly, and so do their floats over D^2."""
    ks = list(range(D + 1)) if D < 20 else [0, 1, D // 3, D // 2, D - 1, D]
    ku, kv = np.array(ks)[:, None], np.array(ks)[None, :]
    for kind in _kinds():
        c0, c1 = edge_units_array(kind, ku, kv, D)
        for (i, x), (j, y) in product(enumerate(ks), enumerate(ks)):
            (f0, f1), (e0, e1) = node_relayouts(kind[1], F(x, D), kind[3], F(y, D), kind[0], kind[2])
            want = [int(c * D * D) for c in (f0, f1, e0, e1)]
            assert list(edge_units_fe(kind, x, y, D)) == want
            assert (int(c0[i, j]), int(c1[i, j])) == (want[0] + want[2], want[1] + want[3])
            assert c0[i, j] / D**2 == (want[0] + want[2]) / D**2  # the float the DP reads, bit for bit


def test_a_blocks_coefficients_are_the_tables_floats():
    """``_Coefficients.pairs`` on random candidates (types and alphas mixed, several groups) gives
    ``SplitCosts.coefficients`` over D^2, the value the former full table held."""
    rng = random.Random(3)
    values = alpha_space(MIX, alpha_grid(8)).values()
    costs = SplitCosts(ALEXNET, 4, values, VectorLayout(4))
    coef = lv._Coefficients(costs)
    U, V = ALEXNET.layers[4], ALEXNET.layers[5]  # conv5 -> fc6
    cand = [sorted((rng.randrange(3), tuple(rng.choice(values) for _ in range(2))) for _ in range(9)) for _ in range(2)]
    tu, tv = (np.array([t for t, _ in c]) for c in cand)
    ku, kv = (np.array([[coef.units[a] for a in row] for _, row in c]) for c in cand)
    got = coef.pairs(U, V, tu, ku, tv, kv)
    types = list(PartitionType)
    for (i, (a, ra)), (j, (b, rb)), g in product(enumerate(cand[0]), enumerate(cand[1]), range(2)):
        c = costs.coefficients(U, types[a], ra[g], V, types[b], rb[g])
        assert list(got[i, j, g]) == [c[0] / costs.D**2, c[1] / costs.D**2]


def test_the_coefficients_look_at_the_clock_per_chunk(monkeypatch):
    """A spy clock that passes after 3 looks: ``pairs`` stops inside one edge (more than one look
    in it), ``_Late`` raised; without the spy the same call ends."""
    monkeypatch.setattr(lv, "PAIR_CHUNK", 1000)
    costs = SplitCosts(ALEXNET, 4, alpha_space(MIX, alpha_grid(64)).values(), VectorLayout(4))
    coef = lv._Coefficients(costs)
    k = np.array([[u] for u in coef.units.values()])
    t = np.zeros(len(k), dtype=int)
    looks = []

    def spy(deadline, error):
        looks.append(deadline)
        if len(looks) > 3:
            raise error

    monkeypatch.setattr(lv, "check_deadline", spy)
    with pytest.raises(lv._Late):
        coef.pairs(ALEXNET.layers[0], ALEXNET.layers[1], t, k, t, k, deadline=1.0)
    assert len(looks) == 4
    monkeypatch.setattr(lv, "check_deadline", lambda deadline, error: looks.append(0))
    assert coef.pairs(ALEXNET.layers[0], ALEXNET.layers[1], t, k, t, k).shape == (len(k), len(k), 1, 2)
    assert len(looks) > 5  # one look per 1000 cells (65 x 65 pairs)


def test_grid_1024_ends_at_a_small_limit_with_a_plan():
    """The trial's instance at a 0.2 s deadline (its level 0 alone takes 0.3-3 s): a plan in the
    space, status feasible, the cut said; it ends within the deadline plus one chunk and the plans'
    scoring (slack for a loaded machine)."""
    aspace = alpha_space(MIX, alpha_grid(1024))
    t0 = time.perf_counter()
    sol = levels_uneven(ALEXNET, MIX, Space.ACCPAR, aspace, deadline=t0 + 0.2)
    assert time.perf_counter() - t0 < 60  # a loose guard only (main: minutes; timings are benched, not asserted)
    assert sol.status is Status.FEASIBLE and sol.info["cut"] in (Cut.LEVEL_DP, Cut.BLOCK_MOVES)
    assert aspace.contains(sol.plan)


def test_block_moves_end_at_their_first_late_move():
    """A rank that turns LATE after 5 evaluations: the descent stops there (main went on through
    every class and grid value, each move late), keeping its best plan."""
    aspace = alpha_space(MIX, alpha_grid(64))
    plan = lv.level_dp_plan(ALEXNET, MIX, Space.ACCPAR, aspace)[0]
    calls = []

    def rank(p):
        calls.append(p)
        return LATE if len(calls) > 5 else (F(len(calls)),)

    out, best, tried = refine_blocks(ALEXNET, MIX, aspace, plan, rank, (F(100),))
    assert tried == len(calls) == 6 and best < (F(100),) and out != plan


def _many_kinds(H: int) -> ArraySpec:
    """2^H accelerators, each its own kind: every group at every level a free class."""
    peaks = [F(40) + F(i, 8) for i in range(2**H)]
    kinds = [AcceleratorKind(f"k{i}", p, F(32)) for i, p in enumerate(peaks)]
    return ArraySpec("many", H, 2, (F(70),) * H, min(peaks), F(32), leaves=tuple(kinds))


def test_many_kinds_rows_and_columns_are_counted_not_built():
    """64 kinds: level 5 has 32 free classes, 16^32 rows (15 grid values and each class's own ratio;
    main enumerated them first). The counts are exact (the enumeration's where it can be made); the proving solvers refuse at once with short numbers; the level DP ends at its
    deadline with a plan."""
    array = _many_kinds(6)
    aspace = alpha_space(array, alpha_grid(16))
    net = load_model("lenet-c")
    assert [aspace.row_count(h) for h in range(6)] == [16**2**h for h in range(6)]
    assert [aspace.row_count(h) for h in range(2)] == [len(aspace.level_rows(h)) for h in range(2)]
    least = least_column_counts(net, Space.ACCPAR, aspace, 6, TIME_ONLY)
    assert least[0] == 3**6 * 16**63
    for solve in (exact_uneven, brute_split):
        with pytest.raises(Refused) as err:
            solve(net, array, Space.ACCPAR, aspace)
        assert "e+" in str(err.value) and len(str(err.value)) < 400
    sol = levels_uneven(net, array, Space.ACCPAR, aspace, deadline=time.perf_counter() + 0.5)
    assert sol.status is Status.FEASIBLE and aspace.contains(sol.plan)


@pytest.mark.parametrize("by_class", [False, True])
def test_a_blocks_memory_estimate_is_within_1_5x_of_its_peak(monkeypatch, by_class):
    """The widest block of alexnet / tpu-mix-16 at grid 512 (1 M cells of a node's cost): its
    estimate (``block_bytes``) against what tracemalloc measures over the block, every group scored;
    scoring its class's groups (``BY_CLASS``, what it keeps for the next round counted) it holds no more."""
    seen = []
    solve = lv._solve_block

    def measured(network, level, cands, coef, deadline=None, by=None):
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = solve(network, level, cands, coef, deadline, by)
        seen.append((tracemalloc.get_traced_memory()[1] - base,
                     lv.block_bytes(network, [len(c) for c in cands], len(level.group_class))))
        return out

    monkeypatch.setattr(lv, "_solve_block", measured)
    monkeypatch.setattr(lv, "BY_CLASS", by_class)
    tracemalloc.start()
    try:
        lv.level_dp_plan(ALEXNET, MIX, Space.ACCPAR, alpha_space(MIX, alpha_grid(512)))
    finally:
        tracemalloc.stop()
    peak, estimate = max(seen)
    assert estimate > 16 * 2**20 and (1 / 1.5 if not by_class else 0) <= estimate / peak <= 1.5, (peak, estimate)


def test_a_block_beyond_the_memory_limit_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(lv, "MAX_BYTES", 2**20)
    with pytest.raises(Refused, match=r"level 0: a block of the DP needs ~\d+ MiB by its estimate, beyond its limit "
                                      r"of 1 MiB \(a coarser --alpha-grid"):
        levels_uneven(ALEXNET, MIX, Space.ACCPAR, alpha_space(MIX, alpha_grid(1024)))


def test_the_joint_solvers_top_coefficients_look_at_the_clock_per_row(monkeypatch):
    """``joint_columns._pair_top`` (a Python loop over every pair of top cells: 9.4 M at grid 1/1024,
    a run killed at 120 s at a 5 s limit) looks at the clock once per row of top cells."""
    import sys

    import explorer.solvers.joint_columns as jc
    from explorer.solvers.joint_columns import JointOptions
    from explorer.solvers.uneven_joint import joint_uneven

    callers = []
    real = jc.check_deadline

    def spy(deadline, error):
        callers.append(sys._getframe(1).f_code.co_name)
        real(deadline, error)

    monkeypatch.setattr(jc, "check_deadline", spy)
    aspace = alpha_space(MIX, alpha_grid(4))
    sol = joint_uneven(load_model("lenet-c"), MIX, Space.ACCPAR, aspace, JointOptions(time_limit_s=30))
    assert sol.plan is not None
    n_top = 3 * len(aspace.choices(0, 0))  # types x the top class's alphas
    assert callers.count("_pair_top") >= n_top


def test_no_plan_by_the_limit_says_what_took_the_time_and_what_to_change():
    """The DP cut before its plan where the equal split is outside the space (grid 1/3 alone): no
    plan, status unknown, and the reason names the level DP and a coarser --alpha-grid (a run at a
    coarser grid does give a plan: ``test_grid_1024_ends_at_a_small_limit_with_a_plan``'s route)."""
    aspace = alpha_space(MIX, alpha_grid(3), proportional=False)
    sol = levels_uneven(ALEXNET, MIX, Space.ACCPAR, aspace, deadline=0.0)
    assert sol.status is Status.UNKNOWN and sol.plan is None and sol.info["cut"] is Cut.LEVEL_DP
    assert sol.info["reason"] == ("the level DP was cut at the time limit before its plan (the equal split is not in the "
                                  "declared space): a coarser --alpha-grid gives it fewer candidates")
    assert levels_uneven(ALEXNET, MIX, Space.ACCPAR, aspace).status is Status.FEASIBLE


def test_no_plan_by_the_limit_says_the_even_dp_refused_the_equal_split(monkeypatch):
    """Where the equal split is declared (grid 1/2) but the even DP refuses it (a level too wide), the
    reason says so instead of "the equal split is not in the declared space"."""
    def refuse(*a, **k):
        raise Refused("level 1: too wide")

    monkeypatch.setattr(lv, "equal_types", refuse)
    sol = levels_uneven(ALEXNET, MIX, Space.ACCPAR, alpha_space(MIX, alpha_grid(2)), deadline=0.0)
    assert sol.status is Status.UNKNOWN and sol.plan is None and sol.info["cut"] is Cut.LEVEL_DP
    assert sol.info["reason"] == ("the level DP was cut at the time limit before its plan (the even DP refuses the "
                                  "equal split: level 1: too wide): a coarser --alpha-grid gives it fewer candidates")
