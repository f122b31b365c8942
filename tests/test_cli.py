"""The explore command: defaults, JSON contract, output file, and one-line errors (exit 2)."""

import json
import subprocess
import sys
from fractions import Fraction

import pytest


from .conftest import run_cli as run


def test_default_run_is_vgg_a_on_hypar16(capsys):
    code, out, err = run([], capsys)
    assert code == 0
    assert "vgg-a on hypar-16 (16 accelerators, 4 levels)" in out
    assert "level-optimal" in out
    for name in ("all-I", "all-II", "trick"):
        assert name in out
    assert "conv1_1" in out and "fc8" in out


REQUIRED = {"model", "array", "space", "solver", "batch", "levels", "dtype_bytes", "layers", "plan",
            "level_cost_elements", "traffic_elements", "traffic_bytes", "status", "wall_s", "baselines"}


def test_json_contract(capsys):
    code, out, _ = run(["--model", "lenet-c", "--space", "accpar", "--format", "json", "--batch", "64", "--levels", "3"], capsys)
    assert code == 0
    r = json.loads(out)
    assert REQUIRED <= set(r)
    assert r["model"] == "lenet-c" and r["batch"] == 64 and r["levels"] == 3 and r["space"] == "accpar"
    assert len(r["plan"]) == 3 and all(len(row) == 4 for row in r["plan"])
    assert all(t in ("I", "II", "III") for row in r["plan"] for t in row)
    traffic = sum(2**h * Fraction(c) for h, c in enumerate(r["level_cost_elements"]))
    assert traffic == Fraction(r["traffic_elements"])
    assert Fraction(r["traffic_bytes"]) == 2 * r["dtype_bytes"] * traffic
    assert set(r["baselines"]) == {"all-I", "all-II", "trick"}
    for b in r["baselines"].values():
        assert {"traffic_elements", "traffic_bytes"} <= set(b)
    # the DP never does worse than data parallelism at every level (all-I is one of its candidates per level)
    assert Fraction(r["traffic_elements"]) <= Fraction(r["baselines"]["all-I"]["traffic_elements"])


def test_output_file(tmp_path, capsys):
    target = tmp_path / "r.json"
    code, out, err = run(["--format", "json", "--output", str(target)], capsys)
    assert code == 0 and out == "" and "wrote" in err
    assert json.loads(target.read_text())["model"] == "vgg-a"


def test_list(capsys):
    code, out, _ = run(["list"], capsys)
    assert code == 0 and "vgg-e" in out and "hypar-16" in out and "vgg16 = vgg-d" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["--model", "nope"], "--model: unknown model 'nope'"),
        (["--array", "nope"], "--array: unknown array 'nope'"),
        (["--model", "/no/such/file.yaml"], "/no/such/file.yaml: no such file"),
        (["--levels", "0"], "--levels: must be between 1 and 20"),
        (["--levels", "40"], "--levels: must be between 1 and 20"),
        (["--levels", "2.5"], "Invalid value for '--levels'"),
        (["--batch", "0"], "--batch: must be a positive integer, got 0"),
        (["--batch", "-3"], "--batch: must be a positive integer, got -3"),
        (["--space", "mixed"], "Invalid value for '--space'"),
    ],
)
def test_bad_input_one_line_exit_2(args, message, capsys, tmp_path):
    target = tmp_path / "out.json"
    code, out, err = run(args + ["--output", str(target)], capsys)
    assert code == 2
    assert err.startswith("explore: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not target.exists(), "nothing written on bad input"


def test_bad_spec_file_exit_2(tmp_path, capsys):
    p = tmp_path / "dup.yaml"
    p.write_text("version: 1\nname: x\nname: y\nlayers: []\n")
    code, _, err = run(["--model", str(p)], capsys)
    assert code == 2 and f"{p}: invalid YAML: duplicate key 'name'" in err


def test_console_script_runs():
    # the installed entry point (as the README uses it)
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", "--model", "sfc", "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"] == "sfc"


def test_cpsat_json_has_bound_and_gap(capsys):
    code, out, err = run(["--model", "lenet-c", "--space", "accpar", "--solver", "cpsat", "--workers", "1", "--format", "json"], capsys)
    assert code == 0
    r = json.loads(out)
    assert r["status"] == "optimal" and r["gap"] == 0
    assert Fraction(r["bound"]) == Fraction(r["traffic_elements"])
    assert "[explore]" in err  # progress goes to stderr


def test_objective_time_reports_both_figures(capsys):
    code, out, _ = run(["--model", "alexnet", "--solver", "exact", "--objective", "time", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["objective"] == "time"
    # the objective is the step time: compute (every plan's) + communication, both reported
    assert float(Fraction(r["objective_value"])) == pytest.approx(r["comm_time_s"] + r["compute_s"], rel=1e-12)
    assert r["traffic_elements"] > 0 and r["comm_time_s"] > 0
    t = r["time_objective"]
    assert Fraction(r["objective_value"]) == Fraction(t["compute_s"]) + Fraction(t["communication_s"])
    assert float(Fraction(t["communication_s"])) == pytest.approx(r["comm_time_s"], rel=1e-12)


def test_check_agrees_and_reports_gap(capsys):
    code, out, _ = run(["check", "--model", "lenet-c", "--space", "accpar", "--workers", "1", "--format", "json"], capsys)
    assert code == 0
    r = json.loads(out)
    assert r["agree"] is True and r["problems"] == []
    assert all(lv["dp_is_level_optimal"] for lv in r["levels"])
    assert r["solvers"]["cpsat"]["status"] == "optimal" and r["solvers"]["exact"]["status"] == "optimal"
    assert r["solvers"]["brute"]["status"] == "refused" and "exceeds its limit" in r["solvers"]["brute"]["reason"]
    o = r["optimum"]
    # lenet-c on 16 accelerators, accpar: the DP misses the optimum by 102,400 elements (5.598%)
    assert Fraction(o["dp_gap"]) == Fraction(o["dp_objective"]) - Fraction(o["objective"]) > 0
    assert o["dp_gap_percent"] == pytest.approx(100 * float(Fraction(o["dp_gap"]) / Fraction(o["objective"])))
    assert o["cells_differing"]


CHECK_MEMORY = ["check", "--model", "alexnet", "--space", "accpar", "--batch", "128", "--levels", "4", "--objective", "time",
                "--memory", "0.05", "--solvers", "exact"]


def test_check_under_memory_shows_the_limit_and_no_gap_for_a_plan_that_breaks_it(capsys):
    # the DP's plan (0.1077 s) breaks 0.05 GiB; the proven optimum that fits is 0.1084 s: no "gap -0.58%"
    code, out, _ = run(CHECK_MEMORY, capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "constraints: memory 51.2 MiB/accelerator (weight copies 0)"
    dp_row = next(line for line in lines if line.startswith("  dp "))
    assert dp_row.endswith("PLAN BREAKS: memory <= 51.2 MiB per accelerator")
    assert "gap -" not in out and "-0.580%" not in out
    assert "DP 107.7378 ms: no gap, its plan breaks memory <= 51.2 MiB per accelerator" in out
    code, out, _ = run(CHECK_MEMORY + ["--format", "json"], capsys)
    o = json.loads(out)["optimum"]
    assert (o["dp_gap"], o["dp_gap_percent"], o["dp_satisfies_constraints"]) == (None, None, False)
    assert Fraction(o["dp_objective"]) < Fraction(o["objective"])


def test_check_without_given_constraints_has_no_constraints_line(capsys):
    code, out, _ = run(["check", "--model", "sfc", "--levels", "2", "--solvers", "exact"], capsys)
    assert code == 0 and "constraints:" not in out and "PLAN BREAKS" not in out


def test_levels_beyond_the_array_are_a_warning(capsys):
    code, out, _ = run(["--model", "alexnet", "--levels", "7", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["warnings"] == [
        "levels 4-6 are beyond the 4 levels array hypar-16 lists: their link bandwidth is the last listed level's "
        "again (60 GB/s at level 4; the array's bandwidth_beyond: repeat)"]
    code, out, _ = run(["--model", "alexnet", "--levels", "4"], capsys)
    assert code == 0 and "warning:" not in out


def test_check_table(capsys):
    code, out, _ = run(["check", "--model", "sfc", "--levels", "2", "--workers", "1"], capsys)
    assert code == 0
    assert "verdict: everything agrees with the model" in out
    assert "brute" in out and "optimal" in out


def test_check_exit_1_when_exact_solvers_disagree():
    from dataclasses import replace

    from explorer.app.check import check
    from explorer.core.partition import Space
    from explorer.core.problem import Problem
    from explorer.frontends import load_array, load_model
    from solvers import get_solver

    def wrong_exact(problem, options):
        # a consistent but false claim: the DP's plan labelled as the proven optimum
        dsol = get_solver("dp")(problem, options)
        return replace(dsol, solver="exact", status=get_solver("exact")(problem, options).status, bound=dsol.objective)

    def misreporting_exact(problem, options):
        sol = get_solver("exact")(problem, options)
        return replace(sol, objective=sol.objective + 1, bound=sol.objective + 1)

    p = Problem(load_model("lenet-c"), load_array("hypar-16").with_levels(2), Space.ACCPAR)
    assert check(p).agree is True
    r = check(p, lookup=lambda name: wrong_exact if name == "exact" else get_solver(name))
    assert r.agree is False
    assert any("exact solvers disagree" in msg for msg in r.problems)
    r = check(p, lookup=lambda name: misreporting_exact if name == "exact" else get_solver(name))
    assert r.agree is False
    assert any("evaluator disagrees with exact" in msg for msg in r.problems)


def test_check_exit_1_when_dp_not_level_optimal():
    from dataclasses import replace

    from explorer.app.check import check
    from explorer.core.partition import Space
    from explorer.core.plan import Plan
    from explorer.core.problem import Problem
    from explorer.frontends import load_array, load_model
    from solvers import get_solver
    from explorer.core.solution import plan_solution

    def all_i_dp(problem, options):
        sol = get_solver("dp")(problem, options)
        plan = Plan.uniform(problem.levels, [problem.space.types[0]] * problem.num_layers)
        return replace(plan_solution("dp", problem, plan, sol.status, 0.0))

    p = Problem(load_model("lenet-c"), load_array("hypar-16").with_levels(2), Space.ACCPAR)
    r = check(p, lookup=lambda name: all_i_dp if name == "dp" else get_solver(name))
    assert r.agree is False
    assert "DP is not level-optimal at level 0" in r.problems


def test_check_bad_solver_list(capsys):
    code, _, err = run(["check", "--solvers", "cpsat,magic"], capsys)
    assert code == 2 and "--solvers: unknown solver magic" in err


def test_exact_refusal_is_bad_input(capsys):
    code, _, err = run(["--solver", "exact", "--space", "accpar", "--levels", "13"], capsys)
    assert code == 2 and "exact: 3^13 = 1,594,323 type vectors per layer" in err


def test_output_to_a_missing_folder_is_bad_input(tmp_path, capsys):
    code, out, err = run(["--output", str(tmp_path / "no" / "such" / "r.txt")], capsys)
    assert code == 2 and "--output: cannot write" in err and out == ""


def test_missing_constraints_file(tmp_path, capsys):
    code, _, err = run(["--constraints", str(tmp_path / "c.yaml")], capsys)
    assert code == 2 and f"{tmp_path / 'c.yaml'}: no such file" in err


def test_check_reports_a_conflict(capsys):
    code, out, _ = run(["check", "--model", "lenet-c", "--levels", "2", "--memory", "0.0001", "--workers", "1",
                        "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["agree"] and r["optimum"] is None
    assert r["infeasible"] == ["exact", "cpsat", "brute"]  # the exact solver proves it too (memory alone)
    assert r["conflict"] == ["memory <= 104.9 KiB per accelerator (--memory)"]
    assert r["suggestion"].startswith("the smallest feasible memory is")


def test_dp_violation_said_on_stderr(capsys):
    code, out, err = run(["--cap", "3=55MB", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 1 and r["status"] == "level-optimal" and r["ok"] is False
    assert err == "explore: the dp plan breaks cap level 3 <= 55 MB (--cap) (--solver exact or cpsat enforces caps and memory)\n"


def test_contradicting_pin_and_forbid(capsys):
    code, out, err = run(["--pin", "fc6@0=I", "--forbid", "fc6=I"], capsys)
    assert code == 1
    assert "no plan satisfies the constraints; these conflict: pin fc6@0=I; forbid fc6=I" in err


def test_list_json(capsys):
    code, out, _ = run(["list", "--format", "json"], capsys)
    r = json.loads(out)
    models = {m["name"]: m for m in r["models"]}
    assert code == 0 and models["resnet50"]["graph"] and not models["vgg-a"]["graph"]
    assert models["bert-base"]["weighted_layers"] == 76 and r["aliases"]["vgg16"] == "vgg-d"
    assert {a["name"] for a in r["arrays"]} == {"hypar-16", "accpar-128", "array-1024", "hypar-paper", "hypar-paper-torus",
                                                "tpu-mix-16"}
    assert r["arrays"][[a["name"] for a in r["arrays"]].index("tpu-mix-16")]["kinds"] == {"v2": 8, "v3": 8}
