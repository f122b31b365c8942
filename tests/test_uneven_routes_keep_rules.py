"""Every uneven route under random pins, forbids, caps and kinds' memory (``explore --split`` with
each split and each solver, ``explore check --uneven``) on seeded random arrays of kinds (chains and
small graphs): every plan re-scored by the one evaluator (``evaluate_split``) to the value reported,
a proving answer's plan keeps every rule, OPTIMAL only where the value meets the bound, the proven
optimum and a proven "no plan" brute force's. And the joint solver's starts: one that breaks a pin
or a forbid is no plan of its model (it was taken as the incumbent, and returned as optimal)."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F

from explorer.app.check_uneven import PROVING, check_uneven
from explorer.app.split import Split, split_run
from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven_constrained import joint_under

from .test_uneven_joint import in_scope_instances
from .test_uneven_model import mix

ROUTES = ((Split.OPTIMAL, None), (Split.OPTIMAL, "brute"), (Split.OPTIMAL, "exact"), (Split.OPTIMAL, "cpsat"),
          (Split.OPTIMAL, "dp"), (Split.LEVELS, None), (Split.SEARCH, None), (Split.PROPORTIONAL, None))


def _instance(rng):
    """A tiny network (a chain, or a small graph) on a mix of kinds like tpu-mix-16's (one
    or two levels), a space small enough for brute force; (net, arr, space, grid, free, grid_only)."""
    while True:
        H = rng.choice([1, 1, 2])
        p, q = rng.sample([1, 2, 3, 5], 2)
        peaks = [p, p, q, q] if H == 2 and rng.random() < 0.5 else [rng.choice([p, q]) for _ in range(2**H)]
        arr = mix(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        seed, graph = rng.randrange(10**6), rng.random() < 0.45
        net = parse_network(random_dag_spec(seed, rng.choice([3, 4])), "dag") if graph else \
            random_chain(seed, rng.choice([2, 3, 4]) if H == 1 else 2, max_channels=16, max_size=4, consistent=True)
        space, grid = rng.choice([Space.HYPAR, Space.ACCPAR]), rng.choice([2, 3, 4])
        free, grid_only = rng.choice([FreeAlphas.UNLIKE, FreeAlphas.ALL]), rng.random() < 0.3
        aspace = alpha_space(arr, alpha_grid(grid), free, proportional=not grid_only)
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) <= 400:
            return net, arr, space, grid, free, grid_only, aspace


def _rules(rng, net, arr, space, aspace):
    """Random pins, forbids, a cap and each kind's memory drawn around the free optimum's amounts
    (so that they often bind); (objective, constraints, the array with its kinds' memory)."""
    objective = rng.choice([Objective.TIME, Objective.TIME, Objective.TRAFFIC])
    ev = evaluate_split(net, arr, brute_split(net, arr, space, aspace, rules=SplitRules(objective)).plan)
    L, H = len(net.layers), arr.levels
    pins = tuple(Pin(rng.randrange(L), rng.choice([None, *range(H)]), rng.choice(space.types))
                 for _ in range(rng.choice([0, 0, 1])))
    forbids = tuple(Forbid(rng.randrange(L), rng.choice(space.types)) for _ in range(rng.choice([0, 1, 1, 2])))
    h = rng.randrange(H)
    caps = (Cap(h, ev.level_cost[h] * arr.dtype_bytes * F(rng.choice([2, 3, 4, 6]), 4)),) if rng.random() < 0.4 else ()
    if rng.random() < 0.4:  # each kind's memory a share of its most loaded accelerator's footprint
        share, most = F(rng.choice([3, 4, 5]), 4), {}
        for k, m in zip(arr.leaves, ev.leaf_memory_bytes):
            most[k.name] = max(most.get(k.name, 0), m)
        leaves = tuple(replace(k, memory_GiB=most[k.name] * share / 2**30) for k in arr.leaves)
        arr = replace(arr, leaves=leaves, memory_GiB=min(k.memory_GiB for k in leaves))
    return objective, Constraints(pins, forbids, caps), arr


def _kept(net, arr, rules, plan, value, bound, status: Status, proving: bool) -> list:
    """The evaluator's broken rules of a plan, after checking its value and its bound."""
    ev = evaluate_split(net, arr, plan, rules.weight_copies)
    broken = rules.violations(ev, arr, plan)
    assert rules.value(ev) == value, (value, rules.value(ev))
    assert bound is None or bound <= value, (bound, value)
    assert status is not Status.OPTIMAL or bound == value, (status, bound, value)
    assert not (proving or status is Status.OPTIMAL) or broken == [], [v.constraint for v in broken]
    return broken


def _split_routes(net, arr, space, grid, free, grid_only, objective, cons, want, seen):
    rules = SplitRules(objective, cons, leaf_memory_limits(arr))
    for split, solver in ROUTES:
        try:
            r = split_run(net, arr, space, split, grid, free, time_limit_s=120, solver=solver, grid_only=grid_only,
                          objective=objective, constraints=cons)
        except Refused:  # e.g. --grid-only leaves proportional out (no plan: nothing to check)
            continue
        proving = split is Split.OPTIMAL and solver != "dp"
        seen[r.status.value] += 1
        if r.plan is None:
            assert not proving or r.status is want.status, (split, solver, r.status, want.status)
            continue
        broken = _kept(net, arr, rules, r.plan, r.objective_value, r.objective_bound, r.status, proving)
        assert bool(broken) == bool(r.all_violations()), (split, solver, broken, r.all_violations())
        seen["breaks"] += bool(broken)
        if proving:
            assert want.status is not Status.INFEASIBLE and r.objective_value >= want.split_value
            assert r.status is not Status.OPTIMAL or r.objective_value == want.split_value


def _check_rows(net, arr, space, grid, free, grid_only, objective, cons, want):
    rules = SplitRules(objective, cons, leaf_memory_limits(arr))
    c = check_uneven(net, arr, space, grid, free, time_limit_s=120, grid_only=grid_only, rules=rules)
    assert c.agree, c.problems
    for row in c.rows:
        if row.plan is not None:
            broken = _kept(net, arr, rules, row.plan, row.value, row.bound, Status(row.status), row.solver in PROVING)
            assert row.breaks == bool(broken)
    assert c.optimum is None or c.optimum == (want.split_value if objective is Objective.TRAFFIC else want.step_time_s)


def test_every_uneven_route_keeps_pins_forbids_caps_and_memory_on_random_instances():
    rng = random.Random(4)
    seen = {s.value: 0 for s in Status} | {"breaks": 0, "graphs": 0, "memory": 0, "caps": 0, "forbids": 0}
    for _ in range(36):
        net, arr, space, grid, free, grid_only, aspace = _instance(rng)
        objective, cons, arr = _rules(rng, net, arr, space, aspace)
        want = brute_split(net, arr, space, aspace, rules=SplitRules(objective, cons, leaf_memory_limits(arr)))
        _split_routes(net, arr, space, grid, free, grid_only, objective, cons, want, seen)
        _check_rows(net, arr, space, grid, free, grid_only, objective, cons, want)
        seen["graphs"] += not net.is_chain
        seen["memory"] += arr.memory_GiB < 1
        seen["caps"] += bool(cons.caps)
        seen["forbids"] += bool(cons.forbids)
    assert min(seen["optimal"], seen["infeasible"], seen["feasible"]) >= 20 and seen["breaks"] >= 5, seen
    assert min(seen["graphs"], seen["memory"], seen["caps"]) >= 6 and seen["forbids"] >= 20, seen


def test_the_joint_solver_takes_no_start_that_breaks_a_forbid():
    """A start that breaks a forbid (the free optimum, its type at one layer forbidden) is below
    every plan the forbid leaves: taken as the incumbent, it met the bound and came back OPTIMAL.
    Now the answer is brute force's under the forbid, and keeps it."""
    rng = random.Random(5)
    done = 0
    for net, arr, space, aspace in in_scope_instances(rng):
        if done == 12:
            break
        free = brute_split(net, arr, space, aspace)
        layer = rng.randrange(len(net.layers))
        rules = SplitRules(Objective.TIME, Constraints(forbids=(Forbid(layer, free.plan.types[0][layer]),)))
        want = brute_split(net, arr, space, aspace, rules=rules)
        if want.status is not Status.OPTIMAL or want.step_time_s == free.step_time_s:
            continue
        try:
            got = joint_under(net, arr, space, aspace, 60, rules, starts=(free.plan,))
        except Refused:  # not series-parallel
            continue
        done += 1
        ev = evaluate_split(net, arr, got.plan)
        assert rules.violations(ev, arr, got.plan) == [] and ev.step_time_s == got.step_time_s
        assert (got.status, got.step_time_s, got.bound_s) == (Status.OPTIMAL, want.step_time_s, want.step_time_s)
