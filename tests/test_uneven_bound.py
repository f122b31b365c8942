"""The uneven exact DP's early ends (at once by ``least_seconds``, early by its tables' pace) give a
proven bound (``solvers.uneven_bound``): on seeded random chains, under pins, forbids, caps,
memory limits, overlap and both objectives, bound <= brute force's optimum <= the seed plan's
value, and the report shows the bound and the gap."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F

from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import TIME_ONLY
from explorer.solvers import uneven
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import _bounded, _chain_columns, exact_uneven, split_solution
from explorer.solvers.uneven_bound import separable_bound
from explorer.solvers.uneven_prune import time_score

from .conftest import run_cli
from .test_split_rules import _chain_instance, _random_case


def _bound(net, arr, space, aspace, rules):
    _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact", rules=rules)
    sol = split_solution("exact", Status.UNKNOWN, None, None, None, 0.0, 0, objective=rules.objective)
    return _bounded(sol, arr, costs, cols, rules.objective, lambda: False).split_bound


def test_the_bound_is_below_brute_force_and_every_seed_on_random_instances():
    rng = random.Random(2323)
    seen = {"traffic": 0, "overlap": 0, "infeasible": 0, "positive": 0, "tight": 0}
    for k in range(60):
        net, arr, space, aspace, rules = _random_case(rng, k)
        seen["overlap"] += arr.overlap
        brute = brute_split(net, arr, space, aspace, rules=rules)
        low = _bound(net, arr, space, aspace, rules)
        seen["traffic"] += rules.objective is Objective.TRAFFIC
        if brute.status is Status.INFEASIBLE:
            seen["infeasible"] += 1
            continue
        assert low is not None and low <= brute.split_value, (k, low, brute.split_value)
        seen["positive"] += low > 0
        seen["tight"] += low == brute.split_value
        seed = Plan.even(brute.plan)  # a plan of the space (alpha 1/2 is on every grid drawn): never below
        if aspace.contains(seed):
            assert low <= rules.value(evaluate_split(net, arr, seed, rules.weight_copies))
    assert all(seen.values()), seen


def test_it_is_at_least_each_part_of_the_proof():
    """Both parts of ``separable_bound`` count: the component-wise sum of each layer's least, scored
    once, and each layer's least score alone (a single layer: they are the same, its least)."""
    rng = random.Random(5)
    net, arr, space, aspace = _chain_instance(rng)
    _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact")
    score = time_score(arr, costs)
    got = separable_bound(costs, cols, score)
    for l, cs in enumerate(cols):  # noqa: E741
        assert got >= min(score(costs.layer(l, c)) for c in cs)
    assert separable_bound(costs, cols[:1], score) == min(score(costs.layer(0, c)) for c in cols[0])
    assert separable_bound(costs, cols, score, expired=lambda: True) is None
    assert separable_bound(costs, [cols[0], []], score) is None


def _at_once(monkeypatch):
    monkeypatch.setattr(uneven, "PAIR_S", 10.0)  # every run's column pairs "need" more than its limit


def test_an_exact_run_ended_at_once_reports_the_bound_and_its_gap(monkeypatch):
    _at_once(monkeypatch)
    rng = random.Random(77)
    met = 0
    for _ in range(12):
        net, arr, space, aspace = _chain_instance(rng)
        brute = brute_split(net, arr, space, aspace)
        seeds = [Plan.even(brute.plan)] if aspace.contains(Plan.even(brute.plan)) else []
        sol = exact_uneven(net, arr, space, aspace, time_limit_s=30, seeds=seeds)
        assert sol.info["ended_at_once"] and sol.info["separable_bound"]
        assert sol.split_bound <= brute.split_value
        if seeds:
            assert sol.split_value >= brute.split_value and sol.plan == seeds[0]
            assert sol.status is (Status.OPTIMAL if sol.split_value == sol.split_bound else Status.FEASIBLE)
            met += sol.status is Status.FEASIBLE
        else:
            assert sol.status is Status.UNKNOWN and sol.plan is None
    assert met


def test_a_traffic_seed_meeting_the_bound_is_not_called_optimal(monkeypatch):
    """Under traffic ties go to the least step time: a bound on the traffic alone settles no tie."""
    _at_once(monkeypatch)
    rng = random.Random(3)
    net, arr, space, aspace = _chain_instance(rng)
    rules = replace(TIME_ONLY, objective=Objective.TRAFFIC)
    monkeypatch.setattr(uneven, "separable_bound", lambda *a, **k: 10**30)  # a (false) bound above every plan
    sol = exact_uneven(net, arr, space, aspace, time_limit_s=30, rules=rules,
                       seeds=[brute_split(net, arr, space, aspace, rules=rules).plan])
    assert sol.status is Status.FEASIBLE and sol.split_bound == F(10**30, 1) / _unit(net, arr, space, aspace)


def _unit(net, arr, space, aspace):
    return _chain_columns(net, arr, space, aspace, "exact")[2].unit


def test_an_exact_run_ended_early_by_its_tables_pace_has_the_bound(monkeypatch):
    def slow(*a, **k):
        raise uneven.TablesTooSlow("the column tables of 9 column pairs need ~9 s more")

    monkeypatch.setattr(uneven, "ColumnTables", slow)
    net, arr, space, aspace = _chain_instance(random.Random(8))
    sol = exact_uneven(net, arr, space, aspace, time_limit_s=30)
    assert sol.status is Status.UNKNOWN and sol.info["ended_early"] and sol.info["separable_bound"]
    assert sol.split_bound == _bound(net, arr, space, aspace, TIME_ONLY)
    assert sol.split_bound <= brute_split(net, arr, space, aspace).split_value


def test_trial13s_run_shows_a_bound_below_its_plan_and_the_gap(mix4, capsys):
    """sfc on mix-4 at grid 1/16 (15.9 M column pairs) ends at once at 5 s with its best seed plan
    and the separable bound. Not pinned to one run's figures (a level DP cut under load changes the
    plan): the plan is the evaluator's, no worse than the proportional seed, the bound the one
    ``solvers.uneven_bound`` gives this instance, below the plan, and the report's gap is theirs."""
    from explorer.app.figures_text import fmt_seconds
    from explorer.app.split import Split, split_run
    from explorer.core.partition import Space
    from explorer.core.uneven import alpha_grid, alpha_space, proportional_plan
    from explorer.frontends import load_array, load_model
    from explorer.solvers.uneven_levels import equal_types

    net, arr = load_model("sfc"), load_array(mix4)
    r = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=16, time_limit_s=5.0, solver="exact")
    assert r.status is Status.FEASIBLE and "ended at once" in r.note and "bound: a convex combination" in r.note
    value = evaluate_split(net, arr, r.plan).step_time_s
    assert r.step_time_s == value <= evaluate_split(net, arr, proportional_plan(
        net, arr, equal_types(net, arr, Space.ACCPAR))).step_time_s  # a seed's exact score, the best seed's
    bound = _bound(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(16)), TIME_ONLY)
    assert r.bound_s == bound and 0 < bound < value and r.gap == 1 - bound / value
    code, out, err = run_cli(["--model", "sfc", "--array", mix4, "--space", "accpar", "--split", "optimal", "--solver",
                              "exact", "--alpha-grid", "16", "--time-limit", "5"], capsys)
    assert code == 0 and f"proven bound {fmt_seconds(bound)}, gap " in out, out  # the even report's time formatter


def test_a_reduced_trial13_ended_at_once_has_a_bound_below_brute_force(mix4, tmp_path, capsys, monkeypatch):
    """Trial 13's middle layers (sfc's fc2 and fc3, 8192 wide) on mix-4 at grid 1/2, made to end at
    once: the bound its report gives is at most brute force's optimum, which is at most its plan."""
    import json

    from explorer.core.partition import Space
    from explorer.core.uneven import alpha_grid, alpha_space
    from explorer.frontends import load_array, load_model

    _at_once(monkeypatch)
    model = tmp_path / "sfc-mid.yaml"
    model.write_text("version: 1\nname: sfc-mid\nbatch: 256\nlayers:\n"
                     "  - {name: fc2, kind: fc, in_features: 8192, out_features: 8192}\n"
                     "  - {name: fc3, kind: fc, in_features: 8192, out_features: 8192}\n")
    code, out, err = run_cli(["--model", str(model), "--array", mix4, "--space", "accpar", "--split", "optimal",
                              "--solver", "exact", "--alpha-grid", "2", "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["status"] in ("feasible", "optimal") and "ended at once" in got["note"], err
    net, arr = load_model(str(model)), load_array(mix4)
    brute = brute_split(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)))
    assert brute.status is Status.OPTIMAL
    assert 0 < F(got["bound"]) <= brute.split_value <= F(got["objective_value"])
