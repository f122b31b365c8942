"""New-user trial findings on arrays of kinds (the uneven split): each test reproduces one finding
on a small mix (two accelerators of speed v, two of 3v) and fails without its fix."""

import json

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

def test_brute_split_stops_at_the_time_limit_and_claims_no_proof(mix4, capsys):
    code, out, err = run_cli(["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "optimal",
                              "--solver", "brute", "--time-limit", "0.1", "--alpha-grid", "2", "--format", "json"], capsys)
    d = _json(out)
    assert d["status"] == "feasible" and d["objective_bound"] is None and d["gap"] is None
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
