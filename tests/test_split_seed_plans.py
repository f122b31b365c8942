"""The seed plans a time-limited exact run falls back on (``app.split_solve.seed_plans``). A trial
(sfc on mix-4, grid 1/16, ``--solver exact``): at 30 s and 120 s the run ended early and returned the
level DP's plan (0.80541 ms, the proportional plan's value too); at 300 s it ran to its limit, no time
was left for the level DP and it returned its own incumbent, 0.80654 ms: more time, a worse plan.
Now the proportional plan is always a seed and the level DP's plan is computed before the run."""

from __future__ import annotations

import inspect
import time

import pytest

import explorer.app.split_solve as split_solve
import explorer.solvers.uneven as uneven
import explorer.solvers.uneven_constrained as uneven_constrained
import explorer.solvers.uneven_levels as uneven_levels
from explorer.app.split import Split, split_run
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import alpha_grid, alpha_space, proportional_plan
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven_levels import equal_types


@pytest.fixture
def cut_at_the_limit(monkeypatch):
    """The exact Pareto DP run to its whole limit with nothing better than its seeds: the real
    ``exact_uneven`` ending at once (a limit its column pairs cannot meet), its seeds read as they
    come; after it the run's deadline has passed (``split_solve.past``). The plans seen are kept."""
    seen, ran = [], []
    real = uneven.exact_uneven

    def cut(*args, seeds=(), **kwargs):
        ran.append(True)
        plans = list(seeds)
        seen.extend(plans)
        given = inspect.signature(real).bind(*args, **kwargs).arguments
        return real(**dict(given, time_limit_s=1e-9, seeds=plans))

    monkeypatch.setattr(uneven, "exact_uneven", cut)
    monkeypatch.setattr(uneven_constrained, "exact_uneven", cut)
    monkeypatch.setattr(split_solve, "past", lambda deadline: bool(ran))
    return seen


def _step(net, arr, plan: Plan):
    return evaluate_split(net, arr, plan).step_time_s


@pytest.mark.parametrize("solver", ["exact", "cpsat"])
def test_an_exact_run_cut_at_its_limit_is_never_worse_than_the_proportional_plan(mix4, cut_at_the_limit, solver):
    """Before: the equal split alone (the level DP not started past the deadline), 25% slower than
    the proportional plan here; now the best of the equal, proportional and level DP plans (the
    cpsat row: CP-SAT refuses 9,216 columns and the exact path answers alone with the same seeds)."""
    net, arr = load_model("sfc"), load_array(mix4)
    types = equal_types(net, arr, Space.ACCPAR)
    r = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=16, time_limit_s=600.0, solver=solver)
    prop, even = _step(net, arr, proportional_plan(net, arr, types)), _step(net, arr, Plan.even(types))
    assert r.status is Status.FEASIBLE and r.plan is not None and even > prop
    assert r.step_time_s <= prop and _step(net, arr, r.plan) == r.step_time_s
    level = uneven_levels.levels_uneven(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(16)), name="dp")
    assert level.plan in cut_at_the_limit  # computed before the run, though none of the limit was left after it
    assert r.step_time_s == min(prop, _step(net, arr, level.plan))


def test_the_level_dp_runs_first_within_a_share_of_the_limit_and_not_again(monkeypatch):
    """The level DP's plan is computed before the run with a deadline ``LEVELS_FIRST_SHARE`` of the
    limit away; once done it is not run again when the seeds are read."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace, types = alpha_space(arr, alpha_grid(4)), equal_types(net, arr, Space.ACCPAR)
    deadlines = []
    real = uneven_levels.levels_uneven
    monkeypatch.setattr(uneven_levels, "levels_uneven", lambda *a, **k: deadlines.append(k["deadline"]) or real(*a, **k))
    t0 = time.perf_counter()
    seeds = split_solve.seed_plans(net, arr, Space.ACCPAR, aspace, types, TIME_ONLY, t0 + 600.0)
    assert deadlines == []  # nothing computed yet
    first = seeds.levels_first(100.0)
    assert len(deadlines) == 1 and t0 < deadlines[0] <= time.perf_counter() + split_solve.LEVELS_FIRST_SHARE * 100.0
    plans = list(first)
    assert len(deadlines) == 1 and plans[:2] == [Plan.even(types), proportional_plan(net, arr, types)]
    assert plans[2] == real(net, arr, Space.ACCPAR, aspace, name="dp").plan and len(plans) == 3
    assert first.levels_first(100.0) is first and seeds.levels_first(None) is seeds  # no limit: read after the run


def test_a_level_dp_cut_in_its_share_is_run_again_after_the_run(monkeypatch):
    """Cut within its share (a slow level DP against a short limit), its plan so far is a seed and
    the level DP runs again, after the run, with what is left of the limit."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace, types = alpha_space(arr, alpha_grid(4)), equal_types(net, arr, Space.ACCPAR)
    calls = []
    real = uneven_levels.levels_uneven
    monkeypatch.setattr(uneven_levels, "levels_uneven",
                        lambda *a, **k: calls.append(k["deadline"]) or real(*a, **dict(k, deadline=0.0 if len(calls) == 1 else None)))
    later = time.perf_counter() + 600.0
    first = split_solve.seed_plans(net, arr, Space.ACCPAR, aspace, types, TIME_ONLY, later).levels_first(1.0)
    plans = list(first)
    assert len(calls) == 2 and calls[1] == later
    assert plans[:3] == [Plan.even(types), proportional_plan(net, arr, types), Plan.even(types)]  # cut: the equal split
    assert plans[3] == real(net, arr, Space.ACCPAR, aspace, name="dp").plan


@pytest.mark.parametrize("model,objective,pareto", [("lenet-c", "time", False), ("lenet-c", "traffic", True),
                                                    ("resnet18", "traffic", False)])
def test_the_level_dp_runs_first_where_the_solver_says_its_pareto_dp_runs(model, objective, pareto):
    """The app asks the solver (``runs_pareto_dp``) which route the constrained path takes: the joint
    solver (lenet-c, the step time: it starts from the first seed alone, no level DP first), the
    Pareto DP (the traffic objective on a chain: the level DP first), neither (a graph: refused)."""
    from explorer.core.objective import Objective
    from explorer.core.errors import Refused
    from explorer.core.split_rules import SplitRules

    net, arr = load_model(model), load_array("tpu-mix-16")
    aspace, types, rules = alpha_space(arr, alpha_grid(4)), equal_types(net, arr, Space.ACCPAR), SplitRules(Objective(objective))
    assert uneven_constrained.runs_pareto_dp(net, arr, aspace, rules, constrained=True) is pareto
    assert uneven_constrained.runs_pareto_dp(net, arr, aspace, rules, constrained=False) is net.is_chain
    seeds = split_solve.seed_plans(net, arr, Space.ACCPAR, aspace, types, rules)
    got, left = split_solve._levels_first(seeds, net, arr, aspace, 100.0, rules, constrained=True)
    assert (got.done, len(got.first)) == ((True, 1) if pareto else (False, 0)) and (left < 100.0) is pareto
    if not net.is_chain:
        with pytest.raises(Refused):
            uneven_constrained.constrained_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=1.0, rules=rules)
        return
    sol = uneven_constrained.constrained_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=1.0, rules=rules)
    assert (sol.info["method"] == "pareto-dp") is pareto


def test_runs_pareto_dp_names_the_route_constrained_uneven_takes_on_random_chains():
    """On seeded random chains (deeper free levels, overlap, the traffic objective: outside the joint
    solver; the rest inside), the route the solver announces is the route it takes."""
    import random

    from .test_split_rules import _random_case

    rng, routes = random.Random(20261204), set()
    for k in range(16):
        net, arr, space, aspace, rules = _random_case(rng, k)
        sol = uneven_constrained.constrained_uneven(net, arr, space, aspace, time_limit_s=10.0, rules=rules)
        pareto = uneven_constrained.runs_pareto_dp(net, arr, aspace, rules, constrained=True)
        assert (sol.info["method"] == "pareto-dp") is pareto, k
        routes.add(pareto)
    assert routes == {True, False}  # both routes met


def test_the_seeds_built_at_once_are_named_once_for_the_level_dp_not_run():
    """``SeedPlans.cheap``: the equal and proportional plans the seeds start with, named as the
    report names them when the level DP was not run (``split._dp_not_run`` built its own two)."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace, types = alpha_space(arr, alpha_grid(4)), equal_types(net, arr, Space.ACCPAR)
    seeds = split_solve.seed_plans(net, arr, Space.ACCPAR, aspace, types, TIME_ONLY, time.perf_counter() - 1.0)
    assert seeds.cheap() == (("the equal-split", Plan.even(types)),
                             ("the proportional", proportional_plan(net, arr, types)))
    assert list(seeds) == [p for _, p in seeds.cheap()]  # the deadline passed: the level DP not run
