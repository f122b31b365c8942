"""``explore check`` keeps the default time limit a solve keeps (``core.kinds.solve_limit``, CLI
polish item 1): it ran CP-SAT with no limit unless ``--time-limit`` was given, while ``explore``,
the API and the sweeps stop it at ``SOLVE_TIME_LIMIT``. The default bounds the whole check, as
``--time-limit`` does; with exact and brute alone (uncoupled) there is none, as in ``explore``."""

from __future__ import annotations

import json
import time

from explorer.api import build_problem
from explorer.app.check import CheckOptions, check, check_limit
from explorer.core import kinds
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.constraints import Constraints
from explorer.core.solution import SolveOptions, Status
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
    get_solver("cpsat")  # OR-Tools' import first (1.3 s at load 6, inside the check's 7 s otherwise)
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


def test_the_default_takes_the_same_level_methods_as_a_given_limit():
    """Under the default limit the level checks take the method a given --time-limit takes (the
    DP's frontier elimination first, milliseconds a level; the exact DP over type vectors took
    ~20 s a level on a 12-layer transformer at 10 levels, 196 s past the default's 60 s: trial
    finding 1); the exact DP first only without a limit. The same level optima every way."""
    problem = build_problem("resnet18", "hypar-16", space="accpar")
    default = check(problem, CheckOptions(solvers=("exact",)))
    given = check(problem, CheckOptions(solve=SolveOptions(time_limit_s=60.0), solvers=("exact",)))
    none = check(problem.with_constraints(Constraints()), CheckOptions(solvers=("exact",)))  # uncoupled: no limit
    assert [lv.method for lv in default.levels] == [lv.method for lv in given.levels] == ["elimination"] * 4
    assert [lv.method for lv in none.levels] == ["exact"] * 4
    optima = [lv.level_optimum_elements for lv in default.levels]
    assert optima == [lv.level_optimum_elements for lv in given.levels] == [lv.level_optimum_elements for lv in none.levels]
    assert default.agree and given.agree and none.agree


def _transformer(tmp_path) -> str:
    """A small exporter-style ONNX transformer (tests/onnx_nets.hf_bert: MatMul/Add/Softmax/
    LayerNormalization blocks, symbolic batch and sequence): 24 nodes, beyond the level checks'
    enumeration at 10 levels."""
    import onnx

    from .onnx_nets import hf_bert

    path = tmp_path / "tx2.onnx"
    onnx.save(hf_bert(layers=2), str(path))
    return str(path)


def test_explore_check_default_on_an_onnx_transformer_takes_the_given_limits_methods(tmp_path, capsys):
    """Trial finding 1 on the command line: ``explore check`` with no --time-limit on an
    exporter-style transformer at --levels 10 names the level methods and joint statuses of
    ``--time-limit 60`` (the old default took the exact DP a level: 32.6 s against 5-7 s here)."""
    args = ["check", "--model", _transformer(tmp_path), "--levels", "10", "--array", "array-1024", "--batch", "1024",
            "--seq", "64", "--format", "json"]
    reports = {}
    for name, more in (("default", []), ("given", ["--time-limit", "60"])):
        code, out, err = run_cli(args + more, capsys)
        assert code == 0, err
        reports[name] = json.loads(out)
    default, given = reports["default"], reports["given"]
    assert [lv["method"] for lv in default["levels"]] == [lv["method"] for lv in given["levels"]] == ["elimination"] * 10
    assert {n: s["status"] for n, s in default["solvers"].items()} == {n: s["status"] for n, s in given["solvers"].items()}
    assert default["agree"] and given["agree"] and default["optimum"]["objective"] == given["optimum"]["objective"]


def test_a_spent_default_limit_is_kept_by_every_phase():
    """Started 100 s before the check, the default's 60 s are spent: the DP answers, the level checks
    take the elimination (milliseconds; no unbounded exact DP), every joint solver but brute is
    'not run' naming the default (never as a given --time-limit), as under a spent given limit."""
    problem = build_problem("resnet18", "hypar-16", space="accpar")
    started = time.perf_counter() - 100
    t0 = time.perf_counter()
    runs = {name: check(problem, CheckOptions(solve=SolveOptions(time_limit_s=limit, started=started)))
            for name, limit in (("default", None), ("given", 60.0))}
    assert time.perf_counter() - t0 < 30  # (the old default's level checks: the exact DP, unbounded)
    named = {"default": "the default limit of 60 s (--time-limit sets another)", "given": "--time-limit 60 s"}
    for name, report in runs.items():
        assert report.dp.status is Status.LEVEL_OPTIMAL
        assert [lv.method for lv in report.levels] == ["elimination"] * 4
        assert all(lv.dp_is_level_optimal and lv.cut_short is None for lv in report.levels)
        for solver in ("exact", "cpsat"):
            s = report.solver(solver)
            assert s.status is Status.UNKNOWN and s.reason.startswith(f"not run: {named[name]} was spent before it"), s
        assert report.solver("brute").status is Status.REFUSED and report.optimum is None
