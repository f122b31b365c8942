"""Solvers that start from the DP's plan on a graph too wide for its elimination (trial 10, item 9):
``pruned`` starts from the plan ``--solver dp`` gives there (its wide levels by CP-SAT, labelled),
never a traceback; ``explore check`` with pruned reports it. The DP's frontier limit is lowered here
so that ResNet-18 is "too wide" (a DenseNet-like block needs 22 convs and seconds per level)."""

from __future__ import annotations

import pytest

from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.solvers import dp, pruned

from .conftest import run_cli


@pytest.fixture
def wide(monkeypatch):
    """ResNet-18 on 8 accelerators, accpar, every level too wide for the DP's elimination."""
    problem = Problem(load_model("resnet18"), synthetic_array(3), Space.ACCPAR)
    monkeypatch.setattr(dp, "MAX_FRONTIER_STATES", 2)
    assert sorted(dp.wide_levels(problem)) == [0, 1, 2]
    return problem


def test_pruned_starts_from_the_wide_dp_plan(wide):
    """The DP's plan with its levels by CP-SAT is pruned's start (it used to raise NotImplementedError
    from ``dp.graph_level``): the result is no worse than it, and the note names those levels."""
    start = dp.solve(wide)
    sol = pruned.solve(wide, SolveOptions(time_limit_s=30))
    assert sol.status in (Status.OPTIMAL, Status.FEASIBLE) and sol.objective <= start.objective
    assert "the DP's plan it starts from: levels 0, 1, 2 solved by CP-SAT" in sol.info["reason"]


def test_pruned_set_up_beyond_the_limit_gives_the_wide_dp_plan(wide, monkeypatch):
    """The set-up estimated beyond the limit: the DP's plan at once, as ``--solver dp`` gives it, labelled."""
    monkeypatch.setattr(pruned, "SETUP_RATE", 10.0)
    sol = pruned.solve(wide, SolveOptions(time_limit_s=5))
    assert sol.status is Status.FEASIBLE and sol.info["method"] == "dp-start"
    assert sol.plan == dp.solve(wide).plan
    assert "the DP's plan it starts from: levels 0, 1, 2 solved by CP-SAT" in sol.info["reason"]


def test_pruned_refuses_in_one_line_where_the_dp_has_no_plan(wide, monkeypatch):
    """A wide level CP-SAT cannot take (costs beyond int64, or no plan in its time): a refusal, no traceback."""
    from explorer.core.errors import Refused

    monkeypatch.setattr(dp, "level_by_cpsat", lambda *a, **k: None)
    with pytest.raises(Refused, match=r"^pruned: no starting plan: dp: level 0 is too wide"):
        pruned.solve(wide, SolveOptions(time_limit_s=5))


def test_explore_and_check_with_pruned_on_a_wide_graph(wide, capsys):
    """``explore --solver pruned`` and ``explore check --solvers exact,pruned``: reports, exit 0, no traceback."""
    code, out, err = run_cli(["--model", "resnet18", "--levels", "3", "--space", "accpar", "--solver", "pruned",
                              "--time-limit", "30"], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert "the DP's plan it starts from: levels 0, 1, 2 solved by CP-SAT" in out
    code, out, err = run_cli(["check", "--model", "resnet18", "--levels", "3", "--space", "accpar",
                              "--solvers", "exact,pruned", "--time-limit", "60"], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert "pruned" in out
