"""``--split equal`` with every solver: the even split is the alpha = 1/2 case of the one model, so
the even solvers answer it (issue 20 item 3; trial 10, finding 6), and the API's split-only
arguments (trial 10, findings 3 and 4)."""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from .conftest import run_cli


def _run(args, capsys):
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    return code, json.loads(out), err


@pytest.mark.parametrize("objective", ["traffic", "time"])
def test_split_equal_takes_the_even_solvers(objective, mix4, capsys):
    """exact, cpsat, brute and pruned with --split equal give the run without --split: status, plan,
    objective value, bound and the method that proved it; the split report's value is
    evaluate_split's at alpha 1/2 (the time objective: the slowest accelerator's step time, which
    is the even split's compute of the slowest kind plus sum_h c_h * dtype / b_h)."""
    common = ["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--objective", objective]
    for solver in ("exact", "cpsat", "brute", "pruned"):
        code_e, even, _ = _run([*common, "--solver", solver], capsys)
        code_s, split, err = _run([*common, "--split", "equal", "--solver", solver], capsys)
        assert code_e == code_s == 0, (solver, err)
        assert split["status"] == even["status"] == "optimal", solver
        assert split["solver"] == solver and split["plan"] == even["plan"], solver
        assert F(split["objective_value"]) == F(split["bound"]) == F(even["objective_value"]) == F(even["bound"])
        assert split["bound_method"] == even["bound_method"], solver
        assert all(a == "1/2" for level in split["alphas"] for row in level for a in row)
    if objective == "time":  # the equal split's time is the even split's time objective
        assert float(F(split["objective_value"])) == split["step_time_s"] == even["step_time_s"]  # floats in the JSON


def test_split_equal_exact_proves_below_the_dp(capsys):
    """Trial 10's case: on tpu-mix-16 the even exact optimum (105,384,416 elements) is below the
    DP's (110,103,008), and --split equal --solver exact/cpsat proves it, as without --split."""
    common = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--objective", "traffic"]
    _, dp, _ = _run([*common, "--split", "equal"], capsys)
    assert dp["status"] == "level-optimal" and dp["objective_value"] == 110_103_008
    for solver in ("exact", "cpsat"):
        code, r, _ = _run([*common, "--split", "equal", "--solver", solver], capsys)
        assert code == 0 and r["status"] == "optimal" and r["objective_value"] == r["bound"] == 105_384_416


def test_split_equal_infeasible_names_the_even_conflict(mix4, capsys):
    """Under a cap no plan keeps to: infeasible, with the even path's conflict and suggestion."""
    common = ["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--objective", "time", "--cap", "0=100kB"]
    code_e, out_e, _ = run_cli([*common, "--solver", "exact", "--format", "json"], capsys)
    code_s, out_s, _ = run_cli([*common, "--split", "equal", "--solver", "exact", "--format", "json"], capsys)
    even, split = json.loads(out_e), json.loads(out_s)
    assert code_e == code_s == 1 and even["status"] == split["status"] == "infeasible"
    assert split["plan"] is None and split["conflict"] == even["conflict"] and split["conflict"]
    assert split["suggestion"] == even["suggestion"] and "0=644.92kB" in split["suggestion"]


def test_split_equal_in_the_api_check_and_sweep(mix4, tmp_path):
    from explorer.api import check, solve, sweep

    even = solve("lenet-c", mix4, space="accpar", objective="time", solver="cpsat")
    r = solve("lenet-c", mix4, space="accpar", split="equal", solver="cpsat")
    assert r.status.value == even.status.value == "optimal" and r.plan.types == even.plan.types
    assert r.objective_value == r.objective_bound == even.objective_value == r.step_time_s
    c = check("lenet-c", mix4, space="accpar", split="equal", solvers="exact")  # the even check, on the step time
    assert type(c).__name__ == "CheckReport" and str(c.inputs.objective) == "time" and c.agree
    assert c.optimum.objective == even.objective_value
    spec = {"version": 1, "grid": {"solver": ["exact", "pruned"]},
            "fixed": {"model": "lenet-c", "array": mix4, "space": "accpar", "split": "equal", "objective": "traffic"}}
    rows = list(sweep(spec, tmp_path / "out", workers=1))
    assert [row["status"] for row in rows] == ["optimal", "optimal"] and not any(row["error"] for row in rows)


def test_check_split_equal_on_the_command_line(mix4, capsys):
    code, out, err = run_cli(["check", "--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "equal",
                              "--solvers", "exact,cpsat", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["objective"] == "time" and r["agree"], err
    code, _, err = run_cli(["check", "--model", "lenet-c", "--split", "equal", "--alpha-grid", "4"], capsys)
    assert code == 2 and "--alpha-grid: only with --uneven or --split optimal" in err


def test_api_check_with_split_takes_one_solver_name():
    """Trial 10, finding 3: ``solvers="exact"`` with split is one name, as without split."""
    from explorer.api import check
    from explorer.core.errors import SpecError

    # a limit no loaded machine reaches (the default 10 s ended `feasible` at load 9-11 in CI)
    r = check("lenet-c", "tpu-mix-16", space="accpar", split="optimal", alpha_grid=2, solvers="exact", time_limit=300)
    assert [row.solver for row in r.rows] == ["exact"] and r.rows[0].status == "optimal"
    with pytest.raises(SpecError, match="solvers: unknown solver 'nosuch' with split"):
        check("lenet-c", "tpu-mix-16", split="optimal", solvers="nosuch")
    with pytest.raises(SpecError, match="solvers: must be a solver name or a list"):
        check("lenet-c", "tpu-mix-16", split="optimal", solvers=3)


@pytest.mark.parametrize("kw", [{"alpha_grid": 4}, {"alpha_grid": 16}, {"free": "all"}, {"grid_only": True}])
def test_split_only_arguments_without_split_are_refused(kw):
    """Trial 10, finding 4: as the CLI refuses --alpha-grid, --free and --grid-only without --split."""
    from explorer.api import check, solve
    from explorer.core.errors import SpecError

    name = next(iter(kw))
    with pytest.raises(SpecError, match=f"^{name}: only with split"):
        solve("lenet-c", **kw)
    with pytest.raises(SpecError, match=f"^{name}: only with split optimal"):
        check("lenet-c", **kw)
    with pytest.raises(SpecError, match=f"^{name}: only with split optimal"):
        check("lenet-c", "tpu-mix-16", split="equal", **kw)
    assert solve("lenet-c", "tpu-mix-16", space="accpar", split="proportional", **kw).plan is not None


@pytest.mark.parametrize("option, value", [("--alpha-grid", "4"), ("--free", "all"), ("--grid-only", None)])
def test_split_equal_refuses_the_alpha_options(option, value, capsys):
    """--split equal has every alpha 1/2: --alpha-grid, --free and --grid-only are refused as without
    --split (trial 11, finding 8: they were accepted and dropped), in the CLI and the API."""
    from explorer.api import solve
    from explorer.core.errors import SpecError

    args = ["--model", "alexnet", "--array", "tpu-mix-16", "--split", "equal", option, *([value] if value else [])]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and err.strip() == f"explore: error: {option}: not with --split equal (every split is 1/2)"
    name = option[2:].replace("-", "_")
    with pytest.raises(SpecError, match=f"{name}: not with split equal"):
        solve("alexnet", "tpu-mix-16", split="equal", **{name: True if value is None else (int(value) if value.isdigit() else value)})
