"""A time-limited uneven ``exact`` is never worse than the cheap plans a check already has (trial 8,
item 9: ``check --uneven`` showed exact feasible at 3.46432 ms beside the level DP's 3.43882 ms):
``exact_uneven``'s ``seeds`` replace a worse FEASIBLE incumbent, its proven bound kept."""

from __future__ import annotations

from fractions import Fraction

from explorer.app import check_uneven as cu
from explorer.core.partition import Space
from explorer.core.solution import Status, split_solution
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven

from .test_brute_split_rate import MIX4B, mix4b  # noqa: F401 (the fixture)


def _setup(path):
    net, arr = load_model("sfc"), load_array(path)
    return net, arr, alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE, proportional=True)


def _stopped_with(plan, value, bound):
    """``exact_run`` as if the time limit struck with ``plan`` as its incumbent."""
    return lambda *a, **k: split_solution("exact", Status.FEASIBLE, plan, value, bound, 10.0, 7)


def test_a_worse_incumbent_gives_way_to_the_dp_plan_in_a_check(mix4b, monkeypatch):  # noqa: F811
    net, arr, asp = _setup(mix4b)
    worse = cu._run("proportional", net, arr, Space.ACCPAR, asp, 10)
    dp = cu._run("dp", net, arr, Space.ACCPAR, asp, 10)
    assert dp.step_time_s < worse.step_time_s
    monkeypatch.setattr(uneven, "exact_run", _stopped_with(worse.plan, worse.step_time_s, Fraction(0)))
    report = cu.check_uneven(net, arr, Space.ACCPAR, grid=2, solvers=("exact", "dp", "proportional"))
    row = next(r for r in report.rows if r.solver == "exact")
    assert row.status == "feasible" and row.step_time_s == dp.step_time_s and row.bound_s == 0
    assert [r.solver for r in report.rows] == ["exact", "dp", "proportional"]  # the order asked for


def test_a_seed_that_meets_the_bound_is_proven(mix4b, monkeypatch):  # noqa: F811
    net, arr, asp = _setup(mix4b)
    worse = cu._run("proportional", net, arr, Space.ACCPAR, asp, 10)
    dp = cu._run("dp", net, arr, Space.ACCPAR, asp, 10)
    monkeypatch.setattr(uneven, "exact_run", _stopped_with(worse.plan, worse.step_time_s, dp.step_time_s))
    sol = uneven.exact_uneven(net, arr, Space.ACCPAR, asp, time_limit_s=10, seeds=(worse.plan, dp.plan))
    assert sol.status is Status.OPTIMAL and sol.plan == dp.plan and sol.step_time_s == sol.bound_s == dp.step_time_s


def test_no_seed_better_keeps_the_incumbent(mix4b, monkeypatch):  # noqa: F811
    net, arr, asp = _setup(mix4b)
    dp = cu._run("dp", net, arr, Space.ACCPAR, asp, 10)
    worse = cu._run("proportional", net, arr, Space.ACCPAR, asp, 10)
    monkeypatch.setattr(uneven, "exact_run", _stopped_with(dp.plan, dp.step_time_s, Fraction(0)))
    sol = uneven.exact_uneven(net, arr, Space.ACCPAR, asp, time_limit_s=10, seeds=(worse.plan,))
    assert sol.status is Status.FEASIBLE and sol.plan == dp.plan and sol.bound_s == 0


def test_a_run_stopped_with_no_plan_takes_the_best_seed_without_a_bound(mix4b, monkeypatch):  # noqa: F811
    """Stopped before any incumbent (UNKNOWN), the check's cheap plans are still plans: the best one,
    FEASIBLE with no bound (check --uneven at --time-limit 2 showed exact with none; trial 9)."""
    net, arr, asp = _setup(mix4b)
    dp = cu._run("dp", net, arr, Space.ACCPAR, asp, 10)
    worse = cu._run("proportional", net, arr, Space.ACCPAR, asp, 10)
    nothing = lambda *a, **k: split_solution("exact", Status.UNKNOWN, None, None, None, 10.0, 7)  # noqa: E731
    monkeypatch.setattr(uneven, "exact_run", nothing)
    sol = uneven.exact_uneven(net, arr, Space.ACCPAR, asp, time_limit_s=10, seeds=(worse.plan, dp.plan))
    assert sol.status is Status.FEASIBLE and sol.plan == dp.plan and sol.bound_s is None
    assert uneven.exact_uneven(net, arr, Space.ACCPAR, asp, time_limit_s=10).status is Status.UNKNOWN
