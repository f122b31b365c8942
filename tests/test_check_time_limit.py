"""``explore check`` keeps to ``--time-limit`` as a whole (trial 10, item 1; issue 23, item 2): the
DP, the level-by-level checks and the joint solvers share the limit; narrow levels are proven by the
frontier elimination (no CP-SAT: ResNet-50 at H = 10 ran ten CP-SAT solves, 25 s past a 2 s limit);
a level check or solver cut short says so and is never called optimal without proof."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace

import pytest

from explorer.api import build_problem, check as api_check
from explorer.app.check import CheckOptions, check
from explorer.core.solution import SolveOptions, Status
from explorer.solvers import dp, get_solver


def _no_cpsat(name):
    if name == "cpsat":
        raise AssertionError("CP-SAT looked up for a level check")
    return get_solver(name)


def test_narrow_levels_at_h10_are_proven_by_the_elimination():
    problem = build_problem("resnet50", "array-1024", space="accpar")
    report = check(problem, CheckOptions(solvers=("exact",)), lookup=_no_cpsat)
    assert [lv.method for lv in report.levels] == ["elimination"] * 10
    assert all(lv.dp_is_level_optimal and lv.cut_short is None for lv in report.levels)
    assert report.agree


def test_on_a_chain_the_elimination_agrees_with_enumeration():
    """The elimination (``dp.graph_level``) is not the DP's chain scan on a chain: both prove the same c_h."""
    problem = build_problem("alexnet", "hypar-16", space="accpar")
    enum = check(problem, CheckOptions(solvers=()))
    elim = check(problem, CheckOptions(solvers=(), level_brute_max_rows=1), lookup=lambda n: (
        _refuse if n == "exact" else get_solver(n)))
    assert [lv.method for lv in enum.levels] == ["enumeration"] * 4
    assert [lv.method for lv in elim.levels] == ["elimination"] * 4
    assert [lv.level_optimum_elements for lv in elim.levels] == [lv.level_optimum_elements for lv in enum.levels]


def _refuse(problem, options):
    from explorer.core.errors import Refused

    raise Refused("exact: refused here")


class _Recorder:
    """Wraps the solvers and records each call's time limit; ``cut``: CP-SAT's level checks answer
    ``feasible`` (not proven) with their plan and bound 0."""

    def __init__(self, cut: bool = False):
        self.limits: list[tuple[str, float | None]] = []
        self.cut = cut

    def __call__(self, name):
        real = get_solver(name)

        def solve(problem, options):
            self.limits.append((name, options.time_limit_s))
            if name == "exact":  # (at 3 levels it would prove each level itself)
                _refuse(problem, options)
            sol = real(problem, options)
            if name == "cpsat" and self.cut and sum(problem.weights.weights) == 1:  # (a level's problem)
                return replace(sol, status=Status.FEASIBLE, bound=0)
            return sol
        return solve


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setattr(dp, "MAX_FRONTIER_STATES", 2)
    problem = build_problem("resnet18", "hypar-16", space="accpar", levels=3)
    assert sorted(dp.wide_levels(problem)) == [0, 1, 2]
    return problem


def test_wide_level_checks_share_half_of_the_time_left(wide):
    rec = _Recorder()
    t0 = time.perf_counter()
    report = check(wide, CheckOptions(solve=SolveOptions(time_limit_s=60.0, started=t0), solvers=("cpsat",)),
                   lookup=rec)
    assert rec.limits[0][0] == "dp" and rec.limits[0][1] <= 0.25 * 60  # the DP's wide levels: a quarter
    levels = [t for n, t in rec.limits if n == "cpsat"][:-1]  # (the last: the joint solve)
    assert len(levels) == 3  # each: what the share (half of 60 s) has left over the wide levels left
    assert levels[0] == pytest.approx(0.5 * 60 / 3, rel=0.1) and levels[1] <= 0.5 * 60 / 2 and levels[2] <= 0.5 * 60
    assert rec.limits[-1][0] == "cpsat" and 25 < rec.limits[-1][1] <= 60 - (time.perf_counter() - t0) + 5
    assert [lv.method for lv in report.levels] == ["cpsat"] * 3 and report.agree


def test_a_level_check_cut_short_is_not_called_optimal(wide):
    """CP-SAT stops with the DP's plan and bound 0: the level is neither optimal nor a problem; '?' in the table."""
    from explorer.app.render import render_check

    report = check(wide, CheckOptions(solve=SolveOptions(time_limit_s=60.0), solvers=()), lookup=_Recorder(cut=True))
    lv = report.levels[0]
    assert lv.level_optimum_elements is None and lv.dp_is_level_optimal is None and lv.bound_elements == 0
    assert "did not prove the level optimum within its" in lv.cut_short and report.agree
    assert lv.to_json()["cut_short"] == lv.cut_short and lv.to_json()["level_optimum_elements"] is None
    assert "? (cut short)" in render_check(report) and "level 0: cpsat did not prove" in render_check(report)


def test_a_spent_limit_leaves_the_joint_solvers_not_run():
    """Started 10 s ago with a 5 s limit: exact and cpsat are reported as not run; brute still runs
    (it refuses by size at once or stops at its share)."""
    problem = build_problem("alexnet", "hypar-16", space="accpar")
    report = check(problem, CheckOptions(solve=SolveOptions(time_limit_s=5.0, started=time.perf_counter() - 10)))
    for name in ("exact", "cpsat"):
        s = report.solver(name)
        assert s.status is Status.UNKNOWN and s.reason.startswith("not run: --time-limit 5 s was spent before it")
    assert report.solver("brute").status is Status.REFUSED  # (8 layers x 4 levels: beyond its limit)
    assert [lv.method for lv in report.levels] == ["enumeration"] * 4  # (no time needed)


def test_the_api_check_counts_from_started():
    report = api_check("alexnet", space="accpar", solvers=("exact", "cpsat"), time_limit=5.0,
                       started=time.perf_counter() - 10)
    assert report.solver("cpsat").status is Status.UNKNOWN and report.solver("exact").status is Status.UNKNOWN


def test_explore_check_at_h10_keeps_to_the_limit():
    """The whole process (start-up, DP, ten level checks, exact, cpsat, brute): 25-28 s before at a
    2 s limit; the bound here is generous (a loaded machine), the limit plus 3 s."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "explorer.app.cli", "check", "--model", "resnet50", "--array",
                           "array-1024", "--space", "accpar", "--time-limit", "2"], capture_output=True, text=True)
    wall = time.perf_counter() - t
    assert done.returncode == 0, done.stderr
    assert "elimination" in done.stdout and wall < 5.0


def test_on_a_wide_graph_cpsat_starts_from_the_dp_plan(wide, monkeypatch):
    """CP-SAT makes no DP hint of its own on a graph too wide for the DP: the check gives it the DP's
    plan (a short limit left it with no plan, 'unknown', where the DP had one)."""
    hints = []

    def lookup(name):
        real = get_solver(name)

        def solve(problem, options):
            if name == "cpsat" and sum(problem.weights.weights) != 1:  # (the joint solve, not a level's)
                hints.append(options.hint)
            return real(problem, options)
        return solve

    report = check(wide, CheckOptions(solve=SolveOptions(time_limit_s=60.0), solvers=("cpsat",)), lookup=lookup)
    assert hints == [report.dp.plan] and hints[0] is not None


def test_under_a_time_limit_the_elimination_comes_before_exact():
    """exact on a level's problem took 5-13 s a level (ResNet-50 at 7-8 levels) and has no time limit:
    under --time-limit narrow levels go to the elimination first; without one, exact proves them."""
    problem = build_problem("resnet18", "hypar-16", space="accpar")

    def no_level_exact(name):
        real = get_solver(name)

        def solve(p, options):
            if name == "exact" and sum(p.weights.weights) == 1:
                raise AssertionError("exact ran on a level's problem under a time limit")
            return real(p, options)
        return solve

    limited = check(problem, CheckOptions(solve=SolveOptions(time_limit_s=60.0), solvers=()), lookup=no_level_exact)
    assert [lv.method for lv in limited.levels] == ["elimination"] * 4
    plain = check(problem, CheckOptions(solvers=()))
    assert [lv.method for lv in plain.levels] == ["exact"] * 4
    assert [lv.level_optimum_elements for lv in plain.levels] == [lv.level_optimum_elements for lv in limited.levels]
