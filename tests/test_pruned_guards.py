"""``pruned`` refuses up front what it cannot build (trial 8, item 3): type vectors per layer
beyond its limit, arrays beyond its memory limit and costs beyond int64, all before any
``VectorCosts`` array is made (alexnet at 13 levels took 52 s on a 5 s limit, at 16 levels
14 GB, at 20 levels a numpy MemoryError traceback)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from explorer.core.array import synthetic_array
from explorer.core.constraints import Constraints
from explorer.core.errors import InstanceTooLarge, Refused
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.frontends import load_model
from explorer.solvers import pruned
from explorer.solvers.vectors import VectorCosts

from .conftest import run_cli as run


def _no_arrays(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("VectorCosts built before the refusal")

    monkeypatch.setattr(pruned, "VectorCosts", boom)


@pytest.mark.parametrize("levels", [13, 20])
def test_too_many_vectors_refused_before_any_array(levels, monkeypatch):
    _no_arrays(monkeypatch)
    problem = Problem(load_model("alexnet"), synthetic_array(levels), Space.ACCPAR)
    with pytest.raises(InstanceTooLarge, match=rf"pruned: 3\^{levels} = [\d,]+ type vectors per layer .* exceeds its "
                                               r"limit of 531,441; use --solver cpsat, or dp"):
        pruned.solve(problem)


def test_memory_estimate_refused_before_any_array(monkeypatch):
    _no_arrays(monkeypatch)
    monkeypatch.setattr(pruned, "MAX_MEMORY", 2**20)
    problem = Problem(load_model("alexnet"), synthetic_array(6), Space.ACCPAR)
    with pytest.raises(InstanceTooLarge, match=r"pruned: about [\d,]+ MiB of arrays needed, beyond its limit of 1 MiB"):
        pruned.solve(problem)


def test_int64_refused_before_any_array(monkeypatch):
    _no_arrays(monkeypatch)
    net = load_model("alexnet").with_batch(2**40)
    problem = Problem(net, synthetic_array(9), Space.ACCPAR)
    with pytest.raises(Refused, match="pruned: costs beyond int64"):
        pruned.solve(problem)


@pytest.mark.parametrize("batch,levels,space", [(512, 4, Space.ACCPAR), (2**40, 4, Space.ACCPAR), (2**33, 3, Space.HYPAR),
                                                (2**36, 6, Space.ACCPAR), (1, 8, Space.HYPAR), (2**38, 5, Space.HYPAR)])
@pytest.mark.parametrize("model", ["alexnet", "resnet18"])
def test_fits_int64_says_what_vector_costs_says(model, batch, levels, space):
    problem = Problem(load_model(model).with_batch(batch), synthetic_array(levels), space)
    assert pruned.fits_int64(problem) == VectorCosts(problem).use_int64


@pytest.mark.parametrize("copies", [0, 10**6, 10**9, 10**12])
def test_fits_int64_reads_the_footprints_as_vector_costs_does(copies):
    """Under a memory limit the worst footprint counts too (weight copies: optimizer state)."""
    base = Problem(load_model("resnet18").with_batch(2**20), synthetic_array(4), Space.ACCPAR)
    problem = base.with_constraints(Constraints(memory_bytes=Fraction(2**30), weight_copies=copies))
    assert pruned.fits_int64(problem) == VectorCosts(problem).use_int64


def test_cli_refuses_20_levels_in_one_line_at_once(capsys):
    code, out, err = run(["--batch", "1099511627776", "--model", "vgg-e", "--levels", "20", "--space", "accpar",
                          "--solver", "pruned", "--time-limit", "5"], capsys)
    assert code == 2 and out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "3^20 = 3,486,784,401 type vectors per layer" in err


def test_a_set_up_beyond_the_limit_gives_the_dp_plan_at_once(monkeypatch):
    """Making the type vectors alone estimated beyond the limit (AlexNet at 12 levels: 2.7 s on a 1 s
    limit): the DP's plan, feasible with bound 0 and the reason, no arrays made."""
    from explorer.core.solution import SolveOptions, Status
    from explorer.solvers.dp import hierarchical_dp

    _no_arrays(monkeypatch)
    monkeypatch.setattr(pruned, "SETUP_RATE", 1e3)
    problem = Problem(load_model("alexnet"), synthetic_array(5), Space.ACCPAR)
    sol = pruned.solve(problem, SolveOptions(time_limit_s=1.0))
    assert sol.status is Status.FEASIBLE and sol.bound == 0 and sol.wall_s < 1.0
    assert sol.plan == hierarchical_dp(problem)[0]
    assert "setting up 3^5 type vectors per layer is estimated at" in sol.info["reason"]
    assert "beyond the 1.0 s left of --time-limit 1 s: the DP's plan, no bound" in sol.info["reason"]


def test_the_limit_counts_from_started(monkeypatch):
    """``SolveOptions.started`` (``explore``: its process's start) is the limit's origin: a set-up
    that fits the whole limit but not what start-up left gives the DP's plan at once."""
    import time

    from explorer.core.solution import SolveOptions, Status

    _no_arrays(monkeypatch)
    problem = Problem(load_model("alexnet"), synthetic_array(5), Space.ACCPAR)
    monkeypatch.setattr(pruned, "SETUP_RATE", pruned.setup_estimate_s(problem) * pruned.SETUP_RATE / 0.5)  # 0.5 s
    sol = pruned.solve(problem, SolveOptions(time_limit_s=1.0, started=time.perf_counter() - 0.8))
    assert sol.status is Status.FEASIBLE and sol.bound == 0 and sol.wall_s >= 0.8
    assert re.search(r"beyond the 0\.[0-2] s left of --time-limit 1 s:", sol.info["reason"])  # (0.2 s less the checks)


def test_the_set_up_estimate_lets_usual_instances_run():
    from explorer.app.request import build_problem

    assert pruned.setup_estimate_s(build_problem("alexnet", levels=11, space="accpar")) < 1
    assert pruned.setup_estimate_s(build_problem("resnet50", "array-1024", space="accpar")) < 2


def test_a_set_up_beyond_the_limit_keeps_pins_and_forbids(monkeypatch):
    """With pins or forbids too (they used to run the whole set-up: 1.6 s on a 0.1 s limit; trial 9):
    the DP's plan, which keeps them, at once; pins and forbids that leave a layer no type: infeasible."""
    from explorer.core.constraints import Forbid, Pin
    from explorer.core.partition import PartitionType
    from explorer.core.solution import SolveOptions, Status
    from explorer.solvers.dp import hierarchical_dp

    _no_arrays(monkeypatch)
    monkeypatch.setattr(pruned, "SETUP_RATE", 1e3)
    base = Problem(load_model("alexnet"), synthetic_array(5), Space.ACCPAR)
    kept = base.with_constraints(Constraints(pins=(Pin(0, 2, PartitionType.II),), forbids=(Forbid(3, PartitionType.I),)))
    sol = pruned.solve(kept, SolveOptions(time_limit_s=1.0))
    assert sol.status is Status.FEASIBLE and sol.info["method"] == "dp-start" and sol.wall_s < 1.0
    assert sol.plan == hierarchical_dp(kept)[0]
    assert sol.plan.types[2][0] is PartitionType.II and all(sol.plan.types[h][3] is not PartitionType.I for h in range(5))
    none_left = base.with_constraints(Constraints(forbids=tuple(Forbid(0, t) for t in base.node_types(0))))
    assert pruned.solve(none_left, SolveOptions(time_limit_s=1.0)).status is Status.INFEASIBLE
