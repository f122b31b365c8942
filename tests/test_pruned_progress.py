"""``--solver pruned`` says how it goes (the trial: 19-49 s with only "solving ..."), and where its
time, not the entries allowed, ended it short of a proof its note says so (the trial: ResNet-50 at
1,024 under load stopped at 6.35 s of 10, bound 0, the note blaming the table size)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.solvers import pruned
from explorer.solvers.deadline import solve_end

from .conftest import run_cli


def _past() -> float:
    """A start ``Progress.QUIET_S`` ago, so that a quick solve's lines are not held back."""
    return time.perf_counter() - pruned.Progress.QUIET_S


def test_progress_lines_end_at_the_solution():
    lines: list[str] = []
    problem = Problem(load_model("resnet50"), synthetic_array(8), Space.ACCPAR)
    sol = pruned.solve(problem, SolveOptions(progress=lines.append, started=_past()))
    assert sol.status is Status.OPTIMAL
    assert lines[0].startswith("pruned: set up 6,561 type vectors per layer and the DP's plan: plan at ")
    assert any(line.startswith("pruned: dual bound after ") for line in lines)
    # counts with separators (a trial read "plan at 7.05706e+08 elements" badly)
    last = f"plan at {round(problem.real(sol.objective)):,} elements, bound {round(problem.real(sol.bound)):,}, gap 0.000%"
    assert last in lines[-1], lines


def test_a_chain_of_blocks_says_so():
    lines: list[str] = []
    sol = pruned.solve(Problem(load_model("mobilenet-v2"), synthetic_array(5), Space.ACCPAR), SolveOptions(progress=lines.append, started=_past()))
    assert sol.info["method"] == "block-chain" and lines[0].startswith("pruned: solved at once as a chain of blocks")


def test_a_quick_solve_stays_quiet():
    lines: list[str] = []
    pruned.solve(Problem(load_model("bert-base"), synthetic_array(5), Space.ACCPAR), SolveOptions(progress=lines.append))
    assert lines == []


def test_cli_prints_progress_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(pruned.Progress, "QUIET_S", 0.0)
    code, out, err = run_cli(["--model", "bert-base", "--array", "hypar-16", "--space", "accpar", "--solver", "pruned"], capsys)
    assert code == 0 and "[explore] pruned: dual bound after " in err and "[explore] pruned:" not in out


def test_the_dual_gets_a_share_of_what_the_set_up_left():
    t0, limit = 100.0, 10.0
    end = solve_end(t0, limit)
    assert pruned.dual_deadline(t0, t0 + 0.5, limit, end) == t0 + pruned.DUAL_SHARE * limit  # a quick set-up: as before
    late = pruned.dual_deadline(t0, t0 + 6.0, limit, end)  # the trial's 6 s set-up: no round before
    assert late == t0 + 6.0 + pruned.DUAL_SHARE * (end - t0 - 6.0) and t0 + 6.0 < late < end


def test_the_note_names_the_dual_s_time_where_it_cut_the_bound():
    res = SimpleNamespace(rounds=0)
    entries = SimpleNamespace(why="the next elimination needs 125,189,030 table entries, more than the 80,000,000 allowed")
    cut = pruned._dual_cut(res, 40, {"dual_cut": True, "dual_s": 0.4}, entries)
    assert cut.startswith("the dual bound's share of the time limit ended before its first round: bound 0; raise --time-limit")
    two = pruned._dual_cut(SimpleNamespace(rounds=2), 40, {"dual_cut": True, "dual_s": 4.6}, entries)
    assert "ended after 2 of up to 40 rounds (4.6 s)" in two
    assert pruned._dual_cut(SimpleNamespace(rounds=7), 40, {"dual_cut": False, "dual_s": 9.0}, entries) == ""  # it converged
    timed = SimpleNamespace(why="next elimination estimated at 7.2 s, 1.1 s left")
    assert pruned._dual_cut(res, 40, {"dual_cut": True, "dual_s": 0.4}, timed) == ""  # the note names the time already
