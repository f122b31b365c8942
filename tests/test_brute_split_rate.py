"""Uneven brute force refuses, after a short measured probe, an enumeration its time limit cannot
finish, naming the plan count and the measured rate (trial 8, item 15: 104,976 plans under the
200,000-plan limit ran the whole 10 s of every ``check --uneven`` and ended unknown)."""

from __future__ import annotations

import time

import pytest

from explorer.core.errors import InstanceTooLarge
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import brute

from .conftest import run_cli

MIX4B = """version: 1
name: mix4b
levels: 2
dtype_bytes: 4
kinds:
  a: {peak_TFLOPS: 10, memory_GiB: 16}
  b: {peak_TFLOPS: 30, memory_GiB: 16}
accelerators: [a, a, b, b]
link_bandwidth_GBps: [10, 20]
"""


@pytest.fixture
def mix4b(tmp_path):
    path = tmp_path / "mix4b.yaml"
    path.write_text(MIX4B)
    return str(path)


def test_refused_at_once_when_the_rate_says_it_cannot_finish(mix4b):
    net, arr = load_model("sfc"), load_array(mix4b)
    aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
    t0 = time.perf_counter()
    with pytest.raises(InstanceTooLarge, match=r"brute: 104,976 plans \(4 layers, up to 18 columns each\) exceeds the "
                                               r"[\d,]+ it scores in the 3 s its time limit leaves \([\d,]+ plans/s measured; "
                                               r"--time-limit gives more\)"):
        brute.solve_split(net, arr, Space.ACCPAR, aspace, time_limit_s=3)  # ~10-50 s of plans
    assert time.perf_counter() - t0 < 2.5


def test_without_a_limit_or_the_rate_it_still_enumerates(mix4b, monkeypatch):
    monkeypatch.setattr(brute, "RATE_PROBE", 10**9)  # never measured: the time limit alone stops it
    net, arr = load_model("sfc"), load_array(mix4b)
    aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
    sol = brute.solve_split(net, arr, Space.ACCPAR, aspace, time_limit_s=0.3)
    assert sol.status is Status.FEASIBLE and sol.bound_s is None


def test_check_uneven_row_says_refused_with_count_and_rate(mix4b, capsys):
    code, out, err = run_cli(["check", "--uneven", "--model", "sfc", "--array", mix4b, "--space", "accpar",
                              "--alpha-grid", "2", "--solvers", "brute,exact", "--time-limit", "3"], capsys)
    row = next(line for line in out.splitlines() if line.startswith("brute"))
    assert "refused" in row and "104,976 plans" in row and "plans/s measured" in row
    assert "exact" in out and code == 0
