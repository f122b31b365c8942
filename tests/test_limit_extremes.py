"""``--time-limit`` at its extremes on the uneven path (issue 23, item 2; trial 11, findings 5 and 6):
the joint solver's column tables and the ``accpar`` row of ``check --uneven`` had no clock, and CP-SAT's
row imported OR-Tools (~0.4 s) before refusing a graph. A phase the limit stops reports honestly: the
best start plan that keeps every rule (``feasible``, no bound) or ``unknown`` with no plan, never
``optimal``; without a limit the answers are unchanged. Limits here are tiny or already spent (no
wall-clock asserts)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from fractions import Fraction as F

import pytest

from explorer.app.check_uneven import _run, check_uneven
from explorer.core.constraints import Constraints
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.joint_columns import _Model, _Tables, _VirtualSource
from explorer.solvers.uneven_joint import JointOptions, _scale, accpar_uneven, joint_uneven
from explorer.solvers.uneven_levels import equal_types

TINY = JointOptions(time_limit_s=1e-9)  # past before the first layer's terms: the tables' build is cut


def _alexnet():
    arr = load_array("tpu-mix-16")
    return load_model("alexnet"), arr, Space.ACCPAR, alpha_space(arr, alpha_grid(4))


def _starts(net, arr, space):
    even = Plan.even(equal_types(net, arr, space))  # the level DP's types, every alpha 1/2 (on the 1/4 grid)
    half_and_quarter = Plan(even.types, tuple(tuple(tuple(F(1, 4) if h == 0 else a for a in row) for row in groups)
                                              for h, groups in enumerate(even.alphas)))
    return even, half_and_quarter


def test_the_tables_build_stops_at_the_deadline():
    net, arr, space, aspace = _alexnet()
    m = _Model(_VirtualSource.of(net), arr, space, aspace, None, 0)
    with pytest.raises(TimeoutError):
        _Tables(m, _scale(m, 1024), deadline=time.perf_counter() - 1.0)
    t = _Tables(m, _scale(m, 1024), deadline=time.perf_counter() + 3600.0)  # in time: the same tables as without
    assert (t.node == _Tables(m, _scale(m, 1024)).node).all()
    with pytest.raises(TimeoutError):
        t.footprints(deadline=time.perf_counter() - 1.0)


def test_joint_cut_in_its_tables_returns_the_best_start_feasible_without_a_bound():
    net, arr, space, aspace = _alexnet()
    starts = _starts(net, arr, space)
    sol = joint_uneven(net, arr, space, aspace, TINY, starts=starts)
    values = [evaluate_split(net, arr, p).step_time_s for p in starts]
    assert sol.status is Status.FEASIBLE and sol.bound_s is None
    assert sol.plan == starts[values.index(min(values))] and sol.step_time_s == min(values)
    assert "built its tables" in sol.info["reason"]
    proven = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60.0), starts=starts)
    assert proven.status is Status.OPTIMAL and proven.step_time_s <= sol.step_time_s  # no limit: the proof, unchanged


def test_joint_cut_in_its_tables_keeps_no_start_that_breaks_a_rule():
    net, arr, space, aspace = _alexnet()
    starts = _starts(net, arr, space)
    most = min(max(evaluate_split(net, arr, p).leaf_memory_bytes) for p in starts) - 1  # every start breaks it
    rules = SplitRules(Objective.TIME, Constraints(), leaf_memory_limits(arr, F(most)))
    sol = joint_uneven(net, arr, space, aspace, TINY, starts=starts, rules=rules)
    assert sol.status is Status.UNKNOWN and sol.plan is None and sol.bound_s is None
    assert "no plan" in sol.info["reason"]
    none = joint_uneven(net, arr, space, aspace, TINY)
    assert none.status is Status.UNKNOWN and none.plan is None


def test_joint_ignores_a_start_outside_the_declared_space():
    net, arr, space, _ = _alexnet()
    aspace = alpha_space(arr, alpha_grid(2))  # 1/2 only: the 1/4 start is outside
    even, quarter = _starts(net, arr, space)
    sol = joint_uneven(net, arr, space, aspace, TINY, starts=(quarter,))
    assert sol.status is Status.UNKNOWN and sol.plan is None
    assert joint_uneven(net, arr, space, aspace, TINY, starts=(quarter, even)).plan == even


def test_the_accpar_heuristic_keeps_its_limit_and_is_unchanged_without_one():
    net, arr, space, aspace = _alexnet()
    cut = accpar_uneven(net, arr, space, aspace, time_limit_s=1e-9)
    assert cut.status is Status.UNKNOWN and cut.plan is None and "time limit" in cut.info["reason"]
    free, timed = accpar_uneven(net, arr, space, aspace), accpar_uneven(net, arr, space, aspace, time_limit_s=3600.0)
    assert free.status is timed.status is Status.FEASIBLE
    assert (free.plan, free.step_time_s) == (timed.plan, timed.step_time_s)
    assert free.step_time_s == evaluate_split(net, arr, free.plan).step_time_s


def test_check_uneven_refuses_cpsat_on_a_graph_even_with_no_time_left_for_its_import():
    arr = load_array("tpu-mix-16")
    net = load_model("resnet18")
    spent = time.perf_counter() - 100.0  # the limit spent before the check began
    r = check_uneven(net, arr, Space.ACCPAR, grid=4, solvers=("cpsat", "accpar"), time_limit_s=1.0, started=spent)
    cpsat, accpar = r.rows
    assert cpsat.status == Status.REFUSED.value and "chains only" in cpsat.note  # was "not run: ... import"
    assert accpar.status == Status.UNKNOWN.value and accpar.plan is None and "not run" in accpar.note


def test_check_uneven_accpar_row_passes_its_time_left_to_the_heuristic():
    net, arr, space, aspace = _alexnet()
    sol = _run("accpar", net, arr, space, aspace, 1e-9)  # what the rows before it left
    assert sol.status is Status.UNKNOWN and sol.plan is None
    assert _run("accpar", net, arr, space, aspace, 3600.0).status is Status.FEASIBLE


def test_joint_cut_before_its_first_bound_says_so_with_its_plan(monkeypatch):
    """The tables built, the clock passes the deadline during the first bounding pass (a fake clock
    from there): the plan found so far, feasible, no bound, and the reason."""
    import explorer.solvers.uneven_joint as uj

    net, arr, space, aspace = _alexnet()
    later = [0.0]
    real = time.perf_counter

    class Clock:
        perf_counter = staticmethod(lambda: real() + later[0])

    def cut_dual(m, graph, Q, o, deadline, best, first):
        later[0] = 1e6  # the first weighted pass outlasts the limit
        return -1, None, best, [], None

    monkeypatch.setattr(uj, "time", Clock)
    monkeypatch.setattr(uj, "_dual", cut_dual)
    sol = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=600.0))
    assert sol.status is Status.FEASIBLE and sol.bound_s is None
    assert sol.step_time_s == evaluate_split(net, arr, sol.plan).step_time_s
    assert "before a bounding pass ended" in sol.info["reason"]


def test_solve_end_keeps_back_a_share_of_the_limit_for_what_follows():
    from explorer.solvers.deadline import END_MARGIN, END_MARGIN_MAX_S, solve_end

    assert solve_end(10.0, 4.0) == 10.0 + 4.0 - END_MARGIN * 4.0  # 0.24 s of a 4 s limit
    assert solve_end(0.0, 600.0) == 600.0 - END_MARGIN_MAX_S  # at most 0.5 s


@pytest.mark.parametrize("where", ["chain", "search"])
def test_pruned_stops_its_search_by_solve_end_not_the_limit(monkeypatch, where):
    """``pruned``'s steps (the chain of blocks, the DP start, the thresholds) end by ``solve_end``: at 12
    levels under load they overran a 4 s limit by 0.1-0.3 s, then 0.1 s of report."""
    from explorer.core.array import synthetic_array
    from explorer.core.problem import Problem
    from explorer.core.solution import SolveOptions
    from explorer.solvers import pruned
    from explorer.solvers.deadline import solve_end
    from explorer.solvers.vectors import VectorCosts

    problem = Problem(load_model("lenet-c"), synthetic_array(3), Space.ACCPAR)
    vc, t0, seen = VectorCosts(problem), time.perf_counter(), {}
    if where == "chain":
        def whole(p, v, t, end, kept):  # settled at once: a solution (its bound and plan's cost for the progress line)
            seen["end"] = end
            return SimpleNamespace(bound=0, objective=0)

        monkeypatch.setattr(pruned.block_chain, "solve_whole", whole)
    else:
        monkeypatch.setattr(pruned.block_chain, "solve_whole", lambda *a: None)

        class Stop(Exception):
            pass

        def search(vc_, res, max_entries, end, *rest):
            seen["end"] = end
            raise Stop

        monkeypatch.setattr(pruned, "_Search", search)
        with pytest.raises(Stop):
            pruned._solve_relaxed(problem, vc, SolveOptions(time_limit_s=4.0), t0, 40, 10**6)
    if where == "chain":
        pruned._solve_relaxed(problem, vc, SolveOptions(time_limit_s=4.0), t0, 40, 10**6)
    assert seen["end"] == solve_end(t0, 4.0) < t0 + 4.0


def test_split_exact_cut_in_the_tables_keeps_its_first_seed_and_reads_no_other():
    """``--split optimal --solver exact`` (the constrained path, the joint solver): cut while it builds
    its tables, the first seed (the equal-split plan) if it keeps the rules, not ``unknown``; the
    rest of the seeds (the level DP's plan: 0.3-0.6 s on ResNet-50) is not computed."""
    from explorer.solvers.uneven_constrained import constrained_uneven

    net, arr, space, aspace = _alexnet()
    even, _ = _starts(net, arr, space)
    rules = SplitRules(Objective.TIME, Constraints(), leaf_memory_limits(arr, F(2**40)))  # memory that cannot bind
    read = []

    def seeds():
        read.append("even")
        yield even
        read.append("more")
        raise AssertionError("a later seed read")

    sol = constrained_uneven(net, arr, space, aspace, time_limit_s=1e-9, rules=rules, seeds=seeds())
    assert sol.status is Status.FEASIBLE and sol.plan == even and sol.bound_s is None and read == ["even"]
    assert sol.step_time_s == evaluate_split(net, arr, even).step_time_s


def test_the_split_solvers_last_step_keeps_back_the_reports_margin():
    from explorer.app.check import Clock
    from explorer.solvers.deadline import END_MARGIN

    t0 = time.perf_counter()
    clock = Clock(t0, 4.0)
    last, left = clock.for_last_step(), clock.left()
    assert last == pytest.approx(left - END_MARGIN * 4.0, abs=0.05)  # 0.24 s of 4 s kept back
    assert Clock(t0, None).for_last_step() is None
    assert Clock(t0 - 100.0, 4.0).for_last_step() == pytest.approx(0.02 * 4.0)  # spent: the least share, as left()


def test_the_alpha_descent_starts_nothing_past_its_deadline():
    from explorer.solvers.joint_columns import step_of
    from explorer.solvers.joint_labels import _descend
    from explorer.solvers.uneven_joint import _plan_columns

    net, arr, space, aspace = _alexnet()
    m = _Model(net, arr, space, aspace, None, 0)
    t = _Tables(m, _scale(m, 1024))
    even, _ = _starts(net, arr, space)
    cols = _plan_columns(m, even)
    best = (step_of(m.components(cols)), cols)
    assert _descend(m, t, best, [], deadline=time.perf_counter() - 1.0) is best  # past: no base descended
    free = _descend(m, t, best, [])
    assert free[0] <= best[0] and _descend(m, t, best, [], deadline=time.perf_counter() + 3600.0) == free


def test_the_alpha_search_scores_nothing_past_its_deadline():
    """``--split optimal``'s alpha search (no limit of its own before: 0.6 s on ResNet-50) stops at
    its deadline with the plan so far: past it at once, its start."""
    from explorer.solvers.uneven import search_level_alphas

    net, arr, space, aspace = _alexnet()
    even, _ = _starts(net, arr, space)
    cut = search_level_alphas(net, arr, even, aspace, deadline=time.perf_counter() - 1.0)
    assert cut.plan == even and cut.explored == 1 and cut.status is Status.FEASIBLE
    assert cut.step_time_s == evaluate_split(net, arr, even).step_time_s
    free = search_level_alphas(net, arr, even, aspace)
    timed = search_level_alphas(net, arr, even, aspace, deadline=time.perf_counter() + 3600.0)
    assert (timed.plan, timed.step_time_s, timed.explored) == (free.plan, free.step_time_s, free.explored)
    assert free.step_time_s <= cut.step_time_s
