"""Trial 13's split findings: the uneven cpsat, refused by CP-SAT's count, reports the exact path's
answer (its seed plan too) and never blames a limit it did not reach (#1); the exact path ends at
its deadline (#2); check --uneven rounds its limits (#4); --objective traffic without --solver (#5)."""

from __future__ import annotations

import json

import pytest

from .conftest import run_cli

def _json(args, capsys):
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    return code, json.loads(out), err


def test_cpsat_refused_by_its_count_reports_the_exact_paths_seed_plan(mix4, capsys):
    """CP-SAT refuses 9,216 columns; the exact path ends at once (its column pairs need more than the
    limit) with its best seed plan: cpsat reports that plan, as --solver exact does, and says the
    exact path ended at once, not that the time limit ran out."""
    base = ["--model", "sfc", "--array", mix4, "--space", "accpar", "--split", "optimal", "--time-limit", "5"]
    code, exact, err = _json([*base, "--solver", "exact"], capsys)
    assert code == 0 and exact["status"] == "feasible" and exact["plan"] is not None, err
    code, cpsat, err = _json([*base, "--solver", "cpsat"], capsys)
    assert code == 0 and cpsat["status"] == "feasible", err
    assert cpsat["plan"] == exact["plan"] and cpsat["objective_value"] == exact["objective_value"]
    assert "CP-SAT refused the instance (cpsat (uneven splits): 9,216 columns, more than 2,000)" in cpsat["note"]
    assert "the exact constrained path answered alone and ended at once: " in cpsat["note"]
    assert "column pairs: their column tables and completion bounds are estimated at no less than" in cpsat["note"] and "best seed plan" in cpsat["note"]
    assert "within the time limit" not in cpsat["note"]


def test_cpsat_alone_without_a_plan_names_why_the_exact_path_ended(monkeypatch):
    """No seed plan: the note gives the exact path's reason, not "within the time limit (N s)"."""
    from explorer.app.split_notes import no_plan_note
    from explorer.core.solution import Status

    info = {"reason": "CP-SAT refused the instance (x)", "alone": True, "exact_reason": "9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s"}
    note = no_plan_note("cpsat", Status.UNKNOWN, 10.0, info)
    assert note == ("cpsat: no plan and no proof: CP-SAT refused the instance (x): the exact constrained path ran "
                    "alone and ended: 9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s")
    assert "within the time limit (10 s" in no_plan_note("cpsat", Status.UNKNOWN, 10.0, dict(info, exact_reason=""))


def test_check_uneven_accpar_row_rounds_the_time_left_to_it():
    """#4: the accpar row said "the time limit (1.80984 s)"; rounded as the other messages."""
    from explorer.core.partition import Space
    from explorer.core.solution import Status
    from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
    from explorer.frontends import load_array, load_model
    from explorer.solvers.uneven_joint import accpar_uneven

    net, arr = load_model("resnet50"), load_array("tpu-mix-16")
    sol = accpar_uneven(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(16), FreeAlphas.UNLIKE), 1.23456e-6)
    assert sol.status is Status.UNKNOWN
    assert sol.info["reason"] == "the time limit (1.23e-06 s left to it) ran out before its DP ended"


def test_the_column_tables_check_the_clock_within_an_edge():
    """#2: one edge's table (millions of column pairs) took seconds with the clock checked only after
    it, so --time-limit 25 ran 31 s in the tables alone; now checked per consumer column."""
    from types import SimpleNamespace

    from explorer.solvers.uneven_tables import _edge_units

    calls = []

    def edges_into(e, cus, cv):
        calls.append(cv)
        return [(0, 1, 2, 0)] * len(cus)

    costs = SimpleNamespace(layout=SimpleNamespace(leaves=1, pos_end=3), edges_into=edges_into)
    columns = [list(range(5)), list(range(100))]
    assert _edge_units(costs, columns, 1, lambda pairs: None).shape == (5, 100, 2) and len(calls) == 100
    calls.clear()

    def check(pairs):  # the clock (``uneven_tables._Pace.check``): the deadline passes after 3 columns
        if len(calls) >= 3:
            raise TimeoutError

    with pytest.raises(TimeoutError):
        _edge_units(costs, columns, 1, check)
    assert len(calls) == 3


def test_traffic_without_a_solver_is_answered_by_the_solver_it_routes_to(mix4, capsys):
    """#5: the refusal named the joint solver alone; now the default routes past the joint solver
    (the step time only) as beyond its scope, and answers as --solver exact does."""
    args = ["--model", "sfc", "--array", mix4, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
            "--objective", "traffic"]
    code, out, err = run_cli(args, capsys)
    assert code == 0 and "optimal by exact" in out.splitlines()[0], err
    assert "joint (uneven splits): the step time only, not the traffic objective; exact answered instead" in out
    code, alone, err = run_cli([*args, "--solver", "exact"], capsys)
    lines = out.splitlines()
    assert code == 0 and alone.splitlines() == [lines[0], *lines[2:]], err  # the same report, less the route's note
