"""Issue 20 on the uneven split's command: cpsat under caps or memory runs the exact constrained path
first (``app.split_solve.cpsat_after_exact``, as the even cpsat's ``app.run.exact_first``);
``--split proportional`` takes brute, exact and cpsat (the types at the proportional alphas); an
infeasible run suggests the smallest feasible cap or memory (``solvers.uneven_least``)."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.app.split import proportional_space
from explorer.app.split_solve import cpsat_after_exact
from explorer.core.constraints import Cap
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.solution import Status, split_solution
from explorer.core.objective import Objective
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_constrained import constrained_uneven
from explorer.solvers.uneven_least import least_limits
from explorer.solvers.uneven_levels import levels_uneven

from .test_split_rules import _chain_instance, _check, _mix2, _random_rules, _run


def _agree(sols):
    assert len({s.status for s in sols}) == 1, [(s.solver, s.status) for s in sols]
    if sols[0].status is not Status.INFEASIBLE:
        assert sols[0].status is Status.OPTIMAL
        assert len({s.split_value for s in sols}) == 1, [(s.solver, s.split_value) for s in sols]
    return sols[0].status


def test_uneven_cpsat_under_caps_and_memory_equals_exact_and_brute_on_seeded_instances():
    rng = random.Random(2020)
    seen = {"infeasible": 0, "by exact": 0}
    for _ in range(30):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        c = cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        sols = [brute_split(net, arr, space, aspace, rules=rules),
                constrained_uneven(net, arr, space, aspace, rules=rules), c]
        status = _agree(sols)
        assert c.solver == "cpsat" and ("exact_first" in c.info) is rules.couples_layers
        assert c.info["proved_by"].startswith("exact:") or c.info["proved_by"] == "cpsat"
        assert rules.couples_layers or c.info["proved_by"] == "cpsat"
        seen["by exact"] += c.info["proved_by"].startswith("exact:")
        if status is Status.INFEASIBLE:
            seen["infeasible"] += 1
            continue
        _check(net, arr, space, aspace, rules, c)
    assert seen["infeasible"] >= 3 and seen["by exact"] >= 10, seen


def _stub(status, value=None, bound=None, plan=None, method="lagrangian (the labels did not finish: time limit)"):
    def solve(*a, **k):
        sol = split_solution("exact", status, plan, value, bound, 0.0, 0)
        sol.info["method"] = method
        return sol
    return solve


def test_cpsat_after_an_unproven_exact_path_is_optimal_only_when_proven(monkeypatch):
    """The exact path stopped (feasible with a bound, or unknown): CP-SAT answers, its own proof or
    the two bounds meeting the better plan's value; a bound below the plan leaves it feasible."""
    from explorer.solvers import uneven_constrained

    rng = random.Random(5)
    checked = 0
    while checked < 6:
        net, arr, space, aspace = _chain_instance(rng)
        rules = replace(_random_rules(rng, net, arr, space, aspace), objective=Objective.TIME)
        truth = brute_split(net, arr, space, aspace, rules=rules)
        if truth.status is not Status.OPTIMAL or not rules.couples_layers:
            continue
        checked += 1
        v = truth.split_value
        monkeypatch.setattr(uneven_constrained, "constrained_uneven", _stub(Status.UNKNOWN))
        c = cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        assert c.status is Status.OPTIMAL and c.split_value == v and c.info["proved_by"] == "cpsat"
        # the exact path's plan with a proven bound equal to it: proven by the exact bound
        monkeypatch.setattr(uneven_constrained, "constrained_uneven", _stub(Status.FEASIBLE, v, v, truth.plan))
        c = cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        assert c.status is Status.OPTIMAL and c.split_value == c.split_bound == v
        # CP-SAT without a proof (out of time) and an exact bound below the plan: never optimal
        monkeypatch.setattr(uneven_constrained, "constrained_uneven", _stub(Status.FEASIBLE, v, v / 2, truth.plan))
        monkeypatch.setattr("explorer.solvers.uneven_cpsat.cpsat_uneven",
                            lambda *a, **k: split_solution("cpsat", Status.UNKNOWN, None, None, None, 0.0, 0))
        c = cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        assert c.status is Status.FEASIBLE and c.split_value == v and c.split_bound == v / 2
        assert c.info["proved_by"].startswith("exact:lagrangian") and c.plan == truth.plan

        def too_large(*a, **k):
            raise Refused("cpsat (uneven splits): 45,927 column pairs, more than 20,000")

        monkeypatch.setattr("explorer.solvers.uneven_cpsat.cpsat_uneven", too_large)  # CP-SAT refuses: the exact answer
        c = cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        assert c.status is Status.FEASIBLE and c.solver == "cpsat" and c.split_bound == v / 2
        assert "CP-SAT refused the instance" in c.info["reason"]
        monkeypatch.setattr(uneven_constrained, "constrained_uneven", _stub(Status.UNKNOWN))
        with pytest.raises(Refused):  # nothing from the exact path: CP-SAT's refusal stands
            cpsat_after_exact(net, arr, space, aspace, 20.0, rules)
        monkeypatch.undo()


def test_proportional_with_every_solver_chooses_the_types_at_the_proportional_alphas():
    """brute, exact (plain and the constrained path) and cpsat over the proportional space agree on
    seeded instances with pins, forbids, caps and memory; the level DP's plan is never better;
    every plan keeps each free class at its proportional ratio."""
    rng = random.Random(77)
    seen = {"optimal": 0, "infeasible": 0}
    for _ in range(30):
        net, arr, space, aspace = _chain_instance(rng)
        prop = proportional_space(arr, aspace)
        rules = _random_rules(rng, net, arr, space, prop)
        sols = [brute_split(net, arr, space, prop, rules=rules),
                (constrained_uneven if rules.couples_layers else exact_uneven)(net, arr, space, prop, rules=rules),
                cpsat_uneven(net, arr, space, prop, time_limit_s=20, rules=rules),
                cpsat_after_exact(net, arr, space, prop, 20.0, rules)]
        status = _agree(sols)
        seen[status.value] += 1
        if status is Status.INFEASIBLE:
            continue
        for s in sols:
            _check(net, arr, space, prop, rules, s)
            assert all(a == prop.choices(h, prop.group_class[h][g])[0]
                       for h, groups in enumerate(s.plan.alphas) for g, row in enumerate(groups) for a in row)
        dp = levels_uneven(net, arr, space, prop, rules=rules, name="dp")
        ev = evaluate_split(net, arr, dp.plan, rules.weight_copies)
        if not rules.violations(ev, arr, dp.plan):
            assert rules.value(ev) >= sols[0].split_value
    assert seen["optimal"] >= 10 and seen["infeasible"] >= 2, seen


def test_proportional_solvers_on_the_command_line(tmp_path, capsys):
    """sfc on a v2 + v3 pair: --split proportional with exact, cpsat and brute proves one optimum at
    alpha 15/56 under a cap (19 MB: none, the suggestion says so); the level DP is not better; search still takes no --solver."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--split", "proportional", "--cap", "0=30MB"]
    out = {s: _run(base + ["--solver", s], capsys) for s in ("exact", "cpsat", "brute", "dp")}
    values = {F(d["objective_value"]) for s, (code, d, _) in out.items() if s != "dp"}
    assert len(values) == 1 and all(out[s][0] == 0 and out[s][1]["status"] == "optimal" for s in ("exact", "cpsat", "brute"))
    assert {a for level in out["exact"][1]["alphas"] for g in level for a in g} == {"15/56"}
    assert out["cpsat"][1]["bound_method"].startswith("exact:") and out["brute"][1]["bound_method"] == "brute"
    assert out["dp"][1]["status"] == "feasible" and "bound_method" not in out["dp"][1]
    if out["dp"][1]["ok"]:
        assert F(out["dp"][1]["objective_value"]) >= values.pop()
    code, d, err = _run(base[:-1] + ["0=19MB", "--solver", "exact"], capsys)
    assert code == 1 and d["status"] == "infeasible" and d["suggestion"].startswith("the smallest feasible cap at level 0")
    code, d, err = _run(["--model", "sfc", "--array", arr, "--split", "search", "--solver", "exact"], capsys)
    assert code == 2 and d is None and err.count("\n") == 1 and "--solver: exact: not with --split search" in err


def test_an_infeasible_uneven_run_suggests_the_smallest_feasible_limit(tmp_path, capsys):
    """As the even run: the lone conflicting cap or memory limit named, and the least value that
    admits a plan; that value is feasible and any smaller one is not (exact, cpsat, brute)."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal", "--solver"]
    code, d, err = _run(base + ["cpsat", "--cap", "0=18MB"], capsys)
    assert code == 1 and d["conflict"] == ["cap level 0 <= 18 MB (--cap)"]
    assert d["suggestion"] == ("the smallest feasible cap at level 0 is 18.88 MB (18879488 bytes): try --cap "
                               "0=18.879488MB") and d["suggestion"] in err and err.count("\n") == 1
    for s in ("exact", "brute"):
        assert _run(base + [s, "--cap", "0=18.879488MB"], capsys)[1]["status"] == "optimal"  # as suggested
        assert _run(base + [s, "--cap", "0=18879487B"], capsys)[1]["status"] == "infeasible"
    code, d, _ = _run(base + ["exact", "--memory", "0.25"], capsys)
    assert code == 1 and d["suggestion"].endswith("try --memory 0.2682")
    assert _run(base + ["exact", "--memory", "0.2682"], capsys)[1]["status"] == "optimal"
    assert _run(base + ["exact", "--memory", "0.2681"], capsys)[1]["status"] == "infeasible"
    code, d, _ = _run(base + ["brute", "--memory", "0.25", "--cap", "0=18MB"], capsys)  # each conflicts alone
    assert code == 1 and d["conflict"] == ["cap level 0 <= 18 MB (--cap)"] and d["suggestion"] is None


def test_least_limits_are_the_smallest_feasible_on_seeded_instances():
    """On every infeasible seeded instance: a suggested limit admits a plan (brute force), and a
    limit a little below it admits none."""
    rng = random.Random(2020)
    suggested = 0
    for _ in range(40):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        if brute_split(net, arr, space, aspace, rules=rules).status is not Status.INFEASIBLE:
            continue
        c = rules.constraints
        for i, x in enumerate(least_limits(net, arr, space, aspace, rules)):
            if x.need_bytes is None:
                continue
            suggested += 1
            for need, status in ((x.need_bytes, Status.OPTIMAL), (x.need_bytes * (1 - F(1, 10**6)), Status.INFEASIBLE)):
                if x.level is None:
                    moved = replace(rules, leaf_memory_bytes=(need,) * len(rules.leaf_memory_bytes))
                else:
                    caps = tuple(Cap(k.level, need) if j == i else k for j, k in enumerate(c.caps))
                    moved = replace(rules, constraints=replace(c, caps=caps))
                assert brute_split(net, arr, space, aspace, rules=moved).status is status
    assert suggested >= 3, suggested


def test_sweep_and_api_take_proportional_with_a_proving_solver(tmp_path, capsys):
    """One rule for explore --split, sweeps and the API: a proportional point with solver exact
    runs (the same proven value as explore's); a search point with a solver is still refused."""
    from explorer.api import solve, sweep
    from explorer.core.errors import SpecError

    from .conftest import run_cli

    arr = _mix2(tmp_path)
    f = tmp_path / "s.yaml"
    f.write_text(f"version: 1\npoints:\n  - {{model: sfc, array: {arr}, space: hypar, split: proportional, solver: exact, "
                 "caps: ['0=30MB']}\n")
    (row,) = list(sweep(str(f), tmp_path / "out", workers=1))
    d = _run(["--model", "sfc", "--array", arr, "--space", "hypar", "--split", "proportional", "--solver", "exact",
              "--cap", "0=30MB"], capsys)[1]
    assert row["status"] == d["status"] == "optimal" and row["objective_value"] == d["objective_value"]
    r = solve("sfc", arr, space="hypar", split="proportional", solver="cpsat", caps={0: "30MB"})
    assert r.status.value == "optimal" and r.objective_value == F(d["objective_value"])
    f.write_text(f"version: 1\npoints:\n  - {{model: sfc, array: {arr}, split: search, solver: exact}}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o2")], capsys)
    assert code == 2 and "points[0].solver: not with split" in err and err.count("\n") == 1
    try:
        solve("sfc", arr, split="search", solver="exact")
    except SpecError as err:
        assert "solver" in str(err)
    else:
        raise AssertionError("solve(split='search', solver='exact') was not refused")


def test_the_note_says_what_proved_the_answer_or_why_not():
    from explorer.app.split_notes import proof_note as _proof_note

    first = _proof_note("cpsat", Status.OPTIMAL, 10, {"proved_by": "exact:lagrangian+labels", "exact_first": "optimal"})
    assert "proven by the exact constrained path (exact:lagrangian+labels)" in first and "not needed" in first
    both = _proof_note("cpsat", Status.OPTIMAL, 10, {"proved_by": "exact:lagrangian", "exact_first": "feasible"})
    assert "the two together" in both
    assert _proof_note("cpsat", Status.OPTIMAL, 10, {"proved_by": "cpsat", "exact_first": "feasible"}) == ""
    state = _proof_note("exact", Status.FEASIBLE, 10, {"method": "lagrangian (the labels did not finish: state limit)"})
    assert "state limit" in state and "--time-limit does not lift" in state and "gives more" not in state
    clock = _proof_note("exact", Status.FEASIBLE, 10, {"method": "lagrangian (the labels did not finish: time limit)"})
    assert "stopped at the time limit (10 s)" in clock and "--time-limit gives more" in clock


def test_cpsat_reasons_say_raise_the_time_limit_only_where_it_helps():
    """The even cpsat's and the constrained path's CP-SAT fallback's reasons (issue 20, item 4)."""
    from explorer.core.solution import SolveOptions
    from explorer.solvers.constrained import _out_of_time_reason
    from explorer.solvers.cpsat import no_plan_reason

    assert no_plan_reason("UNKNOWN", True).endswith("raise --time-limit")
    for text in (no_plan_reason("MODEL_INVALID", True), no_plan_reason("UNKNOWN", False)):
        assert "raise --time-limit" not in text
    assert "would not help" in no_plan_reason("UNKNOWN", False) and "a bug" in no_plan_reason("MODEL_INVALID", True)
    assert "deterministic" in no_plan_reason("UNKNOWN", False, True)
    never = _out_of_time_reason(0, 5.04, SolveOptions(time_limit_s=5.0))
    assert "before CP-SAT's restricted search could start" in never and "did not finish" not in never
    assert "(5.0 s of --time-limit 5 s)" in never
    ran = _out_of_time_reason(3, 60.1, SolveOptions())
    assert "3 rounds" in ran and "the default limit of 60 s (--time-limit sets another)" in ran


def test_a_ctrl_c_in_the_least_limit_search_reaches_the_cli(monkeypatch):
    """The smallest-feasible search's CP-SAT runs through ``cpsat.run_solver``: a Ctrl-C there is
    the user's and is raised (CP-SAT's own SIGINT handler used to end it as at a time limit, the
    run going on with no suggestion and no trace of the Ctrl-C)."""
    from explorer.solvers import cpsat

    calls = []

    def stopped(solver, model, callback=None):
        calls.append(1)
        return 0, True  # UNKNOWN, interrupted

    monkeypatch.setattr(cpsat, "run_solver", stopped)
    rng = random.Random(2020)
    for _ in range(40):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        if brute_split(net, arr, space, aspace, rules=rules).status is not Status.INFEASIBLE:
            continue
        before = len(calls)
        try:
            least_limits(net, arr, space, aspace, rules)
        except KeyboardInterrupt:
            assert len(calls) == before + 1
        else:
            assert len(calls) == before  # this instance's search did not reach CP-SAT
    assert calls, "no seeded instance reached the CP-SAT search"
