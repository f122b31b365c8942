"""Time-limited CP-SAT and exact runs keep a plan that keeps every rule, and offer none that
breaks one (trial 11, findings 1-3): CP-SAT ending UNKNOWN returns its hint (never no plan while
the hint is at hand); the DP's plan is a fallback only when it keeps the memory limit; an
``unknown`` run without a plan takes the cheapest baseline that keeps every limit; an evaluator
mismatch is one line in the CLI. The solvers' limits are simulated (monkeypatched), not timed."""

import pytest
from ortools.sat.python import cp_model

from explorer.app import cli
from explorer.app import run as run_mod
from explorer.app.baselines import baseline_plan
from explorer.app.run import run, seed_fallback, solve_with
from explorer.core.array import synthetic_array
from explorer.core.constraints import Constraints
from explorer.core.errors import EvaluatorMismatch
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status
from explorer.frontends import load_model
from explorer.solvers import cpsat, dp, exact
from explorer.solvers.formulation import BuildTimeout

MEMORY = int(0.09 * 2**30)  # alexnet at 4 levels: the DP's plan needs 0.109 GiB, all-II 0.078, trick 0.104


def alexnet(memory: int | None = None) -> Problem:
    p = Problem(load_model("alexnet"), synthetic_array(4), Space.ACCPAR)
    return p if memory is None else p.with_constraints(Constraints(memory_bytes=memory))


def unknown(monkeypatch):
    monkeypatch.setattr(cpsat, "run_solver", lambda solver, model, callback=None: (cp_model.UNKNOWN, False))


def test_the_instance_is_as_the_tests_read_it():
    p = alexnet(MEMORY)
    assert p.plan_breaks(dp.solve(p).plan) == [p.constraints.memory_name]
    assert p.plan_breaks(baseline_plan(p, "all-II")) == [] and p.plan_breaks(baseline_plan(p, "trick"))


def test_unknown_with_a_proven_bound_returns_the_hint_with_that_bound(monkeypatch):
    # finding 1's path under a bound handed over (exact_first): UNKNOWN used to drop the hint
    unknown(monkeypatch)
    p = alexnet()
    hint = dp.solve(p).plan
    value = dp.solve(p).objective
    sol = cpsat.solve(p, SolveOptions(workers=1, time_limit_s=5, hint=hint, lower_bound=value // 2,
                                      lower_bound_by="exact:lagrangian"))
    assert sol.status is Status.FEASIBLE and sol.plan == hint and sol.objective == value
    assert value // 2 <= sol.bound < value and sol.info["bound_method"] == "exact:lagrangian"


def test_unknown_under_a_deterministic_limit_returns_the_dps_plan(monkeypatch):
    unknown(monkeypatch)
    p = alexnet()
    sol = cpsat.solve(p, SolveOptions(workers=1, deterministic_time_limit=0.5))
    assert sol.status is Status.FEASIBLE and sol.plan == dp.solve(p).plan and sol.bound is None
    assert "deterministic time limit" in sol.info["reason"]


def test_unknown_never_offers_a_dp_plan_that_breaks_the_memory_limit(monkeypatch):
    # finding 2: the DP's plan (0.109 GiB) was CP-SAT's hint and fallback under a 0.09 GiB limit
    unknown(monkeypatch)
    sol = cpsat.solve(alexnet(MEMORY), SolveOptions(workers=1, time_limit_s=5))
    assert sol.status is Status.UNKNOWN and sol.plan is None


def test_a_hint_that_breaks_the_limit_is_not_offered(monkeypatch):
    unknown(monkeypatch)
    p = alexnet(MEMORY)
    sol = cpsat.solve(p, SolveOptions(workers=1, time_limit_s=5, hint=baseline_plan(p, "trick")))
    assert sol.plan is None


def test_build_out_of_time_offers_no_breaking_plan(monkeypatch):
    def out_of_time(problem, deadline=None):
        raise BuildTimeout

    monkeypatch.setattr(cpsat, "build", out_of_time)
    assert cpsat.solve(alexnet(MEMORY), SolveOptions(workers=1, time_limit_s=5)).plan is None
    free = cpsat.solve(alexnet(), SolveOptions(workers=1, time_limit_s=5))
    assert free.status is Status.FEASIBLE and free.plan == dp.solve(alexnet()).plan


def test_cpsat_cut_short_under_memory_runs_to_the_best_fitting_baseline(monkeypatch):
    # findings 2 and 3 end to end: the exact method cut short (no plan, no bound), CP-SAT UNKNOWN
    unknown(monkeypatch)
    monkeypatch.setattr(exact, "solve", lambda problem, options=None: Solution(
        "exact", Status.UNKNOWN, None, None, None, None, 0.1, {"reason": "cut"}))
    p = alexnet(MEMORY)
    result = run(p, "cpsat", SolveOptions(workers=1, time_limit_s=5))  # re-scored by the evaluator
    assert result.status is Status.FEASIBLE and result.plan == baseline_plan(p, "all-II") and result.ok
    assert "all-II baseline keeps every limit" in result.reason


def test_exact_cut_short_takes_the_cheapest_baseline_that_fits_with_its_bound(monkeypatch):
    p = alexnet(MEMORY)
    value = seed_fallback(p, Solution("exact", Status.UNKNOWN, None, None, None, None, 0.1, {})).objective
    bound = value // 3
    monkeypatch.setattr(exact, "solve", lambda problem, options=None: Solution(
        "exact", Status.UNKNOWN, None, None, bound, None, 0.1, {"reason": "the time limit ran out"}))
    sol = solve_with(p, "exact", SolveOptions(time_limit_s=3))
    assert sol.status is Status.FEASIBLE and sol.plan == baseline_plan(p, "all-II") and sol.bound == bound
    assert sol.info["seed"] == "all-II"
    assert sol.info["reason"].startswith("the time limit ran out; yet the all-II baseline")


def test_no_baseline_fits_keeps_unknown():
    p = alexnet(int(0.05 * 2**30))  # below all-II's 0.078 GiB
    sol = Solution("exact", Status.UNKNOWN, None, None, None, None, 0.1, {"reason": "cut"})
    assert seed_fallback(p, sol) is sol


def test_an_evaluator_mismatch_is_one_line_in_the_cli(monkeypatch, capsys):
    def mismatch(problem, sol):
        raise EvaluatorMismatch("dp: plan marked feasible breaks memory, the solver says nothing")

    monkeypatch.setattr(run_mod, "rescore", mismatch)
    with pytest.raises(SystemExit) as done:
        cli.main(["--model", "lenet-c"])
    assert done.value.code == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "explore: internal error, the evaluator contradicts the solver: dp: plan marked feasible breaks memory, "
        "the solver says nothing; please report it"]


def test_unknown_without_a_hint_keeps_the_bound_handed_over_for_the_fallback(monkeypatch):
    # the exact method's proven bound (CP-SAT's lower bound) stays with the baseline CP-SAT falls back to
    unknown(monkeypatch)
    p = alexnet(MEMORY)
    sol = cpsat.solve(p, SolveOptions(workers=1, time_limit_s=5, lower_bound=1000, lower_bound_by="exact:lagrangian"))
    assert sol.plan is None and 1000 <= sol.bound and sol.info["bound_method"] == "exact:lagrangian"
    seeded = seed_fallback(p, sol)
    assert seeded.plan == baseline_plan(p, "all-II") and seeded.bound == sol.bound


def test_finding_1_exact_first_bound_then_cpsat_unknown_keeps_the_plan(monkeypatch):
    # vgg-e on array-1024 has a 32 GiB memory limit, so the exact method runs first and hands CP-SAT
    # its plan and bound; a CP-SAT that then ended UNKNOWN dropped both (1 run in 6-8 at 1.3 s)
    unknown(monkeypatch)
    p = alexnet(4 * 2**30)  # a limit every plan keeps: the exact method proves the optimum at once
    result = run(p, "cpsat", SolveOptions(workers=1, time_limit_s=30))
    assert result.plan is not None and result.ok
    assert result.status is Status.OPTIMAL and result.bound == result.objective_value
    assert result.bound_method.startswith("exact:")
