"""The constrained path on uneven splits (``solvers.uneven_constrained``): the same answers as
the exact Pareto DP and brute force under caps, memory, pins and forbids and both objectives;
its Lagrangian bound never above the optimum; ``explore --split optimal --solver exact`` with a
cap runs it; a run whose labels cannot finish reports its bound and gap, never optimal."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from fractions import Fraction as F

from explorer.core.constraints import Cap, Constraints
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_constrained
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven

from .test_split_rules import _chain_instance, _random_rules


def test_the_constrained_path_agrees_with_exact_and_brute_on_random_instances():
    rng = random.Random(2026)
    seen = {"infeasible": 0, "lagrangian": 0, "traffic": 0, "time": 0, "bound below": 0, "overlap": 0}
    for k in range(60):
        net, arr, space, aspace = _chain_instance(rng)
        arr = replace(arr, overlap=k % 3 == 0)  # the step time's other form: max(compute, exchanges)
        seen["overlap"] += arr.overlap
        rules = _random_rules(rng, net, arr, space, aspace)
        sols = [brute_split(net, arr, space, aspace, rules=rules), exact_uneven(net, arr, space, aspace, rules=rules),
                constrained_uneven(net, arr, space, aspace, rules=rules)]
        assert len({s.status for s in sols}) == 1, [(s.solver, s.status) for s in sols]
        assert len({s.split_value for s in sols}) == 1, [(s.solver, s.split_value) for s in sols]
        seen[rules.objective.value] += 1
        c = sols[2]
        if c.status is Status.INFEASIBLE:
            seen["infeasible"] += 1
            continue
        ev = evaluate_split(net, arr, c.plan, rules.weight_copies)
        assert rules.violations(ev, arr, c.plan) == [] and rules.value(ev) == c.split_value
        if c.info["method"].startswith("lagrangian"):
            seen["lagrangian"] += 1
            assert 0 < c.info["lagrangian_bound"] <= c.split_value
            seen["bound below"] += c.info["lagrangian_bound"] < c.split_value
    assert seen["infeasible"] >= 3 and seen["lagrangian"] >= 12 and min(seen["traffic"], seen["time"]) >= 15, seen


def _lenet_capped(fraction):
    arr, net = load_array("tpu-mix-16"), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2))
    free = exact_uneven(net, arr, Space.HYPAR, aspace)
    c1 = evaluate_split(net, arr, free.plan).level_cost[1]
    return net, arr, aspace, free, SplitRules(constraints=Constraints(caps=(Cap(1, c1 * arr.dtype_bytes * fraction),)))


def test_on_tpu_mix_16_a_binding_cap_gives_exacts_optimum_and_a_bound_below_it():
    net, arr, aspace, free, rules = _lenet_capped(F(3, 4))
    a = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    b = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert a.status is b.status is Status.OPTIMAL and a.step_time_s == b.step_time_s > free.step_time_s
    assert b.info["method"] == "lagrangian+labels" and b.info["pruned"] > 0
    assert free.step_time_s / 2 < b.info["lagrangian_bound"] <= b.step_time_s


def test_labels_stopped_by_the_state_limit_report_the_bound_and_the_gap_never_optimal(monkeypatch):
    from explorer.core.errors import Refused

    net, arr, aspace, _, rules = _lenet_capped(F(3, 4))
    opt = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules).step_time_s

    def outgrown(*a, **k):  # the labels beyond their state limit
        raise Refused("exact (uneven splits): more than 1 Pareto states")

    monkeypatch.setattr(uneven_constrained, "exact_run", outgrown)
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.FEASIBLE and sol.info["method"].endswith("(the labels did not finish: state limit)")
    assert sol.bound_s <= opt <= sol.step_time_s and sol.bound_s < sol.step_time_s


def test_labels_stopped_by_the_time_limit_report_the_bound_and_the_gap(monkeypatch):
    net, arr, aspace, _, rules = _lenet_capped(F(3, 4))
    opt = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules).step_time_s

    def stopped(*a, **k):  # the labels' pass at its time limit: no plan, no proof
        return a[4].unknown(a[5])

    monkeypatch.setattr(uneven_constrained, "exact_run", stopped)
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.FEASIBLE and sol.info["method"].endswith("(the labels did not finish: time limit)")
    assert sol.bound_s <= opt <= sol.step_time_s and sol.bound_s < sol.step_time_s


def test_explore_split_optimal_solver_exact_with_a_cap_runs_the_constrained_path(monkeypatch, capsys):
    from explorer.app.cli import main

    calls = []
    real = uneven_constrained.constrained_uneven

    def spy(*a, **k):
        calls.append(k["rules"].constraints.caps)
        return real(*a, **k)

    monkeypatch.setattr(uneven_constrained, "constrained_uneven", spy)
    args = ["--model", "sfc", "--array", "tpu-mix-16", "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
            "--solver", "exact", "--format", "json"]
    try:
        main(args + ["--cap", "0=40MB"])
    except SystemExit as e:
        assert e.code in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert len(calls) == 1 and calls[0][0].level == 0
    assert out["status"] in ("optimal", "infeasible")


def test_traffic_under_a_cap_keeps_the_least_step_time_among_ties():
    rng = random.Random(7)
    n = 0
    while n < 8:
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        if rules.objective is not Objective.TRAFFIC:
            continue
        a = exact_uneven(net, arr, space, aspace, rules=rules)
        b = constrained_uneven(net, arr, space, aspace, rules=rules)
        assert (a.status, a.split_value) == (b.status, b.split_value)
        if a.plan is not None:
            assert evaluate_split(net, arr, a.plan).step_time_s == evaluate_split(net, arr, b.plan).step_time_s
        n += 1


def test_check_split_optimal_runs_the_constrained_path_for_exact_under_a_cap(tmp_path, capsys):
    """``explore check --split optimal`` with a cap: the exact row is the constrained path (its
    method says so) and agrees with brute force and CP-SAT; without one, the Pareto DP."""
    from .test_split_rules import CAP_19MB, _mix2, _run

    arr = _mix2(tmp_path)
    base = ["check", "--split", "optimal", "--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2",
            "--solvers", "brute,exact,cpsat"]
    code, d, _ = _run(base + ["--cap", "0=19MB"], capsys)
    assert code == 0 and d["agree"] and d["constraints"]["caps"] == [CAP_19MB]
    assert d["solvers"]["exact"]["method"] == "exact:lagrangian+labels"
    assert d["optimum"]["proven_by"] == ["brute", "exact", "cpsat"]
    code, d, _ = _run(base, capsys)
    assert code == 0 and d["agree"] and d["solvers"]["exact"]["method"] == "exact:pareto-dp"


def _levels_capped():
    """lenet-c hypar at grid 2 with the level-1 cap the level DP's own plan needs: that plan keeps it."""
    from explorer.solvers.uneven_levels import levels_uneven

    arr, net = load_array("tpu-mix-16"), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2))
    plan = levels_uneven(net, arr, Space.HYPAR, aspace).plan
    c1 = evaluate_split(net, arr, plan).level_cost[1]
    rules = SplitRules(constraints=Constraints(caps=(Cap(1, c1 * arr.dtype_bytes),)))
    return net, arr, aspace, rules, evaluate_split(net, arr, plan).step_time_s


def test_the_level_dp_and_search_plans_are_incumbents_when_they_keep_the_limits(monkeypatch):
    net, arr, aspace, rules, level_s = _levels_capped()
    opt = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules).step_time_s
    monkeypatch.setattr(uneven_constrained.Dual, "search", lambda self, offer, deadline: None)  # no relaxed plans
    monkeypatch.setattr(uneven_constrained, "exact_run", lambda *a, **k: a[4].unknown(a[5]))  # labels stopped
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.FEASIBLE and opt <= sol.step_time_s <= level_s
    ev = evaluate_split(net, arr, sol.plan)
    assert rules.violations(ev, arr, sol.plan) == [] and ev.step_time_s == sol.step_time_s and aspace.contains(sol.plan)


def test_without_the_column_tables_the_cheap_plan_is_the_answer(monkeypatch):
    net, arr, aspace, rules, level_s = _levels_capped()

    def late(*a, **k):
        raise TimeoutError

    monkeypatch.setattr(uneven_constrained, "ColumnTables", late)
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.FEASIBLE and sol.step_time_s <= level_s and sol.bound_s is None
    assert sol.info["method"] == "cheap plans (the column tables did not finish)"
    monkeypatch.setattr(uneven_constrained, "_cheap_columns", lambda *a: [])
    assert constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules).status is Status.UNKNOWN


def test_a_cheap_plan_outside_the_declared_columns_is_not_an_incumbent():
    net, arr, aspace, rules, _ = _levels_capped()
    from explorer.solvers.uneven import _chain_columns

    columns = _chain_columns(net, arr, Space.HYPAR, aspace, "exact", rules=rules)[3]
    assert uneven_constrained._cheap_columns(net, arr, Space.HYPAR, aspace, rules, columns)
    narrow = [cols[: len(cols) // 2] for cols in columns]
    got = uneven_constrained._cheap_columns(net, arr, Space.HYPAR, aspace, rules, narrow)
    full = uneven_constrained._cheap_columns(net, arr, Space.HYPAR, aspace, rules, columns)
    assert len(got) < len(full) and all(all(c in set(cs) for c, cs in zip(cols, narrow)) for cols in got)


def test_no_plan_still_reports_the_lagrangian_bound(monkeypatch, capsys):
    net, arr, aspace, _, rules = _lenet_capped(F(3, 4))
    opt = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules).step_time_s
    real_offer = uneven_constrained._Lagrangian.offer
    monkeypatch.setattr(uneven_constrained, "_cheap_columns", lambda *a: [])
    monkeypatch.setattr(uneven_constrained._Lagrangian, "offer",
                        lambda self, cols: real_offer(replace_limits(self), cols))
    monkeypatch.setattr(uneven_constrained, "exact_run", lambda *a, **k: a[4].unknown(a[5]))
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.UNKNOWN and sol.plan is None and 0 < sol.bound_s <= opt
    assert sol.bound_s == sol.info["lagrangian_bound"]

    from .conftest import run_cli

    monkeypatch.setattr(uneven_constrained, "constrained_uneven", lambda *a, **k: sol)
    args = ["split", "--model", "lenet-c", "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
            "--solver", "exact", "--cap", "1=1MB"]
    code, out, err = run_cli(args, capsys)
    assert code == 1 and "unknown by exact" in out, (out, err)
    assert f"proven bound {float(sol.bound_s) * 1e3:.4g} ms (no plan)" in out
    code, out, err = run_cli(args + ["--format", "json"], capsys)
    got = json.loads(out)
    assert got["status"] == "unknown" and got["plan"] is None and F(got["bound"]) == sol.bound_s


def replace_limits(lag):
    """A view of the Lagrangian's state whose limits no plan keeps (offers record nothing)."""
    view = type("View", (), {})()
    view.source, view.score, view.per, view.feasible, view.best = lag.source, lag.score, lag.per, [], None
    view.limits = [(p, -1) for p, _ in lag.limits]
    return view
