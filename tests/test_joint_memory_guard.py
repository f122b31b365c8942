"""The joint uneven solver's memory guards (issue 23, item 5): its tables by their estimate before
they are built (``joint_memory.solver_bytes``: the column tables, ``joint_columns.table_bytes``, and a
graph's block and link tables per live weighting), and its label passes' live labels
(``joint_labels.check_labels``), both against ``joint_columns.MAX_BYTES``. Past it, the run ends
with the plan in hand: the best start (the even optimum) without tables, the incumbent and the bound
without the proof; a note names the limit, never a traceback."""

from __future__ import annotations

import time
import weakref

import numpy as np
import pytest

from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from fractions import Fraction

from explorer.core.constraints import Cap, Constraints
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import joint_blocks, joint_columns, uneven_joint
from explorer.solvers.joint_columns import JointOptions, _Model, _VirtualSource, table_bytes
from explorer.solvers.joint_labels import (FIXED_BYTES, PAIR_BYTES, LabelsMemory, _filter_by_column, check_labels,
                                           label_bytes)
from explorer.solvers.joint_memory import (FOOT_ENTRY_BYTES, LIVE_WEIGHTINGS, allowed_counts, limit_bytes, nested_links,
                                          pass_bytes, STARTS_BYTES, solver_bytes, weighting_bytes)
from explorer.solvers.uneven_sp import blocks
from explorer.solvers.uneven_joint import accpar_uneven, joint_uneven
from explorer.solvers.uneven_seed import even_under_limits


def _lenet():
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    return net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(16))


def _estimate(net, arr, space, aspace) -> int:
    return table_bytes(_Model(_VirtualSource.of(net), arr, space, aspace))


def test_table_bytes_counts_the_int64_tables_by_hand():
    """lenet-c on tpu-mix-16, 1/16: K = 3 types (accpar), A = 16 alphas, H = 4 levels: n_top = 48,
    n = 48 * 27 = 1296; per edge 2 * 48^2 top entries and 2 * 3 * 48 * (3 + 9 + 27) level entries; the
    first min-plus step of one row, 48 * 27 * 48 entries."""
    net, arr, space, aspace = _lenet()
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    assert (m.cols.n_top, m.cols.n) == (48, 1296)
    L, E = len(m.net.layers), len(m.net.edges)
    kinds = len({joint_columns._pair_key(m.cols, m.net.layers[u], m.net.layers[v]) for u, v in m.net.edges})
    ints = L * 4 * 1296 + (E + kinds) * 2 * 48**2 + E * 2 * 3 * 48 * 39 + 48 * 27 * 48
    pairs = kinds * 48**2
    assert pairs < joint_columns.CACHED_PAIRS
    assert table_bytes(m) == 8 * ints + joint_columns.PY_PAIR_BYTES * pairs


def test_tables_past_the_limit_end_with_the_best_start(monkeypatch):
    """Refused before any table is built: the even optimum (a start) scored by the evaluator,
    FEASIBLE with no bound, and the reason naming the memory limit; without a start, UNKNOWN."""
    net, arr, space, aspace = _lenet()
    free = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    even = even_under_limits(net, arr, space, aspace, SplitRules(Objective.TIME, Constraints()), 60)
    assert even is not None
    monkeypatch.setattr(joint_columns, "MAX_BYTES", _estimate(net, arr, space, aspace) - 1)
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), starts=(even,))
    assert sol.status is Status.FEASIBLE and sol.plan == even and sol.bound_s is None
    assert sol.step_time_s == evaluate_split(net, arr, even).step_time_s >= free.step_time_s
    assert "memory limit" in sol.info["reason"] and "MAX_BYTES" in sol.info["reason"]
    alone = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    assert alone.status is Status.UNKNOWN and alone.plan is None and "memory limit" in alone.info["reason"]
    a = accpar_uneven(net, arr, space, aspace)
    assert a.status is Status.UNKNOWN and a.plan is None and "memory limit" in a.info["reason"]


def test_label_pass_past_the_limit_ends_with_the_incumbent_and_bound(monkeypatch):
    """The tables fit (their estimate taken as none), the label passes do not (a limit of 20
    labels; the proof keeps 78): the run ends FEASIBLE with the plan the bounding passes found
    (scored by the evaluator, never better than the proven optimum) and their bound (never above
    it), the note naming the memory limit."""
    net, arr, space = load_model("alexnet"), load_array("tpu-mix-16"), Space.ACCPAR
    aspace = alpha_space(arr, alpha_grid(16))
    free = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    assert free.status is Status.OPTIMAL and free.info["explored"] > 20  # the label passes ran
    monkeypatch.setattr(uneven_joint, "solver_bytes", lambda *a: 0)
    monkeypatch.setattr(joint_columns, "MAX_BYTES", label_bytes(20, 4))
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    assert sol.status is Status.FEASIBLE, sol.info
    assert evaluate_split(net, arr, sol.plan).step_time_s == sol.step_time_s >= free.step_time_s
    assert sol.bound_s is not None and sol.bound_s <= free.step_time_s
    assert "label pass" in sol.info["reason"] and "memory limit" in sol.info["reason"]


def test_check_labels_raises_past_the_limit_only(monkeypatch):
    monkeypatch.setattr(joint_columns, "MAX_BYTES", label_bytes(1000, 6))
    check_labels(1000, 6)
    with pytest.raises(LabelsMemory, match="memory limit"):
        check_labels(1001, 6)
    assert label_bytes(1000, 6) == FIXED_BYTES + 1000 * 16 * 8


def test_label_bytes_counts_a_dominance_batch_by_hand():
    """A batch's pairs (``PAIR_BYTES``, 32: four int64 differences and maxima a pair alive at once):
    1,000 labels of 4 terms (16 x 6 bytes each), 10 edge cells (24 each), a batch of 2 groups padded
    to 8 rows (2 x 8 x 8 = 128 pairs) and an extension chunk of 50 cells (16 x 4 bytes each: the
    gathered edge terms and their sums), beside the fixed 4 MiB."""
    assert PAIR_BYTES == 32 and FIXED_BYTES == 4 * 2**20
    assert label_bytes(1000, 4, 10, 128) == 4_194_304 + 96_000 + 240 + 4_096
    assert label_bytes(1000, 4, 10, 128, 50) == 4_194_304 + 96_000 + 240 + 4_096 + 3_200
    assert label_bytes(1000, 4, 10, 128, 50, 7) == 4_194_304 + 96_000 + 240 + 4_096 + 3_200 + 7  # cached bytes


def test_filter_by_column_checks_its_batch_before_building_it(monkeypatch):
    """``_filter_by_column`` checks each batch's pairs with the labels held beside the candidates: 3 groups
    of 5 rows (one batch at m = 8: 3 x 64 pairs) and 7 labels held give 22 rows x 96 + 192 x 32 bytes, the
    limit one byte short of it refuses, the limit at it passes."""
    rng = np.random.default_rng(0)
    cand = rng.integers(0, 100, size=(15, 4)).astype(np.int64)
    vs = np.repeat(np.arange(3), 5)
    args = (np.arange(15), vs, cand, np.arange(3), 0, JointOptions(time_limit_s=60), time.perf_counter())
    need = label_bytes(22, 4, 0, 3 * 8 * 8)
    assert need == 4_194_304 + 22 * 96 + 192 * 32
    monkeypatch.setattr(joint_columns, "MAX_BYTES", need)
    _filter_by_column(*args, held=7)
    monkeypatch.setattr(joint_columns, "MAX_BYTES", need - 1)
    with pytest.raises(LabelsMemory):
        _filter_by_column(*args, held=7)


def _nested():
    """A residual block whose main branch holds a nested link: c1 -> (c2a | c2b) -> s2 (an add), on
    tpu-mix-16 at grid 4 (K = 3 types, A = 4 alphas, H = 4: n = 324, n_top = 12)."""
    def conv(name, *inputs):
        return {"name": name, "kind": "conv", "in_channels": 8, "out_channels": 8, "kernel": 3, "in_size": 8,
                "out_size": 8, **({"inputs": list(inputs)} if inputs else {})}
    layers = [conv("c0"), conv("c1", "c0"), conv("c2a", "c1"), conv("c2b", "c1"),
              {"name": "s2", "kind": "add", "inputs": ["c2a", "c2b"]}, conv("c3", "s2"),
              {"name": "s", "kind": "add", "inputs": ["c3", "c0"]},
              {"name": "fc", "kind": "fc", "in_features": 512, "out_features": 10, "inputs": ["s"]}]
    net = parse_network({"version": 1, "name": "nested", "batch": 8, "layers": layers}, "nested")
    arr = load_array("tpu-mix-16")
    return net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(4))


def test_the_estimate_counts_a_nested_link_table_by_hand():
    """One block (c0 -> s: the skip edge and a series over c1, s2, c3) and one nested link (c1 -> s2).
    A conv takes every column (324), an add two types a level (2 * 4 * 2^3 = 64). Per weighting: its
    weighted terms (8 layers x 324; 9 edges x (12^2 top + 3 * 12 * (3 + 9 + 27) level entries)) and the
    nested link's table (324 x 64, exactly what a pass allocates); per pass: the block's table (324
    entry columns x 324) and the largest temporary (here a min-plus chunk, ``MINPLUS_CELLS``)."""
    net, arr, space, aspace = _nested()
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    blks = blocks(m.net)
    (link,) = nested_links(blks)
    assert (m.cols.n, m.cols.n_top, link.entry, link.exit) == (324, 12, 1, 4)
    assert allowed_counts(m) == [324, 324, 324, 324, 64, 324, 64, 324]
    own = 8 * 324 + 9 * (12**2 + 3 * 12 * (3 + 9 + 27))
    assert weighting_bytes(m, blks) == 8 * (own + 324 * 64)
    assert pass_bytes(m, blks) == 8 * (324 * 324 + max(24 * 12 * 27 * 12, 324 * 324, joint_blocks.MINPLUS_CELLS))
    assert solver_bytes(m, blks) == joint_columns.table_bytes(m) + 2 * weighting_bytes(m, blks) + pass_bytes(m, blks)
    t = joint_columns._Tables(m, 1)
    W, _, tables = joint_blocks._Graph(t, blks).forward((1, 1, 1, 1))
    assert W.links[id(link)][2].nbytes == 324 * 64 * 8 and tables[0][1].nbytes == 324 * 324 * 8


def test_link_tables_past_the_limit_end_at_once_with_the_best_start(monkeypatch):
    """The column tables fit, the graph's block and link tables do not: the run ends before any
    table is built with the best start (scored by the evaluator), the reason naming the limit."""
    net, arr, space, aspace = _nested()
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    need, tables = solver_bytes(m, blocks(m.net)), joint_columns.table_bytes(m)
    even = even_under_limits(net, arr, space, aspace, SplitRules(Objective.TIME, Constraints()), 60)
    monkeypatch.setattr(joint_columns, "MAX_BYTES", need - 1)
    assert tables < need - 1
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), starts=(even,))
    assert sol.status is Status.FEASIBLE and sol.plan == even and sol.bound_s is None
    assert sol.step_time_s == evaluate_split(net, arr, even).step_time_s
    assert "memory limit" in sol.info["reason"] and "MAX_BYTES" in sol.info["reason"]
    assert sol.wall_s < 5
    a = accpar_uneven(net, arr, space, aspace)
    assert a.status is Status.UNKNOWN and a.plan is None and "memory limit" in a.info["reason"]


def test_link_tables_within_the_limit_run_as_before(monkeypatch):
    """At the estimate itself (not past it) the run is the one without the guard: the same
    status, plan and bound."""
    net, arr, space, aspace = _nested()
    before = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    monkeypatch.setattr(joint_columns, "MAX_BYTES", solver_bytes(m, blocks(m.net)))
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
    assert sol.status is Status.OPTIMAL
    assert (sol.status, sol.plan, sol.bound_s, sol.step_time_s) == (before.status, before.plan, before.bound_s,
                                                                    before.step_time_s)


def test_at_most_live_weightings_alive_at_once(monkeypatch):
    """ResNet-18 at grid 16 (several bounding passes): at most ``LIVE_WEIGHTINGS`` weightings' tables
    alive at once (the best bound's and the pass being built; each pass's own dropped before the
    next: three were alive before), as the estimate counts; the same optimum as without the count."""
    net, arr = load_model("resnet18"), load_array("tpu-mix-16")
    alive, most, init = weakref.WeakSet(), [0], joint_blocks._Weighted.__init__

    def counted(self, *a, **k):
        init(self, *a, **k)
        alive.add(self)
        most[0] = max(most[0], len(alive))

    monkeypatch.setattr(joint_blocks._Weighted, "__init__", counted)
    sol = joint_uneven(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(16)), JointOptions(time_limit_s=120))
    assert sol.status is Status.OPTIMAL and most[0] == LIVE_WEIGHTINGS


def _capped(memory: bool = True):
    """lenet-c on tpu-mix-16 at 1/16 under a cap on level 1 (1 GB a side: no plan is near it) and the
    accelerators' own memory (none near it either), as the CLI's rules; or ``--memory`` 1 GB alone."""
    net, arr, space, aspace = _lenet()
    caps = () if memory else (Cap(1, Fraction(10**9), "test"),)
    rules = SplitRules(Objective.TIME, Constraints(caps=caps),
                       leaf_memory_limits(arr, Fraction(10**9) if memory else None))
    return net, arr, space, aspace, rules


def test_the_estimate_counts_a_caps_tables_and_terms_by_hand():
    """lenet-c at 1/16 (n_top = 48, n = 1296, a chain: no block tables) under a cap on level 1 and a
    memory limit: the cap's ``_Tables`` (the column tables but the min-plus row, 48 * 27 * 48 entries),
    the labels' terms (L x (4 + 2 + 2) x 1296 int64) and the starts' allowance (``STARTS_BYTES``), the
    penalised passes' shares (L x 4 x 1296 floats) and the footprints' build (L x 2 x 1296 entries,
    ``FOOT_ENTRY_BYTES`` each). The cap's
    tables as built hold exactly the estimate's int64 entries; the terms as built, exactly theirs."""
    net, arr, space, aspace, rules = _capped(memory=False)
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    L, n = len(m.net.layers), 1296
    cap_tables = joint_columns.table_bytes(m) - 8 * 48 * 27 * 48 + STARTS_BYTES  # (the starts' allowance with it)
    assert limit_bytes(m, 1, True) == (cap_tables + 8 * L * n * 8, 8 * L * n * 4, 56 * L * 2 * n)
    assert limit_bytes(m, 1, False) == (cap_tables + 8 * L * n * 6, 8 * L * n * 2, 0) and FOOT_ENTRY_BYTES == 56
    assert limit_bytes(m, 0, False) == (0, 0, 0)
    blks, w = blocks(m.net), weighting_bytes(m, blocks(m.net))
    kept, share, foot = limit_bytes(m, 1, True)
    most = max(2 * w, w + share, 2 * share, foot)
    assert solver_bytes(m, blks, 1, True) == joint_columns.table_bytes(m) + kept + most
    assert solver_bytes(m, blks) == joint_columns.table_bytes(m) + 2 * w  # as before, without limits
    t = joint_columns._Tables(m, 1)
    uneven_joint._limit_terms(m, t, net, arr, rules, uneven_joint.limits_of(m, arr, rules))
    ((x, _),) = t.extra
    ints = x.node.nbytes + sum(a.nbytes for a in x.top) + sum(a.nbytes for lev in x.lev for a in lev) + \
        sum(index.nbytes for _, index in x._pairs.values())
    kinds = len(x._pairs)
    assert ints == cap_tables - STARTS_BYTES - joint_columns.PY_PAIR_BYTES * kinds * 48**2
    assert t.lnode.shape == (L, 6, n) and t.lnode.nbytes == 8 * L * n * 6  # (the memory limit cannot bind)


@pytest.mark.parametrize("memory", [False, True])
def test_limits_past_the_limit_end_at_once_with_the_best_start(monkeypatch, memory):
    """A limit between the estimate without the limits' tables and terms and the one with them: the run
    ends before any table is built with the best start that keeps the rules (scored by the evaluator),
    FEASIBLE with no bound, the reason naming the limit (before, it built them past the limit)."""
    net, arr, space, aspace, rules = _capped(memory)
    m = _Model(_VirtualSource.of(net), arr, space, aspace)
    blks = blocks(m.net)
    old, new = solver_bytes(m, blks), solver_bytes(m, blks, 0 if memory else 1, True)
    assert old < new
    even = even_under_limits(net, arr, space, aspace, rules, 60)
    assert even is not None
    monkeypatch.setattr(joint_columns, "MAX_BYTES", old)
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), starts=(even,), rules=rules)
    assert sol.status is Status.FEASIBLE and sol.plan == even and sol.bound_s is None
    assert sol.step_time_s == evaluate_split(net, arr, even).step_time_s
    assert "memory limit" in sol.info["reason"] and "MAX_BYTES" in sol.info["reason"] and sol.wall_s < 5
    monkeypatch.setattr(joint_columns, "MAX_BYTES", new)  # at the estimate itself: the run as without the guard
    assert joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), rules=rules).bound_s is not None
