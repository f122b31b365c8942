"""An infeasible run's explanation (minimal conflict, nearest feasible limit) keeps to the time
limit (trial 8, items 6 and 7): it gets what the limit leaves after the solve, a step it stops
leaves its part unsettled and the explanation says so, with its own time."""

import time
from fractions import Fraction

from explorer.app import run as run_module
from explorer.app.render import render_table as render
from explorer.core.constraints import Cap, Constraints
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_array, load_model
from explorer.solvers import cpsat, exact
from explorer.solvers.cpsat import explain_infeasible


def vgg_a_capped() -> Problem:
    """VGG-A, level-0 cap 50 MB (every plan needs 89.77 MB) and a loose memory limit: two
    resources, so the exact solver does not name the conflict itself and CP-SAT explains it."""
    return Problem(load_model("vgg-a"), load_array("hypar-16"), Space.HYPAR,
                   constraints=Constraints(caps=(Cap(0, Fraction(50 * 10**6), "--cap"),), memory_bytes=Fraction(4 * 2**30)))


def test_a_passed_deadline_stops_the_explanation_with_a_note():
    t0 = time.perf_counter()
    why = explain_infeasible(vgg_a_capped(), deadline=t0 - 1)
    assert why["infeasible"] and why["conflict"] is None and why["suggestion"] is None
    assert why["note"] == "cut short by the time limit: no conflicting set named"
    assert why["wall_s"] < 1.0


def test_an_unsettled_step_is_named_and_the_rest_kept(monkeypatch):
    feasible = cpsat._feasible
    calls = []

    def third_call_unknown(model, lits, *args, **kwargs):  # the "do the others conflict too?" step
        calls.append(len(lits))
        if len(calls) == 3:
            return None, cpsat.cp_model.UNKNOWN
        return feasible(model, lits, *args, **kwargs)

    monkeypatch.setattr(cpsat, "_feasible", third_call_unknown)
    why = explain_infeasible(vgg_a_capped(), deadline=time.perf_counter() + 60)
    assert why["conflict"] == ["cap level 0 <= 50 MB (--cap)"]
    assert why["more_conflicts"] is None and why["suggestion"] is None
    assert "whether the other constraints conflict among themselves too is not settled" in why["note"]


def test_without_a_deadline_nothing_is_cut():
    why = explain_infeasible(vgg_a_capped())
    assert "note" not in why and why["conflict"] == ["cap level 0 <= 50 MB (--cap)"]
    assert "89.77 MB" in why["suggestion"]


def lenet_memory_short() -> Problem:
    """LeNet-C, memory 0.0001 GiB (no plan fits) and a loose cap: the exact solver leaves the
    least memory under a cap to CP-SAT's explanation."""
    return Problem(load_model("lenet-c"), load_array("hypar-16"), Space.HYPAR,
                   constraints=Constraints(caps=(Cap(0, Fraction(10**12), "--cap"),), memory_bytes=Fraction(2**30 // 10**4)))


def test_exact_names_a_cap_no_plan_meets_under_other_limits_itself():
    # trial 8 item 7: resnet18 --memory 0.3 --cap 1=20MB: CP-SAT's explanation ran for minutes
    e = exact.solve(vgg_a_capped(), SolveOptions(time_limit_s=30))
    assert e.status is Status.INFEASIBLE
    assert e.info["conflict"] == ["cap level 0 <= 50 MB (--cap)"]
    assert e.info["suggestion"] == explain_infeasible(vgg_a_capped())["suggestion"]
    assert "try --cap 0=89.774848MB" in e.info["suggestion"]


def test_run_gives_the_explanation_what_the_limit_leaves(monkeypatch):
    seen = {}

    def record(problem, seed=0, deadline=None):
        seen["left"] = deadline - time.perf_counter()
        return {"infeasible": True, "conflict": ["cap level 0 <= 50 MB (--cap)"], "suggestion": None,
                "note": "cut short by the time limit: the nearest feasible limit was not found", "wall_s": 0.25}

    monkeypatch.setattr(cpsat, "explain_infeasible", record)
    result = run_module.run(lenet_memory_short(), "exact", SolveOptions(time_limit_s=3))
    assert result.status is Status.INFEASIBLE
    assert 0 < seen["left"] <= 3  # not unbounded: at most the limit
    text = render(result)
    assert ("explanation searched after the solve, wall 250.00 ms\n"
            "explanation cut short by the time limit: the nearest feasible limit was not found\n") in text
    assert result.to_json()["explanation_wall_s"] == 0.25
    result = run_module.run(lenet_memory_short(), "exact", SolveOptions())  # no --time-limit: the default 60 s
    assert 0 < seen["left"] <= 60


def test_unknown_with_a_bound_says_no_plan_and_prints_the_bound(monkeypatch):
    # trial 8 item 1: the time limit ran out after the Lagrangian bound, before any plan met the limits
    from explorer.solvers import constrained

    from .test_exact_constrained import _capped_chain

    p, opt, _ = _capped_chain()

    def out_of_time(*args):
        raise TimeoutError

    monkeypatch.setattr(constrained, "_least_resources", out_of_time)
    result = run_module.run(p, "exact", SolveOptions(time_limit_s=30))
    assert result.status is Status.UNKNOWN and result.plan is None
    assert result.bound is not None and result.bound <= p.real(opt.objective)
    assert "no plan found; a lower bound proven" in result.reason and "best plan met" not in result.reason
    assert f"no plan found; lower bound {float(result.bound):.6g} elements proven (by exact:lagrangian)" in render(result)


def test_cpsat_keeps_the_conflict_its_exact_first_step_named(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("CP-SAT searched the explanation the exact method had named")

    monkeypatch.setattr(cpsat, "explain_infeasible", never)
    result = run_module.run(vgg_a_capped(), "cpsat", SolveOptions(time_limit_s=30, workers=1))
    assert result.status is Status.INFEASIBLE
    assert result.explanation.conflict == ("cap level 0 <= 50 MB (--cap)",)
    assert "try --cap 0=89.774848MB" in result.explanation.suggestion


def test_a_proven_infeasible_run_whose_explanation_ran_out_says_it_is_proven():
    """explore's last line for an infeasible run with no conflict named (the explanation cut short)
    says the solver proved it and what would name the conflict (was "cpsat found no plan"; trial 9)."""
    from types import SimpleNamespace

    from explorer.app.cli import why_not_ok
    from explorer.core.solution import Status

    cut = SimpleNamespace(explanation=SimpleNamespace(conflict=()), figures=None, reason=None, solver="cpsat",
                          status=Status.INFEASIBLE)
    assert why_not_ok(cut) == ("cpsat proved that no plan satisfies the constraints; a larger --time-limit lets the "
                               "explanation name the conflicting ones")
    unknown = SimpleNamespace(explanation=None, figures=None, reason=None, solver="cpsat", status=Status.UNKNOWN)
    assert why_not_ok(unknown) == "cpsat found no plan"
