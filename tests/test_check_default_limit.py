"""``explore check`` keeps the default time limit a solve keeps (``core.kinds.solve_limit``, CLI
polish item 1): it ran CP-SAT with no limit unless ``--time-limit`` was given, while ``explore``,
the API and the sweeps stop it at ``SOLVE_TIME_LIMIT``. The default bounds the whole check, as
``--time-limit`` does; with exact and brute alone (uncoupled) there is none, as in ``explore``."""

from __future__ import annotations

import json

from explorer.api import build_problem
from explorer.app.check import CheckOptions, check, check_limit
from explorer.core import kinds
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.frontends import load_model
from explorer.solvers import get_solver

from .conftest import make_array, run_cli


class _Limits:
    """A ``lookup`` that records the time limit each solver is given, then solves."""

    def __init__(self):
        self.seen: dict[str, float | None] = {}  # the last call's (brute's first: a level's enumeration)

    def __call__(self, name):
        real = get_solver(name)

        def solve(problem, options):
            self.seen[name] = options.time_limit_s
            return real(problem, options)
        return solve


def test_cpsat_in_check_gets_the_default_limit(monkeypatch):
    monkeypatch.setattr(kinds, "SOLVE_TIME_LIMIT", 7.0)
    problem = build_problem("lenet-c", "hypar-16")
    limits = _Limits()
    report = check(problem, CheckOptions(solvers=("exact", "cpsat", "brute")), lookup=limits)
    assert report.agree and report.optimum is not None
    assert 6.0 < limits.seen["cpsat"] <= 7.0, limits.seen  # what is left of the whole check's 7 s
    assert 0 < limits.seen["brute"] <= 7.0 and 0 < limits.seen["dp"] <= 0.25 * 7.0


def test_no_default_without_a_solver_that_keeps_one():
    problem = Problem(load_model("lenet-c"), make_array(4), Space.HYPAR)  # no caps, no memory: exact uncoupled
    assert check_limit(problem, CheckOptions(solvers=("exact", "brute"))) is None  # as explore --solver exact
    assert check_limit(problem, CheckOptions(solvers=())) is None
    assert check_limit(problem, CheckOptions(solvers=("pruned",))) == kinds.SOLVE_TIME_LIMIT == 60.0
    shipped = build_problem("lenet-c", "hypar-16")  # its 4 GiB a memory limit: exact keeps the default
    assert check_limit(shipped, CheckOptions(solvers=("exact",))) == 60.0
    given = CheckOptions(solve=SolveOptions(time_limit_s=3.0), solvers=("exact", "brute"))
    assert check_limit(problem, given) == 3.0
    limits = _Limits()
    check(problem, CheckOptions(solvers=("exact", "brute")), lookup=limits)
    assert limits.seen == {"dp": None, "exact": None, "brute": None}


def test_explore_check_passes_cpsat_the_default(capsys, monkeypatch):
    """The command line: no --time-limit, CP-SAT gets what is left of SOLVE_TIME_LIMIT (here 5 s), not None."""
    from explorer.solvers import cpsat

    real, seen = cpsat.solve, []

    def record(problem, options):
        seen.append(options.time_limit_s)
        return real(problem, options)

    monkeypatch.setattr(kinds, "SOLVE_TIME_LIMIT", 5.0)
    monkeypatch.setattr(cpsat, "solve", record)
    code, out, err = run_cli(["check", "--model", "lenet-c", "--solvers", "exact,cpsat", "--format", "json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["agree"], (out, err)
    assert len(seen) == 1 and 3.0 < seen[0] <= 5.0, seen


def test_the_default_keeps_the_independent_level_proofs():
    """Under the default limit the level checks keep the exact DP over type vectors first (a proof
    independent of the DP), as without a limit; a given --time-limit puts the DP's own frontier
    elimination first (milliseconds). The same level optima either way."""
    problem = build_problem("resnet18", "hypar-16", space="accpar")
    default = check(problem, CheckOptions(solvers=("exact",)))
    given = check(problem, CheckOptions(solve=SolveOptions(time_limit_s=60.0), solvers=("exact",)))
    assert [lv.method for lv in default.levels] == ["exact"] * 4
    assert [lv.method for lv in given.levels] == ["elimination"] * 4
    assert [lv.level_optimum_elements for lv in default.levels] == [lv.level_optimum_elements for lv in given.levels]
    assert default.agree and given.agree
