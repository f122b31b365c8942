"""Trial 7's uneven-split findings: the constraints line names --memory as the even split does,
the PLAN BREAKS hint names --split proportional's proving solvers where they apply, CP-SAT's size
refusal comes before its columns are built, Ctrl-C during the uneven CP-SAT gives its plan so far,
check --uneven hints CP-SAT the level DP's plan, and a run without a plan says why it suggests no
smallest feasible limit."""

from __future__ import annotations

import json

from .test_brute_split_rate import mix4b  # noqa: F401 (the fixture)
from .conftest import run_cli

MIX = ["--array", "tpu-mix-16", "--model", "lenet-c"]


def test_the_split_constraints_line_names_memory_as_the_even_split_does(capsys):
    code, even, _ = run_cli(["--model", "lenet-c", "--memory", "0.05"], capsys)
    assert "constraints: memory 51.2 MiB/accelerator (weight copies 0)" in even.splitlines()
    code, out, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05"], capsys)
    assert out.splitlines()[1] == "constraints: memory 51.2 MiB/accelerator (weight copies 0)"
    code, out, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05", "--cap", "0=20MB"], capsys)
    assert out.splitlines()[1] == "constraints: cap level 0 <= 20 MB (--cap); memory 51.2 MiB/accelerator (weight copies 0)"
    code, out, _ = run_cli([*MIX, "--split", "optimal"], capsys)  # each kind's own memory: no constraints line
    assert not any(line.startswith("constraints:") for line in out.splitlines())


def test_the_split_json_gives_memory_as_the_even_split_does(capsys):
    _, even, _ = run_cli(["--model", "lenet-c", "--memory", "0.05", "--format", "json"], capsys)
    _, split, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05", "--format", "json"], capsys)
    assert json.loads(split)["constraints"]["memory_bytes"] == json.loads(even)["constraints"]["memory_bytes"] \
        == "268435456/5"


def test_a_proportional_plan_that_breaks_a_cap_names_proportionals_proving_solvers(capsys):
    code, out, err = run_cli([*MIX, "--split", "proportional", "--cap", "0=1KB"], capsys)
    hint = "--split proportional (its alphas) or optimal --solver brute, exact or cpsat keeps to caps"
    assert code == 1 and hint in err and hint in out
    code, out, err = run_cli([*MIX, "--split", "search", "--cap", "0=1KB"], capsys)
    assert code == 1 and "(--split optimal --solver brute, exact or cpsat keeps to caps" in err


def test_cpsat_refuses_too_many_columns_before_the_exact_path_and_the_build(monkeypatch):
    """alexnet's full space on tpu-mix-16 has 2,048 columns: refused with the build's message
    before any column table is built (it took seconds), after the exact path run first (stubbed:
    no plan; its proof or plan would be the answer)."""
    from fractions import Fraction

    import pytest

    from explorer.app.split_solve import cpsat_after_exact
    from explorer.core.constraints import Cap, Constraints
    from explorer.core.errors import Refused
    from explorer.core.objective import Objective
    from explorer.core.partition import Space
    from explorer.core.solution import Status, split_solution
    from explorer.core.split_rules import SplitRules
    from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
    from explorer.frontends import load_array, load_model
    from explorer.solvers import uneven, uneven_constrained, uneven_cpsat

    def never(*a, **k):
        raise AssertionError("built or solved before the size refusal")

    monkeypatch.setattr(uneven, "_chain_columns", never)
    monkeypatch.setattr(uneven_cpsat, "_chain_columns", never)
    monkeypatch.setattr(uneven_constrained, "constrained_uneven",
                        lambda *a, **k: split_solution("exact", Status.UNKNOWN, None, None, None, 0.0, 0))
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16), FreeAlphas.UNLIKE)
    rules = SplitRules(Objective.TIME, Constraints(caps=(Cap(1, Fraction(5 * 10**6)),)))
    with pytest.raises(Refused, match=r"^cpsat \(uneven splits\): 2,048 columns, more than 2,000$"):
        uneven_cpsat.cpsat_uneven(net, arr, Space.HYPAR, aspace, 10.0, rules=rules)
    # refused by its count, CP-SAT leaves the answer to the exact path (here: no plan), whatever the limit
    sol = cpsat_after_exact(net, arr, Space.HYPAR, aspace, 10.0, rules)
    assert sol.status is Status.UNKNOWN and sol.plan is None and sol.info["exact_alone"]
    assert sol.info["reason"] == "CP-SAT refused the instance (cpsat (uneven splits): 2,048 columns, more than 2,000)"
    with pytest.raises(Refused, match=r"^cpsat \(uneven splits\): 458,752 column pairs, more than 1,000$"):
        uneven_cpsat.cpsat_size_check(net, arr, Space.HYPAR, aspace, rules=rules, max_columns=10**6, max_pairs=1000)


def _stopped_after_the_first_plan(monkeypatch):
    """A simulated Ctrl-C (as test_exact_constrained's): CP-SAT stops at its first plan and
    ``cpsat.run_solver`` says it was interrupted."""
    from explorer.solvers import cpsat as cpsat_module

    real = cpsat_module.run_solver

    def interrupted(solver, model, callback=None):
        solver.parameters.stop_after_first_solution = True
        return real(solver, model, callback)[0], True

    monkeypatch.setattr(cpsat_module, "run_solver", interrupted)


def test_ctrl_c_during_the_uneven_cpsat_gives_its_plan_so_far(monkeypatch):
    import random

    from explorer.core.evaluate import evaluate_split
    from explorer.core.solution import Status
    from explorer.solvers.uneven_cpsat import cpsat_uneven

    from .test_split_rules import _chain_instance

    net, arr, space, aspace = _chain_instance(random.Random(2026))
    assert cpsat_uneven(net, arr, space, aspace, time_limit_s=20).status is Status.OPTIMAL
    _stopped_after_the_first_plan(monkeypatch)
    sol = cpsat_uneven(net, arr, space, aspace, time_limit_s=20)
    assert sol.status is Status.INTERRUPTED and sol.info["reason"].startswith("stopped by Ctrl-C")
    assert sol.plan is not None and evaluate_split(net, arr, sol.plan).step_time_s == sol.step_time_s


def test_ctrl_c_during_split_cpsat_reports_the_plan_so_far_and_exits_130(monkeypatch, tmp_path, capsys):
    from explorer.core.errors import Refused
    from explorer.solvers import uneven_constrained

    from .test_split_rules import _mix2

    def beyond_the_guard(*a, **k):  # the exact path first would prove it: CP-SAT alone, as past its memory guard
        raise Refused("beyond the memory guard")

    monkeypatch.setattr(uneven_constrained, "constrained_uneven", beyond_the_guard)
    _stopped_after_the_first_plan(monkeypatch)
    args = ["--model", "sfc", "--array", _mix2(tmp_path), "--alpha-grid", "4", "--split", "optimal", "--solver", "cpsat"]
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 130 and r["status"] == "interrupted" and r["plan"] is not None and r["ok"]
    assert r["note"] == "cpsat: stopped by Ctrl-C; the best plan so far, optimality not proven"
    assert err.splitlines()[-1].startswith("explore: interrupted after ") and "Traceback" not in err


def test_cpsat_starts_from_the_hinted_plan_and_check_hints_the_level_dps(monkeypatch):
    """A hint is CP-SAT's first solution (stopped there: the hinted plan, not proven); check
    --uneven's cpsat row hints the level DP's plan and still proves on its own."""
    import random

    from explorer.app import check_uneven
    from explorer.core.plan import Plan
    from explorer.core.solution import Status
    from explorer.solvers.uneven_cpsat import cpsat_uneven
    from explorer.solvers.uneven_levels import levels_uneven

    from .test_split_rules import _chain_instance

    net, arr, space, aspace = _chain_instance(random.Random(2026))
    best = cpsat_uneven(net, arr, space, aspace, time_limit_s=20)
    worse = Plan.even(levels_uneven(net, arr, space, aspace, name="dp").plan)  # every alpha 1/2
    from explorer.core.evaluate import evaluate_split

    assert aspace.contains(worse) and evaluate_split(net, arr, worse).step_time_s > best.step_time_s
    _stopped_after_the_first_plan(monkeypatch)
    first = cpsat_uneven(net, arr, space, aspace, time_limit_s=20, hint=worse)
    assert first.plan == worse and first.status is Status.INTERRUPTED
    monkeypatch.undo()
    seen = {}
    real = check_uneven.cpsat_uneven

    def spy(*a, **k):
        seen["hint"] = k["hint"]
        return real(*a, **k)

    monkeypatch.setattr(check_uneven, "cpsat_uneven", spy)
    import time

    from explorer.app.check import Clock

    row = check_uneven._row("cpsat", net, arr, space, aspace, Clock(time.perf_counter(), 20.0))  # the check's 20 s
    assert seen["hint"] == levels_uneven(net, arr, space, aspace, name="dp").plan
    assert row.status == "optimal" and row.step_time_s == best.step_time_s


def test_a_run_without_a_plan_or_a_suggestion_says_why_in_one_line(capsys, monkeypatch):
    """Unknown (no proof within the limit): no smallest feasible limit, and the note says why.
    (This cap is below its floor, 12.91 MB, which now proves it at once: the floor is left out.)"""
    from explorer.solvers import uneven_joint

    monkeypatch.setattr(uneven_joint, "_cap_floor_proof", lambda *a: None)
    code, out, err = run_cli(["--array", "tpu-mix-16", "--model", "alexnet", "--split", "optimal", "--cap", "1=5MB",
                              "--time-limit", "1"], capsys)
    why = "no smallest feasible cap or memory is suggested: that follows a proof that no plan keeps to them"
    assert code == 1 and "unknown by joint" in out and why in out and len(err.splitlines()) == 1 and why in err


def test_no_suggestion_says_why_a_proven_infeasible_graph_has_none():
    from explorer.app.split_notes import no_suggestion as _no_suggestion
    from explorer.app.results import Explanation
    from explorer.core.constraints import Cap, Constraints
    from explorer.core.network import Network
    from explorer.core.solution import Status
    from explorer.core.split_rules import SplitRules

    from .conftest import fc

    rules = SplitRules(constraints=Constraints(caps=(Cap(0, 1),)))
    graph = Network("g", 2, (fc("a", 4, 4), fc("b", 4, 4), fc("c", 4, 4)), ((0, 1), (0, 2)))
    chain = Network.chain("c", 2, [fc("a", 4, 4), fc("b", 4, 4)])
    assert _no_suggestion(graph, rules, Status.INFEASIBLE, Explanation(None, None)).endswith("its search takes chains only")
    assert "time and state limits" in _no_suggestion(chain, rules, Status.INFEASIBLE, None)
    assert _no_suggestion(chain, rules, Status.INFEASIBLE, Explanation(None, "try --cap 0=2B")) == ""
    assert _no_suggestion(chain, SplitRules(), Status.UNKNOWN, None) == ""


def test_the_least_cap_over_one_column_per_prefix_is_the_least_over_all(monkeypatch):
    """A level-h side depends on levels 0..h only: the least cap found over one column per prefix
    of those levels is the one found over every column."""
    from fractions import Fraction

    from explorer.core.constraints import Cap, Constraints
    from explorer.core.partition import Space
    from explorer.core.split_rules import SplitRules
    from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
    from explorer.frontends import load_array, load_model
    from explorer.solvers import uneven_least

    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(4), FreeAlphas.UNLIKE)
    rules = SplitRules(constraints=Constraints(caps=(Cap(1, Fraction(1000)),)))
    fast = uneven_least.least_limits(net, arr, Space.HYPAR, aspace, rules, 60.0)
    monkeypatch.setattr(uneven_least, "_depth", lambda lay, used: lay.H)
    every = uneven_least.least_limits(net, arr, Space.HYPAR, aspace, rules, 60.0)
    assert fast == every and fast[0].need_bytes == 322460


def test_a_check_with_a_dp_row_hints_its_plan_without_running_the_dp_again(monkeypatch, mix4b):  # noqa: F811
    """check --uneven runs the cheap rows first: CP-SAT's hint is the dp row's plan, the level DP
    run once (it used to run again inside the cpsat row)."""
    from explorer.app import check_uneven
    from explorer.core.partition import Space
    from explorer.frontends import load_array, load_model

    runs, seen = [], {}
    real_dp, real_cpsat = check_uneven.levels_uneven, check_uneven.cpsat_uneven

    def counted(*a, **k):
        runs.append(1)
        return real_dp(*a, **k)

    def spy(*a, **k):
        seen["hint"] = k["hint"]
        return real_cpsat(*a, **k)

    monkeypatch.setattr(check_uneven, "levels_uneven", counted)
    monkeypatch.setattr(check_uneven, "cpsat_uneven", spy)
    report = check_uneven.check_uneven(load_model("sfc"), load_array(mix4b), Space.ACCPAR, grid=2, solvers=("cpsat", "dp"))
    dp = next(r for r in report.rows if r.solver == "dp")
    assert len(runs) == 1 and seen["hint"] == dp.plan and [r.solver for r in report.rows] == ["cpsat", "dp"]
