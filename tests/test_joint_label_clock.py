"""The joint solver's label setting looks at its deadline inside its long loops (per chunk of
``_extend``'s labels, per chunk of a large Pareto group, per batch of small ones): a pass the
clock cuts raises ``LabelsCut`` and the solve keeps its best plan and bound, never a proof."""

from __future__ import annotations

import time
import types
from fractions import Fraction as F

import numpy as np
import pytest

from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.solvers import deadline as deadline_mod
from explorer.solvers import joint_close_graph, joint_labels
from explorer.solvers.joint_columns import JointOptions
from explorer.solvers.joint_labels import LabelsCut, _extend, _filter_by_column
from explorer.solvers.uneven_constrained import constrained_uneven

from .test_uneven_constrained import _lenet_capped


def _extend_case(n: int = 10, nv: int = 5):
    rng = np.random.default_rng(3)
    P = rng.integers(0, 50, size=(n, 5)).astype(np.int64)  # four components and one cap term
    cols = rng.integers(0, 3, size=n)
    Ev = rng.integers(0, 50, size=(5, 3, nv)).astype(np.int64)
    nodev = rng.integers(0, 50, size=(5, nv)).astype(np.int64)
    bc = np.zeros((5, nv), dtype=np.int64)
    return P, cols, Ev, nodev, bc, np.zeros(nv, dtype=np.int64), np.ones(5, dtype=np.int64), 1, 10**6, np.array([10**6])


def test_extend_looks_at_the_deadline_per_chunk(monkeypatch):
    case = _extend_case()
    want = _extend(*case)
    monkeypatch.setattr(joint_labels, "EXTEND_CELLS", 5)  # one label (five next columns) a chunk
    seen = []
    monkeypatch.setattr(joint_labels, "check_deadline", lambda d, err: seen.append(d) or deadline_mod.check_deadline(d, err))
    got = _extend(*case, deadline=time.perf_counter() + 1e6)
    assert len(seen) == 10 and all(np.array_equal(g, w) for g, w in zip(got, want))  # the same labels
    with pytest.raises(LabelsCut):
        _extend(*case, deadline=time.perf_counter() - 1)


@pytest.mark.parametrize("n", [40, 400])  # small groups (batched) and one large group (chunked)
def test_the_pareto_filter_stops_past_the_time_limit(n):
    rng = np.random.default_rng(n)
    cand = rng.integers(0, 1000, size=(n, 4)).astype(np.int64)
    vs = np.zeros(n, dtype=np.int64) if n > 128 else rng.integers(0, 2, size=n)
    args = (np.arange(n), vs, cand, np.arange(2), 0)
    assert len(_filter_by_column(*args, JointOptions(time_limit_s=1e9), 0.0)[0])
    with pytest.raises(LabelsCut):
        _filter_by_column(*args, JointOptions(time_limit_s=1.0), time.perf_counter() - 2)


def test_a_label_pass_the_clock_cuts_inside_an_extension_proves_nothing(monkeypatch):
    """The clock passes the limit during the first ``_extend`` call (as a 4-6 s call did on AlexNet
    at a 5 s limit): the next chunk looks at it, the labels stop; the plan found so far keeps the
    cap and the bound stays below it, but no optimum is claimed."""
    net, arr, aspace, free, rules = _lenet_capped(F(3, 4))
    whole = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert whole.status is Status.OPTIMAL  # uncut: the labels prove it
    late = {"s": 0.0}
    monkeypatch.setattr(deadline_mod, "time", types.SimpleNamespace(perf_counter=lambda: time.perf_counter() + late["s"]))
    real = joint_close_graph._extend

    def extend_then_late(*a, **k):
        out = real(*a, **k)
        late["s"] = 1e6  # the limit passes while labels are being extended
        return out

    monkeypatch.setattr(joint_close_graph, "_extend", extend_then_late)
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert late["s"] and sol.status in (Status.FEASIBLE, Status.UNKNOWN)
    assert sol.bound_s is not None and sol.bound_s <= whole.step_time_s
    assert sol.plan is None or sol.step_time_s >= whole.step_time_s
