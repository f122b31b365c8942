"""A time-limited CP-SAT run that proves nothing says why, shows no bound (not 0 with a 100%
gap), names the exact solver when it takes the instance, and keeps to its limit (trial 8, items 2, 4)."""

from explorer.app.render import render_table
from explorer.app.run import run, solve_with
from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_array, load_model
from explorer.solvers import cpsat


def alexnet(levels: int) -> Problem:
    return Problem(load_model("alexnet"), synthetic_array(levels), Space.ACCPAR)


def test_no_bound_proven_is_no_bound_with_the_reason():
    # a deterministic limit too short for any search: the plan is the hint, CP-SAT's bound 0 (trivial)
    result = run(alexnet(6), "cpsat", SolveOptions(workers=1, deterministic_time_limit=0.001))
    assert result.status is Status.FEASIBLE
    assert result.bound is None and result.gap is None and result.bound_method is None
    assert result.reason.startswith("CP-SAT found no plan better than its hint (the DP's plan) and proved no bound")
    assert result.reason.endswith("; the exact solver takes this instance and may prove it: try --solver exact")
    assert f"note: {result.reason}" in render_table(result)
    assert "gap 100" not in render_table(result)


def test_exact_is_not_suggested_for_what_it_refuses(monkeypatch):
    # alexnet at 12 levels: 3^12 type vectors a layer, beyond exact's limit; the same no-bound plan
    solve = cpsat.solve

    def like_alexnet_6(problem, options):  # (the plan is not alexnet(12)'s: only its reason is read)
        return solve(alexnet(6), options)

    monkeypatch.setattr(cpsat, "solve", like_alexnet_6)
    sol = solve_with(alexnet(12), "cpsat", SolveOptions(workers=1, deterministic_time_limit=0.001))
    assert sol.bound is None and "proved no bound" in sol.info["reason"] and "exact" not in sol.info["reason"]


def test_the_search_keeps_a_margin_for_its_own_overrun(monkeypatch):
    seen = {}
    run_solver = cpsat.run_solver

    def record(solver, model, callback=None):
        seen["max"] = solver.parameters.max_time_in_seconds
        return run_solver(solver, model, callback)

    monkeypatch.setattr(cpsat, "run_solver", record)
    cpsat.solve(Problem(load_model("lenet-c"), load_array("hypar-16"), Space.HYPAR), SolveOptions(workers=1, time_limit_s=5))
    assert seen["max"] <= 5 * (1 - cpsat.SEARCH_MARGIN)


def test_cpsat_without_a_limit_gets_the_default_of_exact_and_pruned(monkeypatch):
    # new-user trial, item 1: `--solver cpsat` ran past 115 s with no limit while exact and pruned stop at 60 s
    from explorer.core.kinds import SOLVE_TIME_LIMIT

    seen = []

    def record(problem, options):
        seen.append(options)
        raise KeyboardInterrupt  # (nothing else is needed of the solve)

    monkeypatch.setattr(cpsat, "solve", record)
    for given in (SolveOptions(), SolveOptions(time_limit_s=7.0), SolveOptions(deterministic_time_limit=5.0)):
        try:
            solve_with(alexnet(3), "cpsat", given)
        except KeyboardInterrupt:
            pass
    default, given, deterministic = seen
    assert SOLVE_TIME_LIMIT == 60.0 and SOLVE_TIME_LIMIT - 5 < default.time_limit_s <= SOLVE_TIME_LIMIT
    assert 2 < given.time_limit_s <= 7.0  # (counted from its start: what is left of it)
    assert deterministic.time_limit_s is None  # a deterministic budget stays the only one (reproducible)
