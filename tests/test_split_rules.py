"""Side constraints and the traffic objective on uneven splits (``core.split_rules``): pins and
forbids restrict the types every solver may choose, a cap binds on the busiest side of a level's
links, memory is per accelerator against its kind's limit, and ``traffic`` is sum_h 2^h c_h of the
busiest sides. Brute force, the exact Pareto DP and CP-SAT agree on seeded random instances (status
and value), and every plan is re-scored by the evaluator and keeps to every rule."""

from __future__ import annotations

import random
from fractions import Fraction as F

from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.evaluate import evaluate, evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits, traffic_elements
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.hetero import cpsat_hetero, exact_hetero

from .test_hetero_joint import _instance


def _chain_instance(rng):
    while True:
        net, arr, space, aspace = _instance(rng)
        if net.is_chain:
            return net, arr, space, aspace


def _random_rules(rng, net, arr, space, aspace) -> SplitRules:
    """Pins, forbids, caps and per-leaf memory limits drawn around the unconstrained optimum's
    amounts (so that they often bind and sometimes leave no plan)."""
    objective = rng.choice([Objective.TIME, Objective.TRAFFIC])
    free = brute_split(net, arr, space, aspace, rules=SplitRules(objective))
    ev = evaluate_split(net, arr, free.plan)
    L, H = len(net.layers), arr.levels
    pins, forbids, caps, memory = [], [], [], None
    if rng.random() < 0.5:
        pins.append(Pin(rng.randrange(L), rng.choice([None, *range(H)]), rng.choice(space.types)))
    if rng.random() < 0.5:
        forbids.append(Forbid(rng.randrange(L), rng.choice(space.types)))
    if rng.random() < 0.6:
        h = rng.randrange(H)
        caps.append(Cap(h, ev.level_cost[h] * arr.dtype_bytes * F(rng.choice([2, 3, 4, 4, 6]), 4)))
    if rng.random() < 0.5:
        memory = tuple(m * F(rng.choice([3, 4, 4, 5]), 4) for m in ev.leaf_memory_bytes)
    return SplitRules(objective, Constraints(tuple(pins), tuple(forbids), tuple(caps)), memory)


def _check(net, arr, space, aspace, rules, sol):
    """The solver's plan keeps to the rules and its value is the evaluator's."""
    ev = evaluate_split(net, arr, sol.plan, rules.weight_copies)
    assert rules.violations(ev, arr, sol.plan) == [], sol.solver
    assert rules.value(ev) == sol.split_value == sol.split_bound, sol.solver
    assert aspace.contains(sol.plan)


def test_brute_exact_cpsat_agree_under_pins_caps_memory_and_both_objectives():
    rng = random.Random(2020)
    seen = {"infeasible": 0, "bound by rules": 0, "traffic": 0, "time": 0}
    for _ in range(40):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        sols = [brute_split(net, arr, space, aspace, rules=rules),
                exact_hetero(net, arr, space, aspace, rules=rules),
                cpsat_hetero(net, arr, space, aspace, time_limit_s=20, rules=rules)]
        assert len({s.status for s in sols}) == 1, [(s.solver, s.status) for s in sols]
        seen[rules.objective.value] += 1
        if sols[0].status is Status.INFEASIBLE:
            assert all(s.plan is None for s in sols)
            seen["infeasible"] += 1
            continue
        assert sols[0].status is Status.OPTIMAL
        for s in sols:
            _check(net, arr, space, aspace, rules, s)
        assert len({s.split_value for s in sols}) == 1, [(s.solver, s.split_value) for s in sols]
        unconstrained = brute_split(net, arr, space, aspace, rules=SplitRules(rules.objective)).split_value
        assert sols[0].split_value >= unconstrained
        seen["bound by rules"] += sols[0].split_value > unconstrained
    assert seen["infeasible"] >= 3 and seen["bound by rules"] >= 5 and min(seen["traffic"], seen["time"]) >= 10, seen


def test_the_traffic_objective_of_an_even_plan_is_the_even_splits():
    """With every alpha 1/2, c_h (the busiest side) and sum_h 2^h c_h are ``evaluate``'s."""
    rng = random.Random(7)
    for _ in range(10):
        net, arr, space, _ = _chain_instance(rng)
        types = Plan(tuple(tuple(rng.choice([t for t in space.types if L.offers(t, h)]) for L in net.layers)
                           for h in range(arr.levels)))
        even, split = evaluate(net, arr, space, types), evaluate_split(net, arr, Plan.even(types))
        assert split.level_cost == even.level_cost
        assert traffic_elements(split.level_cost) == even.traffic_elements


def test_a_cap_binds_on_the_busiest_side_by_hand():
    """Two accelerators (H = 1), one fc layer split II (D_i) at alpha: each side sends its partial
    sums of the whole output, B * D_o, whatever alpha; a cap below that leaves no plan of type II."""
    from explorer.core.hetero import alpha_grid, alpha_space
    from explorer.core.randnet import random_chain

    from .test_hetero_model import mix

    net = random_chain(3, 1, max_channels=8, max_size=1)
    arr = mix(1, [1, 3], bw=1, dtype=2)
    aspace = alpha_space(arr, alpha_grid(4))
    layer = net.layers[0]
    rules = SplitRules(Objective.TIME, Constraints(pins=(Pin(0, 0, PartitionType.II),)))
    sol = brute_split(net, arr, Space.HYPAR, aspace, rules=rules)
    ev = evaluate_split(net, arr, sol.plan)
    assert sol.plan.types == ((PartitionType.II,),)
    assert ev.level_cost[0] == layer.output_elements(net.batch)
    tight = SplitRules(Objective.TIME, Constraints(pins=rules.constraints.pins,
                                                   caps=(Cap(0, ev.level_cost[0] * 2 - 1),)))
    for solve in (brute_split, exact_hetero, cpsat_hetero):
        assert solve(net, arr, Space.HYPAR, aspace, rules=tight).status is Status.INFEASIBLE
    loose = SplitRules(Objective.TIME, Constraints(pins=rules.constraints.pins, caps=(Cap(0, ev.level_cost[0] * 2),)))
    assert exact_hetero(net, arr, Space.HYPAR, aspace, rules=loose).split_value == sol.split_value


def test_leaf_memory_limits_are_per_kind_or_one_for_all():
    from .test_hetero_model import mix

    arr = mix(1, [1, 3], bw=1)
    assert leaf_memory_limits(arr) == (16 * 2**30, 16 * 2**30)
    assert leaf_memory_limits(arr, F(5)) == (5, 5)
