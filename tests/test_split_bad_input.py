"""Bad input of the uneven path (issue 20): whatever the even path refuses cleanly, ``explore
--split``, ``explore split`` and ``explorer.api.solve(split=...)`` refuse the same way: exit
status 2, one line naming the file and the field (or the option), no traceback, no output."""

from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from .conftest import run_cli
from .test_split_rules import MIX2

RUNS = (["--split", "search"], ["split", "--split", "proportional"], ["--split", "optimal", "--solver", "brute"])


@pytest.mark.parametrize("old, new, field", [
    ("peak_TFLOPS: 45", "peak_TFLOPS: 0", "kinds.v2.peak_TFLOPS: must be > 0"),
    ("peak_TFLOPS: 45", "peak_TFLOPS: -45", "kinds.v2.peak_TFLOPS: must be > 0"),
    ("peak_TFLOPS: 45", "peak_TFLOPS: .nan", "kinds.v2.peak_TFLOPS: must be a finite number"),
    ("peak_TFLOPS: 123", "peak_TFLOPS: .inf", "kinds.v3.peak_TFLOPS: must be a finite number"),
    ("link_bandwidth_GBps: [70]", "link_bandwidth_GBps: [0]", "link_bandwidth_GBps[0]: must be > 0"),
    ("link_bandwidth_GBps: [70]", "link_bandwidth_GBps: [.nan]", "link_bandwidth_GBps[0]: must be a finite number"),
    ("memory_GiB: 16", "memory_GiB: -1", "kinds.v2.memory_GiB: must be > 0"),
])
def test_bad_speeds_and_sizes_of_an_array_of_kinds(tmp_path, capsys, old, new, field):
    path = tmp_path / "bad.yaml"
    path.write_text(MIX2.replace(old, new))
    for run in RUNS:
        code, out, err = run_cli([*run, "--model", "sfc", "--array", str(path)], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (run, err)
        assert f"{path}: {field}" in err, (run, err)


@pytest.mark.parametrize("args, text", [
    (["--alpha-grid", "1"], "'--alpha-grid': 1 is not in the range 2<=x<=1024"),
    (["--alpha-grid", "1025"], "'--alpha-grid': 1025 is not in the range 2<=x<=1024"),
    (["--cap", "1=1MB"], "--cap: '1=1MB': level 1 is out of range 0..0"),
    (["--pin", "fc9@0=I"], "--pin"),
    (["--forbid", "fc1=III"], "--forbid"),
    (["--objective", "speed"], "'--objective'"),
])
def test_bad_options_of_a_split_run(tmp_path, capsys, args, text):
    path = tmp_path / "mix-2.yaml"
    path.write_text(MIX2)
    code, out, err = run_cli(["--model", "sfc", "--array", str(path), "--space", "hypar", "--split", "search", *args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and text in err, err


def test_a_bad_constraints_file_names_the_file_and_field(tmp_path, capsys):
    arr = tmp_path / "mix-2.yaml"
    arr.write_text(MIX2)
    c = tmp_path / "c.yaml"
    c.write_text("version: 1\ncaps: {3: 1MB}\n")
    code, out, err = run_cli(["--model", "sfc", "--array", str(arr), "--split", "search", "--constraints", str(c)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and str(c) in err and "caps" in err, err


def test_the_api_refuses_bad_split_arguments():
    from explorer.api import solve
    from explorer.core.errors import SpecError

    for kwargs, name in (({"alpha_grid": 1}, "alpha_grid"), ({"alpha_grid": 1025}, "alpha_grid"),
                         ({"alpha_grid": "8"}, "alpha_grid"), ({"alpha_grid": True}, "alpha_grid"),
                         ({"caps": ["5=1MB"]}, "^caps: "), ({"objective": "speed"}, "objective"),
                         ({"memory_GiB": 0.0}, "memory"), ({"weight_copies": -1}, "weight.copies")):
        with pytest.raises(SpecError, match=name):
            solve("lenet-c", "tpu-mix-16", split="search", **kwargs)


def test_a_split_policy_on_one_kind_is_the_even_split_with_every_method():
    """An array of one kind: every policy is the even split (every alpha 1/2); the heuristics give
    the DP's plan, the proven optimal split the exact joint even-split optimum of the step time; the
    level DP (solver dp) is the even DP there."""
    from explorer.api import solve
    from explorer.core.evaluate import evaluate
    from explorer.frontends import load_array, load_model

    net, arr = load_model("lenet-c"), load_array("hypar-16").with_levels(2)

    from explorer.core.partition import Space

    dp = evaluate(net, arr, Space.HYPAR, solve(net, arr, objective="time").plan).step_time_s
    best = evaluate(net, arr, Space.HYPAR, solve(net, arr, objective="time", solver="exact").plan).step_time_s
    for split, solver, want in (("equal", None, dp), ("proportional", None, dp), ("search", None, dp),
                                ("optimal", None, best), ("optimal", "exact", best), ("optimal", "cpsat", best),
                                ("equal", "dp", dp), ("proportional", "dp", dp), ("optimal", "dp", dp), ("levels", "dp", dp)):
        r = solve(net, arr, split=split, solver=solver)
        assert r.step_time_s == want, (split, solver)
        assert all(a == F(1, 2) for level in r.plan.alphas for row in level for a in row), split


@pytest.mark.parametrize("run", [["--split", "equal"], ["--split", "proportional"], ["--split", "search"],
                                 ["--split", "levels"], ["--split", "optimal"],
                                 ["--split", "optimal", "--solver", "exact"], ["--split", "optimal", "--solver", "cpsat"]])
def test_conflicting_pin_and_forbid_are_infeasible_not_a_traceback(tmp_path, capsys, run):
    """A pin and a forbid of the same type leave fc1 no type at level 0: every split says so as the
    even split does (exit 1, the conflict named), never an AttributeError traceback (tryout finding)."""
    path = tmp_path / "mix-2.yaml"
    path.write_text(MIX2)
    code, out, err = run_cli([*run, "--model", "sfc", "--array", str(path), "--space", "accpar",
                              "--pin", "fc1@0=I", "--forbid", "fc1=I"], capsys)
    assert code == 1 and "Traceback" not in err and err.count("\n") == 1, (run, err)
    assert "these conflict: pin fc1@0=I; forbid fc1=I" in err and "infeasible" in out, (run, err)


def test_conflicting_pin_and_forbid_in_check_every_prover_says_infeasible(tmp_path, capsys):
    """``explore check --split optimal``: the joint solver returned a plan breaking the forbid before
    (its DP took an INF column when a layer had none left); now every prover proves no plan."""
    import json

    path = tmp_path / "mix-2.yaml"
    path.write_text(MIX2)
    code, out, err = run_cli(["check", "--split", "optimal", "--model", "sfc", "--array", str(path), "--space",
                              "accpar", "--pin", "fc1@0=I", "--forbid", "fc1=I", "--format", "json"], capsys)
    rows = json.loads(out)["solvers"]
    assert code == 0 and json.loads(out)["agree"], err
    assert all(rows[s]["status"] == "infeasible" for s in ("brute", "exact", "cpsat", "joint"))
    assert set(json.loads(out)["infeasible"]) >= {"brute", "exact", "cpsat", "joint"}


def test_a_heuristic_split_plan_that_breaks_memory_says_so_in_its_header(tmp_path, capsys):
    """The search's plan over the memory limit: the header says the plan breaks a rule, not proven
    infeasible (a bare "feasible" above a PLAN BREAKS line misled; "infeasible" means proven no plan)."""
    path = tmp_path / "mix-2.yaml"
    path.write_text(MIX2)
    code, out, err = run_cli(["--split", "search", "--model", "sfc", "--array", str(path), "--space", "accpar",
                              "--memory", "0.01"], capsys)
    head = out.splitlines()[0]
    assert code == 1 and head.endswith(", feasible by search (its plan breaks a rule; not proven infeasible)"), head
    assert "does not fit in memory" in err


def test_a_proving_solver_too_small_for_the_instance_names_what_takes_it(capsys):
    """exact, cpsat and brute refusing tpu-mix-16's alexnet say so with thousands separators and name
    the joint solver (brute used to send the user to exact, which refuses the same instance). exact is
    no longer capped by column pairs: on this instance it runs to its time limit."""
    for solver in ("brute",):
        code, out, err = run_cli(["--model", "alexnet", "--array", "tpu-mix-16", "--split", "optimal",
                                  "--solver", solver], capsys)
        assert code == 2 and err.count("\n") == 1 and "use --solver exact" not in err, err
        assert "--split optimal without --solver (the joint solver; arrays with one kind per half of the tree; pins, " \
               "forbids, caps and memory) takes such instances: a proven optimum, or at --time-limit its best plan with a proven bound and the gap" in err, err
    # cpsat under a cap runs the exact path first (the joint solver takes caps): proven before CP-SAT's
    # column limit (it used to refuse in one line: "... columns, more than 2,000; a coarser ...")
    code, out, err = run_cli(["--model", "alexnet", "--array", "tpu-mix-16", "--split", "optimal", "--solver",
                              "cpsat", "--cap", "0=1GB", "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["status"] == "optimal" and got["bound_method"].startswith("exact:"), err


def test_exact_out_of_time_is_unknown_not_bad_input(capsys):
    """The Pareto DP (the traffic objective) hitting --time-limit: never bad input (it was exit 2,
    "error: ... no proof within", as if the input were bad); lenet-c on tpu-mix-16 needs far more
    than half a second, and the limit is kept per column pair (it ran 60 s+ at 10 s before).
    Stopped before a plan of its own (here at once: its column pairs need more than the limit leaves),
    it reports the better of the equal-split and level-DP plans, feasible, exit 0 (trial 10, finding
    8; it was unknown, exit 1)."""
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal", "--solver", "exact",
                              "--objective", "traffic", "--time-limit", "0.5"], capsys)
    assert code == 0 and "feasible by exact" in out.splitlines()[0] and err == "", err
    note = next(x for x in out.splitlines() if x.startswith("note: exact: "))  # too short for its column pairs
    assert "ended at once" in note and "column pairs: their column tables and completion bounds are estimated at no less than" in note and "not proven optimal" in note, out
    assert "cap" not in out.split("traffic ")[0]


def test_weight_copies_from_a_constraints_file_keep_the_one_range(tmp_path, capsys):
    """``--weight-copies`` and a constraints file's ``weight_copies`` have one range with or without
    --split (0 to 2^40; trial 3 found two ranges): beyond it both are refused in one line, exit 2."""
    path = tmp_path / "c.yaml"
    path.write_text(f"version: 1\nweight_copies: {2**40 + 1}\n")
    code, out, err = run_cli(["--split", "search", "--model", "lenet-c", "--array", "tpu-mix-16", "--constraints",
                              str(path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{path}: weight_copies: must be a non-negative integer up to 2^40" in err


def test_one_alpha_grid_range_and_free_choice_for_cli_api_and_sweep():
    """--alpha-grid's range and --free's choices are core.uneven's, read by the CLI's options, the
    API's checks and the sweep file's validators alike."""
    from explorer.app import cli
    from explorer.app.request import _alpha_args
    from explorer.app.run_options import RunOptions
    from explorer.app.sweep.spec import validator
    from explorer.core.errors import SpecError
    from explorer.core.uneven import MAX_ALPHA_GRID, MIN_ALPHA_GRID, FreeAlphas

    assert (cli.ALPHA_GRID.min, cli.ALPHA_GRID.max) == (MIN_ALPHA_GRID, MAX_ALPHA_GRID)
    assert list(cli.FREE.choices) == [f.value for f in FreeAlphas]
    for bad in (MIN_ALPHA_GRID - 1, MAX_ALPHA_GRID + 1):
        assert f"from {MIN_ALPHA_GRID} to {MAX_ALPHA_GRID}" in validator("alpha_grid")(bad)
        with pytest.raises(SpecError, match=f"between {MIN_ALPHA_GRID} and {MAX_ALPHA_GRID}"):
            _alpha_args(RunOptions(alpha_grid=bad, free="unlike"))
    assert validator("alpha_grid")(MAX_ALPHA_GRID) is None and _alpha_args(RunOptions(alpha_grid=MAX_ALPHA_GRID, free="all")) == (MAX_ALPHA_GRID, "all")
    assert validator("free")("some") and validator("free")("all") is None
