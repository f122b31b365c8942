"""--time-limit on the uneven split's whole run (issue 23, item 2): ``--split`` and ``check --uneven``
count it from ``started`` (``explore``: the process's start), each step getting what the steps
before it left, and a step without a limit of its own is not started once it is spent."""

import json
import subprocess
import sys
import time

from explorer.app import check_uneven as cu
from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_constrained

SPENT = "was spent before it"


def _lenet():
    return load_model("lenet-c"), load_array("tpu-mix-16")


def test_check_uneven_counts_from_started():
    """Started 100 s ago with a 10 s limit: no row but brute runs (it refuses by size or stops at
    its 2%), each says why, none claims a proof; from the call (started None) they run."""
    net, arr = _lenet()
    names = ("exact", "joint", "accpar", "dp", "search", "proportional")
    t0 = time.perf_counter()
    late = cu.check_uneven(net, arr, Space.ACCPAR, grid=2, solvers=names, time_limit_s=10,
                           started=time.perf_counter() - 100)
    assert time.perf_counter() - t0 < 5.0
    for row in late.rows:
        assert row.status == Status.UNKNOWN.value and row.plan is None and SPENT in row.note, row
    assert late.optimum_s is None and late.agree
    now = cu.check_uneven(net, arr, Space.ACCPAR, grid=2, solvers=("dp", "exact"), time_limit_s=10)
    assert all(r.plan is not None and SPENT not in r.note for r in now.rows), now.rows


def test_check_uneven_rows_get_what_the_rows_before_them_left(monkeypatch):
    """The dp row takes 1.5 s of a 1 s limit: the rows after it are not run; exact, started 3 s
    into a 10 s limit, is given at most the 7 s left (its own limit ignored the origin before)."""
    net, arr = _lenet()
    real_levels = cu.levels_uneven

    def slow_levels(*a, **k):
        time.sleep(1.5)
        return real_levels(*a, **k)

    monkeypatch.setattr(cu, "levels_uneven", slow_levels)
    r = cu.check_uneven(net, arr, Space.ACCPAR, grid=2, solvers=("dp", "search", "exact"), time_limit_s=1)
    dp_row, search_row, exact_row = r.rows
    assert dp_row.plan is not None and SPENT not in dp_row.note
    assert SPENT in search_row.note and SPENT in exact_row.note
    monkeypatch.setattr(cu, "levels_uneven", real_levels)
    given = []
    real_exact = cu.exact_uneven

    def recording(*a, time_limit_s, **k):
        given.append(time_limit_s)
        return real_exact(*a, time_limit_s=time_limit_s, **k)

    monkeypatch.setattr(cu, "exact_uneven", recording)
    cu.check_uneven(net, arr, Space.ACCPAR, grid=2, solvers=("exact",), time_limit_s=10, started=time.perf_counter() - 3)
    assert len(given) == 1 and 0 < given[0] <= 7.01, given


def test_split_optimal_gives_the_joint_solver_what_is_left(monkeypatch):
    """--split optimal: the joint solver gets the limit less what came before it (from ``started``);
    with nothing left it is not started: the equal-split plan, feasible, no bound, and the note says why."""
    net, arr = _lenet()
    given = []
    real = uneven_constrained.joint_under

    def recording(network, array, space, aspace, time_limit_s, *a, **k):
        given.append(time_limit_s)
        return real(network, array, space, aspace, time_limit_s, *a, **k)

    monkeypatch.setattr(uneven_constrained, "joint_under", recording)
    split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=2, time_limit_s=10, started=time.perf_counter() - 3)
    assert len(given) == 1 and 0 < given[0] <= 7.01, given
    late = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=2, time_limit_s=10, started=time.perf_counter() - 100)
    equal = split_run(net, arr, Space.ACCPAR, Split.EQUAL, grid=2)
    assert len(given) == 1  # not called again
    assert late.status is Status.FEASIBLE and late.objective_bound is None and SPENT in late.note
    assert late.plan == equal.plan


def test_split_solver_gets_what_is_left(monkeypatch):
    """--split optimal --solver exact: the solver's limit counts from ``started`` too."""
    from explorer.app import split as split_mod

    net, arr = _lenet()
    given = []
    real = split_mod.solve_by

    def recording(solver, network, array, space, aspace, time_limit_s, *a, **k):
        given.append(time_limit_s)
        return real(solver, network, array, space, aspace, time_limit_s, *a, **k)

    monkeypatch.setattr(split_mod, "solve_by", recording)
    split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=2, time_limit_s=10, solver="exact",
              started=time.perf_counter() - 3)
    assert len(given) == 1 and 0 < given[0] <= 7.01, given


def test_the_cli_counts_the_process_start():
    """explore check --uneven in its own process: the start-up (imports, loading) takes more than
    --time-limit 0.1, so the rows that need time are not run and say so (they ran in full before)."""
    out = subprocess.run([sys.executable, "-c", "from explorer.app.cli import main; main()", "check", "--uneven",
                          "--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "2", "--time-limit", "0.1",
                          "--solvers", "dp,exact", "--format", "json"], capture_output=True, text=True, timeout=120)
    rows = json.loads(out.stdout)["solvers"]
    assert all(SPENT in rows[n].get("reason", "") and rows[n]["status"] == "unknown" for n in ("dp", "exact")), rows
