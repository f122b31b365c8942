"""``--solver pruned`` end to end: the CLI, check, sweeps and the API take bound and prune
(``solvers.pruned``) like the other joint solvers; it refuses caps, a binding memory limit and
--split in one line; a time limit gives ``feasible`` with a proven bound, ``optimal`` only when proven."""

from __future__ import annotations

import json
import re

import pytest

from explorer import api
from explorer.core.errors import Refused, SpecError

from .conftest import run_cli as run

SMALL = ["--model", "resnet18", "--array", "array-1024", "--levels", "4", "--space", "accpar"]  # a graph, H = 4


def _json(args, capsys):
    code, out, err = run([*args, "--format", "json"], capsys)
    return code, json.loads(out) if out else None, err


@pytest.mark.parametrize("model", ["resnet18", "bert-base", "alexnet"])
def test_equals_exact_on_small_instances(model, capsys):
    args = ["--model", model, "--array", "array-1024", "--levels", "4", "--space", "accpar"]
    code_e, exact, _ = _json([*args, "--solver", "exact"], capsys)
    code_p, pruned, err = _json([*args, "--solver", "pruned"], capsys)
    assert code_e == code_p == 0
    assert pruned["solver"] == "pruned" and pruned["status"] == exact["status"] == "optimal"
    assert pruned["objective_value"] == pruned["bound"] == exact["objective_value"]
    assert pruned["gap"] == 0 and pruned["ok"] is True and pruned["violations"] == []
    assert set(pruned) == set(exact)  # the same JSON keys as exact's
    assert pruned["bound_method"] == "pruned"


def test_table_names_the_solver_and_its_status(capsys):
    code, out, _ = run([*SMALL, "--solver", "pruned"], capsys)
    assert code == 0
    assert "solver pruned: optimal (objective traffic)" in out
    assert "\npruned " in out  # the plan's row beside the baselines


def test_time_limit_gives_a_proven_bound_never_an_unproven_optimum(capsys):
    """ResNet-50 at H = 6 under 0.1 s: either proven (then the exact optimum) or feasible with a
    bound at most the exact optimum, and the gap in the table and the JSON."""
    args = ["--model", "resnet50", "--array", "array-1024", "--levels", "6", "--space", "accpar"]
    _, exact, _ = _json([*args, "--solver", "exact"], capsys)
    optimum = exact["objective_value"]
    code, r, _ = _json([*args, "--solver", "pruned", "--time-limit", "0.1"], capsys)
    assert code == 0 and r["ok"] is True
    assert r["status"] in ("optimal", "feasible")
    assert r["bound"] <= optimum <= r["objective_value"]
    if r["status"] == "optimal":
        assert r["objective_value"] == r["bound"] == optimum
    else:
        assert r["bound"] < r["objective_value"] and r["gap"] > 0


def test_time_limit_feasible_shows_bound_and_gap_in_the_table(capsys):
    """H = 8: 0.1 s does not leave the dual rounds time to close (the proof takes seconds)."""
    args = ["--model", "resnet50", "--array", "array-1024", "--levels", "8", "--space", "accpar", "--solver", "pruned",
            "--time-limit", "0.1"]
    code, out, _ = run(args, capsys)
    assert code == 0
    if "solver pruned: feasible" in out:  # the gap's two ends in one unit: the plan's value and the bound
        assert re.search(r"^plan [0-9.e+]+ elements, bound [0-9.e+]+ elements, gap [0-9.]+%$", out, re.M), out
    else:
        assert "solver pruned: optimal" in out
    code, r, _ = _json(args, capsys)
    assert r["status"] in ("optimal", "feasible") and r["bound"] <= r["objective_value"]
    assert (r["status"] == "optimal") == (r["bound"] == r["objective_value"])


def _one_line_refusal(code, err, *names):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("explore: error: ")
    for name in names:
        assert name in lines[0]


def test_caps_refused_in_one_line_naming_cpsat_first(capsys):
    code, out, err = run([*SMALL, "--solver", "pruned", "--cap", "0=1GB"], capsys)
    assert out == ""
    _one_line_refusal(code, err, "pruned: link caps", "--solver cpsat (or exact, on graphs it can eliminate)")


def test_a_binding_memory_limit_is_refused_a_slack_one_kept(capsys):
    code, out, err = run([*SMALL, "--solver", "pruned", "--memory", "0.0001"], capsys)
    assert out == ""
    _one_line_refusal(code, err, "pruned: its plan breaks memory", "--solver cpsat (or exact, on graphs it can eliminate)")
    code, r, _ = _json([*SMALL, "--solver", "pruned", "--memory", "1000"], capsys)
    assert code == 0 and r["status"] == "optimal" and r["constraints"]["memory_bytes"] == 1000 * 2**30


def test_split_refused_in_one_line(capsys):
    code, out, err = run(["--model", "alexnet", "--array", "tpu-mix-16", "--split", "optimal", "--solver", "pruned"], capsys)
    assert out == ""
    _one_line_refusal(code, err, "--solver: pruned: no uneven form", "brute, exact, cpsat or dp")


def test_pins_and_forbids_kept(capsys):
    base = ["--model", "alexnet", "--array", "array-1024", "--levels", "4", "--space", "accpar",
            "--pin", "fc6@*=III", "--forbid", "conv1=II"]
    _, exact, _ = _json([*base, "--solver", "exact"], capsys)
    code, r, _ = _json([*base, "--solver", "pruned"], capsys)
    assert code == 0 and r["status"] == "optimal" and r["objective_value"] == exact["objective_value"]
    col = r["layers"].index("fc6")
    assert all(row[col] == "III" for row in r["plan"])
    assert all(row[0] != "II" for row in r["plan"])


def test_check_takes_pruned_on_request(capsys):
    code, r, _ = _json(["check", *SMALL, "--solvers", "exact,pruned"], capsys)
    assert code == 0 and r["agree"] is True
    reports = r["solvers"]
    assert reports["pruned"]["status"] == reports["exact"]["status"] == "optimal"
    assert reports["pruned"]["objective"] == reports["exact"]["objective"]
    code, out, err = run(["check", "--solvers", "exact,greedy"], capsys)
    assert code == 2 and "pruned" in err  # named among the choices


def test_check_reports_a_pruned_refusal_without_disagreeing(capsys):
    code, out, _ = run(["check", *SMALL, "--solvers", "pruned", "--cap", "0=1GB"], capsys)
    assert code == 0 and "pruned: link caps couple the layers" in out


def test_api_solve_and_check():
    got = api.solve("resnet18", "array-1024", levels=4, space="accpar", solver="pruned")
    want = api.solve("resnet18", "array-1024", levels=4, space="accpar", solver="exact")
    assert got.status.value == "optimal" and got.objective_value == want.objective_value == got.bound
    assert got.to_json().keys() == want.to_json().keys()
    with pytest.raises(Refused, match="pruned: link caps"):
        api.solve("resnet18", "array-1024", levels=4, space="accpar", solver="pruned", caps=["0=1GB"])
    with pytest.raises(SpecError, match="pruned: no uneven form"):
        api.solve("alexnet", "tpu-mix-16", split="optimal", solver="pruned")
    report = api.check("resnet18", "array-1024", levels=4, space="accpar", solvers=["pruned"])
    assert report.agree and dict(report.solvers)["pruned"].status.value == "optimal"


def test_sweep_solver_axis_takes_pruned():
    rows = list(api.sweep({"version": 1, "grid": {"model": ["alexnet"], "levels": [4], "space": ["accpar"],
                                                  "array": ["array-1024"], "solver": ["exact", "pruned"]}}, workers=1))
    by = {r["solver"]: r for r in rows}
    assert by["pruned"]["status"] == "optimal" and by["pruned"]["error"] in (None, "")
    assert by["pruned"]["traffic_elements"] == by["exact"]["traffic_elements"]


def test_exact_refusal_names_pruned_where_there_is_no_cap(capsys):
    args = ["--model", "bert-base", "--array", "array-1024", "--space", "accpar", "--solver", "exact"]
    code, out, err = run(args, capsys)
    _one_line_refusal(code, err, "exact: eliminating this graph", "use --solver pruned", "or cpsat")
    code, out, err = run([*args, "--cap", "0=100GB"], capsys)
    _one_line_refusal(code, err, "exact: eliminating this graph", "use --solver cpsat")
    assert "pruned" not in err


@pytest.mark.parametrize("args", [
    ["--pin", "fc6@*=II", "--forbid", "fc6=II"],  # a chain (vgg-a on hypar-16)
    [*SMALL, "--pin", "conv1@2=III", "--forbid", "conv1=III"],  # a graph
    [*SMALL, "--forbid", "fc=I", "--forbid", "fc=II", "--forbid", "fc=III"],  # a layer with no type
])
def test_pins_and_forbids_without_a_plan_are_infeasible_as_exact_says(args, capsys):
    """Not a refusal (nor a traceback): the same exit status, conflict and suggestion as exact's,
    in the table and the JSON."""
    code_e, exact, _ = _json([*args, "--solver", "exact"], capsys)
    code_p, pruned, err = _json([*args, "--solver", "pruned"], capsys)
    assert code_p == code_e == 1 and pruned["status"] == exact["status"] == "infeasible"
    assert pruned["conflict"] == exact["conflict"] and pruned["conflict"]
    assert pruned["suggestion"] == exact["suggestion"] and pruned["reason"] == exact["reason"]
    assert {k: v for k, v in pruned.items() if k not in ("solver", "wall_s", "explanation_wall_s")} == \
        {k: v for k, v in exact.items() if k not in ("solver", "wall_s", "explanation_wall_s")}
    assert "these conflict: " in err and "Traceback" not in err
    _, table_e, _ = run([*args, "--solver", "exact"], capsys)
    code, table_p, _ = run([*args, "--solver", "pruned"], capsys)
    assert code == 1 and "solver pruned: infeasible" in table_p
    same = [[x for x in t.splitlines()[3:] if not x.startswith("explanation searched")] for t in (table_p, table_e)]
    assert same[0] == same[1]  # the constraints and the conflict lines (the explanation's wall aside)


def test_api_pins_without_a_plan_give_an_infeasible_solution():
    from explorer.core.constraints import Constraints, Forbid
    from explorer.core.partition import PartitionType, Space
    from explorer.core.problem import Problem
    from explorer.core.array import synthetic_array
    from explorer.frontends import load_model
    from explorer.solvers import pruned as solver

    problem = Problem(load_model("resnet18"), synthetic_array(3), Space.HYPAR)
    bad = problem.with_constraints(Constraints(forbids=(Forbid(0, PartitionType.I), Forbid(0, PartitionType.II))))
    sol = solver.solve(bad)
    assert sol.status.value == "infeasible" and sol.plan is None and sol.bound is None
