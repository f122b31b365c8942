"""Trial 10's finding 14: an uneven split under a memory limit ended "no plan" although the equal
split (alpha 1/2, a plan of the declared space) has one that fits. The uneven paths under limits
start from the even exact solve's plan under the same limits (``solvers.uneven_seed``) where 1/2
is declared, so a feasible plan is reported whenever the even solve knows one, with the bound and
the gap; and every proven bound is a lower bound: at most the step time of every feasible plan
any path finds, and of brute force's optimum, on seeded random instances under memory limits."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from explorer.app.split import Split, split_run
from explorer.core.constraints import Cap, Constraints
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_joint, uneven_seed
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.exact import solve as even_exact
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_joint import JointOptions, joint_uneven
from explorer.solvers.uneven_levels import levels_uneven
from explorer.solvers.uneven_seed import even_under_limits

from .test_uneven_joint import _nested, _plans, in_scope_instances
from .test_uneven_model import mix


def _even_plan(net, arr, space, memory_GiB, weight_copies):
    """The even exact solve's plan under one memory limit for every kind (the step time), as explore's."""
    c = Constraints(memory_bytes=memory_GiB * 2**30, weight_copies=weight_copies, memory_set=True)
    sol = even_exact(Problem(net, arr, space, Objective.TIME, c), SolveOptions(time_limit_s=30))
    return None if sol.plan is None else Plan.even(sol.plan)


def test_finding_14_alexnet_on_tpu_mix_16_under_memory_reports_a_plan_with_its_bound():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    memory = F(6, 100)
    even = _even_plan(net, arr, Space.ACCPAR, memory, 2)
    even_s = evaluate_split(net, arr, even, 2).step_time_s
    for solver, grid in ((None, 16), ("exact", 2), ("cpsat", 2)):
        r = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=grid, memory_GiB=memory, weight_copies=2,
                      time_limit_s=3, solver=solver)
        assert r.plan is not None and r.ok and r.status in (Status.FEASIBLE, Status.OPTIMAL), (solver, r.status, r.note)
        assert r.bound_s is not None and r.bound_s <= r.step_time_s <= even_s and r.gap is not None, solver
        assert all(m.memory_bytes <= memory * 2**30 for m in r.memory)
        if solver == "cpsat":  # the exact path's plan: a proof only where its bound meets the plan (grid 2 with
            # the labels' memory completion bound), else CP-SAT's refusal is said and no proof claimed
            if r.status is Status.OPTIMAL:
                assert r.bound_s == r.step_time_s and "proven by" in r.note, r.note
            else:
                assert "CP-SAT refused" in r.note and "proven by" not in r.note, r.note


def test_the_seed_is_the_even_solves_plan_under_the_same_limits_where_half_is_declared():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    rules = SplitRules(Objective.TIME, Constraints(weight_copies=2), leaf_memory_limits(arr, F(6, 100) * 2**30))
    seed = even_under_limits(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)), rules, 30)
    assert seed == _even_plan(net, arr, Space.ACCPAR, F(6, 100), 2)
    assert rules.violations(evaluate_split(net, arr, seed, 2), arr, seed) == []
    no_half = alpha_space(arr, alpha_grid(3), FreeAlphas.UNLIKE, proportional=False)  # 1/3, 2/3: 1/2 not declared
    assert even_under_limits(net, arr, Space.ACCPAR, no_half, rules, 30) is None


def _memory_rules(rng, net, arr, space, aspace):
    """One memory limit for every kind (``--memory``) drawn below the free optimum's footprint, a
    cap now and then, weight copies 0 or 2."""
    copies = rng.choice([0, 2])
    ev = evaluate_split(net, arr, brute_split(net, arr, space, aspace).plan, copies)
    memory = max(ev.leaf_memory_bytes) * F(rng.choice([12, 13, 14, 15, 15]), 16)
    caps = ()
    if rng.random() < 0.3:
        h = rng.randrange(arr.levels)
        caps = (Cap(h, ev.level_cost[h] * arr.dtype_bytes * F(rng.choice([4, 6, 8]), 4)),)
    return SplitRules(Objective.TIME, Constraints(caps=caps, weight_copies=copies), leaf_memory_limits(arr, memory))


def _stopped_joint(monkeypatch, net, arr, space, aspace, rules, seeded: bool):
    """The joint solver under ``rules`` with its label passes cut short (as at a time limit): its
    plan comes from its starts and weighted DPs alone; ``seeded=False``: without the even seed."""
    with monkeypatch.context() as mp:
        mp.setattr(uneven_joint, "_pareto_graph", lambda m, t, g, best, *a, **k: (False, best, 0))
        if not seeded:
            mp.setattr(uneven_seed, "even_under_limits", lambda *a, **k: None)
        return joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), rules=rules)


def _feasible_values(net, arr, rules, sols) -> list:
    """The step times of the solutions' plans that keep to ``rules`` (re-scored by the evaluator)."""
    out = []
    for s in sols:
        if s is not None and s.plan is not None:
            ev = evaluate_split(net, arr, s.plan, rules.weight_copies)
            if rules.feasible(ev, arr, s.plan):
                out.append(ev.step_time_s)
    return out


def _check_bounds(monkeypatch, net, arr, space, aspace, rules, seen) -> bool:
    """The bounds and plans of every path on one instance (the checks of the test below); False
    outside the joint solver's scope."""
    try:
        cut = _stopped_joint(monkeypatch, net, arr, space, aspace, rules, True)
    except Refused:  # a graph that is not series-parallel: outside the joint solver's scope
        return False
    bare = _stopped_joint(monkeypatch, net, arr, space, aspace, rules, False)
    want = brute_split(net, arr, space, aspace, rules=rules)
    seed = even_under_limits(net, arr, space, aspace, rules, 30)
    sols = [cut, bare, joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60), rules=rules),
            constrained_uneven(net, arr, space, aspace, time_limit_s=60, rules=rules),
            levels_uneven(net, arr, space, aspace, rules=rules)]
    if net.is_chain:
        sols += [exact_uneven(net, arr, space, aspace, rules=rules),
                 cpsat_uneven(net, arr, space, aspace, time_limit_s=20, rules=rules)]
    values = _feasible_values(net, arr, rules, [want, *sols])
    if seed is not None:  # the equal split keeps the limits
        ev = evaluate_split(net, arr, seed, rules.weight_copies)
        assert rules.feasible(ev, arr, seed) and aspace.contains(seed)
        values.append(ev.step_time_s)
    if want.plan is None:
        assert not values and all(s.status is not Status.OPTIMAL for s in sols), rules
    else:
        assert min(values) == want.step_time_s, (values, want.step_time_s)
    for s in sols:
        if s.bound_s is not None:
            seen["bounds"] += 1
            assert want.plan is None or s.bound_s <= want.step_time_s, (s.solver, s.bound_s, want.step_time_s)
            assert all(s.bound_s <= v for v in values), (s.solver, s.bound_s, values)
    if seed is not None:  # the joint solver, even cut short, has a plan at least as good
        assert cut.plan is not None and cut.step_time_s <= values[-1], (cut.status, values[-1])
        seen["seed only"] += bare.plan is None
    seen["done"] += 1
    seen["infeasible"] += want.plan is None
    seen["binding"] += want.plan is not None and want.step_time_s > brute_split(net, arr, space, aspace).step_time_s
    return True


def test_every_bound_is_below_every_feasible_plan_on_random_instances_under_memory(monkeypatch):
    """Seeded random instances in the joint solver's scope under a memory limit (and sometimes a
    cap): the bound of every path (the joint solver cut short and run to its end, the exact
    constrained path, the Pareto DP, CP-SAT) is at most brute force's optimum and every feasible plan
    any path found (the level DP and the even seed too); the joint solver cut short reports a plan
    whenever the even solve under the same limits has one in the space, which it alone finds on some."""
    rng = random.Random(1410)
    seen = {"done": 0, "infeasible": 0, "binding": 0, "seed only": 0, "bounds": 0}
    for net, arr, space, aspace in in_scope_instances(rng):
        if seen["done"] == 40:
            break
        _check_bounds(monkeypatch, net, arr, space, aspace, _memory_rules(rng, net, arr, space, aspace), seen)
    assert seen["infeasible"] >= 3 and seen["binding"] >= 5 and seen["bounds"] >= 40 and seen["seed only"] >= 1, seen


def test_every_bound_is_below_every_feasible_plan_on_nested_graphs_under_memory(monkeypatch):
    """The same on nested series-parallel graphs (squeeze-excite and attention-like blocks)."""
    rng = random.Random(1414)
    seen = {"done": 0, "infeasible": 0, "binding": 0, "seed only": 0, "bounds": 0}
    while seen["done"] < 12:
        net = _nested(rng, seen["done"])
        p, q = rng.sample([1, 2, 3, 5], 2)
        arr = mix(1, [p, q], bw=rng.choice([1, 10]), dtype=2)
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        aspace = alpha_space(arr, alpha_grid(rng.choice([2, 4])))
        if _plans(net, space, aspace, 1) > 600:
            continue
        assert _check_bounds(monkeypatch, net, arr, space, aspace, _memory_rules(rng, net, arr, space, aspace), seen)
    assert seen["infeasible"] >= 1 and seen["binding"] >= 2 and seen["bounds"] >= 12, seen


@pytest.mark.parametrize("error", [NotImplementedError("a bug"), OverflowError("a bug")])
def test_the_seed_passes_on_what_the_even_solver_does_not_refuse_with(monkeypatch, error):
    """Only a refusal (``InstanceTooLarge``) means "too large, no seed": any other error is a bug and is raised."""
    from explorer.core.errors import InstanceTooLarge
    from explorer.solvers import exact

    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    rules = SplitRules(Objective.TIME, Constraints(weight_copies=2), leaf_memory_limits(arr, 2**30))
    args = (net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)), rules, 30)

    def raises(e):
        def solve(*a, **k):
            raise e
        return solve

    monkeypatch.setattr(exact, "solve", raises(InstanceTooLarge("exact: too large")))
    assert even_under_limits(*args) is None
    monkeypatch.setattr(exact, "solve", raises(error))
    with pytest.raises(type(error)):
        even_under_limits(*args)
