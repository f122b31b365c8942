"""New-user trial findings on arrays of kinds (the uneven split): each test reproduces one finding
on a small mix (two accelerators of speed v, two of 3v) and fails without its fix."""

import json
from fractions import Fraction

import pytest

from explorer.core.partition import Space
from explorer.core.solution import SolveOptions, Status
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import brute

from .conftest import run_cli

MIX4 = """version: 1
name: mix4
description: 2 slow and 2 fast accelerators
levels: 2
dtype_bytes: 2
kinds:
  slow: {peak_TFLOPS: 10, memory_GiB: 16}
  fast: {peak_TFLOPS: 30, memory_GiB: 16}
accelerators: [slow, slow, fast, fast]
link_bandwidth_GBps: [70, 70]
"""


@pytest.fixture
def mix4(tmp_path):
    path = tmp_path / "mix4.yaml"
    path.write_text(MIX4)
    return str(path)


def _json(out: str) -> dict:
    return json.loads(out)


# 1. brute's uneven branch honours --time-limit (it ran 45 s at --time-limit 1)

def test_brute_split_stops_at_the_time_limit_and_claims_no_proof(mix4, capsys, monkeypatch):
    monkeypatch.setattr(brute, "RATE_PROBE", 10**9)  # the clock alone (the rate's refusal: tests/test_brute_split_rate.py)
    code, out, err = run_cli(["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "optimal",
                              "--solver", "brute", "--time-limit", "0.1", "--alpha-grid", "2", "--format", "json"], capsys)
    d = _json(out)
    assert d["status"] == "feasible" and d["bound"] is None and d["gap"] is None
    assert d["wall_s"] < 5  # the whole enumeration takes ~20 s
    assert "stopped at the time limit" in d["note"] and code == 0


def test_brute_split_library_limit_unknown_without_a_plan(mix4, monkeypatch):
    monkeypatch.setattr(brute, "CLOCK_EVERY", 1)
    net, arr = load_model("lenet-c"), load_array(mix4)
    aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
    sol = brute.solve_split(net, arr, Space.HYPAR, aspace, time_limit_s=0.0)
    assert sol.status is Status.UNKNOWN and sol.plan is None and sol.bound_s is None


def test_even_brute_honours_the_time_limit_too(monkeypatch):
    from explorer.app.request import build_problem

    monkeypatch.setattr(brute, "CLOCK_EVERY", 1)
    problem = build_problem("lenet-c", "hypar-16", space="accpar", levels=2)
    sol = brute.solve(problem, SolveOptions(time_limit_s=0.0))
    assert sol.status is Status.UNKNOWN and sol.plan is None
    full = brute.solve(problem, SolveOptions())
    assert full.status is Status.OPTIMAL and full.bound == full.objective


# 2. the joint solver keeps to --memory and caps (it accepted --memory, then claimed gap 0 on a plan over it;
#    then it refused both; now it keeps to them, as --solver exact: tests/test_split_joint_limits.py)

@pytest.mark.parametrize("extra", [["--memory", "0.0001"], ["--cap", "0=1MB"]])
def test_the_joint_solver_takes_memory_and_caps_alike(mix4, extra, capsys):
    outs = []
    for cmd in ([], ["split"], ["--solver", "exact"]):
        args = (cmd if cmd == ["split"] else []) + ["--model", "lenet-c", "--array", mix4, "--space", "accpar",
                                                    "--split", "optimal", *extra, *(cmd if cmd != ["split"] else []),
                                                    "--format", "json"]
        code, out, err = run_cli(args, capsys)
        got = json.loads(out)
        outs.append((code, got["status"], got.get("objective_value"), got["bound"]))
    assert outs[0] == outs[1] == outs[2] and outs[0][1] in ("optimal", "infeasible"), outs


def test_the_api_and_check_run_the_joint_solver_with_memory(mix4):
    from explorer.api import check, solve

    plain = solve("lenet-c", mix4, space="accpar", split="optimal", memory_GiB=0.0001, alpha_grid=2)
    r = check("lenet-c", mix4, space="accpar", split="optimal", memory_GiB=0.0001, solvers=["joint", "exact"],
              alpha_grid=2)
    rows = {row.solver: row for row in r.rows}
    assert r.agree and rows["joint"].status == rows["exact"].status == "infeasible"
    ok = solve("lenet-c", mix4, space="accpar", split="optimal", memory_GiB=0.0001, solver="exact", alpha_grid=2)
    assert ok.status is plain.status is Status.INFEASIBLE


def test_a_joint_plan_keeps_each_kinds_memory(tmp_path, capsys):
    path = tmp_path / "small.yaml"
    path.write_text(MIX4.replace("memory_GiB: 16", "memory_GiB: 0.001"))
    args = ["--model", "lenet-c", "--array", str(path), "--space", "accpar", "--split", "optimal", "--format", "json"]
    code, out, err = run_cli(args, capsys)
    code2, out2, _ = run_cli([*args, "--solver", "exact"], capsys)
    got, want = json.loads(out), json.loads(out2)
    assert code == code2 and (got["status"], got.get("objective_value"), got["bound"]) == (
        want["status"], want.get("objective_value"), want["bound"])
    assert got["status"] in ("optimal", "infeasible") and got["ok"] is (got["status"] == "optimal")


# 3. a constraints file's and an array's caps and memory run the joint solver too

def test_a_constraints_files_and_an_arrays_caps_run_the_joint_solver(mix4, tmp_path, capsys):
    cfile = tmp_path / "c.yaml"
    cfile.write_text("version: 1\ncaps:\n  1: 1MB\n")
    mfile = tmp_path / "m.yaml"
    mfile.write_text("version: 1\nmemory_GiB: 0.5\n")
    arr = tmp_path / "capped.yaml"
    arr.write_text(MIX4 + "cap_bytes_per_step: [1MB, null]\n")
    for array, extra in ((mix4, ["--constraints", str(cfile)]), (mix4, ["--constraints", str(mfile)]), (str(arr), [])):
        args = ["--model", "lenet-c", "--array", array, "--split", "optimal", "--alpha-grid", "4", *extra, "--format", "json"]
        code, out, err = run_cli(args, capsys)
        code2, out2, _ = run_cli([*args, "--solver", "exact"], capsys)
        got, want = json.loads(out), json.loads(out2)
        assert code == code2 and got["solver"] == "joint" and got["constraints"] == want["constraints"]
        assert (got["status"], got.get("objective_value"), got["bound"]) == (
            want["status"], want.get("objective_value"), want["bound"]), extra


# 4. a refused input prints its one error line alone (the progress line "[explore] solving ..." came first)

@pytest.mark.parametrize("args", [["--solver", "brute", "--model", "vgg-a"],
                                  ["--solver", "exact", "--model", "resnet50", "--array", "array-1024", "--space", "accpar"]])
def test_a_refused_instance_prints_one_line(args, capsys):
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and err.startswith("explore: error: ") and err.count("\n") == 1, err


def test_a_run_still_announces_its_step(capsys):
    code, out, err = run_cli(["--solver", "exact", "--model", "lenet-c"], capsys)
    assert code == 0 and err == "[explore] solving lenet-c on hypar-16 with exact\n"


# 5. docs/commands.md shows the brute refusal as explore prints it, and says when the joint solver proves

def test_the_documented_brute_refusal_is_the_real_one(capsys):
    import re
    from pathlib import Path

    code, out, err = run_cli(["--array", "tpu-mix-16", "--split", "optimal", "--model", "alexnet", "--solver", "brute"],
                             capsys)
    assert code == 2 and err.count("\n") == 1
    page = " ".join((Path(__file__).parent.parent / "docs" / "commands.md").read_text().split())
    assert " ".join(err.strip().split()) in re.sub(r"`", "", page)
    assert "proves such instances" not in err and "bound and the gap" in err


# 6. messages: a hint that is refused when followed, an array named twice, "1 points", one conflict of several

@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), -1, 0, "0", "0.0", 1, 2.5, "3"])
def test_an_amount_hint_is_accepted_when_followed(value):
    from explorer.core.units import parse_amount

    with pytest.raises(ValueError) as err:
        parse_amount(value)
    text = str(err.value)
    if "write e.g. " in text:
        hint = text.split("write e.g. ", 1)[1].split(" ", 1)[0]
        assert parse_amount(hint)[1] == "bytes", text
    else:
        assert "finite number > 0 with a unit" in text


def test_a_sweep_mix_error_names_the_array_once(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\ngrid: {mix: ['8 v2 + 8 v3', '8 v2 + 8 v4']}\nfixed: {array: tpu-mix-16}\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1 and err.count("tpu-mix-16") == 1, err
    f.write_text("version: 1\ngrid: {levels: [2]}\nfixed: {array: tpu-mix-16, accelerators_v4: 1}\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("tpu-mix-16") == 1 and "levels 2" in err, err


def test_one_point_is_singular(tmp_path, capsys):
    from explorer.core.units import plural

    assert plural(1, "point") == "1 point" and plural(2, "point") == "2 points" and plural(0, "point") == "0 points"
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\npoints: [{model: lenet-c, levels: 1}]\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 0 and "sweep s: 1 point (0 reused" in err, err


def test_a_split_conflict_says_when_more_rules_conflict(mix4, capsys):
    code, out, err = run_cli(["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "search",
                              "--pin", "conv1@0=II", "--forbid", "conv1=II", "--pin", "conv2@1=III",
                              "--forbid", "conv2=III"], capsys)
    assert code == 1 and "pin conv1@0=II; forbid conv1=II" in err
    assert "the other constraints conflict among themselves too" in err


# 7. --memory and --weight-copies: one range and one check with and without --split (0-16 against 2^40 before)

@pytest.mark.parametrize("option,value", [("--weight-copies", "17"), ("--weight-copies", str(2**40)),
                                          ("--memory", "1e20"), ("--memory", "1e100")])
def test_values_the_even_split_takes_the_split_takes(mix4, option, value, capsys):
    base = ["--model", "lenet-c", "--array", mix4, option, value, "--format", "json"]
    even, _, err_even = run_cli([*base, "--solver", "dp"], capsys)
    split, out, err = run_cli([*base, "--split", "search"], capsys)
    assert even in (0, 1) and split in (0, 1), (err_even, err)
    d = _json(out)
    if option == "--weight-copies":
        assert d["constraints"]["weight_copies"] == int(value)
    else:
        assert d["constraints"]["memory_bytes"] == int(Fraction(value) * 2**30) and d["memory"]


@pytest.mark.parametrize("option,value,message", [
    ("--weight-copies", "-1", "--weight-copies: must be >= 0, got -1"),
    ("--weight-copies", str(2**40 + 1), "--weight-copies: must be at most 2^40"),
    ("--memory", "0", "--memory: must be > 0, got 0.0"),
    ("--memory", "1e101", "--memory: must be between 1e-30 and 1e100"),
    ("--memory", "nan", "--memory: must be a finite number, got nan")])
def test_values_the_even_split_refuses_the_split_refuses_alike(mix4, option, value, message, capsys):
    for extra in ([], ["--split", "search"], ["--split", "optimal", "--solver", "exact"]):
        code, out, err = run_cli(["--model", "lenet-c", "--array", mix4, option, value, *extra], capsys)
        assert code == 2 and out == "" and err == f"explore: error: {message}" + err.split(message, 1)[1], (extra, err)
        assert err.count("\n") == 1


def test_a_constraints_file_weight_copies_has_the_same_range(mix4, tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("version: 1\nweight_copies: 17\n")
    for extra in ([], ["--split", "search"]):
        code, out, err = run_cli(["--model", "lenet-c", "--array", mix4, "--constraints", str(path), *extra], capsys)
        assert code in (0, 1) and "error" not in err, err
