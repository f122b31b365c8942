"""The exact solver under caps and memory limits (``solvers.uneven_constrained``): the joint
solver's bound and labels with the limits' terms in its labels (``solvers.uneven_joint``) where it
applies, chains and graphs, else the exact Pareto DP; the same answers as brute force and the Pareto
DP under caps, memory, pins and forbids; a run whose labels cannot finish reports its bound and gap,
never optimal, and its bound also without a plan."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from fractions import Fraction as F

from explorer.core.constraints import Cap, Constraints
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_constrained, uneven_joint, uneven_seed
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven
from explorer.solvers.uneven_joint import JointOptions, joint_uneven

from .test_split_rules import _chain_instance, _random_rules
from .test_uneven_joint import _nested, _plans, in_scope_instances
from .test_uneven_model import mix


def test_exact_under_limits_agrees_with_the_pareto_dp_and_brute_on_random_chains():
    rng = random.Random(2026)
    seen = {"infeasible": 0, "joint": 0, "pareto-dp": 0, "traffic": 0, "time": 0, "overlap": 0}
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
        seen["joint" if c.info["method"].startswith("joint") else "pareto-dp"] += 1
        if c.status is Status.INFEASIBLE:
            seen["infeasible"] += 1
            continue
        ev = evaluate_split(net, arr, c.plan, rules.weight_copies)
        assert rules.violations(ev, arr, c.plan) == [] and rules.value(ev) == c.split_value
    assert seen["infeasible"] >= 3 and seen["joint"] >= 8 and seen["pareto-dp"] >= 20, seen
    assert min(seen["traffic"], seen["time"]) >= 15, seen


def _joint_case(net, arr, space, aspace, rules):
    """(brute force's answer, the joint solver's under ``rules``), or None outside its scope."""
    try:
        got = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60),
                           types_allowed=lambda h, l: rules.types(net, space, h, l), rules=rules)  # noqa: E741
    except Refused:
        return None
    want = brute_split(net, arr, space, aspace, rules=rules)
    assert (got.status, got.step_time_s) == (want.status, want.step_time_s), (got.status, want.status, rules)
    if got.plan is not None:
        ev = evaluate_split(net, arr, got.plan, rules.weight_copies)
        assert rules.violations(ev, arr, got.plan) == [] and ev.step_time_s == got.step_time_s
        assert got.bound_s == got.step_time_s  # proven
    return want


def test_the_joint_solver_under_caps_memory_pins_and_forbids_agrees_with_brute_force():
    """Seeded random instances in the joint solver's scope, chains and graphs, under random pins,
    forbids, caps and memory limits (the step time): its status and value are brute force's."""
    rng = random.Random(6)
    seen = {"done": 0, "graphs": 0, "infeasible": 0, "binding": 0, "caps": 0, "memory": 0}
    for net, arr, space, aspace in in_scope_instances(rng):
        if seen["done"] == 80:
            break
        rules = replace(_random_rules(rng, net, arr, space, aspace), objective=Objective.TIME)
        if not rules.couples_layers or (want := _joint_case(net, arr, space, aspace, rules)) is None:
            continue
        seen["done"] += 1
        seen["graphs"] += not net.is_chain
        seen["infeasible"] += want.status is Status.INFEASIBLE
        seen["caps"] += bool(rules.constraints.caps)
        seen["memory"] += rules.leaf_memory_bytes is not None
        seen["binding"] += want.status is Status.OPTIMAL and want.step_time_s > brute_split(net, arr, space, aspace).step_time_s
    assert seen["graphs"] >= 5 and seen["infeasible"] >= 10 and seen["binding"] >= 5, seen
    assert min(seen["caps"], seen["memory"]) >= 30, seen


def test_the_joint_solver_under_limits_on_nested_graphs_agrees_with_brute_force():
    """Nested series-parallel graphs under a cap or a memory limit just below what their free
    optimum needs: the labels keep the limits' terms across nested links; brute force's answer."""
    rng = random.Random(99)
    seen = {"done": 0, "binding": 0, "caps": 0}
    while seen["done"] < 16:
        net = _nested(rng, seen["done"])
        p, q = rng.sample([1, 2, 3, 5], 2)
        arr = mix(1, [p, q], bw=rng.choice([1, 10]), dtype=2)
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        aspace = alpha_space(arr, alpha_grid(rng.choice([2, 3])))
        if _plans(net, space, aspace, 1) > 600:
            continue
        free = brute_split(net, arr, space, aspace)
        ev = evaluate_split(net, arr, free.plan)
        share = F(rng.choice([3, 4, 5]), 5)
        if rng.random() < 0.5:
            rules = SplitRules(constraints=Constraints(caps=(Cap(0, ev.level_cost[0] * arr.dtype_bytes * share),)))
        else:
            rules = SplitRules(leaf_memory_bytes=tuple(max(ev.leaf_memory_bytes) * share for _ in ev.leaf_memory_bytes))
        want = _joint_case(net, arr, space, aspace, rules)
        seen["done"] += 1
        seen["caps"] += bool(rules.constraints.caps)
        seen["binding"] += want.status is Status.OPTIMAL and want.step_time_s > free.step_time_s
    assert seen["binding"] >= 4 and 3 <= seen["caps"] <= 13, seen


def _lenet_capped(fraction):
    arr, net = load_array("tpu-mix-16"), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2))
    free = exact_uneven(net, arr, Space.HYPAR, aspace)
    c1 = evaluate_split(net, arr, free.plan).level_cost[1]
    return net, arr, aspace, free, SplitRules(constraints=Constraints(caps=(Cap(1, c1 * arr.dtype_bytes * fraction),)))


def test_on_tpu_mix_16_a_binding_cap_gives_the_pareto_dps_optimum():
    net, arr, aspace, free, rules = _lenet_capped(F(3, 4))
    a = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    b = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert a.status is b.status is Status.OPTIMAL and a.step_time_s == b.step_time_s > free.step_time_s
    assert b.info["method"] == "joint:bound+labels" and b.solver == "exact" and b.bound_s == b.step_time_s


def test_labels_stopped_report_the_bound_and_the_gap_never_optimal(monkeypatch):
    net, arr, aspace, rules, level_s = _levels_capped()  # the level DP's plan keeps the cap: an incumbent
    opt = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules).step_time_s
    monkeypatch.setattr(uneven_joint, "_pareto_graph", lambda m, t, g, best, *a, **k: (False, best, 0))
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is (Status.OPTIMAL if sol.bound_s == sol.step_time_s else Status.FEASIBLE)
    assert sol.bound_s <= opt <= sol.step_time_s <= level_s
    net, arr, aspace, free, rules = _lenet_capped(F(3, 4))  # only the even seed keeps this cap before the labels
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.FEASIBLE and sol.plan is not None and 0 < sol.bound_s <= free.step_time_s < sol.step_time_s
    monkeypatch.setattr(uneven_seed, "even_under_limits", lambda *a, **k: None)
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.UNKNOWN and sol.plan is None and 0 < sol.bound_s <= free.step_time_s


def test_no_plan_still_reports_the_bound(monkeypatch, capsys):
    net, arr, aspace, free, rules = _lenet_capped(F(3, 4))
    monkeypatch.setattr(uneven_joint, "_pareto_graph", lambda m, t, g, best, *a, **k: (False, best, 0))
    monkeypatch.setattr(uneven_joint, "better", lambda m, best, *a: best)  # no plan found keeps the limits
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.UNKNOWN and sol.plan is None and 0 < sol.bound_s <= free.step_time_s

    from .conftest import run_cli

    monkeypatch.setattr(uneven_constrained, "constrained_uneven", lambda *a, **k: sol)
    args = ["split", "--model", "lenet-c", "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
            "--solver", "exact", "--cap", "1=1MB"]
    # the run's seeds (the even split's optimum under the cap first) keep the cap: the best of them, the
    # bound kept (``SeedPlans.floor``: never no plan, nor a worse one, where a seed keeps every rule)
    code, out, err = run_cli(args, capsys)
    assert code == 0 and "feasible by exact" in out, (out, err)
    from explorer.app.render import fmt_seconds

    assert f"proven bound {fmt_seconds(sol.bound_s)}, gap" in out
    code, out, err = run_cli(args + ["--format", "json"], capsys)
    got = json.loads(out)
    assert got["status"] == "feasible" and got["plan"] is not None and F(got["bound"]) == sol.bound_s


def _levels_capped():
    """lenet-c hypar at grid 2 with the level-1 cap the level DP's own plan needs: that plan keeps it."""
    from explorer.solvers.uneven_levels import levels_uneven

    arr, net = load_array("tpu-mix-16"), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2))
    plan = levels_uneven(net, arr, Space.HYPAR, aspace).plan
    c1 = evaluate_split(net, arr, plan).level_cost[1]
    rules = SplitRules(constraints=Constraints(caps=(Cap(1, c1 * arr.dtype_bytes),)))
    return net, arr, aspace, rules, evaluate_split(net, arr, plan).step_time_s


def test_the_level_dp_and_search_plans_are_starts_when_they_keep_the_limits(monkeypatch):
    net, arr, aspace, rules, level_s = _levels_capped()
    plans = uneven_joint._cheap_plans(net, arr, Space.HYPAR, aspace, rules, 10)  # the even seed, level DP, search
    assert len(plans) == 3 and all(aspace.contains(p) for p in plans)
    assert all(rules.violations(evaluate_split(net, arr, p), arr, p) == [] for p in plans[:2])
    seen = []
    real = uneven_joint.better
    monkeypatch.setattr(uneven_joint, "better", lambda m, best, cols, *a: seen.append(cols) or real(m, best, cols, *a))
    sol = constrained_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    assert sol.status is Status.OPTIMAL and sol.step_time_s <= level_s
    starts = [uneven_joint._plan_columns(uneven_joint._Model(net, arr, Space.HYPAR, aspace), p) for p in plans]
    assert all(s in seen for s in starts)


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
    assert d["solvers"]["exact"]["method"] in ("exact:joint:bound+labels", "exact:pareto-dp")
    assert d["optimum"]["proven_by"] == ["brute", "exact", "cpsat"]
    code, d, _ = _run(base, capsys)
    assert code == 0 and d["agree"] and d["solvers"]["exact"]["method"] == "exact:pareto-dp"


