"""Exact pruning of the uneven Pareto DP (``solvers.uneven_prune``): the completion bound is the
least each component can still grow, the integer scores are the exact objectives, and the pruned
DP returns what the plain one does (status, value and plan) on seeded random instances under pins,
forbids, caps, memory limits, overlap and both objectives, while it actually drops states."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F
from itertools import product

from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_model
from explorer.solvers.brute import solve_split as brute_split
from explorer.core.evaluate import evaluate_split
from explorer.solvers.uneven import _chain_columns, _columns_plan, exact_uneven
from explorer.solvers.uneven_prune import plan_vector, time_score, traffic_score
from explorer.solvers.uneven_tables import ColumnTables

from .test_split_rules import _chain_instance, _random_rules
from .test_uneven_model import mix


def _same(a, b) -> None:
    assert a.status is b.status
    assert (a.split_value, a.split_bound, a.plan) == (b.split_value, b.split_bound, b.plan)


def test_pruned_equals_plain_and_brute_on_random_instances_with_rules():
    rng = random.Random(4242)
    seen = {"pruned states": 0, "overlap": 0, "traffic": 0, "infeasible": 0}
    for k in range(60):
        net, arr, space, aspace = _chain_instance(rng)
        if k % 3 == 0:
            arr = replace(arr, overlap=True)
            seen["overlap"] += 1
        rules = _random_rules(rng, net, arr, space, aspace) if k % 4 else TIME_ONLY
        on = exact_uneven(net, arr, space, aspace, rules=rules)
        off = exact_uneven(net, arr, space, aspace, rules=rules, prune=False)
        _same(on, off)  # the same plan too: pruning only drops states that cannot reach it
        brute = brute_split(net, arr, space, aspace, rules=rules)
        assert on.status is brute.status and on.split_value == brute.split_value
        assert "pruned" in on.info and "pruned" not in off.info
        assert on.info["explored"] <= off.info["explored"]
        seen["pruned states"] += on.info["pruned"]
        seen["traffic"] += rules.objective is Objective.TRAFFIC
        seen["infeasible"] += on.status is Status.INFEASIBLE
    assert all(seen.values()), seen  # every case was met


def test_completion_rest_is_the_least_of_every_completion():
    """rest[l][c], per component, equals the least over every completion after column c of layer l
    (enumerated): a lower bound on what any completion adds, and the tightest per component."""
    rng = random.Random(7)
    for _ in range(8):
        net, arr, space, aspace = _chain_instance(rng)
        H, L, costs, columns = _chain_columns(net, arr, space, aspace, "exact")
        rest = ColumnTables(costs, columns, lambda: False).rest()
        for l in range(L):  # noqa: E741
            for c in columns[l]:
                adds = []
                for tail in product(*columns[l + 1:]):
                    path = (c,) + tail
                    v = [0] * costs.layout.size
                    for i in range(1, len(path)):
                        for w in (costs.layer(l + i, path[i]), costs.edge(l + i - 1, path[i - 1], path[i])):
                            v = [x + y for x, y in zip(v, w)]
                    adds.append(v)
                assert rest[l][c] == tuple(min(col) for col in zip(*adds))


def test_integer_scores_are_the_exact_objectives():
    rng = random.Random(11)
    for k in range(10):
        net, arr, space, aspace = _chain_instance(rng)
        arr = replace(arr, overlap=bool(k % 2))
        H, L, costs, columns = _chain_columns(net, arr, space, aspace, "exact")
        step, traffic = time_score(arr, costs), traffic_score(costs.layout)
        for _ in range(5):
            cols = [rng.choice(c) for c in columns]
            v = plan_vector(costs, cols)
            assert F(step(v), step.scale) == evaluate_split(net, arr, _columns_plan(cols, H)).step_time_s
            pos = costs.layout.pos
            busiest = [max(max(v[p], v[p + 1]) for (hh, _), p in pos.items() if hh == h) for h in range(H)]
            assert F(traffic(v), costs.unit) == F(sum(2**h * c for h, c in enumerate(busiest)), costs.unit)


def test_pruning_removes_states_on_lenet_and_keeps_the_optimum():
    """lenet-c on 2 + 2 accelerators of speed 1 and 3 (two levels), alpha grid 1/2: the pruned DP
    keeps far fewer Pareto states and returns the plain DP's plan and step time."""
    arr = mix(2, [40, 40, 120, 120], bw=70)
    net = load_model("lenet-c")
    for space in (Space.ACCPAR, Space.HYPAR):
        aspace = alpha_space(arr, alpha_grid(2))
        on = exact_uneven(net, arr, space, aspace)
        off = exact_uneven(net, arr, space, aspace, prune=False)
        _same(on, off)
        assert on.status is Status.OPTIMAL
        assert on.info["pruned"] > 0 and on.info["explored"] * 10 < off.info["explored"]


def test_pruned_traffic_keeps_the_least_step_time_among_least_traffic_plans():
    """Traffic ties: the pruned two passes return the plain ones' plan (least traffic, then the least
    step time), on lenet-c where many plans share the least traffic."""
    arr = mix(2, [40, 40, 120, 120], bw=70)
    net = load_model("lenet-c")
    rules = SplitRules(Objective.TRAFFIC)
    aspace = alpha_space(arr, alpha_grid(2))
    on = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules)
    off = exact_uneven(net, arr, Space.HYPAR, aspace, rules=rules, prune=False)
    _same(on, off)
    assert on.info["pruned"] > 0


def test_time_limit_while_pruning_gives_no_plan():
    arr = mix(2, [1, 1, 3, 3])
    late = exact_uneven(load_model("lenet-c"), arr, Space.ACCPAR, alpha_space(arr, alpha_grid(4)), time_limit_s=0)
    assert late.status is Status.UNKNOWN and late.plan is None
