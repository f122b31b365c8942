"""The joint uneven solver's memory guards (issue 23, item 5): its tables by their estimate before
they are built (``joint_columns.table_bytes``), and its label passes' live labels
(``joint_labels.check_labels``), both against ``joint_columns.MAX_BYTES``. Past it, the run ends
with the plan in hand: the best start (the even optimum) without tables, the incumbent and the bound
without the proof; a note names the limit, never a traceback."""

from __future__ import annotations

import pytest

from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.constraints import Constraints
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import joint_columns, uneven_joint
from explorer.solvers.joint_columns import JointOptions, _Model, _VirtualSource, table_bytes
from explorer.solvers.joint_labels import LabelsMemory, check_labels, label_bytes
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
    monkeypatch.setattr(uneven_joint, "table_bytes", lambda m: 0)
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
    assert label_bytes(1000, 6) == 1000 * 16 * 8
