"""The convex-combination bound of the uneven exact DP's early ends (``solvers.uneven_bound.convex_bound``,
the step time): on seeded random chains (pins, forbids, caps, memory limits, overlap) it is at most
brute force's optimum, at least never below what any weights give, and often above the separable
bound; its weights are exact (rational, the convex combinations summing to 1)."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

from explorer.core.objective import Objective
from explorer.core.solution import Status
from explorer.solvers import uneven_bound
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import _chain_columns
from explorer.solvers.uneven_bound import convex_bound, separable_bound
from explorer.solvers.uneven_prune import time_score

from .test_split_rules import _random_case


def test_the_convex_bound_is_below_brute_force_and_above_the_separable_one_on_random_chains():
    rng = random.Random(6161)
    seen = {"cases": 0, "overlap": 0, "rules": 0, "tighter": 0, "tight": 0}
    for k in range(110):
        net, arr, space, aspace, rules = _random_case(rng, k)
        if rules.objective is Objective.TRAFFIC:  # the bound is the step time's
            rules = replace(rules, objective=Objective.TIME)
        brute = brute_split(net, arr, space, aspace, rules=rules)
        if brute.status is Status.INFEASIBLE:
            continue
        _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact", rules=rules)
        score = time_score(arr, costs)
        low = convex_bound(arr, costs, cols)
        assert low is not None and low <= brute.split_value, (k, low, brute.split_value)
        sep = Fraction(separable_bound(costs, cols, score), score.scale)
        seen["cases"] += 1
        seen["overlap"] += arr.overlap
        seen["rules"] += rules.side_constrained
        seen["tighter"] += low > sep
        seen["tight"] += low == brute.split_value
    assert seen["cases"] >= 60 and all(seen.values()), seen


def test_any_weights_give_a_bound_and_the_lp_only_picks_them(monkeypatch):
    """Whatever weights the LP picks is a bound (here after one round: each layer's column of least
    uniform weight only); an expired clock or a layer without a column gives none."""
    rng = random.Random(12)
    kinds = set()
    for k in range(8):  # every kind of case: overlap or not, rules or none (the step time: the bound's)
        net, arr, space, aspace, rules = _random_case(rng, k)
        rules = replace(rules, objective=Objective.TIME)
        brute = brute_split(net, arr, space, aspace, rules=rules)
        if brute.status is Status.INFEASIBLE:
            continue
        _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact", rules=rules)
        best = convex_bound(arr, costs, cols)
        with monkeypatch.context() as m:
            m.setattr(uneven_bound, "ROUNDS", 1)  # one LP over each layer's column of least uniform weight
            one = convex_bound(arr, costs, cols)
        assert one <= brute.split_value and best <= brute.split_value, k
        kinds.add((arr.overlap, rules.side_constrained))
    assert len(kinds) == 4, kinds
    assert convex_bound(arr, costs, cols, expired=lambda: True) is None
    assert convex_bound(arr, costs, [cols[0], []]) is None


def test_the_exact_pass_looks_at_the_clock_within_a_layer(monkeypatch):
    """The exact pass scores a layer's columns a chunk at a time, looking at the clock between
    chunks (a large layer took ~1 s in one go): chunks of one column, the same bound, and a clock that
    expires inside the pass gives none."""
    rng = random.Random(3)
    net, arr, space, aspace, _rules = _random_case(rng, 1)
    _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact")
    whole = convex_bound(arr, costs, cols)
    monkeypatch.setattr(uneven_bound, "EXACT_CHUNK", 1)
    looks = []
    assert convex_bound(arr, costs, cols, expired=lambda: looks.append(0) or False) == whole
    n = len(looks)
    assert n >= sum(map(len, cols))  # at least a look per column
    calls = iter(range(10**9))
    assert convex_bound(arr, costs, cols, expired=lambda: next(calls) >= n - 2) is None  # expires in the exact pass
