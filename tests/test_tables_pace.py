"""Issue 23 item 2 (leftover 1): ``--split optimal --solver exact``'s column tables under the clock.
Trial 13's sfc on mix-4 at grid 1/16 (15.9 M column pairs, its tables 40-100 s) passed the
ends-at-once estimate at limits from about 27 s and spent the whole limit in the tables, then
answered late (their conversion to Python ints and the completion bounds had no clock) with the
seed plan. Now the build measures its own pace and ends as soon as it says the tables cannot end
in time (``uneven_tables._Pace``), and what follows the build looks at the clock between slices.
The mechanism is asserted with a spy clock; one whole-process run has a generous margin."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_tables
from explorer.solvers.uneven import _chain_columns, exact_uneven
from explorer.solvers.uneven_levels import equal_types
from explorer.solvers.uneven_tables import ColumnTables, TablesTooSlow, _exact_arrays


class _Clock:
    """A spy ``time.perf_counter``: ``step`` seconds pass at every look."""

    def __init__(self, step: float):
        self.now, self.step = 1000.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def _instance(mix4, grid: int = 4):
    arr = load_array(mix4)
    net, aspace = load_model("sfc"), alpha_space(arr, alpha_grid(grid))
    return net, arr, aspace, _chain_columns(net, arr, Space.ACCPAR, aspace, "exact")


def test_the_build_ends_when_its_pace_cannot_meet_the_deadline(mix4, monkeypatch):
    net, arr, aspace, (_H, _L, costs, cols) = _instance(mix4)
    plain = ColumnTables(costs, cols, lambda: False)
    clock = _Clock(0.1)  # 0.1 s a look (one look per consumer column): the pace is known at once
    monkeypatch.setattr(uneven_tables, "time", clock)
    pairs = sum(len(a) * len(b) for a, b in zip(cols, cols[1:]))
    need = 0.1 * sum(len(c) for c in cols[1:])  # what the build takes at that pace, about
    with pytest.raises(TablesTooSlow, match=f"the column tables of {pairs:,} column pairs, .* built in .* s: at that pace an estimated ~"):
        ColumnTables(costs, cols, lambda: False, deadline=clock.now + need / 3)
    roomy = ColumnTables(costs, cols, lambda: False, deadline=clock.now + 3 * need)  # in time: built, the same
    assert [t.tolist() for t in roomy.edge_units] == [t.tolist() for t in plain.edge_units]
    assert roomy.rest() == plain.rest()


def test_what_follows_the_build_looks_at_the_clock(mix4, monkeypatch):
    """The conversion to Python ints (where int64 sums could overflow) and the completion bounds
    (``rest``) stop between slices once the limit has passed (trial 13's sfc: 9 s and 3 s of CPU)."""
    looks = []

    def check():
        looks.append(1)
        if len(looks) > 2:
            raise TimeoutError

    tables = [np.arange(24, dtype=np.int64).reshape(2, 3, 4), np.arange(6, dtype=np.int64).reshape(1, 2, 3)]
    assert [t.tolist() for t in _exact_arrays(tables, 2**62)] == [t.tolist() for t in tables]
    assert all(t.dtype == object for t in _exact_arrays(tables, 2**62))
    monkeypatch.setattr(uneven_tables, "CHUNK", 6)  # one producer row (2 x 3 entries) a slice
    with pytest.raises(TimeoutError):
        _exact_arrays([np.zeros((5, 2, 3), dtype=np.int64)], 2**62, check)
    assert len(looks) == 3
    _net, _arr, _aspace, (_H, _L, costs, cols) = _instance(mix4)
    t = ColumnTables(costs, cols, lambda: False)
    t.pace.expired = lambda: True
    with pytest.raises(TimeoutError):
        t.rest()


def test_exact_ending_early_by_its_pace_gives_the_seed_plan_and_says_why(mix4, monkeypatch):
    """A run the pace stops: the best seed plan (feasible, with the separable bound of
    ``solvers.uneven_bound``, below the proven optimum) and the reason (``info["ended_early"]``); with
    no seed, unknown (the bound alone). Without a limit the same instance is proven."""
    net, arr, aspace, _ = _instance(mix4)
    monkeypatch.setattr(uneven_tables, "PACE_SLACK", 1e-9)  # any pace is too slow
    monkeypatch.setattr(uneven_tables, "PACE_MIN_S", 0.0)
    monkeypatch.setattr(uneven_tables, "PACE_TRUST_S", 0.0)
    seed = Plan.even(equal_types(net, arr, Space.ACCPAR))
    sol = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=600.0, seeds=(seed,))
    assert sol.status is Status.FEASIBLE and sol.plan == seed and sol.info["separable_bound"]
    assert "at that pace an estimated ~" in sol.info["ended_early"] and sol.info["reason"] == sol.info["ended_early"]
    none = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=600.0)
    assert none.status is Status.UNKNOWN and none.plan is None and "ended_early" in none.info
    monkeypatch.undo()
    proven = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=600.0)
    assert proven.status is Status.OPTIMAL
    assert none.bound_s == sol.bound_s <= proven.step_time_s < sol.step_time_s


def test_trial_13_at_30_s_ends_early_with_the_seed_plan(mix4):
    """Trial 13's command at ``--time-limit 30`` (past the ends-at-once estimate, 26.8 s): it spent
    29.6-33.7 s in the tables; now it ends once its pace is known (1-3 s at load 2-8)."""
    cmd = [sys.executable, "-m", "explorer.app.cli", "--model", "sfc", "--array", mix4, "--space", "accpar",
           "--split", "optimal", "--solver", "exact", "--alpha-grid", "16", "--time-limit", "30"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert time.perf_counter() - t0 < 15.0  # half the limit: a generous margin on a loaded machine
    assert "feasible by exact" in out and "exact: ended early: the column tables of 15,925,248 column pairs" in out


def test_the_estimate_counts_the_torus_link_windows(monkeypatch):
    """Issue 23 item 2 (leftover 2): on a torus whose space frees a split below the top, every column
    pair's re-layout vector carries its group's link windows (``VectorLayout(links=True)``), which
    cost more than its sides (trial 13's mix as a torus, sfc at 1/8: 7.5 us a pair against 2.8 on
    the H-tree). ``least_seconds`` counts them (``PAIR_WINDOW_S`` a window), so a limit between the
    estimate without them and with them ends at once, before any column table is built."""
    from dataclasses import replace

    from explorer.core.split_costs import layout_for
    from explorer.core.timing import Topology
    from explorer.solvers import uneven

    from .test_uneven_model import mix

    arr = replace(mix(2, [1, 3, 3, 3]), topology=Topology.TORUS)  # [1 | 3] is free: level 1 below the top
    net, aspace = load_model("lenet-c"), alpha_space(arr, alpha_grid(4))
    windows = uneven.window_count(layout_for(arr, aspace))
    assert windows > 0 and uneven.window_count(layout_for(replace(arr, topology=Topology.HTREE), aspace)) == 0
    _H, _L, costs, cols = _chain_columns(net, arr, Space.ACCPAR, aspace, "exact")
    assert uneven.window_count(costs.layout) == windows
    pairs = sum(len(a) * len(b) for a, b in zip(cols, cols[1:]))
    sides, both = uneven.least_seconds(cols, 2), uneven.least_seconds(cols, 2, windows)
    assert both == pytest.approx(sides + pairs * windows * uneven.PAIR_WINDOW_S) and both > 1.3 * sides
    built = []
    monkeypatch.setattr(uneven_tables.ColumnTables, "__init__", lambda self, *a: built.append(a) or pytest.fail())
    late = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=(sides + both) / 2)
    assert late.status is Status.UNKNOWN and late.plan is None and not built
    assert f"{pairs:,} column pairs: their column tables and completion bounds are estimated at no less than" in late.info["reason"]


def test_python_int_tables_are_counted_as_held_and_the_guard_refuses_them(mix4, monkeypatch):
    """Issue 23 item 5 for the uneven exact DP: where int64 sums are not proven safe the column tables
    become Python ints (an 8-byte slot and an int object an entry, the int64 table alive while they
    are converted), not 8 bytes an entry: the estimate counts what is held, the guard refuses them
    (one line) before any is converted, where the int64 tables would have passed."""
    import sys
    import tracemalloc

    from explorer.core.errors import Refused
    from explorer.solvers.uneven_prune import SLOT, memory_estimate, python_int_bytes, table_entry_bytes

    for bits in (2, 29, 30, 31, 57, 60, 61, 90, 91):  # pymalloc's 16-byte classes of the int's bytes
        assert python_int_bytes(bits) == -(-sys.getsizeof(2 ** (bits - 1)) // 16) * 16, bits
    assert table_entry_bytes(None) == (8, 8) and table_entry_bytes(57) == (8 + SLOT + 32, SLOT + 32)
    table = np.arange(2**56, 2**56 + 300_000, dtype=np.int64).reshape(1000, 100, 3)
    tracemalloc.start()
    held = _exact_arrays([table], 2**62)[0]
    traced = tracemalloc.get_traced_memory()[0] / table.size
    tracemalloc.stop()
    assert held.dtype == object and 0.95 <= traced / (SLOT + python_int_bytes(57)) <= 1.05, traced  # 40.0 bytes
    net, arr, aspace, (_H, _L, costs, cols) = _instance(mix4)  # sfc on mix-4 at 1/4: Python ints (57-bit entries)
    told = []
    tables = ColumnTables(costs, cols, lambda: False, on_ints=told.append)
    assert tables.edge_units[0].dtype == object and told == [57]  # once, with the largest entry's bits
    sides = tables.edge_units[0].shape[2]
    as_int64 = memory_estimate(cols, costs.layout.size, 0, 1, sides)  # what the guard counted before
    assert as_int64 < 15 * 2**20 < memory_estimate(cols, costs.layout.size, 0, 1, sides, 57)
    assert exact_uneven(net, arr, Space.ACCPAR, aspace, max_bytes=30 * 2**20).status is Status.OPTIMAL
    with pytest.raises(Refused, match=r"its column tables must be Python ints \(57-bit entries: int64 sums are not "
                                      r"proven safe\), about 23 MiB .* beyond its limit of 15 MiB"):
        exact_uneven(net, arr, Space.ACCPAR, aspace, max_bytes=15 * 2**20)
    monkeypatch.setattr(uneven_tables, "INT64_SUMS", 2**70)  # (int64 tables: not told)
    assert ColumnTables(costs, cols, lambda: False, on_ints=told.append).edge_units[0].dtype == np.int64
    assert told == [57]


def test_the_pace_counts_every_pair_built(mix4):
    """Review: each edge's last consumer column was never counted, so after a whole build ``done``
    fell short of ``total`` and a later look could stop a build already done ("cannot end in time")."""
    _net, _arr, _aspace, (_H, _L, costs, cols) = _instance(mix4)
    tables = ColumnTables(costs, cols, lambda: False, deadline=time.perf_counter() + 600)
    assert tables.pace.total == sum(len(a) * len(b) for a, b in zip(cols, cols[1:])) > 0
    assert tables.pace.done == tables.pace.total


def test_the_memory_guard_is_told_again_as_the_entries_widen():
    """Review: ``on_ints`` was called once, with the bits seen so far (e.g. 57); a later, wider entry
    (61+ bits: a larger Python int) was never re-estimated."""
    told = []
    ints = uneven_tables._Ints(told.append, 2**63)  # sure at once: the sums pass INT64_SUMS
    ints.seen(np.array([[2**56]], dtype=np.int64))
    ints.seen(np.array([[2**55]], dtype=np.int64))  # narrower: not told again
    ints.overflow(70)
    assert told == [57, 70]


def test_the_two_estimates_of_a_run_are_worded_as_estimates_and_agree(mix4, monkeypatch):
    """Issue 23 leftover (solver-time item 2): AlexNet on tpu-mix-16 said, at one limit, that its column
    pairs "need at least ~70.5 s" (the fastest pace calibrated: a lower estimate, not a need) and at
    --time-limit 100 "need ~324 s more at that pace" (the measured pace, the rest only). Both now say
    estimated; the early end gives its estimate in all, beside what is left, and recalls the one made
    before the build, the same figure the at-once end gives for these columns (the least)."""
    from explorer.solvers import uneven

    net, arr, aspace, (H, _L, costs, cols) = _instance(mix4)
    windows = uneven.window_count(costs.layout)
    least = uneven.least_seconds(cols, H, windows)
    at_once = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=least / 2)
    assert at_once.status is Status.UNKNOWN and "need" not in at_once.info["ended_at_once"]
    assert f"are estimated at no less than ~{least:,.1f} s (the fastest pace calibrated" in at_once.info["ended_at_once"]
    monkeypatch.setattr(uneven_tables, "PACE_SLACK", 1e-9)  # any pace is too slow
    monkeypatch.setattr(uneven_tables, "PACE_MIN_S", 0.0)
    monkeypatch.setattr(uneven_tables, "PACE_TRUST_S", 0.0)
    early = exact_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=600.0).info["ended_early"]
    assert "need" not in early and "at that pace an estimated ~" in early and " s in all, ~" in early
    assert early.endswith(f"(estimated before the build, with the completion bounds, at no less than ~{least:,.1f} s "
                          f"(the fastest pace calibrated, {least / sum(len(a) * len(b) for a, b in zip(cols, cols[1:])) * 1e6:.2g} us a pair))")
