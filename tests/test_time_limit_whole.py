"""--time-limit bounds the whole CP-SAT solve, its model's build included (issue 23, item 2)."""

import time

import pytest
from ortools.sat.python import cp_model

from explorer.app.run import run
from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.solvers import dp
from explorer.solvers.cpsat import to_cp_model
from explorer.solvers.formulation import BuildTimeout, build


def problem(model="resnet18", levels=4):
    return Problem(load_model(model), synthetic_array(levels), Space.ACCPAR)


def test_a_passed_deadline_stops_the_build():
    with pytest.raises(BuildTimeout):
        build(problem(), deadline=time.perf_counter() - 1)
    with pytest.raises(BuildTimeout):
        to_cp_model(build(problem()), deadline=time.perf_counter() - 1)


def test_out_of_time_in_the_build_gives_the_dp_plan_without_a_bound():
    p = problem("resnet50", 8)
    result = run(p, "cpsat", SolveOptions(time_limit_s=0.001, workers=1))  # re-scored by the evaluator
    assert result.status is Status.FEASIBLE
    assert result.bound is None and result.gap is None
    assert "time limit ran out while building" in result.reason
    assert result.plan == dp.solve(p).plan
    assert result.wall_s < 1.0


def test_weighted_sums_build_the_same_model_as_sums():
    """``to_cp_model`` writes rows with ``LinearExpr.weighted_sum``: the same proto as ``sum(c * x)``."""
    f = build(problem("mobilenet-v2", 3))
    m = cp_model.CpModel()
    xs = [m.new_bool_var(name) for name in f.names]
    for vars_, coefs, rhs in f.eq_rows:
        m.add(sum(c * xs[v] for v, c in zip(vars_, coefs)) == rhs)
    for group in f.exactly_one:
        m.add_exactly_one(xs[v] for v in group)
    for v in f.fixed_zero:
        m.add(xs[v] == 0)
    g = f.objective_gcd
    m.minimize(sum((c // g) * xs[v] for v, c in enumerate(f.objective) if c))
    assert str(to_cp_model(f)[0].proto) == str(m.proto)


def test_the_batched_hint_is_add_hint():
    from explorer.solvers.cpsat import _hint
    from explorer.solvers.formulation import assignment

    p = problem("resnet18", 3)
    f = build(p)
    values = assignment(p, f, dp.solve(p).plan)
    a, xs, _ = to_cp_model(f)
    _hint(a, xs, values)
    b, ys, _ = to_cp_model(f)
    for y, val in zip(ys, values):
        b.add_hint(y, val)
    assert str(a.proto.solution_hint) == str(b.proto.solution_hint)


def test_no_plan_in_the_time_left_gives_the_hint(monkeypatch):
    """CP-SAT with no time left to load its hint (status UNKNOWN) under a time limit: the hint, no bound."""
    from explorer.solvers import cpsat

    monkeypatch.setattr(cpsat, "run_solver", lambda solver, model, callback=None: (cp_model.UNKNOWN, False))
    p = problem("resnet18", 3)
    result = run(p, "cpsat", SolveOptions(time_limit_s=30, workers=1))
    assert result.status is Status.FEASIBLE and result.bound is None
    assert result.plan == dp.solve(p).plan and "its hint (the DP's plan)" in result.reason
    without_limit = cpsat.solve(p, SolveOptions(workers=1))  # UNKNOWN with its hint at hand: the hint (trial 11 finding 1)
    assert without_limit.status is Status.FEASIBLE and without_limit.plan == result.plan and without_limit.bound is None
    assert without_limit.info["reason"].startswith("CP-SAT stopped (status UNKNOWN) with no plan better than its hint")


# the exact constrained method (graphs under a memory limit: what `cpsat` runs first) -------------
def memory_problem(levels=7, gib=0.2):
    from explorer.core.constraints import Constraints

    p = Problem(load_model("resnet50"), synthetic_array(levels), Space.ACCPAR)
    return p.with_constraints(Constraints(memory_bytes=int(gib * 2**30)))


def test_passed_deadlines_stop_the_eliminations_and_the_label_pass():
    import numpy as np

    from explorer.solvers.elimination import TimeUp, graph_optimum
    from explorer.solvers.labels import least_plan
    from explorer.solvers.vectors import VectorCosts

    vc = VectorCosts(problem("resnet18", 2))
    with pytest.raises(TimeUp):
        graph_optimum(vc, deadline=time.perf_counter() - 1)
    survivors = [np.arange(d.V) for d in vc.dom]
    with pytest.raises(TimeUp):
        least_plan(vc, survivors, [], [], 10**30, 10**6, deadline=time.perf_counter() - 1)
    assert graph_optimum(vc, deadline=time.perf_counter() + 60)[0] == graph_optimum(vc)[0]


def test_a_passed_deadline_stops_an_edge_reduction_between_levels():
    # trial 8: one step of resnet50's elimination at 7 levels took 0.86 s past a 3 s limit
    import numpy as np

    from explorer.solvers.elimination import TimeUp
    from explorer.solvers.vectors import VectorCosts

    vc = VectorCosts(problem("resnet18", 2))
    u, x = vc.edges[0]
    for reduce, d in ((vc.reduce_producer, vc.dom[u]), (vc.reduce_consumer, vc.dom[x])):
        T = np.zeros((1, d.V), dtype=vc.dtype)
        with pytest.raises(TimeUp):
            reduce(T, 0, None, time.perf_counter() - 1)
        assert (reduce(T, 0, None, time.perf_counter() + 60) == reduce(T, 0)).all()


def test_the_exact_constrained_method_stops_at_the_limit_with_its_best_plan_and_bound():
    p = memory_problem()
    t0 = time.perf_counter()
    result = run(p, "exact", SolveOptions(time_limit_s=1.0, workers=1))  # re-scored by the evaluator
    took = time.perf_counter() - t0
    assert result.status in (Status.FEASIBLE, Status.UNKNOWN)  # (unbounded, this run takes minutes)
    assert "time limit (1 s) ran out before the gap closed" in result.reason
    assert result.wall_s < 3.0 and took < 6.0  # one elimination step past the limit at most
    if result.status is Status.FEASIBLE:
        # (the exact method's incumbent, or the cheapest baseline that keeps the limit: trial 11 finding 3)
        assert result.ok and (result.bound is None or result.bound <= result.objective_value)


def test_uneven_cpsat_gives_its_search_what_the_build_left(capsys):
    # check --uneven's cpsat row on lenet-c (4,096-column pairs per edge) used to build for 6-13 s
    # (a tuple-of-Fractions key hashed per term) and then search for the whole limit: 16 s on 10 s
    import json

    from .conftest import run_cli

    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "4",
                              "--time-limit", "2", "--solvers", "cpsat", "--format", "json"], capsys)
    row = json.loads(out)["solvers"]["cpsat"]
    assert row["status"] in ("unknown", "feasible", "optimal") and row["wall_s"] < 4.0, row


def test_one_deadline_check_for_the_solvers():
    """solvers.deadline: None never passes; a past deadline raises the solver's own error."""
    import time

    from explorer.solvers.deadline import check_deadline, past

    assert not past(None) and past(time.perf_counter() - 1) and not past(time.perf_counter() + 60)
    check_deadline(None, BuildTimeout)
    with pytest.raises(BuildTimeout):
        check_deadline(time.perf_counter() - 1, BuildTimeout)
