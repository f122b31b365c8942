"""``--objective time`` is the step time of the slowest accelerator: compute (a constant of the
problem) plus communication, or their max with overlap (core.objective, ``LevelWeights.real``).

Hand-computed goldens on a two-layer network, with and without overlap; the plans of the whole
zoo identical to those the comm-time objective gave (recorded with the code before the change);
the bound and gap on step-time values; ``explore split``'s evaluator agreeing on an array of
kinds; and the sweep's time columns.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from explorer.app.run import run
from explorer.app.sweep.point import solve_point
from explorer.app.sweep.table import add_dp_gap, make_row
from explorer.core.array import synthetic_array
from explorer.core.evaluate import evaluate_split
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType as T
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_array, load_model
from explorer.solvers import get_solver

from .conftest import CLASSIC_ZOO, fc

NS = Fraction(1, 10**9)
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "time-objective-plans.json"


def two_layer_problem(overlap: bool = False) -> Problem:
    # A: fc 4 -> 8, B: fc 8 -> 2, batch 2 (conftest's two_layer). FLOPs = 6 * (2*4*8 + 2*8*2) = 576.
    # One level, 10 GB/s, 4-byte elements; peak 0.018 TFLOPS: compute = 576 / (2 * 18e9) = 16 ns.
    net = Network.chain("two", 2, [fc("A", 4, 8), fc("B", 8, 2)])
    arr = replace(synthetic_array(1, [10], peak_TFLOPS="0.018"), overlap=overlap)
    return Problem(net, arr, Space.HYPAR, Objective.TIME)


# c_0 of the four plans (HyPar's tables, level 0): intra I = A(W) (A: 32, B: 16), II = A(F_out)
# (A: 16, B: 4); the edge A -> B (A(F_B) = 16) costs nothing for I -> I, else A(F_B)/2 = 8 (forward
# F and backward E re-layouts). all-I 32 + 16 = 48, I-II 32 + 4 + 8 = 44, II-I 16 + 16 + 8 = 40,
# all-II 16 + 4 + 8 = 28 (the optimum); comm = c_0 * 4 bytes / 10 GB/s: all-II 11.2 ns, all-I 19.2 ns.
ALL_II, ALL_I = Plan(((T.II, T.II),)), Plan(((T.I, T.I),))


def test_golden_step_time_without_overlap():
    p = two_layer_problem()
    assert p.weights.compute_s == 16 * NS
    for solver in ("brute", "exact", "cpsat", "dp"):
        r = run(p, solver, SolveOptions(workers=1))
        assert r.plan == ALL_II
        assert r.figures.comm_time_s == Fraction(28 * 4, 10 * 10**9) == Fraction(112, 10) * NS  # 11.2 ns
        assert r.objective_value == Fraction(272, 10) * NS  # 16 + 11.2 = 27.2 ns
        assert r.time_terms.compute_s == 16 * NS and r.time_terms.communication_s == Fraction(112, 10) * NS
        if solver != "dp":
            assert r.status is Status.OPTIMAL and r.bound == r.objective_value and r.gap == 0
    # all-I: c_0 = 48, comm 19.2 ns, step 35.2 ns (the evaluator's step time is the objective)
    ev_units = 48 * p.tables.unit_per_element
    assert p.real(ev_units) == Fraction(352, 10) * NS
    # a bound of 0 units (no communication) is the compute alone; gap on step times
    assert p.real(0) == 16 * NS
    assert p.gap(ev_units, 0) == pytest.approx(float(Fraction(192, 352)))
    assert p.gap(ev_units, 0) != pytest.approx(1.0)  # the comm-only gap would be 1


def test_golden_step_time_with_overlap():
    p = two_layer_problem(overlap=True)
    r = run(p, "exact")
    # the comm-optimal plan is still the step-optimal one: max(16, 11.2) = 16 ns
    assert r.plan == ALL_II and r.objective_value == 16 * NS == r.figures.step_time_s
    assert r.status is Status.OPTIMAL and r.bound == 16 * NS and r.gap == 0
    units = p.tables.unit_per_element
    # all-I: max(16, 19.2) = 19.2 ns; against a bound of 0 comm (step 16 ns): gap 3.2 / 19.2 = 1/6
    assert p.real(48 * units) == Fraction(192, 10) * NS
    assert p.gap(48 * units, 0) == pytest.approx(1 / 6)
    # both below compute: the step is the compute and the gap 0 (a comm gap of (28 - 20) / 28 would not be)
    assert p.real(28 * units) == p.real(20 * units) == 16 * NS and p.gap(28 * units, 20 * units) == 0


def test_traffic_objective_is_unchanged():
    p = replace(two_layer_problem(), objective=Objective.TRAFFIC)
    assert p.weights.compute_s is None
    r = run(p, "exact")
    assert r.objective_value == r.figures.traffic_elements == 28 and r.time_terms is None
    assert p.gap(10, 5) == 0.5  # Solution.gap's formula on the units


def plan_digest(plan: Plan) -> str:
    return hashlib.sha256(json.dumps(plan.to_lists()).encode()).hexdigest()[:16]


def test_zoo_plans_are_those_of_the_comm_time_objective():
    """Every zoo network, dp and exact, on hypar-16 (AccPar space) and tpu-mix-16 (HyPar space):
    the same plan, status and communication as the comm-time objective gave (recorded before
    the change), and the objective (and bound) is that value plus the compute."""
    before = json.loads(SNAPSHOT.read_text())
    assert len(before) == 2 * 2 * len(CLASSIC_ZOO)  # the LLM zoo: tests/test_llm_zoo.py
    arrays = {name: load_array(name) for name in ("hypar-16", "tpu-mix-16")}
    for key, old in before.items():
        arr_name, space, model, solver = key.split("/")
        p = Problem(load_model(model), arrays[arr_name], Space(space), Objective.TIME)
        r = run(p, solver)
        comm = Fraction(old["objective_value"])
        assert (plan_digest(r.plan), r.status.value) == (old["plan_sha256"], old["status"]), key
        assert r.figures.comm_time_s == comm == r.time_terms.communication_s, key
        assert r.objective_value == comm + r.figures.compute_s == r.figures.step_time_s, key
        if old["bound"] is not None:
            assert r.bound == Fraction(old["bound"]) + r.figures.compute_s, key
            assert r.gap == float((r.objective_value - r.bound) / r.objective_value), key


@pytest.mark.parametrize("model", ["alexnet", "vgg-a", "resnet18", "lenet-c", "sconv"])
def test_tpu_mix_step_time_is_the_uneven_evaluators_equal_split(model):
    """On an array of kinds the equal split's slowest accelerator is the slowest kind's: the
    reported objective is exactly ``evaluate_split``'s step time of the same plan."""
    net, arr = load_model(model), load_array("tpu-mix-16")
    for overlap in (False, True):
        a = replace(arr, overlap=overlap)
        r = run(Problem(net, a, Space.HYPAR, Objective.TIME), "exact")
        het = evaluate_split(net, a, Plan.even(r.plan))
        assert r.objective_value == het.step_time_s == r.bound
        assert r.time_terms.compute_s == max(het.leaf_compute_s) > min(het.leaf_compute_s)


def test_overlap_keeps_plans_and_bounds_the_step_time():
    """Overlap changes nothing the solvers see: the same plans, objective max(compute, comm),
    bound max(compute, comm bound), on a network whose comm is above and one below its compute."""
    fast = load_array("hypar-16")
    slow = replace(fast, bandwidth_GBps=(Fraction(1, 100),) * fast.levels)  # 10 MB/s links: comm above compute
    seen = set()
    for model, arr in (("alexnet", fast), ("lenet-c", fast), ("alexnet", slow), ("resnet18", slow)):
        net = load_model(model)
        plain = run(Problem(net, arr, Space.ACCPAR, Objective.TIME), "exact")
        over = run(Problem(net, replace(arr, overlap=True), Space.ACCPAR, Objective.TIME), "exact")
        f = over.figures
        assert over.plan == plain.plan and f.comm_time_s == plain.figures.comm_time_s
        assert over.objective_value == max(f.compute_s, f.comm_time_s) == over.bound
        assert over.time_terms.formula == "max(compute, communication)"
        seen.add(f.comm_time_s > f.compute_s)
    assert seen == {True, False}  # both sides of the max are exercised


def test_cpsat_bound_and_gap_are_on_step_times():
    """A CP-SAT run stopped early: its bound is compute + comm bound and its gap is taken on
    step times (smaller than the comm-only gap)."""
    p = Problem(load_model("resnet50"), load_array("accpar-128"), Space.ACCPAR, Objective.TIME)
    sol = get_solver("cpsat")(p, SolveOptions(workers=1, deterministic_time_limit=0.05))
    assert sol.plan is not None and sol.bound is not None
    r = run(p, "cpsat", SolveOptions(workers=1, deterministic_time_limit=0.05))
    assert r.bound == r.time_terms.compute_s + r.time_terms.bound_communication_s
    assert r.gap == float((r.objective_value - r.bound) / r.objective_value)
    if r.status is not Status.OPTIMAL:
        assert 0 < r.gap < sol.gap


def test_sweep_rows_report_the_step_time():
    """A sweep's time columns: objective_value is the step time, bound and gap consistent, and
    dp_gap the DP's step time over the proven optimum's."""
    params = ["model", "solver"]
    rows = []
    for i, solver in enumerate(("dp", "exact")):
        point = {"model": "alexnet", "solver": solver, "objective": "time", "space": "accpar", "array": "hypar-16"}
        out = solve_point(i, point)
        res = out.result
        step = Fraction(res["objective_value"])
        assert step == Fraction(res["time_objective"]["compute_s"]) + Fraction(res["time_objective"]["communication_s"])
        assert float(step) == pytest.approx(res["step_time_s"], rel=1e-12)
        if res["bound"] is not None:
            assert Fraction(res["bound"]) == Fraction(res["time_objective"]["compute_s"]) + Fraction(
                res["time_objective"]["bound_communication_s"])
        rows.append(make_row(params, point, out))
    add_dp_gap(rows, params)
    dp, ex = rows
    assert dp["dp_gap"] == pytest.approx(float(Fraction(dp["objective_value"]) / Fraction(ex["objective_value"]) - 1))
    assert ex["status"] == "optimal" and ex["gap"] == 0 and dp["dp_gap"] > 0
    assert float(Fraction(dp["objective_value"])) == pytest.approx(dp["step_time_s"], rel=1e-12)
